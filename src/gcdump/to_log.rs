//! A [`HeapGraph`] as CLRProfiler log text: one heap dump.
//!
//! ```text
//! z clrprof: heap snapshot from a .gcdump ...   what it is, what it holds
//! t 1 0 UNDEFINED                                 type index k -> type id k + 1
//! ...
//! i 0                                             a tick: the dump's time
//! e 0x... kind flags 0                            roots: the objects under the root node
//! o 0x... typeId size ref...                      one line per object node
//! ```
//!
//! The root node's children are the roots; PerfView groups them under
//! pseudo-nodes (`[.NET Roots]` -> `[other roots]` -> `[strong Handles]`
//! ...). Every object reached from the root through pseudo-nodes only is a
//! root, its kind taken from the innermost group that names one (case
//! ignored): static vars other; local vars or `[Stack]` stack;
//! finalizer groups finalizer; `[COM/WinRT Objects]` and ref-counted
//! handles a ref-counted handle; other handle groups a handle; "pinned"
//! or "pinning" in the name adds the pinning flag. Objects under no such
//! group (a JavaScript heap's roots) are of kind other. Root ids are 0 (a
//! `.gcdump` keeps no handle or frame), except for the objects of a
//! `[static var Type.field]` group: their roots get ids of their own,
//! named by clrprof's `d 0 ID static field` lines (the field only: the
//! file's `Type` is the held object's, not the declaring class's).
//!
//! Objects that no root reaches are held by something the snapshot does
//! not name, never garbage (every object of a snapshot survived its GC):
//! a minimal set of them become roots of kind other with the
//! [`ROOT_UNNAMED`] flag (see `orphans`), so that every object is
//! reached.
//!
//! A graph without objects gets one `e` line at address 0: it starts the
//! dump and names no root.
//!
//! Pseudo-nodes and undefined nodes are not objects: no `o` line, and
//! references to them are left out. Without addresses in the file, objects
//! get distinct, increasing, 8-byte-aligned, non-overlapping addresses in
//! node order from 0x10000.

use super::graph::{HeapGraph, NodeKind};
use super::ids::NodeIndex;
use super::orphans::unnamed_roots;
use crate::format::records::{
    AssemblyLoad, Comment, HeapObject, Root, Tick, TypeDef, ROOT_PINNING, ROOT_REFCOUNTED, ROOT_UNNAMED,
};
use crate::format::{escape_name, Address, List, Record, RecordSink, Style, TextSink, ThreadId, TypeId};

/// Where synthesized addresses start.
const SYNTHETIC_BASE: u64 = 0x10000;

/// Root kind codes of `e` lines.
const OTHER: i32 = 0;
const STACK: i32 = 1;
const FINALIZER: i32 = 2;
const HANDLE: i32 = 3;

/// Appends the graph as a CLRProfiler log to `out`: a `z` line saying where
/// it comes from and what it holds, a `t` line per type (type index `k` is
/// type id `k + 1`; id 0 is reserved), an `i` tick, the roots as `e`
/// lines and one `o` line per object node ([`NodeKind::Object`]) with its
/// references to other objects. `clrprof::model::load` reads it as one
/// heap dump of [`HeapGraph::object_count`] objects and
/// [`HeapGraph::object_bytes`] bytes.
pub fn write_log(graph: &HeapGraph, out: &mut Vec<u8>) {
    let style = if graph.is_64bit() { Style::BITS64 } else { Style::BITS32 };
    write_records(graph, &mut TextSink::new(out, style));
}

/// Gives the graph to `sink` as the records [`write_log`] writes as text
/// (the model's builder takes them straight: `clrprof::model::load_gcdump`).
pub fn write_records(graph: &HeapGraph, sink: &mut dyn RecordSink) {
    let addresses = object_addresses(graph);
    let mut roots = roots(graph);
    let named = roots.len();
    roots.extend(unnamed(graph, &roots).into_iter().map(|n| (n, OTHER, ROOT_UNNAMED)));

    let comment = describe(graph, named, roots.len() - named);
    sink.record(&Record::Comment(Comment { text: &comment }));

    let mut name = String::new();
    for t in graph.types() {
        name.clear();
        let given = graph.type_name(t);
        // A control byte would end the name (or the line) in a log.
        name.extend(given.chars().map(|c| if (c as u32) < 0x20 { ' ' } else { c }));
        if name.is_empty() {
            name.push_str("(unnamed type)");
        }
        let escaped = log_safe_name(escape_name(&name, None));
        let id = TypeId(t.0 as i32 + 1);
        sink.record(&Record::Type(TypeDef { id, finalizable: Some(false), name: &escaped }));
    }

    sink.record(&Record::Tick(Tick { ms: 0 }));
    // Statics the file names get an id of their own, named by a clrprof
    // `d ... static` line before the dump's first `e` line.
    let statics = static_fields(graph);
    let ids: Vec<u64> = roots
        .iter()
        .enumerate()
        .map(|(k, &(n, kind, _))| if kind == OTHER && statics.contains_key(&n) { k as u64 + 1 } else { 0 })
        .collect();
    for (&(n, _, _), &id) in roots.iter().zip(&ids) {
        if let (true, Some(field)) = (id != 0, statics.get(&n)) {
            let text = format!("static {field}");
            sink.record(&Record::AssemblyD(AssemblyLoad { thread: ThreadId(0), assembly: id, name: text.as_bytes() }));
        }
    }
    for (&(n, kind, flags), &id) in roots.iter().zip(&ids) {
        let address = Address(addresses[n.index()]);
        sink.record(&Record::Root(Root { address, kind, flags, id }));
    }
    if roots.is_empty() {
        // A heap dump starts at an `e` line; one at address 0 starts it
        // without naming a root.
        sink.record(&Record::Root(Root { address: Address(0), kind: OTHER, flags: 0, id: 0 }));
    }

    let mut refs: Vec<Address> = Vec::new();
    for n in graph.nodes() {
        if graph.node_kind(n) != NodeKind::Object {
            continue;
        }
        refs.clear();
        refs.extend(graph.children(n).iter().map(|c| addresses[c.index()]).filter(|&a| a != 0).map(Address));
        let object = HeapObject {
            address: Address(addresses[n.index()]),
            type_id: TypeId(graph.node_type(n).0 as i32 + 1),
            size: graph.node_size(n),
            refs: List::Items(&refs),
        };
        sink.record(&Record::HeapObject(object));
    }
}

/// A `t` name as the log's reader scans it: inside `<...>` line ends are
/// read through, so a name with a `<` left open would swallow the next
/// lines. Such a name has its angle brackets escaped (`\<`, `\>`), which
/// the reader decodes back to the same name; so is a leading space.
fn log_safe_name(mut name: Vec<u8>) -> Vec<u8> {
    // Blanks before a name are skipped by the reader: keep a leading one.
    if name.first() == Some(&b' ') {
        name.insert(0, b'\\');
    }
    let mut depth = 0u32;
    for &c in &name {
        match c {
            b'<' => depth += 1,
            b'>' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    if depth == 0 {
        return name;
    }
    let mut out = Vec::with_capacity(name.len() + 8);
    for c in name {
        if c == b'<' || c == b'>' {
            out.push(b'\\');
        }
        out.push(c);
    }
    out
}

/// Each object node's address in the log (0 for nodes that are not
/// objects): the file's, or synthesized.
fn object_addresses(graph: &HeapGraph) -> Vec<u64> {
    let mut next = SYNTHETIC_BASE;
    graph
        .nodes()
        .map(|n| {
            if graph.node_kind(n) != NodeKind::Object {
                return 0;
            }
            match graph.node_address(n) {
                Some(a) => a,
                None => {
                    let a = next;
                    next = next.saturating_add((u64::from(graph.node_size(n)).max(8) + 7) & !7);
                    a
                }
            }
        })
        .collect()
}

/// The objects a static the file names holds (`[static var Type.field]`
/// pseudo-nodes; PerfView's and dotnet-gcdump's `Type` is the held
/// object's type, not the class declaring the field, so only the field is
/// kept), object -> field name; the first name of an object wins.
fn static_fields(graph: &HeapGraph) -> std::collections::HashMap<NodeIndex, String> {
    let mut out = std::collections::HashMap::new();
    for p in graph.nodes() {
        if graph.node_kind(p) != NodeKind::Pseudo {
            continue;
        }
        let name = graph.type_name(graph.node_type(p));
        let Some(inner) = name.strip_prefix("[static var ").and_then(|r| r.strip_suffix(']')) else { continue };
        // The field is the text after the last dot (a field's name has none).
        let field = inner.rsplit('.').next().unwrap_or(inner).trim();
        if field.is_empty() || field.chars().any(|c| (c as u32) < 0x20) {
            continue;
        }
        for &c in graph.children(p) {
            if graph.node_kind(c) == NodeKind::Object {
                out.entry(c).or_insert_with(|| field.to_string());
            }
        }
    }
    out
}

/// The root kind and flags a grouping pseudo-node's name gives, if any.
/// The names are those of dotnet-gcdump and of PerfView's dumpers, old
/// and new (`[local vars]`, `[Pinned local vars]`, `[Stack]`,
/// `[strong Handles]`, `[Strong handles]`, `[StrongHandle]`,
/// `[Pinned handles]`, `[PinnedHandle]`, `[AsyncPinnedHandle]`,
/// `[finalizer Handles]`, `[FinalizerQueue]`, `[COM/WinRT Objects]`,
/// `[RefCountedHandle]`, `[Dependent Handles]`, `[static vars]`, ...).
fn root_kind_of(name: &str) -> Option<(i32, i32)> {
    let n = name.to_ascii_lowercase();
    if !n.starts_with('[') {
        return None;
    }
    let pinned = if n.contains("pinn") { ROOT_PINNING } else { 0 };
    let kind = if n.contains("static var") {
        (OTHER, 0)
    } else if n.contains("local vars") || n == "[stack]" {
        (STACK, pinned)
    } else if n.contains("finaliz") {
        (FINALIZER, 0)
    } else if n.contains("com/winrt") || n.contains("refcounted") {
        (HANDLE, ROOT_REFCOUNTED)
    } else if n.contains("handle") {
        (HANDLE, pinned)
    } else {
        return None;
    };
    Some(kind)
}

/// The objects reached from the root through pseudo-nodes only, each with
/// the root kind and flags of its innermost naming group; in the order
/// of a depth-first walk (each pseudo-node visited once).
fn roots(graph: &HeapGraph) -> Vec<(NodeIndex, i32, i32)> {
    let mut out = Vec::new();
    if graph.node_count() == 0 {
        return out;
    }
    let root = graph.root();
    match graph.node_kind(root) {
        NodeKind::Object => {
            out.push((root, OTHER, 0));
            return out;
        }
        NodeKind::Undefined => return out,
        NodeKind::Pseudo => {}
    }
    let mut seen = vec![false; graph.node_count()];
    seen[root.index()] = true;
    let mut stack = vec![(root, (OTHER, 0))];
    while let Some((p, kind)) = stack.pop() {
        // Pushed in reverse so that groups are walked in the file's order.
        let mut groups = Vec::new();
        for &c in graph.children(p) {
            match graph.node_kind(c) {
                NodeKind::Object => out.push((c, kind.0, kind.1)),
                NodeKind::Pseudo if !seen[c.index()] => {
                    seen[c.index()] = true;
                    let k = root_kind_of(graph.type_name(graph.node_type(c))).unwrap_or(kind);
                    groups.push((c, k));
                }
                _ => {}
            }
        }
        stack.extend(groups.into_iter().rev());
    }
    out
}

/// The objects to root as unnamed: a minimal set from which every object
/// that the named roots do not reach is reached (see `orphans`).
fn unnamed(graph: &HeapGraph, named: &[(NodeIndex, i32, i32)]) -> Vec<NodeIndex> {
    let n = graph.node_count();
    let is_object = |v: usize| graph.node_kind(NodeIndex(v as u32)) == NodeKind::Object;
    let children = |v: usize| graph.children(NodeIndex(v as u32)).iter().map(|c| c.index());
    let mut reached = vec![false; n];
    let mut todo: Vec<usize> = named.iter().map(|r| r.0.index()).collect();
    while let Some(v) = todo.pop() {
        if v < n && !std::mem::replace(&mut reached[v], true) {
            todo.extend(children(v).filter(|&c| is_object(c)));
        }
    }
    unnamed_roots(n, children, is_object, &mut reached).into_iter().map(NodeIndex).collect()
}

/// The first line: where the log comes from and what it holds.
fn describe(graph: &HeapGraph, roots: usize, unnamed: usize) -> Vec<u8> {
    let info = graph.info();
    let mut s = format!("clrprof: heap snapshot transcoded from a .gcdump (GCHeapDump version {}", info.version);
    if let Some(tool) = info.creation_tool.as_deref().filter(|t| !t.is_empty()) {
        s.push_str(&format!(", written by {tool}"));
    }
    s.push(')');
    if let Some(p) = info.process_name.as_deref().filter(|p| !p.is_empty()) {
        s.push_str(&format!(" of process {p} (pid {})", info.process_id));
    }
    s.push_str(&format!(
        ": {} objects, {} bytes, {} types, {} roots, {} unnamed roots (objects no root of the file reaches), {}-bit",
        graph.object_count(),
        graph.object_bytes(),
        graph.type_count(),
        roots,
        unnamed,
        u32::from(graph.pointer_size()) * 8
    ));
    if !graph.has_addresses() {
        s.push_str("; addresses synthesized (the file has none)");
    }
    let sampling = graph.sampling();
    if sampling.is_sampled() {
        s.push_str(&format!(
            "; a sample of the heap (average count multiplier {}, size multiplier {}): counts and sizes are estimates",
            sampling.average_count_multiplier, sampling.average_size_multiplier
        ));
    }
    // Latin-1 text without control bytes.
    s.chars()
        .map(|c| {
            if (c as u32) < 0x20 {
                b' '
            } else if (c as u32) < 0x100 {
                c as u32 as u8
            } else {
                b'?'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_made_safe_for_the_log() {
        assert_eq!(log_safe_name(b"List<Int32>".to_vec()), b"List<Int32>");
        assert_eq!(log_safe_name(b"a>b".to_vec()), b"a>b");
        assert_eq!(log_safe_name(b"Sys<em.Object[]".to_vec()), b"Sys\\<em.Object[]");
        assert_eq!(log_safe_name(b"<<a>".to_vec()), b"\\<\\<a\\>");
        assert_eq!(log_safe_name(b" x".to_vec()), b"\\ x");
        // Read back as the same name, on its own line.
        let log = b"t 1 0 Sys\\<em.Object[]\nt 2 0 \\ B\n";
        let (records, _) = crate::format::read_all(log);
        let names: Vec<String> = records
            .iter()
            .filter_map(|p| match p.record {
                Record::Type(t) => Some(crate::format::scan::decode_name(t.name)),
                _ => None,
            })
            .collect();
        assert_eq!(names, ["Sys<em.Object[]", " B"]);
    }

    #[test]
    fn group_names_give_root_kinds() {
        let cases = [
            ("[local vars]", Some((STACK, 0))),
            ("[Pinned local vars]", Some((STACK, ROOT_PINNING))),
            ("[Stack]", Some((STACK, 0))),
            ("[strong Handles]", Some((HANDLE, 0))),
            ("[Strong handles]", Some((HANDLE, 0))),
            ("[StrongHandle]", Some((HANDLE, 0))),
            ("[pinning Handles]", Some((HANDLE, ROOT_PINNING))),
            ("[Pinned handles]", Some((HANDLE, ROOT_PINNING))),
            ("[AsyncPinnedHandle]", Some((HANDLE, ROOT_PINNING))),
            ("[Dependent Handles]", Some((HANDLE, 0))),
            ("[other Handles]", Some((HANDLE, 0))),
            ("[finalizer Handles]", Some((FINALIZER, 0))),
            ("[FinalizerQueue]", Some((FINALIZER, 0))),
            ("[COM/WinRT Objects]", Some((HANDLE, ROOT_REFCOUNTED))),
            ("[RefCountedHandle]", Some((HANDLE, ROOT_REFCOUNTED))),
            ("[static vars]", Some((OTHER, 0))),
            ("[thread static vars]", Some((OTHER, 0))),
            ("[static var Foo.handle]", Some((OTHER, 0))),
            ("[.NET Roots]", None),
            ("[other roots]", None),
            ("[JS Roots]", None),
            ("System.Runtime.InteropServices.SafeHandle", None),
        ];
        for (name, kind) in cases {
            assert_eq!(root_kind_of(name), kind, "{name}");
        }
    }
}
