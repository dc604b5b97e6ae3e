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
    for (&v, r) in tree.preorder().iter().zip(retained_by_number(graph, tree)) {
        if let Some(slot) = retained.get_mut(v as usize) {
            *slot = r;
        }
    }
    retained
}

/// Retained bytes by preorder number (a node's position in
/// [`DominatorTree::preorder`]; the virtual root, number 0, first): the
/// nodes' sizes gathered once, then summed up the tree over
/// [`DominatorTree::idom_numbers`], which reads it in order.
pub(crate) fn retained_by_number(graph: &DumpGraph, tree: &DominatorTree) -> Vec<u64> {
    let up = tree.idom_numbers();
    let mut by_number: Vec<u64> = tree.preorder().iter().map(|&v| graph.sizes.get(v as usize).map_or(0, |&s| u64::from(s))).collect();
    for i in (1..by_number.len().min(up.len())).rev() {
        let d = up[i] as usize;
        by_number[d] += by_number[i];
    }
    by_number
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

/// Per group (`group(v)` for object `v`, below `groups`): retained bytes
/// counted once and the top-level share, from the retained bytes by
/// preorder number ([`retained_by_number`]).
///
/// An instance's bytes count unless another instance of its group
/// dominates it. The dominator tree is numbered in preorder without a
/// walk of it, from the nodes each one dominates (a node's subtree is then
/// the interval `[number, number + dominated)`), over the depth-first
/// numbers of [`DominatorTree::idom_numbers`] (`up[i]`, below `i`):
///
/// ```text
/// a[i] = nodes i dominates           (bottom-up: i from the last down)
/// i upwards, p = up[i]:
///     number(i) = a[p]; a[p] += a[i]; a[i] = number(i) + 1
///     (a[p] is p's next free number; at the end a[i] is i's interval end)
/// ```
///
/// Then, in tree preorder, an instance is dominated by another of its
/// group exactly when it lies inside the interval of the group's latest
/// undominated instance.
pub(crate) fn retained_per_group(
    graph: &DumpGraph,
    tree: &DominatorTree,
    by_number: &[u64],
    group: impl Fn(usize) -> Option<u32>,
    groups: usize,
) -> Vec<GroupRetained> {
    let pre = tree.preorder();
    let up = tree.idom_numbers();
    let r = pre.len().min(up.len());
    let mut acc = vec![GroupRetained::default(); groups];
    let mut a = vec![1u32; r];
    for i in (1..r).rev() {
        a[up[i] as usize] += a[i];
    }
    // `order[k]`: the depth-first number of the node numbered `k` in tree
    // preorder (the root, 0, is both).
    let mut order = vec![0u32; r];
    if let Some(first) = a.first_mut() {
        *first = 1;
    }
    for i in 1..r {
        let p = up[i] as usize;
        let number = a[p];
        if let Some(slot) = order.get_mut(number as usize) {
            *slot = i as u32;
        }
        a[p] = number + a[i];
        a[i] = number + 1;
    }
    // The end of each group's latest undominated instance's interval (the
    // root is number 0: no object's interval ends there).
    let mut cover = vec![0u32; groups];
    for (k, &i) in order.iter().enumerate() {
        let v = pre[i as usize] as usize;
        let Some(g) = group(v) else { continue };
        let (Some(slot), Some(end)) = (acc.get_mut(g as usize), cover.get_mut(g as usize)) else { continue };
        let r = by_number[i as usize];
        slot.objects += 1;
        slot.bytes += u64::from(graph.sizes[v]);
        if k as u32 >= *end {
            slot.retained += r;
            *end = a[i as usize];
        }
        if i != 0 && up[i as usize] == 0 {
            slot.top_level += r;
        }
    }
    acc
}

/// Per type: [`retained_per_group`] with one group per type id.
pub(crate) fn retained_per_type(graph: &DumpGraph, tree: &DominatorTree, by_number: &[u64]) -> PerType<(u64, u64, u64)> {
    let mut acc: PerType<(u64, u64, u64)> = PerType::new(graph.types.iter().copied());
    let group = |v: usize| graph.types.get(v).map(|&t| acc.index(t) as u32);
    let per = retained_per_group(graph, tree, by_number, group, acc.len());
    for (k, g) in per.into_iter().enumerate() {
        if let Some(slot) = acc.at(k) {
            *slot = (g.objects, g.bytes, g.retained);
        }
    }
    acc
}

/// Retained sizes of a dump: totals, unreachable objects, the `top` types
/// and objects by retained bytes; `None` if there is no such dump.
pub fn retained(model: &Model, index: DumpIndex, top: usize) -> Option<RetainedReport> {
    let mut graph = DumpGraph::build(model, index)?;
    let tree = dominators(&graph.graph, graph.root());
    // The edges are done with: their memory goes before the sums'.
    graph.graph = Csr::default();
    let by_number = retained_by_number(&graph, &tree);
    let pre = tree.preorder();
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

    let mut types: Vec<RetainedType> = retained_per_type(&graph, &tree, &by_number)
        .entries()
        .filter(|(_, (k, _, _))| *k > 0)
        .map(|(t, (objects, bytes, retained))| RetainedType { type_id: t, name: name(t), objects, bytes, retained })
        .collect();
    types.sort_by(|a, b| b.retained.cmp(&a.retained).then(a.type_id.cmp(&b.type_id)));
    types.truncate(top);

    let top_objects = top_numbers(&by_number, pre, top)
        .iter()
        .map(|&i| {
            let v = pre[i as usize] as usize;
            RetainedObject {
                address: graph.addresses[v],
                type_id: graph.types[v],
                name: name(graph.types[v]),
                size: graph.sizes[v],
                retained: by_number[i as usize],
                dominator: tree.idom(v as u32).and_then(|d| graph.addresses.get(d as usize).copied()),
            }
        })
        .collect();

    let root_retained = by_number.first().copied().unwrap_or(0);
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

/// The preorder numbers of the `top` objects by retained bytes (largest
/// first, then by node), the virtual root (number 0) left out: kept
/// `top` at a time from a buffer of twice as many, not sorted whole.
fn top_numbers(by_number: &[u64], pre: &[u32], top: usize) -> Vec<u32> {
    let r = by_number.len().min(pre.len()) as u32;
    let order = |a: &u32, b: &u32| by_number[*b as usize].cmp(&by_number[*a as usize]).then(pre[*a as usize].cmp(&pre[*b as usize]));
    let cap = top.saturating_mul(2).max(1024);
    let mut kept: Vec<u32> = Vec::with_capacity(cap.min(r as usize));
    let keep = |kept: &mut Vec<u32>| {
        if kept.len() > top && top > 0 {
            kept.select_nth_unstable_by(top - 1, order);
        }
        kept.truncate(top);
    };
    for i in 1..r {
        kept.push(i);
        if kept.len() >= cap {
            keep(&mut kept);
        }
    }
    keep(&mut kept);
    kept.sort_by(order);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Per group, the plain way: each reachable instance walks up its
    /// dominators for another instance of its group.
    fn naive(graph: &DumpGraph, tree: &DominatorTree, retained: &[u64], group: &[u32], groups: usize) -> Vec<GroupRetained> {
        let mut acc = vec![GroupRetained::default(); groups];
        for v in 0..graph.objects() as u32 {
            if !tree.is_reachable(v) {
                continue;
            }
            let g = group[v as usize];
            let a = &mut acc[g as usize];
            a.objects += 1;
            a.bytes += u64::from(graph.sizes[v as usize]);
            let mut up = tree.idom(v);
            let mut dominated = false;
            while let Some(d) = up.filter(|&d| d != graph.root()) {
                dominated |= group[d as usize] == g;
                up = tree.idom(d);
            }
            if !dominated {
                a.retained += retained[v as usize];
            }
            if tree.idom(v) == Some(graph.root()) {
                a.top_level += retained[v as usize];
            }
        }
        acc
    }

    /// A graph of `n` objects and its virtual root from edges and roots.
    fn graph_of(n: usize, edges: &[(u32, u32)], roots: &[u32], sizes: &[u32]) -> DumpGraph {
        let mut all: Vec<(u32, u32)> = edges.iter().copied().filter(|&(a, b)| (a as usize) < n && (b as usize) < n).collect();
        all.extend(roots.iter().filter(|&&r| (r as usize) < n).map(|&r| (n as u32, r)));
        DumpGraph {
            index: DumpIndex(0),
            graph: Csr::from_edges(n + 1, &all),
            addresses: (0..n as u64).map(|a| 0x1000 + 8 * a).collect(),
            types: vec![0; n],
            sizes: sizes[..n].to_vec(),
            roots: Vec::new(),
            dangling_references: 0,
            dangling_roots: 0,
        }
    }

    proptest! {
        #[test]
        fn retained_bytes_are_the_bytes_of_what_a_node_dominates(
            n in 1usize..40,
            edges in proptest::collection::vec((0u32..40, 0u32..40), 0..90),
            roots in proptest::collection::vec(0u32..40, 1..5),
            sizes in proptest::collection::vec(1u32..100, 40),
        ) {
            let graph = graph_of(n, &edges, &roots, &sizes);
            let tree = dominators(&graph.graph, graph.root());
            let retained = retained_sizes(&graph, &tree);
            for v in 0..=n as u32 {
                let want: u64 = (0..n as u32).filter(|&u| tree.dominates(v, u)).map(|u| u64::from(sizes[u as usize])).sum();
                prop_assert_eq!(retained[v as usize], want, "node {}", v);
            }
            let by_number = retained_by_number(&graph, &tree);
            for (i, &v) in tree.preorder().iter().enumerate() {
                prop_assert_eq!(by_number[i], retained[v as usize]);
            }
        }

        #[test]
        fn the_top_objects_are_the_first_of_all_sorted(
            by_number in proptest::collection::vec(0u64..20, 1..3000),
            top in 0usize..700,
            seed in any::<u64>(),
        ) {
            // Node `pre[i]` of number `i`: distinct, scrambled.
            let r = by_number.len();
            let pre: Vec<u32> = (0..r as u64).map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed) % 1000) as u32 * 4096 + i as u32).collect();
            let mut want: Vec<u32> = (1..r as u32).collect();
            want.sort_by(|a, b| by_number[*b as usize].cmp(&by_number[*a as usize]).then(pre[*a as usize].cmp(&pre[*b as usize])));
            want.truncate(top);
            prop_assert_eq!(top_numbers(&by_number, &pre, top), want);
        }

        #[test]
        fn per_group_figures_equal_a_walk_up_the_dominators(
            n in 1usize..40,
            edges in proptest::collection::vec((0u32..40, 0u32..40), 0..90),
            roots in proptest::collection::vec(0u32..40, 1..5),
            groups in proptest::collection::vec(0u32..4, 40),
            sizes in proptest::collection::vec(1u32..100, 40),
        ) {
            let graph = graph_of(n, &edges, &roots, &sizes);
            let tree = dominators(&graph.graph, graph.root());
            let retained = retained_sizes(&graph, &tree);
            let group = &groups[..n];
            prop_assert_eq!(
                retained_per_group(&graph, &tree, &retained_by_number(&graph, &tree), |v| group.get(v).copied(), 4),
                naive(&graph, &tree, &retained, group, 4)
            );
        }
    }
}
