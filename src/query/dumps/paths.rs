//! Shortest paths from a root to objects of a type (breadth-first from a
//! virtual root that references every strong root).

use super::graph::DumpGraph;
use super::roots::RootRef;
use super::table::PerType;
use super::DumpIndex;
use crate::format::TypeId;
use crate::model::Model;
use serde::Serialize;

const NONE: u32 = u32::MAX;

/// One object on a path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PathStep {
    /// Its address.
    pub address: u64,
    /// Type id.
    pub type_id: i32,
    /// Its name.
    pub name: String,
    /// Its size.
    pub size: u32,
}

/// A shortest path from a root to one object of the type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DumpPath {
    /// The root it starts from (the first strong root, in log order, that
    /// names the first object).
    pub root: RootRef,
    /// The objects from the root's object to the target, inclusive.
    pub steps: Vec<PathStep>,
}

/// Paths to a type in one dump.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PathReport {
    /// The dump.
    pub index: DumpIndex,
    /// What was asked for.
    pub pattern: String,
    /// Whether the pattern matched type names exactly (else: as a
    /// substring).
    pub exact: bool,
    /// The types that matched: (id, name).
    pub types: Vec<(i32, String)>,
    /// Reachable objects of those types.
    pub reachable: u64,
    /// Unreachable objects of those types (no path).
    pub unreachable: u64,
    /// The shortest paths, shortest first (ties in breadth-first order), at
    /// most `max`.
    pub paths: Vec<DumpPath>,
}

/// Breadth-first parents from the virtual root: `parent[v]` is the node `v`
/// was first reached from (`NONE` when unreachable), and the visiting order.
pub(crate) fn bfs(graph: &DumpGraph) -> (Vec<u32>, Vec<u32>) {
    let root = graph.root();
    let mut parent = vec![NONE; graph.objects() + 1];
    let mut order = Vec::with_capacity(graph.objects() + 1);
    parent[root as usize] = root;
    order.push(root);
    let mut head = 0;
    while let Some(&v) = order.get(head) {
        head += 1;
        for &w in graph.graph.successors(v) {
            if parent[w as usize] == NONE {
                parent[w as usize] = v;
                order.push(w);
            }
        }
    }
    (parent, order)
}

/// Shortest paths from any strong root to objects whose type name is
/// `pattern` (or, if no name is equal, contains it), at most `max`; `None`
/// if there is no such dump.
pub fn paths_to(model: &Model, index: DumpIndex, pattern: &str, max: usize) -> Option<PathReport> {
    let graph = DumpGraph::build(model, index)?;
    let name = |t: i32| model.type_name(TypeId(t));
    // Which type ids match, decided once per type.
    let mut wanted: PerType<u8> = PerType::new(graph.types.iter().copied());
    let mut types = Vec::new();
    let mut exact = true;
    for pass in [true, false] {
        for &t in &graph.types {
            let s = wanted.slot(t);
            if *s == 0 {
                let n = name(t);
                let hit = if pass { n == pattern } else { n.contains(pattern) };
                *s = if hit { 2 } else { 1 };
                if hit {
                    types.push((t, n.into_owned()));
                }
            }
        }
        if !types.is_empty() || !pass {
            break;
        }
        exact = false;
        wanted = PerType::new(graph.types.iter().copied());
    }
    types.sort();
    let (parent, order) = bfs(&graph);
    let is_wanted = |v: u32, w: &mut PerType<u8>| graph.types.get(v as usize).is_some_and(|&t| *w.slot(t) == 2);
    let mut reachable = 0u64;
    let mut paths = Vec::new();
    for &v in order.iter().skip(1) {
        if !is_wanted(v, &mut wanted) {
            continue;
        }
        reachable += 1;
        if paths.len() >= max {
            continue;
        }
        let mut chain = vec![v];
        let mut x = v;
        while parent[x as usize] != graph.root() {
            x = parent[x as usize];
            chain.push(x);
        }
        chain.reverse();
        let first = chain[0];
        let Some((_, root)) = graph.roots.iter().find(|(o, _)| *o == first) else { continue };
        let steps = chain
            .iter()
            .map(|&o| {
                let t = graph.types[o as usize];
                PathStep {
                    address: graph.addresses[o as usize],
                    type_id: t,
                    name: name(t).into_owned(),
                    size: graph.sizes[o as usize],
                }
            })
            .collect();
        paths.push(DumpPath { root: RootRef::of(model, root), steps });
    }
    let total = (0..graph.objects() as u32).filter(|&v| is_wanted(v, &mut wanted)).count() as u64;
    Some(PathReport {
        index,
        pattern: pattern.to_string(),
        exact,
        types,
        reachable,
        unreachable: total - reachable,
        paths,
    })
}
