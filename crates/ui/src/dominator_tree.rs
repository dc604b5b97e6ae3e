//! The dominator tree of a heap dump, kept for the explorer: children of
//! every node by retained bytes, built once per dump from the library's
//! graph, dominator and retained-size queries (the ones behind
//! `clrprof dump --retained`).

use clrprof::format::TypeId;
use clrprof::model::Model;
use clrprof::query::dumps::{dominators, retained_sizes, Csr, DominatorTree, DumpGraph, DumpIndex};
use serde::Serialize;
use std::sync::OnceLock;

/// A dump's dominator tree with retained sizes.
pub struct DumpTree {
    graph: DumpGraph,
    tree: DominatorTree,
    retained: Vec<u64>,
    /// Children per node, largest retained first.
    children: Csr,
}

/// One node of the tree as the page shows it.
#[derive(Clone, Debug, Serialize)]
pub struct TreeNode {
    /// Dense node number within the dump (the id to expand it by).
    pub node: u32,
    /// The object's address (`null` for the virtual root).
    pub address: Option<u64>,
    /// The object's type id.
    pub type_id: Option<i32>,
    /// Its type name ("roots" for the virtual root).
    pub name: String,
    /// Its own size, bytes.
    pub size: u64,
    /// Bytes it retains (itself and everything it dominates).
    pub retained: u64,
    /// Its dominator's address (`null`: the roots), as `dump --retained`
    /// prints it.
    pub dominator: Option<u64>,
    /// How many nodes it immediately dominates.
    pub children: u64,
}

/// The children of a node, largest retained first.
#[derive(Clone, Debug, Serialize)]
pub struct Expansion {
    /// The node expanded.
    pub parent: TreeNode,
    /// Its children shown (at most the limit asked for).
    pub children: Vec<TreeNode>,
    /// Children left out, and their retained bytes.
    pub more: u64,
    /// Retained bytes of the children left out.
    pub more_retained: u64,
}

impl DumpTree {
    fn build(model: &Model, index: DumpIndex) -> Option<DumpTree> {
        let graph = DumpGraph::build(model, index)?;
        let tree = dominators(&graph.graph, graph.root());
        let retained = retained_sizes(&graph, &tree);
        let mut edges: Vec<(u32, u32)> =
            tree.preorder().iter().filter_map(|&v| tree.idom(v).map(|d| (d, v))).collect();
        edges.sort_by(|a, b| a.0.cmp(&b.0).then(retained[b.1 as usize].cmp(&retained[a.1 as usize])).then(a.1.cmp(&b.1)));
        let children = Csr::from_edges(graph.objects() + 1, &edges);
        Some(DumpTree { graph, tree, retained, children })
    }

    /// The virtual root's node number.
    pub fn root(&self) -> u32 {
        self.graph.root()
    }

    fn node(&self, model: &Model, v: u32) -> Option<TreeNode> {
        if v == self.graph.root() {
            return Some(TreeNode {
                node: v,
                address: None,
                type_id: None,
                name: "roots".into(),
                size: 0,
                retained: self.retained[v as usize],
                dominator: None,
                children: self.children.successors(v).len() as u64,
            });
        }
        if !self.tree.is_reachable(v) {
            return None;
        }
        let k = v as usize;
        let ty = *self.graph.types.get(k)?;
        Some(TreeNode {
            node: v,
            address: Some(self.graph.addresses[k]),
            type_id: Some(ty),
            name: model.type_name(TypeId(ty)).into_owned(),
            size: self.graph.sizes[k] as u64,
            retained: self.retained[k],
            dominator: self.tree.idom(v).and_then(|d| self.graph.addresses.get(d as usize).copied()),
            children: self.children.successors(v).len() as u64,
        })
    }

    /// Node `v` and its first `limit` children; `None` if `v` is not a
    /// reachable node of the dump.
    pub fn expand(&self, model: &Model, v: u32, limit: usize) -> Option<Expansion> {
        let parent = self.node(model, v)?;
        let all = self.children.successors(v);
        let children: Vec<TreeNode> = all.iter().take(limit).filter_map(|&c| self.node(model, c)).collect();
        let rest = &all[children.len().min(all.len())..];
        Some(Expansion {
            parent,
            more: rest.len() as u64,
            more_retained: rest.iter().map(|&c| self.retained[c as usize]).sum(),
            children,
        })
    }
}

/// Dominator trees per dump of a log, each built on first use.
pub struct DominatorCache {
    trees: Vec<OnceLock<Option<DumpTree>>>,
}

impl DominatorCache {
    /// Room for `dumps` dumps.
    pub fn new(dumps: usize) -> DominatorCache {
        DominatorCache { trees: (0..dumps).map(|_| OnceLock::new()).collect() }
    }

    /// The tree of dump `index` (built now if needed); `None` if there is
    /// no such dump.
    pub fn get(&self, model: &Model, index: u32) -> Option<&DumpTree> {
        self.trees.get(index as usize)?.get_or_init(|| DumpTree::build(model, DumpIndex(index))).as_ref()
    }
}
