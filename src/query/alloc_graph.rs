//! CLRProfiler's Allocation Graph: who allocated what, as a caller -> callee
//! graph weighted by bytes.
//!
//! What is reproduced of CLRProfiler's view (its `BuildAllocationGraph` and
//! the graph form's weights):
//!
//! - Every allocation stack with objects gives one path
//!   `<root> -> outermost function -> ... -> allocating function -> type`,
//!   and every edge on the path gets the stack's bytes (size times objects).
//!   Types are leaf nodes, named by type name (`???? type N` when undefined).
//! - Function nodes are keyed by name, signature and module file name, so
//!   functions the log defines twice with the same three are one node;
//!   undefined functions are `???? function N` with signature
//!   `( ???????? )`.
//! - Recursion: repeated runs in a path are squeezed out (`A B B C` and
//!   `A B A B C` both become `A B C`); a function that still appears twice
//!   after that (`A B A C`) appears the second time as a separate node named
//!   `A(1)` (the third time `A(2)`, ...), as CLRProfiler renames them.
//! - A node's weight is the larger of the bytes coming in and going out
//!   (for the root, the bytes going out: all bytes allocated).
//!
//! Not reproduced: the interactive filters of CLRProfiler's filter form
//! (which types and functions are "interesting"), its level layout and its
//! pixel-based detail setting. Instead, [`AllocationGraph::prune`] drops
//! nodes and edges below a weight. CLRProfiler's `<bottom>` node (every type
//! has an edge to it) is left out: a type's bytes are its `exclusive_bytes`.
//!
//! Weights are conserved: for every node but the root, the bytes coming in
//! equal the bytes going out to functions plus its `exclusive_bytes` (bytes
//! going out to types for a function node, all its bytes for a type node).

use super::alloc_stacks::{function_names, row_bytes, CanonicalPaths, StackWeights};
use super::types::Uncertainty;
use super::Filter;
use crate::format::{FunctionId, TypeId};
use crate::model::{FrameNode, Model};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// What a node stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    /// CLRProfiler's `<root>`: the start of every path.
    Root,
    /// A function (or a renamed recursive occurrence of one).
    Function,
    /// An allocated type (a leaf).
    Type,
}

/// A node of the graph.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GraphNode {
    /// Its number (an index into [`AllocationGraph::nodes`]).
    pub id: u32,
    /// What it is.
    pub kind: NodeKind,
    /// Function name, type name, or `<root>`.
    pub name: String,
    /// A function's signature.
    pub signature: Option<String>,
    /// A function's module file name, when known.
    pub module: Option<String>,
    /// CLRProfiler's weight: the larger of `bytes_in` and `bytes_out`.
    pub bytes: u64,
    /// Objects through it (the larger of in and out, like `bytes`).
    pub count: u64,
    /// Bytes on the edges coming in.
    pub bytes_in: u64,
    /// Bytes on the edges going out.
    pub bytes_out: u64,
    /// Bytes allocated here: on the edges to type nodes for a function, all
    /// its bytes for a type, 0 for the root.
    pub exclusive_bytes: u64,
    /// Objects allocated here (like `exclusive_bytes`).
    pub exclusive_count: u64,
    /// For a sampled trace: the sampled objects and the 95% range of
    /// `bytes` and `count`.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<Uncertainty>,
    /// For a sampled trace: the same for `exclusive_bytes` and
    /// `exclusive_count` (absent when nothing was allocated here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exclusive_range: Option<Uncertainty>,
}

/// An edge caller -> callee (or allocating function -> type).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct GraphEdge {
    /// The caller's node id.
    pub from: u32,
    /// The callee's node id.
    pub to: u32,
    /// Bytes allocated through this call.
    pub bytes: u64,
    /// Objects allocated through this call.
    pub count: u64,
    /// For a sampled trace: the sampled objects and the 95% range.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<Uncertainty>,
}

/// The graph. Nodes are sorted by weight (the root first), edges by bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AllocationGraph {
    /// Bytes allocated (the root's weight).
    pub total_bytes: u64,
    /// Objects allocated.
    pub total_count: u64,
    /// For a sampled trace: the sampled objects and the 95% range of the
    /// totals.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<Uncertainty>,
    /// The nodes.
    pub nodes: Vec<GraphNode>,
    /// The edges.
    pub edges: Vec<GraphEdge>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum VertexKey {
    Root,
    Function { name: String, signature: String, module: Option<String> },
    Type(String),
}

#[derive(Default)]
struct Vertices {
    keys: Vec<VertexKey>,
    index: HashMap<VertexKey, u32>,
}

impl Vertices {
    fn get(&mut self, key: VertexKey) -> u32 {
        if let Some(&v) = self.index.get(&key) {
            return v;
        }
        let v = self.keys.len() as u32;
        self.index.insert(key.clone(), v);
        self.keys.push(key);
        v
    }

    /// The node of the `level`-th repeated occurrence of a function node.
    fn renamed(&mut self, v: u32, level: u32) -> u32 {
        match self.keys.get(v as usize).cloned() {
            Some(VertexKey::Function { name, signature, module }) => {
                self.get(VertexKey::Function { name: format!("{name}({level})"), signature, module })
            }
            _ => v,
        }
    }
}

/// Removes repeated runs from a path and renames what still repeats, as
/// CLRProfiler's graphs do (see the module documentation). `seen` is a
/// scratch array indexed by vertex.
fn squeeze_repetitions(path: &mut Vec<u32>, vertices: &mut Vertices, seen: &mut Vec<u32>) {
    let has_repeat = |p: &[u32], seen: &mut Vec<u32>| {
        let mut repeat = false;
        for &v in p {
            if v as usize >= seen.len() {
                seen.resize(v as usize + 1, u32::MAX);
            }
        }
        for (i, &v) in p.iter().enumerate() {
            let s = seen[v as usize];
            if (s as usize) < i && p.get(s as usize) == Some(&v) {
                repeat = true;
            }
            seen[v as usize] = i as u32;
        }
        for &v in p {
            seen[v as usize] = u32::MAX;
        }
        repeat
    };
    if !has_repeat(path, seen) {
        return;
    }
    // Copy the path onto itself, skipping every run that repeats the run
    // just written (longest run first).
    let n = path.len();
    let (mut k, mut l) = (0usize, 0usize);
    while l < n {
        let mut skip = 0;
        for len in (1..=k.min(n - l)).rev() {
            let mut rep = 0;
            while l + rep + len <= n && path[k - len..k] == path[l + rep..l + rep + len] {
                rep += len;
            }
            if rep > 0 {
                skip = rep;
                break;
            }
        }
        if skip == 0 {
            path[k] = path[l];
            k += 1;
            l += 1;
        } else {
            l += skip;
        }
    }
    path.truncate(k);
    if !has_repeat(path, seen) {
        return;
    }
    // Number the remaining repeats: one more than the previous occurrence.
    let mut level = vec![0u32; path.len()];
    let mut last: HashMap<u32, usize> = HashMap::new();
    for i in 0..path.len() {
        if let Some(&j) = last.get(&path[i]) {
            level[i] = level[j] + 1;
        }
        last.insert(path[i], i);
    }
    for i in 0..path.len() {
        if level[i] > 0 {
            path[i] = vertices.renamed(path[i], level[i]);
        }
    }
}

#[derive(Clone, Copy, Default)]
struct Flow {
    bytes_in: u64,
    count_in: u64,
    bytes_out: u64,
    count_out: u64,
    exclusive_bytes: u64,
    exclusive_count: u64,
    samples_in: u64,
    samples_out: u64,
    exclusive_samples: u64,
}

/// Builds the allocation graph of the objects the filter keeps.
pub fn allocation_graph(model: &Model, filter: &Filter) -> AllocationGraph {
    let weights = StackWeights::new(model, filter);
    let mut paths = CanonicalPaths::new(model);
    let mut scratch: Vec<FrameNode> = Vec::new();
    // Bytes and objects per (path, type): the per-path work is done once.
    let mut per_path: BTreeMap<(u32, TypeId), (u64, u64, u64)> = BTreeMap::new();
    for (row, count) in weights.iter() {
        let Some((ty, bytes)) = row_bytes(model, row, count) else { continue };
        let p = paths.of_row(model, row, &mut scratch);
        let e = per_path.entry((p, ty)).or_insert((0, 0, 0));
        e.0 = e.0.saturating_add(bytes);
        e.1 += count;
        e.2 += weights.samples(row);
    }

    let mut vertices = Vertices::default();
    let root = vertices.get(VertexKey::Root);
    let mut function_vertex: HashMap<i32, u32> = HashMap::new();
    let mut type_vertex: HashMap<TypeId, u32> = HashMap::new();
    let mut path_vertices: HashMap<u32, Vec<u32>> = HashMap::new();
    let mut edges: HashMap<(u32, u32), (u64, u64, u64)> = HashMap::new();
    let mut functions: Vec<FunctionId> = Vec::new();
    let mut seen: Vec<u32> = Vec::new();
    let (mut total_bytes, mut total_count, mut total_samples) = (0u64, 0u64, 0u64);
    for (&(p, ty), &(bytes, count, samples)) in &per_path {
        total_bytes = total_bytes.saturating_add(bytes);
        total_count += count;
        total_samples += samples;
        let tv = *type_vertex.entry(ty).or_insert_with(|| vertices.get(VertexKey::Type(model.type_name(ty).into_owned())));
        let vp = path_vertices.entry(p).or_insert_with(|| {
            paths.functions(p, &mut functions);
            let mut vp: Vec<u32> = functions
                .iter()
                .map(|f| {
                    *function_vertex.entry(f.0).or_insert_with(|| {
                        let (name, signature, module) = function_names(model, *f);
                        vertices.get(VertexKey::Function { name, signature, module })
                    })
                })
                .collect();
            squeeze_repetitions(&mut vp, &mut vertices, &mut seen);
            vp
        });
        let mut prev = root;
        for &v in vp.iter().chain(std::iter::once(&tv)) {
            let e = edges.entry((prev, v)).or_insert((0, 0, 0));
            e.0 = e.0.saturating_add(bytes);
            e.1 += count;
            e.2 += samples;
            prev = v;
        }
    }

    // Flows per vertex.
    let n = vertices.keys.len();
    let mut flow = vec![Flow::default(); n];
    let is_type = |v: u32| matches!(vertices.keys[v as usize], VertexKey::Type(_));
    for (&(a, b), &(bytes, count, samples)) in &edges {
        let fa = &mut flow[a as usize];
        fa.bytes_out = fa.bytes_out.saturating_add(bytes);
        fa.count_out += count;
        fa.samples_out += samples;
        if is_type(b) && a != root {
            fa.exclusive_bytes = fa.exclusive_bytes.saturating_add(bytes);
            fa.exclusive_count += count;
            fa.exclusive_samples += samples;
        }
        let fb = &mut flow[b as usize];
        fb.bytes_in = fb.bytes_in.saturating_add(bytes);
        fb.count_in += count;
        fb.samples_in += samples;
    }
    let mut nodes: Vec<GraphNode> = (0..n as u32)
        .filter(|&v| v == root || flow[v as usize].bytes_in > 0 || flow[v as usize].count_in > 0)
        .map(|v| {
            let f = flow[v as usize];
            let (kind, name, signature, module) = match &vertices.keys[v as usize] {
                VertexKey::Root => (NodeKind::Root, "<root>".to_string(), None, None),
                VertexKey::Function { name, signature, module } => {
                    (NodeKind::Function, name.clone(), Some(signature.clone()), module.clone())
                }
                VertexKey::Type(name) => (NodeKind::Type, name.clone(), None, None),
            };
            let (exclusive_bytes, exclusive_count, exclusive_samples) = if kind == NodeKind::Type {
                (f.bytes_in, f.count_in, f.samples_in)
            } else {
                (f.exclusive_bytes, f.exclusive_count, f.exclusive_samples)
            };
            // The larger side's figures and the samples behind them.
            let (bytes, count) = (f.bytes_in.max(f.bytes_out), f.count_in.max(f.count_out));
            let samples = if f.bytes_out > f.bytes_in { f.samples_out } else { f.samples_in };
            GraphNode {
                id: v,
                kind,
                name,
                signature,
                module,
                bytes,
                count,
                bytes_in: f.bytes_in,
                bytes_out: f.bytes_out,
                exclusive_bytes,
                exclusive_count,
                uncertainty: Uncertainty::of_tally(model, samples, bytes, count),
                exclusive_range: Uncertainty::of_tally(model, exclusive_samples, exclusive_bytes, exclusive_count),
            }
        })
        .collect();
    let edges: Vec<GraphEdge> = edges
        .into_iter()
        .map(|((from, to), (bytes, count, samples))| GraphEdge {
            from,
            to,
            bytes,
            count,
            uncertainty: Uncertainty::of_tally(model, samples, bytes, count),
        })
        .collect();
    nodes.sort_by(|a, b| {
        (a.kind != NodeKind::Root)
            .cmp(&(b.kind != NodeKind::Root))
            .then(b.bytes.cmp(&a.bytes))
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.signature.cmp(&b.signature))
            .then_with(|| a.module.cmp(&b.module))
            .then(a.kind.cmp(&b.kind))
    });
    let uncertainty = Uncertainty::of_tally(model, total_samples, total_bytes, total_count);
    renumber(AllocationGraph { total_bytes, total_count, uncertainty, nodes, edges })
}

/// Gives nodes the ids of their positions, maps the edges, drops edges whose
/// ends are gone, and sorts the edges by bytes.
fn renumber(mut g: AllocationGraph) -> AllocationGraph {
    let max = g.nodes.iter().map(|n| n.id).max().map_or(0, |m| m as usize + 1);
    let mut new_id = vec![u32::MAX; max];
    for (i, n) in g.nodes.iter_mut().enumerate() {
        new_id[n.id as usize] = i as u32;
        n.id = i as u32;
    }
    let map = |v: u32| new_id.get(v as usize).copied().filter(|&x| x != u32::MAX);
    g.edges = g
        .edges
        .iter()
        .filter_map(|e| Some(GraphEdge { from: map(e.from)?, to: map(e.to)?, ..*e }))
        .collect();
    g.edges.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.from.cmp(&b.from)).then(a.to.cmp(&b.to)));
    g
}

impl AllocationGraph {
    /// Keeps the root, the nodes weighing at least `min_bytes` and the edges
    /// of at least `min_bytes` between kept nodes (the node figures are not
    /// changed).
    pub fn prune(&self, min_bytes: u64) -> AllocationGraph {
        let nodes: Vec<GraphNode> =
            self.nodes.iter().filter(|n| n.kind == NodeKind::Root || n.bytes >= min_bytes).cloned().collect();
        let edges: Vec<GraphEdge> = self.edges.iter().filter(|e| e.bytes >= min_bytes).copied().collect();
        renumber(AllocationGraph {
            total_bytes: self.total_bytes,
            total_count: self.total_count,
            uncertainty: self.uncertainty,
            nodes,
            edges,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn squeezed(p: &[u32]) -> Vec<String> {
        let mut vs = Vertices::default();
        for i in 0..10 {
            vs.get(VertexKey::Function { name: ((b'A' + i as u8) as char).to_string(), signature: String::new(), module: None });
        }
        let mut p = p.to_vec();
        squeeze_repetitions(&mut p, &mut vs, &mut Vec::new());
        p.iter()
            .map(|&v| match &vs.keys[v as usize] {
                VertexKey::Function { name, .. } => name.clone(),
                _ => String::new(),
            })
            .collect()
    }

    #[test]
    fn recursion_is_squeezed_then_renamed() {
        assert_eq!(squeezed(&[0, 1, 2]), ["A", "B", "C"]);
        assert_eq!(squeezed(&[0, 1, 1, 1, 2]), ["A", "B", "C"]);
        assert_eq!(squeezed(&[0, 1, 0, 1, 2]), ["A", "B", "C"]);
        assert_eq!(squeezed(&[0, 1, 2, 1, 2, 1, 2, 3]), ["A", "B", "C", "D"]);
        assert_eq!(squeezed(&[0, 1, 0, 2]), ["A", "B", "A(1)", "C"]);
        assert_eq!(squeezed(&[0, 1, 0, 2, 0, 3]), ["A", "B", "A(1)", "C", "A(2)", "D"]);
    }

    #[test]
    fn weights_are_conserved() {
        let log = b"f 1 P::Main void () 0 0 0 0\nf 2 P::Make void () 0 0 0 0\nf 3 P::Rec void () 0 0 0 0\n\
t 1 0 System.String\nt 2 0 Node\n\
n 2 1 1 30 1 2\nn 3 1 2 40 1 3 3 3 2\nn 4 1 1 20 1\ni 1\n! 1 0x1000 2\n! 1 0x1100 3\n! 1 0x1200 4\n! 1 0x1300 2\n";
        let m = crate::model::load(log, &Default::default()).unwrap();
        let g = allocation_graph(&m, &Filter::all());
        assert_eq!(g.total_bytes, 120);
        assert_eq!(g.nodes[0].kind, NodeKind::Root);
        assert_eq!(g.nodes[0].bytes, 120);
        let main = g.nodes.iter().find(|n| n.name == "P::Main").unwrap();
        assert_eq!((main.bytes, main.exclusive_bytes), (120, 20));
        let rec = g.nodes.iter().find(|n| n.name == "P::Rec").unwrap();
        assert_eq!(rec.bytes, 40);
        for n in &g.nodes {
            let to_functions: u64 = g
                .edges
                .iter()
                .filter(|e| e.from == n.id && g.nodes[e.to as usize].kind == NodeKind::Function)
                .map(|e| e.bytes)
                .sum();
            if n.kind != NodeKind::Root {
                assert_eq!(n.bytes_in, to_functions + n.exclusive_bytes, "{}", n.name);
            }
        }
        let p = g.prune(50);
        assert!(p.nodes.iter().all(|n| n.bytes >= 50 || n.kind == NodeKind::Root));
        assert!(p.edges.iter().all(|e| (e.from as usize) < p.nodes.len() && (e.to as usize) < p.nodes.len()));
    }
}
