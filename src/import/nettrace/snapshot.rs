//! Heap snapshots: the runtime's heap walk (`GC/BulkNode`, `GC/BulkEdge`,
//! `GC/BulkRootEdge`, `GC/BulkRootConditionalWeakTableElementEdge`,
//! `GC/BulkRootStaticVar`, with `Type/BulkType` for the type names; what
//! `dotnet-gcdump` asks the runtime for) to a CLRProfiler heap dump: `e`
//! root lines, then one `o` line per object with the objects it
//! references.
//!
//! The batches are kept until the GC that walked the heap ends, then
//! joined by their numbers ([`super::walk`]): nodes, edges and roots
//! arrive in any order. Every object of a walk survived the GC that
//! walked it: objects that no root the walk names reaches (held by the
//! runtime's own references, such as .NET 8's frozen string literals) get
//! unnamed roots (`ROOT_UNNAMED`, the same minimal set a `.gcdump`'s
//! orphans get), never "unreachable". Keeping them also lets every type be named (a
//! `Type/BulkType` may come after the nodes that use it) and defined
//! before the dump's first line.

use super::fields::{member_string, member_u64, Fields};
use super::log_text::LogText;
use super::walk::{Joined, Walk, WalkGaps, WalkNode};
use crate::format::records::{HeapObject, Root, ROOT_UNNAMED, ROOT_WEAK};
use crate::format::{Address, List, Record, TypeId};
use crate::gcdump::orphans::unnamed_roots;
use std::collections::HashMap;

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
    walk: Walk,
    /// Static roots: (root id, the held object's type handle, field name).
    statics: Vec<(u64, u64, String)>,
    /// What the walks read so far could not join, summed.
    pub gaps: WalkGaps,
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

    /// `Type/BulkType`.
    pub fn types(&mut self, f: &Fields<'_>) {
        for v in f.structs("Values") {
            if let Some(id) = member_u64(v, "TypeID") {
                let name = member_string(v, "Name");
                self.type_names.entry(id).or_insert(name);
            }
        }
    }

    /// The static fields that were roots, by root id. The runtime's event
    /// names the field and the type of the object it holds, not the class
    /// that declares it.
    pub fn static_fields(&self) -> Vec<(u64, String)> {
        let mut out: Vec<(u64, String)> = self.statics.iter().map(|(id, _, field)| (*id, field.clone())).collect();
        out.sort();
        out.dedup_by_key(|(id, _)| *id);
        out
    }

    /// The batch number of a bulk event.
    fn index(f: &Fields<'_>) -> u32 {
        f.u64("Index").unwrap_or(0).min(u64::from(u32::MAX)) as u32
    }

    /// `GC/BulkRootEdge`.
    pub fn root_edges(&mut self, f: &Fields<'_>) {
        let roots = f
            .structs("Values")
            .iter()
            .map(|v| {
                let address = member_u64(v, "RootedNodeAddress").unwrap_or(0);
                let kind = root_kind(member_u64(v, "GCRootKind").unwrap_or(99));
                let flags = member_u64(v, "GCRootFlag").unwrap_or(0) & 0xF;
                let id = member_u64(v, "GCRootID").unwrap_or(0);
                (address, kind, flags, id)
            })
            .collect();
        self.walk.add_roots(Self::index(f), roots);
    }

    /// `GC/BulkRootConditionalWeakTableElementEdge`: a dependent handle
    /// (a `ConditionalWeakTable` entry) whose key is alive holds its
    /// value, as a handle.
    pub fn dependent_handles(&mut self, f: &Fields<'_>) {
        let roots = f.structs("Values").iter().filter_map(|v| {
            let key = member_u64(v, "GCKeyNodeID").unwrap_or(0);
            let value = member_u64(v, "GCValueNodeID").unwrap_or(0);
            (key != 0).then(|| (value, 3, 0, member_u64(v, "GCRootID").unwrap_or(0)))
        });
        self.walk.add_other_roots(roots);
    }

    /// `GC/BulkRootStaticVar`: statics are roots of kind "other".
    pub fn static_roots(&mut self, f: &Fields<'_>) {
        for v in f.structs("Values") {
            if let (Some(id), Some(class)) = (member_u64(v, "GCRootID"), member_u64(v, "TypeID")) {
                self.statics.push((id, class, member_string(v, "FieldName")));
            }
        }
        let roots = f.structs("Values").iter().map(|v| {
            let address = member_u64(v, "ObjectID").unwrap_or(0);
            let id = member_u64(v, "GCRootID").unwrap_or(0);
            (address, 0, 0, id)
        });
        self.walk.add_other_roots(roots);
    }

    /// `GC/BulkNode`.
    pub fn nodes(&mut self, f: &Fields<'_>) {
        let align = self.alignment.max(1);
        let nodes = f
            .structs("Values")
            .iter()
            .map(|v| WalkNode {
                address: member_u64(v, "Address").unwrap_or(0),
                size: member_u64(v, "Size").unwrap_or(0).div_ceil(align).saturating_mul(align),
                type_handle: member_u64(v, "TypeID").unwrap_or(0),
                edge_count: member_u64(v, "EdgeCount").unwrap_or(0),
            })
            .collect();
        self.walk.add_nodes(Self::index(f), nodes);
    }

    /// `GC/BulkEdge`.
    pub fn edges(&mut self, f: &Fields<'_>) {
        let edges = f.structs("Values").iter().map(|v| member_u64(v, "Value").unwrap_or(0)).collect();
        self.walk.add_edges(Self::index(f), edges);
    }

    /// The dump (roots, then objects), with the type records it needs
    /// given to `log` first; `None` when no walk was read. What could not
    /// be joined is added to [`Self::gaps`].
    pub fn take<S: std::hash::BuildHasher>(
        &mut self,
        log: &mut LogText<'_>,
        type_name_of_allocation: &HashMap<u64, String, S>,
    ) -> Option<Dump> {
        if self.walk.is_empty() {
            return None;
        }
        let mut joined = std::mem::take(&mut self.walk).join();
        let unnamed = unnamed_of(&joined);
        joined
            .roots
            .extend(unnamed.into_iter().filter_map(|i| joined.nodes.get(i as usize)).map(|n| (n.address, 0, ROOT_UNNAMED as u64, 0)));
        let g = joined.gaps;
        self.gaps.missing_nodes += g.missing_nodes;
        self.gaps.missing_edges += g.missing_edges;
        self.gaps.unplaced_edges += g.unplaced_edges;
        self.gaps.missing_roots += g.missing_roots;
        self.gaps.duplicate_batches += g.duplicate_batches;

        // Type ids, in first-use order.
        let mut ids: HashMap<u64, i32> = HashMap::new();
        for n in &joined.nodes {
            if !ids.contains_key(&n.type_handle) {
                let h = n.type_handle;
                let name = self.type_names.get(&h).or_else(|| type_name_of_allocation.get(&h)).cloned().unwrap_or_default();
                ids.insert(h, log.type_id(h, || name));
            }
        }
        Some(Dump { joined, ids })
    }
}

/// A joined heap walk with its types defined, to be given as `e` and `o`
/// records.
pub(super) struct Dump {
    joined: Joined,
    /// Type handle -> the log's type id.
    ids: HashMap<u64, i32>,
}

impl Dump {
    /// Gives the dump's records: the roots, then the objects.
    pub fn write(self, log: &mut LogText<'_>) {
        let Dump { joined, ids } = self;
        let mut any_root = false;
        for &(address, kind, flags, id) in joined.roots.iter().filter(|r| r.0 != 0) {
            any_root = true;
            let flags = (flags & 0xFFFF_FFFF) as u32 as i32;
            log.record(&Record::Root(Root { address: Address(address), kind, flags, id }));
        }
        if !any_root {
            // A heap dump starts at an `e` record: a walk without roots
            // gets one that names no object.
            log.record(&Record::Root(Root { address: Address(0), kind: 0, flags: 0, id: 0 }));
        }
        let mut refs: Vec<Address> = Vec::new();
        for (i, n) in joined.nodes.iter().enumerate() {
            refs.clear();
            let range = joined.ref_start.get(i).zip(joined.ref_start.get(i + 1)).and_then(|(&a, &b)| joined.refs.get(a..b));
            refs.extend(range.unwrap_or(&[]).iter().map(|&r| Address(r)));
            log.record(&Record::HeapObject(HeapObject {
                address: Address(n.address),
                type_id: TypeId(ids.get(&n.type_handle).copied().unwrap_or(0)),
                size: n.size.min(i32::MAX as u64) as u32,
                refs: List::Items(&refs),
            }));
        }
    }
}

/// The nodes of a joined walk to root as unnamed: a minimal set from which
/// every node that the walk's strong roots do not reach is reached.
fn unnamed_of(j: &Joined) -> Vec<u32> {
    let n = j.nodes.len();
    // Address -> node, by binary search in a sorted copy (16 bytes a node
    // for the time of the call), through a first level of every
    // `BLOCK`th address (1/64 of the copy: it stays in the cache, where a
    // search of the whole copy missed it at each of its ~24 steps).
    const BLOCK: usize = 64;
    let mut by_address: Vec<(u64, u32)> = j.nodes.iter().enumerate().map(|(i, n)| (n.address, i as u32)).collect();
    by_address.sort_unstable();
    let firsts: Vec<u64> = by_address.iter().step_by(BLOCK).map(|e| e.0).collect();
    let find = |a: u64| {
        let block = firsts.partition_point(|&f| f < a).saturating_sub(1);
        let tail = by_address.get(block * BLOCK..).unwrap_or(&[]);
        let run = &tail[..tail.len().min(2 * BLOCK)];
        run.binary_search_by_key(&a, |e| e.0).ok().map(|k| run[k].1 as usize)
    };
    let children = |v: usize| {
        let refs = j.ref_start.get(v).zip(j.ref_start.get(v + 1)).and_then(|(&a, &b)| j.refs.get(a..b)).unwrap_or(&[]);
        refs.iter().filter_map(|&a| find(a))
    };
    let mut reached = vec![false; n];
    let mut todo: Vec<usize> = j.roots.iter().filter(|r| r.2 & ROOT_WEAK as u64 == 0).filter_map(|r| find(r.0)).collect();
    while let Some(v) = todo.pop() {
        if !std::mem::replace(&mut reached[v], true) {
            todo.extend(children(v).filter(|&c| !reached[c]));
        }
    }
    unnamed_roots(n, children, |_| true, &mut reached)
}
