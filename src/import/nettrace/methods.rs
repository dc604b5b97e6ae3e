//! Code addresses to methods: the trace's own method events (JIT-compiled
//! methods as they load, the rundown's list at the end, ReadyToRun entry
//! points), read in a first pass so that every stack, early or late, is
//! named.

use super::fields::Fields;
use crate::eventpipe::{Event, EventKind};
use std::collections::HashMap;

/// A method the trace describes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Method {
    pub start: u64,
    /// Code bytes; 0 when the trace gives only the entry point.
    pub size: u32,
    /// `Namespace::Name`, as CLRProfiler's profiler writes names.
    pub name: String,
    /// The signature up to its first `)`.
    pub signature: String,
    pub module: u64,
}

/// The methods of a trace, by code address.
#[derive(Default)]
pub(super) struct MethodMap {
    methods: Vec<Method>,
    /// Sorted by start once the first pass ends.
    sorted: bool,
    seen: HashMap<u64, usize>,
    /// Module id -> file name.
    pub modules: HashMap<u64, String>,
}

/// Entry points (no size) are taken to cover at most this many bytes.
const ENTRY_POINT_REACH: u64 = 64 << 10;

impl MethodMap {
    /// Whether events of `kind` name methods or modules (the ones
    /// [`Self::observe`] takes).
    pub fn names(kind: &EventKind) -> bool {
        Self::is_verbose(&kind.name)
            || matches!(
                kind.name.as_str(),
                "Method/R2RGetEntryPoint" | "Loader/ModuleLoad" | "Loader/ModuleDCStart" | "Loader/ModuleDCStop"
            )
    }

    fn is_verbose(name: &str) -> bool {
        matches!(name, "Method/LoadVerbose" | "Method/DCStartVerbose" | "Method/DCStopVerbose" | "Method/UnloadVerbose")
    }

    /// Takes what a first-pass event says about methods and modules.
    pub fn observe(&mut self, e: &Event<'_>) {
        let name = e.name();
        let verbose = Self::is_verbose(name);
        if verbose {
            if let Some(f) = Fields::of(e) {
                let start = f.u64("MethodStartAddress");
                let size = f.u64("MethodSize").unwrap_or(0).min(u64::from(u32::MAX)) as u32;
                if let Some(start) = start.filter(|&s| s != 0) {
                    self.add(Method {
                        start,
                        size,
                        name: method_name(&f.string("MethodNamespace"), &f.string("MethodName")),
                        signature: signature(&f.string("MethodSignature")),
                        module: f.u64("ModuleID").unwrap_or(0),
                    });
                }
            }
        } else if name == "Method/R2RGetEntryPoint" {
            if let Some(f) = Fields::of(e) {
                if let Some(start) = f.u64("EntryPoint").filter(|&s| s != 0) {
                    self.add(Method {
                        start,
                        size: 0,
                        name: method_name(&f.string("MethodNamespace"), &f.string("MethodName")),
                        signature: signature(&f.string("MethodSignature")),
                        module: 0,
                    });
                }
            }
        } else if matches!(name, "Loader/ModuleLoad" | "Loader/ModuleDCStart" | "Loader/ModuleDCStop") {
            if let Some(f) = Fields::of(e) {
                if let Some(id) = f.u64("ModuleID") {
                    let path = f.string("ModuleILPath");
                    if !path.is_empty() {
                        self.modules.insert(id, path);
                    }
                }
            }
        }
    }

    fn add(&mut self, m: Method) {
        // The same method is reported again by the rundown: keep the first
        // report with a size.
        match self.seen.get(&m.start) {
            Some(&k) => {
                if self.methods[k].size == 0 && m.size != 0 {
                    self.methods[k] = m;
                }
            }
            None => {
                self.seen.insert(m.start, self.methods.len());
                self.methods.push(m);
                self.sorted = false;
            }
        }
    }

    /// Sorts the methods by address (after the first pass).
    pub fn seal(&mut self) {
        self.methods.sort_by_key(|m| m.start);
        self.seen.clear();
        self.sorted = true;
    }

    /// The method whose code holds `ip`: the one starting at or below it
    /// whose size covers it, or, for an entry point without a size, the
    /// nearest below it within [`ENTRY_POINT_REACH`] and before the next
    /// method.
    pub fn find(&self, ip: u64) -> Option<usize> {
        debug_assert!(self.sorted);
        let k = self.methods.partition_point(|m| m.start <= ip);
        if k == 0 {
            return None;
        }
        let m = &self.methods[k - 1];
        // `ip - start`, not `start + size`: a method claimed at the top of the
        // address space must not overflow.
        let covers = if m.size > 0 { ip - m.start < u64::from(m.size) } else { ip - m.start < ENTRY_POINT_REACH };
        covers.then_some(k - 1)
    }

    /// A method by its index.
    pub fn get(&self, k: usize) -> &Method {
        &self.methods[k]
    }

    /// Methods known.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.methods.len()
    }
}

/// `Namespace::Name` (the namespace is the declaring type's full name).
fn method_name(namespace: &str, name: &str) -> String {
    let name = if name.is_empty() { "?" } else { name };
    if namespace.is_empty() {
        name.to_string()
    } else {
        format!("{namespace}::{name}")
    }
}

/// The signature as a CLRProfiler `f` record reads it: up to and including
/// its first `)`, with a `(` before it.
fn signature(sig: &str) -> String {
    let sig: String = sig.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    match (sig.find('('), sig.find(')')) {
        (Some(open), Some(close)) if open < close => sig[..=close].trim().to_string(),
        _ => format!("{} ()", sig.trim()).trim_start().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(start: u64, size: u32, name: &str) -> Method {
        Method { start, size, name: name.into(), signature: "()".into(), module: 0 }
    }

    #[test]
    fn finds_by_range_and_entry_point() {
        let mut map = MethodMap::default();
        map.add(m(0x2000, 0x100, "B"));
        map.add(m(0x1000, 0x10, "A"));
        map.add(m(0x9000, 0, "R2R"));
        map.add(m(0x2000, 0x100, "B again"));
        map.seal();
        assert_eq!(map.find(0x1000).map(|k| map.get(k).name.as_str()), Some("A"));
        assert_eq!(map.find(0x100f).map(|k| map.get(k).name.as_str()), Some("A"));
        assert_eq!(map.find(0x1010), None);
        assert_eq!(map.find(0x20ff).map(|k| map.get(k).name.as_str()), Some("B"));
        assert_eq!(map.find(0x9400).map(|k| map.get(k).name.as_str()), Some("R2R"));
        assert_eq!(map.find(0x9000 + ENTRY_POINT_REACH), None);
        assert_eq!(map.find(0xfff), None);
        assert_eq!(map.len(), 3);
    }

    #[test]
    fn signatures_end_at_the_first_parenthesis() {
        assert_eq!(signature("instance void  (class System.String)"), "instance void  (class System.String)");
        assert_eq!(signature("!!0 (class System.Func`2<!!0,bool>) extra)"), "!!0 (class System.Func`2<!!0,bool>)");
        assert_eq!(signature("void"), "void ()");
        assert_eq!(signature(""), "()");
        assert_eq!(method_name("System.String", "Concat"), "System.String::Concat");
    }
}
