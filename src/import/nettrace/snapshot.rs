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
use crate::eventpipe::Bulk;
use crate::format::address_index::{AddressIndex, ReferenceFinder};
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

    /// Drops the walk read so far; whether there was one.
    pub fn leave_out(&mut self) -> bool {
        let was = !self.walk.is_empty();
        self.walk = Walk::default();
        was
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

    /// `GC/BulkRootEdge`, read in place.
    pub fn root_edges(&mut self, b: &Bulk<'_>) {
        let (address, kind, flag, id) =
            (b.member("RootedNodeAddress"), b.member("GCRootKind"), b.member("GCRootFlag"), b.member("GCRootID"));
        let roots = (0..b.len())
            .map(|i| {
                let kind = root_kind(kind.map_or(99, |m| b.get(i, m)));
                (b.get_or_zero(i, address), kind, b.get_or_zero(i, flag) & 0xF, b.get_or_zero(i, id))
            })
            .collect();
        self.walk.add_roots(Self::bulk_index(b), roots);
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

    /// `GC/BulkNode`, read in place.
    pub fn nodes(&mut self, b: &Bulk<'_>) {
        let align = self.alignment.max(1);
        let (address, size, type_id, edges) = (b.member("Address"), b.member("Size"), b.member("TypeID"), b.member("EdgeCount"));
        let nodes = (0..b.len()).map(|i| WalkNode {
            address: b.get_or_zero(i, address),
            size: b.get_or_zero(i, size).div_ceil(align).saturating_mul(align).min(i32::MAX as u64) as u32,
            type_handle: b.get_or_zero(i, type_id),
            edge_count: b.get_or_zero(i, edges).min(u64::from(u32::MAX)) as u32,
        });
        self.walk.add_nodes(Self::bulk_index(b), nodes);
    }

    /// `GC/BulkEdge`, read in place.
    pub fn edges(&mut self, b: &Bulk<'_>) {
        let value = b.member("Value");
        self.walk.add_edges(Self::bulk_index(b), (0..b.len()).map(|i| b.get_or_zero(i, value)));
    }

    /// The batch number of a bulk event read in place.
    fn bulk_index(b: &Bulk<'_>) -> u32 {
        b.head("Index").unwrap_or(0).min(u64::from(u32::MAX)) as u32
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
        let unnamed_roots = unnamed.into_iter().filter_map(|i| joined.addresses.get(i as usize)).map(|&a| (a, 0, ROOT_UNNAMED as u64, 0));
        joined.roots.extend(unnamed_roots.collect::<Vec<_>>());
        let g = joined.gaps;
        self.gaps.missing_nodes += g.missing_nodes;
        self.gaps.missing_edges += g.missing_edges;
        self.gaps.unplaced_edges += g.unplaced_edges;
        self.gaps.missing_roots += g.missing_roots;
        self.gaps.duplicate_batches += g.duplicate_batches;

        // Type ids, in first-use order; each node's type handle is
        // replaced by its log type id (a handful of types for millions of
        // nodes: the latest few are remembered, before the map is asked).
        let mut ids: HashMap<u64, i32> = HashMap::new();
        let mut recent = [(u64::MAX, 0i32); 4];
        for t in joined.types.iter_mut() {
            let h = *t;
            let id = match recent.iter().find(|r| r.0 == h) {
                Some(r) => r.1,
                None => {
                    let id = match ids.get(&h) {
                        Some(&id) => id,
                        None => {
                            let name = self.type_names.get(&h).or_else(|| type_name_of_allocation.get(&h)).cloned().unwrap_or_default();
                            let id = log.type_id(h, || name);
                            ids.insert(h, id);
                            id
                        }
                    };
                    recent.rotate_right(1);
                    recent[0] = (h, id);
                    id
                }
            };
            *t = id as u32 as u64;
        }
        Some(Dump { joined })
    }
}

/// A joined heap walk with its types defined, to be given as `e` and `o`
/// records.
pub(super) struct Dump {
    /// The walk, its `types` column holding the log's type ids (as `u32`
    /// bits).
    joined: Joined,
}

impl Dump {
    /// Gives the dump's records: the roots, then the objects.
    pub fn write(self, log: &mut LogText<'_>) {
        let Dump { joined } = self;
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
        for (i, (&address, (&type_id, &size))) in joined.addresses.iter().zip(joined.types.iter().zip(&joined.sizes)).enumerate() {
            refs.clear();
            refs.extend(joined.refs_of(i).iter().map(|&r| Address(r)));
            log.record(&Record::HeapObject(HeapObject {
                address: Address(address),
                type_id: TypeId(type_id as u32 as i32),
                size,
                refs: List::Items(&refs),
            }));
        }
    }
}

/// No node there.
const NO_NODE: u32 = u32::MAX;

/// The nodes of a joined walk to root as unnamed: a minimal set from which
/// every node that the walk's strong roots do not reach is reached.
///
/// The references are turned into node positions once, in node order
/// (4 bytes a reference for the time of the call; see [`AddressIndex`]),
/// and the searches then follow positions only.
fn unnamed_of(j: &Joined) -> Vec<u32> {
    let n = j.len();
    let index = AddressIndex::new(&j.addresses);
    let mut finder = ReferenceFinder::new(&index, &j.addresses);
    let mut targets: Vec<u32> = Vec::with_capacity(j.refs.len());
    for i in 0..n {
        targets.extend(j.refs_of(i).iter().enumerate().map(|(k, &a)| finder.find(a, i, k).unwrap_or(NO_NODE)));
    }
    let children = |v: usize| {
        let range = j.ref_range(v);
        targets.get(range).unwrap_or(&[]).iter().filter(|&&t| t != NO_NODE).map(|&t| t as usize)
    };
    let roots: Vec<usize> = j
        .roots
        .iter()
        .filter(|r| r.2 & ROOT_WEAK as u64 == 0)
        .filter_map(|r| index.find(&j.addresses, r.0, n / 2))
        .map(|t| t as usize)
        .collect();
    drop(index);
    let mut reached = reached_from(n, children, roots);
    unnamed_roots(n, children, |_| true, &mut reached)
}

/// The nodes (below `n`) that `roots` reach through `children`.
///
/// A sweep from the last node down, not a plain depth-first walk: a
/// reached node's children below it are met later in the sweep, and only
/// those above it (already passed) are followed at once, as far as nodes
/// above the sweep go. Each node's children are read once either way,
/// but the sweep reads most of them in node order: a walk's objects
/// mostly reference their neighbours, and older objects at lower
/// addresses, where a depth-first walk waits on a cache miss at every
/// step.
fn reached_from<I: Iterator<Item = usize>>(n: usize, children: impl Fn(usize) -> I, roots: Vec<usize>) -> Vec<bool> {
    let mut reached = vec![false; n];
    for r in roots {
        if let Some(slot) = reached.get_mut(r) {
            *slot = true;
        }
    }
    // (A child above the sweep without children of its own, such as an
    // array of bytes, is only marked: nothing is kept to follow it.)
    let mut above: Vec<usize> = Vec::new();
    let visit = |u: usize, v: usize, reached: &mut [bool], above: &mut Vec<usize>| {
        for c in children(u).filter(|&c| c < n) {
            if !std::mem::replace(&mut reached[c], true) && c > v && children(c).next().is_some() {
                above.push(c);
            }
        }
    };
    for v in (0..n).rev() {
        if !reached[v] {
            continue;
        }
        visit(v, v, &mut reached, &mut above);
        while let Some(u) = above.pop() {
            visit(u, v, &mut reached, &mut above);
        }
    }
    reached
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unnamed_roots_of_a_walk_cover_what_the_roots_do_not_reach() {
        // 0x10 (rooted) -> 0x20; 0x30 -> 0x40 -> 0x30 (a cycle nothing
        // names), 0x50 -> 0x10; one reference to no node.
        let j = Joined {
            roots: vec![(0x10, 1, 0, 0)],
            addresses: vec![0x10, 0x20, 0x30, 0x40, 0x50],
            types: vec![1; 5],
            sizes: vec![24; 5],
            ref_start: vec![0, 1, 2, 3, 4],
            refs: vec![0x20, 0x99, 0x40, 0x30, 0x10],
            gaps: WalkGaps::default(),
        };
        assert_eq!(unnamed_of(&j), vec![2, 4]);
    }

    proptest::proptest! {
        #[test]
        fn the_sweep_reaches_what_a_depth_first_walk_reaches(
            n in 1usize..40,
            edges in proptest::collection::vec((0usize..40, 0usize..41), 0..100),
            roots in proptest::collection::vec(0usize..41, 0..5),
        ) {
            let mut succ = vec![Vec::new(); n];
            for &(a, b) in edges.iter().filter(|e| e.0 < n) {
                succ[a].push(b);
            }
            let children = |v: usize| succ[v].clone().into_iter();
            let mut want = vec![false; n];
            let mut todo: Vec<usize> = roots.iter().copied().filter(|&r| r < n).collect();
            while let Some(v) = todo.pop() {
                if !std::mem::replace(&mut want[v], true) {
                    todo.extend(children(v).filter(|&c| c < n));
                }
            }
            proptest::prop_assert_eq!(reached_from(n, children, roots), want);
        }
    }
}
