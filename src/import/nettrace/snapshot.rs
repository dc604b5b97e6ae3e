//! Heap snapshots: the runtime's heap walk (`GC/BulkNode`, `GC/BulkEdge`,
//! `GC/BulkRootEdge`, `GC/BulkRootStaticVar`, with `Type/BulkType` for
//! the type names; what `dotnet-gcdump` asks the runtime for) to a
//! CLRProfiler heap dump: `e` root lines, then one `o` line per object with
//! the objects it references.
//!
//! Nodes and their edges come in separate batches, in the same order: the
//! first node's `EdgeCount` edges come first. Nodes wait for their edges;
//! the dump's text is kept until the GC that walked the heap ends, so that
//! every type is named (a `Type/BulkType` may come after the nodes that use
//! it) and defined before the dump's first line.

use super::fields::{member_string, member_u64, Fields};
use super::log_text::{dec, LogText};
use crate::format::hex_lower;
use std::collections::{HashMap, VecDeque};

/// One node waiting for its edges.
struct Node {
    address: u64,
    size: u64,
    type_handle: u64,
    edges_left: u64,
    refs: Vec<u64>,
}

/// The heap snapshot being read.
#[derive(Default)]
pub(super) struct Snapshot {
    /// Object sizes are rounded up to this (the pointer size): the heap
    /// walk reports an array's size without the padding the GC heap gives
    /// it (an `int[239]` as 980 bytes where it takes 984), as the
    /// profiling API's `GetObjectSize2` does not.
    pub alignment: u64,
    /// Runtime type handle -> name, from `Type/BulkType`.
    pub type_names: HashMap<u64, String>,
    roots: Vec<u8>,
    objects: Vec<u8>,
    waiting: VecDeque<Node>,
    /// Type handles the objects use, in first-use order.
    used_types: Vec<u64>,
    used: HashMap<u64, ()>,
    pub nodes: u64,
    pub roots_count: u64,
    /// Edges that came with no node waiting for them.
    pub stray_edges: u64,
}

/// CLRProfiler's root kinds: 0 other, 1 stack, 2 finalizer, 3 handle.
fn root_kind(gc_root_kind: u64) -> i32 {
    match gc_root_kind {
        0 => 1,
        1 => 2,
        2 => 3,
        _ => 0,
    }
}

impl Snapshot {
    /// A snapshot whose object sizes are rounded up to `alignment`.
    pub fn aligned(alignment: u64) -> Snapshot {
        Snapshot { alignment, ..Snapshot::default() }
    }

    /// Whether a walk is in progress (nodes or roots read and not written).
    pub fn active(&self) -> bool {
        self.nodes > 0 || self.roots_count > 0 || !self.waiting.is_empty()
    }

    /// `Type/BulkType`.
    pub fn types(&mut self, f: &Fields<'_>) {
        for v in f.structs("Values") {
            if let Some(id) = member_u64(v, "TypeID") {
                let name = member_string(v, "Name");
                self.type_names.entry(id).or_insert(name);
            }
        }
    }

    /// `GC/BulkRootEdge`.
    pub fn root_edges(&mut self, f: &Fields<'_>) {
        for v in f.structs("Values") {
            let address = member_u64(v, "RootedNodeAddress").unwrap_or(0);
            let kind = root_kind(member_u64(v, "GCRootKind").unwrap_or(99));
            let flags = member_u64(v, "GCRootFlag").unwrap_or(0) & 0xF;
            let id = member_u64(v, "GCRootID").unwrap_or(0);
            self.root(address, kind, flags, id);
        }
    }

    /// `GC/BulkRootStaticVar`: statics are roots of kind "other".
    pub fn static_roots(&mut self, f: &Fields<'_>) {
        for v in f.structs("Values") {
            let address = member_u64(v, "ObjectID").unwrap_or(0);
            let id = member_u64(v, "GCRootID").unwrap_or(0);
            self.root(address, 0, 0, id);
        }
    }

    fn root(&mut self, address: u64, kind: i32, flags: u64, id: u64) {
        if address == 0 {
            return;
        }
        self.roots_count += 1;
        let r = &mut self.roots;
        r.extend_from_slice(b"e ");
        hex_lower(r, address);
        r.push(b' ');
        dec(r, i64::from(kind));
        r.push(b' ');
        hex_lower(r, flags);
        r.push(b' ');
        hex_lower(r, id);
        r.push(b'\n');
    }

    /// `GC/BulkNode`.
    pub fn nodes(&mut self, f: &Fields<'_>) {
        for v in f.structs("Values") {
            let align = self.alignment.max(1);
            let node = Node {
                address: member_u64(v, "Address").unwrap_or(0),
                size: member_u64(v, "Size").unwrap_or(0).div_ceil(align).saturating_mul(align),
                type_handle: member_u64(v, "TypeID").unwrap_or(0),
                edges_left: member_u64(v, "EdgeCount").unwrap_or(0),
                refs: Vec::new(),
            };
            self.nodes += 1;
            if self.used.insert(node.type_handle, ()).is_none() {
                self.used_types.push(node.type_handle);
            }
            self.waiting.push_back(node);
            self.flush_complete();
        }
    }

    /// `GC/BulkEdge`: each edge goes to the first node still short of
    /// edges.
    pub fn edges(&mut self, f: &Fields<'_>) {
        for v in f.structs("Values") {
            let target = member_u64(v, "Value").unwrap_or(0);
            match self.waiting.iter_mut().find(|n| n.edges_left > 0) {
                Some(n) => {
                    n.edges_left -= 1;
                    if target != 0 {
                        n.refs.push(target);
                    }
                }
                None => self.stray_edges += 1,
            }
            self.flush_complete();
        }
    }

    /// Writes the nodes at the front that have all their edges. Type ids
    /// are written as handles for now and given log ids at the end.
    fn flush_complete(&mut self) {
        while self.waiting.front().is_some_and(|n| n.edges_left == 0) {
            if let Some(n) = self.waiting.pop_front() {
                self.write_node(&n);
            }
        }
    }

    fn write_node(&mut self, n: &Node) {
        let o = &mut self.objects;
        o.extend_from_slice(b"o ");
        hex_lower(o, n.address);
        o.push(b' ');
        // The type handle stands in until the log's ids are known.
        o.push(b'#');
        hex_lower(o, n.type_handle);
        o.push(b' ');
        dec(o, n.size.min(i32::MAX as u64) as i64);
        for r in &n.refs {
            o.push(b' ');
            hex_lower(o, *r);
        }
        o.push(b'\n');
    }

    /// The dump's text (roots, then objects), with the type lines it
    /// needs written to `log` first; `None` when no walk was read. Nodes
    /// still short of edges (the trace lost some) are written with the
    /// edges they have.
    pub fn take(&mut self, log: &mut LogText, type_name_of_allocation: &HashMap<u64, String>) -> Option<Vec<u8>> {
        if !self.active() {
            return None;
        }
        while let Some(n) = self.waiting.pop_front() {
            self.write_node(&n);
        }
        let mut ids = HashMap::with_capacity(self.used_types.len());
        for &h in &self.used_types {
            let name = self.type_names.get(&h).or_else(|| type_name_of_allocation.get(&h)).cloned().unwrap_or_default();
            ids.insert(h, log.type_id(h, || name));
        }
        let mut text = std::mem::take(&mut self.roots);
        if text.is_empty() {
            // A heap dump starts at an `e` line: a walk without roots gets
            // one that names no object.
            text.extend_from_slice(b"e 0x0 0 0x0 0x0\n");
        }
        let objects = std::mem::take(&mut self.objects);
        // Replace each `#handle` with the log's type id.
        let mut at = 0;
        while at < objects.len() {
            let end = memchr::memchr(b'\n', &objects[at..]).map_or(objects.len(), |k| at + k + 1);
            let line = &objects[at..end];
            match memchr::memchr(b'#', line) {
                Some(h) => {
                    let rest = &line[h + 1..];
                    let stop = memchr::memchr(b' ', rest).unwrap_or(rest.len());
                    let handle = std::str::from_utf8(&rest[2.min(stop)..stop])
                        .ok()
                        .and_then(|s| u64::from_str_radix(s, 16).ok())
                        .unwrap_or(0);
                    text.extend_from_slice(&line[..h]);
                    dec(&mut text, i64::from(ids.get(&handle).copied().unwrap_or(0)));
                    text.extend_from_slice(&rest[stop..]);
                }
                None => text.extend_from_slice(line),
            }
            at = end;
        }
        self.nodes = 0;
        self.roots_count = 0;
        self.used_types.clear();
        self.used.clear();
        Some(text)
    }
}
