//! Retained sizes: the bytes that would be freed if an object went away,
//! i.e. the bytes of every object it dominates (itself included), from a
//! virtual root that references every strong root.

use super::dominators::{dominators, DominatorTree};
use super::graph::{Csr, DumpGraph};
use super::table::{DumpTypeRow, PerType};
use super::DumpIndex;
use crate::format::TypeId;
use crate::model::Model;
use serde::Serialize;

/// Retained bytes per node of a dump graph (the virtual root's entry is
/// every reachable object's bytes; unreachable objects have 0).
pub fn retained_sizes(graph: &DumpGraph, tree: &DominatorTree) -> Vec<u64> {
    let mut retained = vec![0u64; graph.objects() + 1];
    for &v in tree.preorder() {
        if let Some(&s) = graph.sizes.get(v as usize) {
            retained[v as usize] = s as u64;
        }
    }
    for &v in tree.preorder().iter().skip(1).rev() {
        if let Some(d) = tree.idom(v) {
            retained[d as usize] += retained[v as usize];
        }
    }
    retained
}

/// One type's retained size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RetainedType {
    /// Type id.
    pub type_id: i32,
    /// Its name.
    pub name: String,
    /// Reachable objects of the type.
    pub objects: u64,
    /// Their own bytes.
    pub bytes: u64,
    /// Bytes of every object dominated by an instance of the type, each
    /// counted once (instances dominated by another instance are inside
    /// that one's figure).
    pub retained: u64,
}

/// One object's retained size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RetainedObject {
    /// Its address.
    pub address: u64,
    /// Type id.
    pub type_id: i32,
    /// Its name.
    pub name: String,
    /// Its own bytes.
    pub size: u32,
    /// Bytes it retains (its own included).
    pub retained: u64,
    /// Its immediate dominator's address (`None`: only the roots together
    /// hold it).
    pub dominator: Option<u64>,
}

/// A dump's retained sizes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RetainedReport {
    /// The dump.
    pub index: DumpIndex,
    /// Objects in the dump.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Objects reachable from a strong root.
    pub reachable_objects: u64,
    /// Their bytes.
    pub reachable_bytes: u64,
    /// What the virtual root retains (equals `reachable_bytes`).
    pub root_retained: u64,
    /// Objects no strong root reaches.
    pub unreachable_objects: u64,
    /// Their bytes.
    pub unreachable_bytes: u64,
    /// Unreachable objects per type, by bytes.
    pub unreachable_types: Vec<DumpTypeRow>,
    /// Strong roots naming an object of the dump.
    pub roots: u64,
    /// References naming no object of the dump (left out).
    pub dangling_references: u64,
    /// Types by retained bytes (largest first), at most `top`.
    pub types: Vec<RetainedType>,
    /// Objects by retained bytes (largest first), at most `top`.
    pub top_objects: Vec<RetainedObject>,
}

/// Reachable objects of one group, their bytes and what they retain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct GroupRetained {
    /// Reachable objects of the group.
    pub objects: u64,
    /// Their own bytes.
    pub bytes: u64,
    /// Bytes of every object dominated by an instance of the group, each
    /// counted once.
    pub retained: u64,
    /// What the group's instances dominated by the virtual root alone
    /// retain: each reachable object is under exactly one such instance,
    /// so these add up to the reachable bytes over all groups.
    pub top_level: u64,
}

/// Per group (`group[v]` for object `v`, below `groups`): retained bytes
/// counted once (a DFS over the dominator tree keeps, per group, how many
/// instances are on the current path) and the top-level share.
pub(crate) fn retained_per_group(
    graph: &DumpGraph,
    tree: &DominatorTree,
    retained: &[u64],
    group: &[u32],
    groups: usize,
) -> Vec<GroupRetained> {
    let n = graph.objects();
    let mut acc = vec![GroupRetained::default(); groups];
    let mut depth = vec![0u32; groups];
    let edges: Vec<(u32, u32)> = tree.preorder().iter().filter_map(|&v| tree.idom(v).map(|d| (d, v))).collect();
    let children = Csr::from_edges(n + 1, &edges);
    let root = graph.root();
    for &c in children.successors(root) {
        if let Some(&g) = group.get(c as usize) {
            acc[g as usize].top_level += retained[c as usize];
        }
    }
    // (node, entered): the first visit counts the node, the second leaves it.
    let mut stack: Vec<(u32, bool)> = vec![(root, false)];
    while let Some((v, left)) = stack.pop() {
        let g = group.get(v as usize).map(|&g| g as usize);
        if left {
            if let Some(g) = g {
                depth[g] -= 1;
            }
            continue;
        }
        if let Some(g) = g {
            let a = &mut acc[g];
            a.objects += 1;
            a.bytes += graph.sizes[v as usize] as u64;
            if depth[g] == 0 {
                a.retained += retained[v as usize];
            }
            depth[g] += 1;
        }
        stack.push((v, true));
        for &c in children.successors(v) {
            stack.push((c, false));
        }
    }
    acc
}

/// Per type: [`retained_per_group`] with one group per type id.
pub(crate) fn retained_per_type(graph: &DumpGraph, tree: &DominatorTree, retained: &[u64]) -> PerType<(u64, u64, u64)> {
    let mut acc: PerType<(u64, u64, u64)> = PerType::new(graph.types.iter().copied());
    let group: Vec<u32> = graph.types.iter().map(|&t| acc.index(t) as u32).collect();
    for (k, g) in retained_per_group(graph, tree, retained, &group, acc.len()).into_iter().enumerate() {
        if let Some(slot) = acc.at(k) {
            *slot = (g.objects, g.bytes, g.retained);
        }
    }
    acc
}

/// Retained sizes of a dump: totals, unreachable objects, the `top` types
/// and objects by retained bytes; `None` if there is no such dump.
pub fn retained(model: &Model, index: DumpIndex, top: usize) -> Option<RetainedReport> {
    let graph = DumpGraph::build(model, index)?;
    let tree = dominators(&graph.graph, graph.root());
    let sizes = retained_sizes(&graph, &tree);
    let n = graph.objects();
    let name = |t: i32| model.type_name(TypeId(t)).into_owned();

    let mut unreachable: PerType<(u64, u64)> = PerType::new(graph.types.iter().copied());
    let (mut un_objects, mut un_bytes, mut bytes) = (0u64, 0u64, 0u64);
    for v in 0..n {
        bytes += graph.sizes[v] as u64;
        if !tree.is_reachable(v as u32) {
            let s = unreachable.slot(graph.types[v]);
            s.0 += 1;
            s.1 += graph.sizes[v] as u64;
            un_objects += 1;
            un_bytes += graph.sizes[v] as u64;
        }
    }
    let mut unreachable_types: Vec<DumpTypeRow> = unreachable
        .entries()
        .filter(|(_, (k, _))| *k > 0)
        .map(|(t, (objects, bytes))| DumpTypeRow { type_id: t, name: name(t), objects, bytes })
        .collect();
    unreachable_types.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.type_id.cmp(&b.type_id)));

    let mut types: Vec<RetainedType> = retained_per_type(&graph, &tree, &sizes)
        .entries()
        .filter(|(_, (k, _, _))| *k > 0)
        .map(|(t, (objects, bytes, retained))| RetainedType { type_id: t, name: name(t), objects, bytes, retained })
        .collect();
    types.sort_by(|a, b| b.retained.cmp(&a.retained).then(a.type_id.cmp(&b.type_id)));
    types.truncate(top);

    let mut order: Vec<u32> = (0..n as u32).filter(|&v| tree.is_reachable(v)).collect();
    let by_retained = |a: &u32, b: &u32| sizes[*b as usize].cmp(&sizes[*a as usize]).then(a.cmp(b));
    if order.len() > top && top > 0 {
        order.select_nth_unstable_by(top - 1, by_retained);
    }
    order.truncate(top);
    order.sort_by(by_retained);
    let top_objects = order
        .iter()
        .map(|&v| RetainedObject {
            address: graph.addresses[v as usize],
            type_id: graph.types[v as usize],
            name: name(graph.types[v as usize]),
            size: graph.sizes[v as usize],
            retained: sizes[v as usize],
            dominator: tree.idom(v).and_then(|d| graph.addresses.get(d as usize).copied()),
        })
        .collect();

    let root_retained = sizes[n];
    Some(RetainedReport {
        index,
        objects: n as u64,
        bytes,
        reachable_objects: (n as u64) - un_objects,
        reachable_bytes: bytes - un_bytes,
        root_retained,
        unreachable_objects: un_objects,
        unreachable_bytes: un_bytes,
        unreachable_types,
        roots: graph.roots.len() as u64,
        dangling_references: graph.dangling_references,
        types,
        top_objects,
    })
}
