//! Names of types and functions, spelled as CLRProfiler's profiler spells
//! them: `Namespace.Outer.Inner<System.Int32,System.String>`, arrays as
//! `System.Byte []` (one `[]` per nesting level), functions as
//! `Class::Method` with a signature `static void (String[] int32)`.
//!
//! Everything here calls into the runtime; callers hold no lock.

use crate::info::{Info, MetaData, MD_TYPEDEF_NIL};

const TD_VISIBILITY_MASK: u32 = 0x7;
const TD_NESTED_PUBLIC: u32 = 0x2;
const MD_STATIC: u32 = 0x10;
const MD_VIRTUAL: u32 = 0x40;
const MD_NEW_SLOT: u32 = 0x100;

/// How deep type-argument names may nest before the agent gives up.
const MAX_DEPTH: u32 = 8;

/// A type's name and whether instances are finalizable.
pub fn type_name(info: &Info, class: usize) -> (String, bool) {
    type_name_at(info, class, 0)
}

fn type_name_at(info: &Info, class: usize, depth: u32) -> (String, bool) {
    if depth > MAX_DEPTH {
        return ("...".to_string(), false);
    }
    if let Some((elem_type, mut element, _rank)) = info.is_array_class(class) {
        let mut ranks = String::from("[]");
        let mut guard = 0;
        while element != 0 && guard < 32 {
            guard += 1;
            match info.is_array_class(element) {
                Some((_, inner, _)) if inner != 0 => {
                    ranks.push_str("[]");
                    element = inner;
                }
                _ => break,
            }
        }
        let base = if element != 0 { class_name(info, element, depth + 1) } else { element_type_name(elem_type).to_string() };
        return (format!("{base} {ranks}"), false);
    }
    (class_name(info, class, depth), is_finalizable(info, class))
}

/// CLRProfiler's `GetNameFromClassID`: the metadata name with generic
/// arguments, `???` when the module has no metadata.
fn class_name(info: &Info, class: usize, depth: u32) -> String {
    if info.is_array_class(class).is_some() {
        return type_name_at(info, class, depth).0;
    }
    let Some((module, token, _parent, args)) = info.class_info(class) else {
        return "???".to_string();
    };
    let Some(md) = info.module_metadata(module) else {
        return "???".to_string();
    };
    if token == MD_TYPEDEF_NIL || token == 0 {
        return "???".to_string();
    }
    let mut used = 0usize;
    metadata_class_name(info, &md, token, Some(&args), &mut used, depth).unwrap_or_else(|| "???".to_string())
}

/// CLRProfiler's `GetClassName`: nested classes joined with `.`, the
/// generic arity suffix replaced by the argument names.
fn metadata_class_name(
    info: &Info,
    md: &MetaData,
    token: u32,
    args: Option<&[usize]>,
    used: &mut usize,
    depth: u32,
) -> Option<String> {
    let (own, flags, _) = md.type_def_props(token)?;
    let mut name = if flags & TD_VISIBILITY_MASK >= TD_NESTED_PUBLIC && depth <= MAX_DEPTH {
        let outer = md.enclosing_class(token)?;
        let outer_name = metadata_class_name(info, md, outer, args, used, depth + 1)?;
        format!("{outer_name}.{own}")
    } else {
        own
    };
    if let Some(tick) = name.find('`') {
        let count: usize = name[tick + 1..].chars().take_while(|c| c.is_ascii_digit()).collect::<String>().parse().unwrap_or(0);
        name.truncate(tick);
        if count > 0 {
            name.push('<');
            for i in *used..*used + count {
                if i != *used {
                    name.push(',');
                }
                name.push_str(&type_arg_name(info, args, i, false, depth));
            }
            name.push('>');
            *used += count;
        }
    }
    Some(name)
}

fn type_arg_name(info: &Info, args: Option<&[usize]>, index: usize, method: bool, depth: u32) -> String {
    if let Some(&class) = args.and_then(|a| a.get(index)) {
        if class != 0 {
            return class_name(info, class, depth + 1);
        }
    }
    let start = if method { 'M' } else { 'T' };
    if index <= 6 {
        char::from_u32(start as u32 + index as u32).unwrap_or('?').to_string()
    } else {
        format!("{start}{index}")
    }
}

fn element_type_name(et: u32) -> &'static str {
    match et {
        0x02 => "System.Boolean",
        0x03 => "System.Char",
        0x04 => "System.SByte",
        0x05 => "System.Byte",
        0x06 => "System.Int16",
        0x07 => "System.UInt16",
        0x08 => "System.Int32",
        0x09 => "System.UInt32",
        0x0a => "System.Int64",
        0x0b => "System.UInt64",
        0x0c => "System.Single",
        0x0d => "System.Double",
        0x0e => "System.String",
        0x0f => "System.IntPtr",
        0x11 => "struct",
        0x12 => "class",
        0x14 | 0x1d => "System.Array",
        0x18 => "int_ptr",
        0x19 => "unsigned int_ptr",
        0x1c => "System.Object",
        _ => "<UNKNOWN>",
    }
}

/// CLRProfiler's finalizability rule: walking from the class towards
/// `System.Object` (which is not examined), a class that overrides
/// `Finalize()` makes the answer true and one that declares a new
/// `Finalize()` slot makes it false; the class nearest the root decides.
fn is_finalizable(info: &Info, class: usize) -> bool {
    let mut result = false;
    let mut current = class;
    for _ in 0..64 {
        let Some((module, token, parent, _)) = info.class_info(current) else { return result };
        if parent == 0 {
            return result;
        }
        if let Some(md) = info.module_metadata(module) {
            match finalize_method(&md, token) {
                Some(attr) if attr & MD_NEW_SLOT == 0 => result = true,
                Some(_) => result = false,
                None => {}
            }
        }
        current = parent;
    }
    result
}

/// The attributes of the class's own instance, virtual, parameterless
/// `Finalize`, if it declares one.
fn finalize_method(md: &MetaData, class_token: u32) -> Option<u32> {
    for m in md.methods_named(class_token, "Finalize") {
        let Some((_, _, attr, _)) = md.method_props(m) else { continue };
        if attr & MD_STATIC == 0 && attr & MD_VIRTUAL != 0 && md.param_count(m) == Some(0) {
            return Some(attr);
        }
    }
    None
}

/// A function's name (`Class::Method`), signature and module.
pub struct FunctionName {
    /// `Class::Method`.
    pub name: String,
    /// `[static ]ret (arg arg)`.
    pub signature: String,
    /// The runtime's module id (0 when unknown).
    pub module: usize,
}

/// Names a function as CLRProfiler's `GetFunctionProperties` does.
pub fn function_name(info: &Info, func: usize) -> FunctionName {
    let unknown = || FunctionName { name: "UNKNOWN::UNKNOWN".into(), signature: "void ( )".into(), module: 0 };
    let Some((md, token)) = info.function_metadata(func) else {
        return unknown();
    };
    let Some((class_token, method, attr, sig)) = md.method_props(token) else {
        return unknown();
    };
    let (class, module, method_args) = match info.function_info(func) {
        Some((c, m, _, a)) => (c, m, a),
        None => (0, 0, Vec::new()),
    };
    let (class_name, class_args) = if class != 0 {
        let args = info.class_info(class).map(|c| c.3).unwrap_or_default();
        (self::class_name(info, class, 0), args)
    } else {
        let mut used = 0;
        (metadata_class_name(info, &md, class_token, None, &mut used, 0).unwrap_or_else(|| "UNKNOWN".into()), Vec::new())
    };
    let name = format!("{class_name}::{method}");
    let ctx = SigContext { info, md: &md, class_args: &class_args, method_args: &method_args };
    let signature = ctx.method_signature(&sig, attr & MD_STATIC != 0);
    FunctionName { name, signature, module }
}

struct SigContext<'a> {
    info: &'a Info,
    md: &'a MetaData,
    class_args: &'a [usize],
    method_args: &'a [usize],
}

/// Reads a compressed unsigned integer (ECMA-335 II.23.2).
fn uncompress(sig: &[u8], pos: &mut usize) -> Option<u32> {
    let b0 = *sig.get(*pos)? as u32;
    if b0 & 0x80 == 0 {
        *pos += 1;
        Some(b0)
    } else if b0 & 0xC0 == 0x80 {
        let b1 = *sig.get(*pos + 1)? as u32;
        *pos += 2;
        Some(((b0 & 0x3f) << 8) | b1)
    } else if b0 & 0xE0 == 0xC0 {
        let b = sig.get(*pos + 1..*pos + 4)?;
        *pos += 4;
        Some(((b0 & 0x1f) << 24) | ((b[0] as u32) << 16) | ((b[1] as u32) << 8) | b[2] as u32)
    } else {
        None
    }
}

fn uncompress_token(sig: &[u8], pos: &mut usize) -> Option<u32> {
    let v = uncompress(sig, pos)?;
    const KINDS: [u32; 4] = [0x0200_0000, 0x0100_0000, 0x1b00_0000, 0x7200_0000];
    Some((v >> 2) | KINDS[(v & 3) as usize])
}

impl SigContext<'_> {
    fn method_signature(&self, sig: &[u8], is_static: bool) -> String {
        let mut pos = 0;
        let Some(conv) = uncompress(sig, &mut pos) else { return "void ( )".into() };
        let mut ret = String::new();
        const CONV_NAMES: [&str; 8] =
            ["", "unmanaged cdecl ", "unmanaged stdcall ", "unmanaged thiscall ", "unmanaged fastcall ", "vararg ", "<error> ", "<error> "];
        if conv & 7 != 0 {
            ret.push_str(CONV_NAMES[(conv & 7) as usize]);
            ret.push(' ');
        }
        let generic_count = if conv & 0x10 != 0 { uncompress(sig, &mut pos).unwrap_or(0) } else { 0 };
        let arg_count = uncompress(sig, &mut pos).unwrap_or(0);
        self.element(sig, &mut pos, &mut ret, 0);
        if generic_count > 0 && generic_count < 65536 {
            ret.push_str(" <");
            for i in 0..generic_count as usize {
                if i > 0 {
                    ret.push(',');
                }
                ret.push_str(&type_arg_name(self.info, Some(self.method_args), i, true, 0));
            }
            ret.push('>');
        }
        if ret.is_empty() {
            ret.push_str("void");
        }
        let mut params = Vec::new();
        for _ in 0..arg_count.min(256) {
            if pos >= sig.len() {
                break;
            }
            let mut p = String::new();
            self.element(sig, &mut pos, &mut p, 0);
            params.push(p);
        }
        // The reader ends a signature at its first `)`, and a line at any
        // control byte: keep both out of the parts.
        let clean = |s: &str| s.replace(')', "]").replace(|c: char| (c as u32) < 0x20 || c == '+', " ");
        format!("{}{} ({})", if is_static { "static " } else { "" }, clean(&ret), clean(&params.join(" ")))
    }

    fn type_token_name(&self, token: u32) -> String {
        match token & 0xff00_0000 {
            0x0200_0000 => self.md.type_def_props(token).map(|t| t.0).unwrap_or_default(),
            0x0100_0000 => self.md.type_ref_name(token).unwrap_or_default(),
            _ => String::new(),
        }
    }

    fn element(&self, sig: &[u8], pos: &mut usize, out: &mut String, depth: u32) {
        if depth > 16 {
            return;
        }
        let Some(&et) = sig.get(*pos) else { return };
        *pos += 1;
        let simple = match et {
            0x01 => "void",
            0x02 => "bool",
            0x03 => "wchar",
            0x04 => "int8",
            0x05 => "unsigned int8",
            0x06 => "int16",
            0x07 => "unsigned int16",
            0x08 => "int32",
            0x09 => "unsigned int32",
            0x0a => "int64",
            0x0b => "unsigned int64",
            0x0c => "float32",
            0x0d => "float64",
            0x18 => "int_ptr",
            0x19 => "unsigned int_ptr",
            0x1c => "Object",
            0x0e => "String",
            0x16 => "refany",
            _ => "",
        };
        if !simple.is_empty() {
            out.push_str(simple);
            return;
        }
        match et {
            0x11 | 0x12 => {
                if let Some(tok) = uncompress_token(sig, pos) {
                    out.push_str(&self.type_token_name(tok));
                }
            }
            0x1f | 0x20 => {
                // A custom modifier: skip it and read the modified type.
                let _ = uncompress_token(sig, pos);
                self.element(sig, pos, out, depth + 1);
            }
            0x1d => {
                self.element(sig, pos, out, depth + 1);
                out.push_str("[]");
            }
            0x14 => {
                self.element(sig, pos, out, depth + 1);
                let rank = uncompress(sig, pos).unwrap_or(0);
                let sizes = uncompress(sig, pos).unwrap_or(0);
                for _ in 0..sizes.min(64) {
                    let _ = uncompress(sig, pos);
                }
                let bounds = uncompress(sig, pos).unwrap_or(0);
                for _ in 0..bounds.min(64) {
                    let _ = uncompress(sig, pos);
                }
                if rank == 0 || rank >= 65536 {
                    out.push_str("[?]");
                } else {
                    out.push('[');
                    for _ in 1..rank {
                        out.push(',');
                    }
                    out.push(']');
                }
            }
            0x45 => {
                self.element(sig, pos, out, depth + 1);
                out.push_str("pinned");
            }
            0x0f => {
                self.element(sig, pos, out, depth + 1);
                out.push('*');
            }
            0x10 => {
                self.element(sig, pos, out, depth + 1);
                out.push('&');
            }
            0x13 | 0x1e => {
                let index = uncompress(sig, pos).unwrap_or(0) as usize;
                let method = et == 0x1e;
                let args = if method { self.method_args } else { self.class_args };
                out.push_str(&type_arg_name(self.info, Some(args), index, method, depth));
            }
            0x15 => {
                // A generic instantiation (CLRProfiler prints <UNKNOWN> and
                // loses its place; we print the instantiation).
                let mut generic = String::new();
                self.element(sig, pos, &mut generic, depth + 1);
                if let Some(tick) = generic.find('`') {
                    generic.truncate(tick);
                }
                out.push_str(&generic);
                let count = uncompress(sig, pos).unwrap_or(0);
                out.push('<');
                for i in 0..count.min(64) {
                    if i > 0 {
                        out.push(',');
                    }
                    self.element(sig, pos, out, depth + 1);
                }
                out.push('>');
            }
            0x1b => {
                // A function pointer: skip its signature.
                let _ = uncompress(sig, pos);
                let n = uncompress(sig, pos).unwrap_or(0);
                let mut ignored = String::new();
                for _ in 0..=n.min(64) {
                    self.element(sig, pos, &mut ignored, depth + 1);
                }
                out.push_str("fnptr");
            }
            _ => out.push_str("<UNKNOWN>"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_integers() {
        let mut p = 0;
        assert_eq!(uncompress(&[0x03], &mut p), Some(3));
        p = 0;
        assert_eq!(uncompress(&[0x80, 0x80], &mut p), Some(0x80));
        assert_eq!(p, 2);
        p = 0;
        assert_eq!(uncompress(&[0xC0, 0x00, 0x40, 0x00], &mut p), Some(0x4000));
        p = 0;
        // TypeRef row 0x12 (encoded as (0x12 << 2) | 1).
        assert_eq!(uncompress_token(&[0x49], &mut p), Some(0x0100_0012));
    }

    #[test]
    fn element_names() {
        assert_eq!(element_type_name(0x05), "System.Byte");
        assert_eq!(element_type_name(0x0e), "System.String");
    }
}
