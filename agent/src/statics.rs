//! Static fields named in heap dumps. The runtime reports statics as one
//! pinned handle to its own `Object[]` of static slots, so a dump shows
//! `[Handle, pinning] -> System.Object []` above every static's object
//! and never names the field. The agent names them itself:
//!
//! - when a class is loaded (`ClassLoadFinished`) its `ClassID` is noted
//!   (nothing more: class loads are many, dumps few);
//! - before a dump's GC, on the dump thread, the classes noted since the
//!   last dump are looked at: their static fields of a reference type
//!   (read from the module's metadata once per module: `EnumTypeDefs`,
//!   `EnumFields`, `GetFieldProps` with `fdStatic`, the field's
//!   signature) are remembered with the class;
//! - when a heap dump's roots are reported (`RootReferences2`, after the
//!   GC has moved everything), each app-domain static's slot
//!   (`GetAppDomainStaticAddress`, which never triggers a GC) is read, and
//!   a static holding an object becomes a root of kind "other" whose id is
//!   the slot's address, named by a clrprof `d` line
//!   (`d 0 0xSLOT static Class.field`, which CLRProfiler's reader skips
//!   whole; docs/src/reference-reader.md, "Named static roots").
//!
//! Thread statics and classes loaded before an attach are not named.

use crate::agent::lock;
use crate::info::{Info, MetaData};
use crate::thread::FxMap;
use std::sync::{Arc, Mutex};

/// `fdStatic`.
const FD_STATIC: u32 = 0x10;
/// `fdLiteral` (a constant: no storage).
const FD_LITERAL: u32 = 0x40;
/// `COR_PRF_FIELD_APP_DOMAIN`.
const STATIC_APP_DOMAIN: u32 = 0x1;

/// One static field of a reference type of a loaded class.
#[derive(Clone)]
struct StaticField {
    class: usize,
    field: u32,
    domain: usize,
    name: Arc<str>,
}

/// A module's types with static reference fields: typedef token ->
/// (the type's name, its fields (token, name)).
type ModuleStatics = FxMap<u32, (String, Vec<(u32, String)>)>;

/// The static fields the agent can name.
#[derive(Default)]
pub struct Statics {
    /// Classes loaded since the last dump.
    pending: Mutex<Vec<usize>>,
    modules: Mutex<FxMap<usize, Arc<ModuleStatics>>>,
    fields: Mutex<Vec<StaticField>>,
}

/// A static that holds an object at a dump: its slot, the object, and
/// `Class.field`.
pub struct StaticRoot {
    /// The slot's address (the root id).
    pub slot: u64,
    /// The object it holds.
    pub object: u64,
    /// `Class.field`.
    pub name: Arc<str>,
}

/// True when a field signature (`FIELD` + type) is of a reference type:
/// a class, a string, an object, an array, or a generic class
/// instantiation (not a value type, a pointer or a type parameter).
pub fn is_reference_field(sig: &[u8]) -> bool {
    const FIELD: u8 = 0x06;
    const CMOD_REQD: u8 = 0x1f;
    const CMOD_OPT: u8 = 0x20;
    let mut s = match sig.split_first() {
        Some((&FIELD, rest)) => rest,
        _ => return false,
    };
    // Custom modifiers: the byte, then a compressed token.
    while let Some((&b, rest)) = s.split_first() {
        if b != CMOD_REQD && b != CMOD_OPT {
            break;
        }
        let skip = match rest.first() {
            Some(&x) if x & 0x80 == 0 => 1,
            Some(&x) if x & 0xC0 == 0x80 => 2,
            Some(_) => 4,
            None => return false,
        };
        s = rest.get(skip..).unwrap_or(&[]);
    }
    match s {
        // string, class, array, object, szarray
        [0x0e, ..] | [0x12, ..] | [0x14, ..] | [0x1c, ..] | [0x1d, ..] => true,
        // genericinst of a class (0x12), not of a value type (0x11)
        [0x15, 0x12, ..] => true,
        _ => false,
    }
}

/// A typedef's name with its enclosing types (`Outer+Inner`).
fn type_name(md: &MetaData, token: u32) -> Option<String> {
    let (mut name, _, _) = md.type_def_props(token)?;
    let mut t = token;
    for _ in 0..16 {
        match md.enclosing_class(t) {
            Some(outer) if outer != 0 && outer != t => {
                let (o, _, _) = md.type_def_props(outer)?;
                name = format!("{o}+{name}");
                t = outer;
            }
            _ => break,
        }
    }
    Some(name)
}

/// Reads a module's types with static reference fields.
fn read_module(info: &Info, module: usize) -> ModuleStatics {
    let mut out = ModuleStatics::default();
    let Some(md) = info.module_metadata(module) else { return out };
    for td in md.type_defs() {
        let mut fields = Vec::new();
        for f in md.fields(td) {
            let Some((name, attr, sig)) = md.field_props(f) else { continue };
            if attr & FD_STATIC != 0 && attr & FD_LITERAL == 0 && is_reference_field(&sig) {
                fields.push((f, name));
            }
        }
        if !fields.is_empty() {
            if let Some(name) = type_name(&md, td) {
                out.insert(td, (name, fields));
            }
        }
    }
    out
}

impl Statics {
    /// `ClassLoadFinished`: notes the class.
    pub fn class_loaded(&self, class: usize) {
        lock(&self.pending).push(class);
    }

    /// Before a dump's GC: remembers the static reference fields of the
    /// classes loaded since the last one. Calls into the runtime without
    /// holding a lock.
    pub fn prepare(&self, info: &Info) {
        let classes = std::mem::take(&mut *lock(&self.pending));
        for class in classes {
            self.look_at(info, class);
        }
    }

    fn look_at(&self, info: &Info, class: usize) {
        let Some((module, token, _, _)) = info.class_info(class) else { return };
        if module == 0 || token == 0 {
            return;
        }
        let known = lock(&self.modules).get(&module).cloned();
        let types = match known {
            Some(t) => t,
            None => {
                let t = Arc::new(read_module(info, module));
                lock(&self.modules).entry(module).or_insert(t).clone()
            }
        };
        let Some((type_name, fields)) = types.get(&token) else { return };
        let Some(domain) = info.module_app_domain(module) else { return };
        let found: Vec<StaticField> = fields
            .iter()
            .filter(|(f, _)| info.static_field_kind(class, *f).is_some_and(|k| k & STATIC_APP_DOMAIN != 0))
            .map(|(f, name)| StaticField { class, field: *f, domain, name: format!("{type_name}.{name}").into() })
            .collect();
        lock(&self.fields).extend(found);
    }

    /// The statics holding an object now. Called while the runtime is
    /// suspended for a dump's GC, after it moved the objects.
    pub fn roots(&self, info: &Info) -> Vec<StaticRoot> {
        let fields = lock(&self.fields).clone();
        let mut out = Vec::new();
        for f in fields {
            let Some(slot) = info.app_domain_static_address(f.class, f.field, f.domain) else { continue };
            if slot % std::mem::align_of::<usize>() != 0 {
                continue;
            }
            // Safety: the runtime gave the address of an initialized
            // static slot of a reference type; the runtime is suspended,
            // so no thread writes it while it is read.
            let object = unsafe { std::ptr::read_volatile(slot as *const usize) };
            if object != 0 {
                out.push(StaticRoot { slot: slot as u64, object: object as u64, name: f.name });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::is_reference_field;

    #[test]
    fn reference_fields_by_signature() {
        assert!(is_reference_field(&[0x06, 0x0e])); // string
        assert!(is_reference_field(&[0x06, 0x12, 0x08])); // class
        assert!(is_reference_field(&[0x06, 0x1d, 0x08])); // int[]
        assert!(is_reference_field(&[0x06, 0x15, 0x12, 0x10, 0x01, 0x12, 0x0c])); // List<Order>
        assert!(is_reference_field(&[0x06, 0x1f, 0x41, 0x12, 0x08])); // modreq(volatile) class
        assert!(!is_reference_field(&[0x06, 0x08])); // int
        assert!(!is_reference_field(&[0x06, 0x11, 0x08])); // a struct
        assert!(!is_reference_field(&[0x06, 0x15, 0x11, 0x10, 0x01, 0x08])); // KeyValuePair<..>
        assert!(!is_reference_field(&[0x06, 0x13, 0x00])); // T
        assert!(!is_reference_field(&[0x07, 0x0e]));
        assert!(!is_reference_field(&[]));
    }
}
