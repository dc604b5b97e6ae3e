//! The flame graph's tree: the folded stacks of `clrprof flame` (the
//! library's [`folded_stacks`](clrprof::query::folded_stacks)) as a prefix
//! tree, from which the page gets one pruned subtree at a time (the part it
//! can draw), so that it never receives every stack.
//!
//! The tree's shape does not depend on the window: [`FlameIndex`] is built
//! once per log from the library's allocation stack rows and canonical
//! paths (the steps of `folded_stacks`), merging frames by name as folded
//! lines do, and gives each stack row its leaf node. A window's tree is
//! then one count of the window's objects per stack row
//! ([`StackWeights`]), their bytes added at the leaves and summed up the
//! tree, with no frame name built.

use clrprof::format::FunctionId;
use clrprof::model::Model;
use clrprof::query::alloc_stacks::{function_names, row_bytes, CanonicalPaths, StackWeights};
use clrprof::query::Filter;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;

/// Frames below the focus drawn at most (deeper ones count as hidden), so
/// that a log's recursion depth never becomes this server's.
const MAX_DEPTH: usize = 256;

/// The window-independent shape of a log's flame graph.
pub struct FlameIndex {
    names: Arc<Vec<String>>,
    /// Per node (0: the root "all"): its parent, its name. A child always
    /// has a larger number than its parent.
    parent: Vec<u32>,
    name: Vec<u32>,
    /// Per stack row: its leaf node (`u32::MAX`: none: no type, or no
    /// object in the log).
    leaf_of_row: Vec<u32>,
}

/// A frame name as folded lines write it (`;` separates frames).
fn frame_name(name: &str) -> String {
    name.replace(';', ":")
}

impl FlameIndex {
    /// The tree of every stack row that allocated in the log.
    pub fn build(model: &Model) -> FlameIndex {
        let mut names: Vec<String> = vec!["all".into()];
        let mut index: HashMap<String, u32> = HashMap::new();
        let mut intern = |s: String, names: &mut Vec<String>| -> u32 {
            if let Some(&n) = index.get(&s) {
                return n;
            }
            let n = names.len() as u32;
            names.push(s.clone());
            index.insert(s, n);
            n
        };
        let mut parent = vec![0u32];
        let mut name = vec![0u32];
        let mut child: HashMap<(u32, u32), u32> = HashMap::new();
        let mut leaf_of_row = vec![u32::MAX; model.stacks().len()];
        let mut paths = CanonicalPaths::new(model);
        let mut scratch = Vec::new();
        let mut fs: Vec<FunctionId> = Vec::new();
        let mut fn_names: HashMap<i32, u32> = HashMap::new();
        let mut node_of_path: HashMap<u32, u32> = HashMap::new();
        let all = StackWeights::new(model, &Filter::all());
        for (row, _) in all.iter() {
            let Some((ty, _)) = row_bytes(model, row, 1) else { continue };
            let p = paths.of_row(model, row, &mut scratch);
            let mut add = |at: u32, n: u32, parent: &mut Vec<u32>, name: &mut Vec<u32>| -> u32 {
                *child.entry((at, n)).or_insert_with(|| {
                    parent.push(at);
                    name.push(n);
                    parent.len() as u32 - 1
                })
            };
            let at = match node_of_path.get(&p) {
                Some(&at) => at,
                None => {
                    paths.functions(p, &mut fs);
                    let mut at = 0u32;
                    for f in &fs {
                        let n = match fn_names.get(&f.0) {
                            Some(&n) => n,
                            None => {
                                let n = intern(frame_name(&function_names(model, *f).0), &mut names);
                                fn_names.insert(f.0, n);
                                n
                            }
                        };
                        at = add(at, n, &mut parent, &mut name);
                    }
                    node_of_path.insert(p, at);
                    at
                }
            };
            let t = intern(frame_name(&model.type_name(ty)), &mut names);
            if let Some(slot) = leaf_of_row.get_mut(row.index()) {
                *slot = add(at, t, &mut parent, &mut name);
            }
        }
        FlameIndex { names: Arc::new(names), parent, name, leaf_of_row }
    }

    /// Nodes in the tree.
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// Whether the tree has only its root.
    pub fn is_empty(&self) -> bool {
        self.parent.len() <= 1
    }
}

/// One node of the tree: a frame (or the allocated type, at the leaves).
struct Node {
    name: u32,
    bytes: u64,
    /// For a sampled trace: the sampled objects under it.
    samples: u64,
    children: Vec<u32>,
}

/// Allocated bytes by stack, as a prefix tree (root: everything).
pub struct FlameTree {
    names: Arc<Vec<String>>,
    nodes: Vec<Node>,
    stacks: usize,
    /// The bytes are estimates from samples (a trace).
    sampled: bool,
}

/// A node as the page gets it.
#[derive(Clone, Debug, Serialize)]
pub struct ShownNode {
    /// The frame's name.
    pub name: String,
    /// Bytes allocated under it.
    pub bytes: u64,
    /// Its children drawn, largest first.
    pub children: Vec<ShownNode>,
    /// Bytes of children too small to draw.
    pub hidden: u64,
    /// For a sampled trace: the sampled objects under it and the 95%
    /// range of its bytes (see `clrprof::query::Range95`).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub range: Option<NodeRange>,
}

/// A node's estimate: its samples and its bytes' 95% range.
#[derive(Clone, Debug, Serialize)]
pub struct NodeRange {
    /// Sampled objects under the node.
    pub samples: u64,
    /// Its bytes, `[low, high]`.
    pub bytes_range: [u64; 2],
}

impl NodeRange {
    fn of(samples: u64, bytes: u64) -> Option<NodeRange> {
        let [lo, hi] = clrprof::query::Range95::of(samples)?.apply(bytes as f64);
        Some(NodeRange { samples, bytes_range: [lo.max(0.0) as u64, hi as u64] })
    }
}

/// The answer for one focus.
#[derive(Clone, Debug, Serialize)]
pub struct FlameView {
    /// Bytes of the whole tree (the sum of the folded stacks).
    pub total: u64,
    /// Distinct folded stacks.
    pub stacks: usize,
    /// The frames from the root to the focus.
    pub focus: Vec<String>,
    /// The focus node and what is drawn of it.
    pub tree: ShownNode,
    /// With a search: bytes under frames whose names contain the text
    /// (counted once per stack).
    pub matched: Option<u64>,
    /// The bytes are estimates from a trace's samples: each node gives its
    /// samples and range.
    pub estimated: bool,
}

impl FlameTree {
    /// The tree of the objects the filter keeps: the same nodes and bytes
    /// as the folded stacks of `clrprof flame` for that filter merged into
    /// a tree (frames of no byte left out).
    pub fn build(model: &Model, index: &FlameIndex, filter: &Filter) -> FlameTree {
        let n = index.len();
        let mut bytes = vec![0u64; n];
        let mut samples = vec![0u64; n];
        let weights = StackWeights::new(model, filter);
        for (row, count) in weights.iter() {
            let Some(&leaf) = index.leaf_of_row.get(row.index()) else { continue };
            if leaf == u32::MAX {
                continue;
            }
            let Some((_, b)) = row_bytes(model, row, count) else { continue };
            if b == 0 {
                continue;
            }
            bytes[leaf as usize] = bytes[leaf as usize].saturating_add(b);
            samples[leaf as usize] += weights.samples(row);
        }
        // A folded line per node holding bytes of its own (stacks that end
        // there), then each node's bytes added to its parent's, children
        // having larger numbers than their parents.
        let stacks = bytes.iter().skip(1).filter(|&&b| b > 0).count();
        for v in (1..n).rev() {
            let p = index.parent[v] as usize;
            bytes[p] = bytes[p].saturating_add(bytes[v]);
            samples[p] += samples[v];
        }
        let mut nodes: Vec<Node> =
            (0..n).map(|v| Node { name: index.name[v], bytes: bytes[v], samples: samples[v], children: Vec::new() }).collect();
        for v in 1..n {
            if bytes[v] > 0 {
                nodes[index.parent[v] as usize].children.push(v as u32);
            }
        }
        let names = &index.names;
        for node in &mut nodes {
            node.children.sort_by(|a, b| {
                bytes[*b as usize].cmp(&bytes[*a as usize]).then_with(|| names[index.name[*a as usize] as usize].cmp(&names[index.name[*b as usize] as usize]))
            });
        }
        FlameTree { names: Arc::clone(&index.names), nodes, stacks, sampled: model.sampling().is_some() }
    }

    /// Bytes of the whole tree.
    pub fn total(&self) -> u64 {
        self.nodes[0].bytes
    }

    fn find(&self, path: &[String]) -> Option<u32> {
        let mut at = 0u32;
        for f in path {
            at = *self.nodes[at as usize].children.iter().find(|&&c| self.names[self.nodes[c as usize].name as usize] == *f)?;
        }
        Some(at)
    }

    /// The subtree under `focus` (frames from the root), with children
    /// below `min_fraction` of the focus's bytes left out, at most `budget`
    /// nodes; `None` if no such path.
    pub fn view(&self, focus: &[String], min_fraction: f64, budget: usize, search: Option<&str>) -> Option<FlameView> {
        let at = self.find(focus)?;
        let min = ((self.nodes[at as usize].bytes as f64) * min_fraction).ceil() as u64;
        let mut left = budget;
        let tree = self.shown(at, min.max(1), &mut left, 0);
        let matched = search.filter(|s| !s.is_empty()).map(|s| self.matched(0, s));
        Some(FlameView { total: self.total(), stacks: self.stacks, focus: focus.to_vec(), tree, matched, estimated: self.sampled })
    }

    fn shown(&self, v: u32, min: u64, left: &mut usize, depth: usize) -> ShownNode {
        let n = &self.nodes[v as usize];
        *left = left.saturating_sub(1);
        let range = if self.sampled { NodeRange::of(n.samples, n.bytes) } else { None };
        let mut out = ShownNode { name: self.names[n.name as usize].clone(), bytes: n.bytes, children: Vec::new(), hidden: 0, range };
        for &c in &n.children {
            let cb = self.nodes[c as usize].bytes;
            if cb >= min && *left > 0 && depth < MAX_DEPTH {
                out.children.push(self.shown(c, min, left, depth + 1));
            } else {
                out.hidden += cb;
            }
        }
        out
    }

    fn matched(&self, root: u32, text: &str) -> u64 {
        let mut sum = 0u64;
        let mut todo = vec![root];
        while let Some(v) = todo.pop() {
            let n = &self.nodes[v as usize];
            if v != 0 && self.names[n.name as usize].contains(text) {
                sum = sum.saturating_add(n.bytes);
            } else {
                todo.extend_from_slice(&n.children);
            }
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clrprof::query::{folded_stacks, TimeWindow};

    /// The folded lines the tree holds: a line per node with bytes of its
    /// own, its path from the root.
    fn lines(t: &FlameTree) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        let mut todo: Vec<(u32, String)> = t.nodes[0].children.iter().map(|&c| (c, String::new())).collect();
        while let Some((v, prefix)) = todo.pop() {
            let n = &t.nodes[v as usize];
            let path = if prefix.is_empty() { t.names[n.name as usize].clone() } else { format!("{prefix};{}", t.names[n.name as usize]) };
            let below: u64 = n.children.iter().map(|&c| t.nodes[c as usize].bytes).sum();
            if n.bytes > below {
                out.push((path.clone(), n.bytes - below));
            }
            todo.extend(n.children.iter().map(|&c| (c, path.clone())));
        }
        out.sort();
        out
    }

    #[test]
    fn a_windows_tree_is_its_folded_stacks() {
        let opts = clrprof_gen::GenOptions { objects: 30_000, ..clrprof_gen::Preset::Tiny.options() };
        let (log, _) = clrprof_gen::generate(&opts, Vec::new()).unwrap();
        let model = clrprof::model::load(&log, &Default::default()).unwrap();
        let index = FlameIndex::build(&model);
        let end = clrprof::query::timeline::end_ms(&model);
        for w in [TimeWindow::All, TimeWindow::Millis { from: Some(end * 0.3), to: Some(end * 0.55) }] {
            let f = Filter::resolve(&model, &w, &[]).unwrap();
            let tree = FlameTree::build(&model, &index, &f);
            let folded: Vec<(String, u64)> = folded_stacks(&model, &f).into_iter().map(|s| (s.stack, s.bytes)).collect();
            assert!(!folded.is_empty());
            assert_eq!(lines(&tree), folded, "{w:?}");
            assert_eq!(tree.stacks, folded.len());
            assert_eq!(tree.total(), folded.iter().map(|s| s.1).sum::<u64>());
        }
    }
}
