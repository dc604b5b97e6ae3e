//! The flame graph's tree: the folded stacks of `clrprof flame` (the
//! library's [`folded_stacks`]) merged into a prefix tree, from which the
//! page gets one pruned subtree at a time (the part it can draw), so that
//! it never receives every stack.

use clrprof::model::Model;
use clrprof::query::{folded_stacks, Filter};
use serde::Serialize;
use std::collections::HashMap;

/// Frames below the focus drawn at most (deeper ones count as hidden), so
/// that a log's recursion depth never becomes this server's.
const MAX_DEPTH: usize = 256;

/// One node of the tree: a frame (or the allocated type, at the leaves).
struct Node {
    name: u32,
    bytes: u64,
    children: Vec<u32>,
}

/// Allocated bytes by stack, as a prefix tree (root: everything).
pub struct FlameTree {
    names: Vec<String>,
    nodes: Vec<Node>,
    stacks: usize,
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
}

impl FlameTree {
    /// The tree of the objects the filter keeps.
    pub fn build(model: &Model, filter: &Filter) -> FlameTree {
        let mut t = FlameTree { names: vec!["all".into()], nodes: vec![Node { name: 0, bytes: 0, children: Vec::new() }], stacks: 0 };
        let mut index: HashMap<String, u32> = HashMap::new();
        let mut child: HashMap<(u32, u32), u32> = HashMap::new();
        for s in folded_stacks(model, filter) {
            t.stacks += 1;
            let mut at = 0u32;
            t.nodes[0].bytes = t.nodes[0].bytes.saturating_add(s.bytes);
            for frame in s.stack.split(';') {
                let name = match index.get(frame) {
                    Some(&n) => n,
                    None => {
                        let n = t.names.len() as u32;
                        t.names.push(frame.to_string());
                        index.insert(frame.to_string(), n);
                        n
                    }
                };
                let next = match child.get(&(at, name)) {
                    Some(&c) => c,
                    None => {
                        let c = t.nodes.len() as u32;
                        t.nodes.push(Node { name, bytes: 0, children: Vec::new() });
                        t.nodes[at as usize].children.push(c);
                        child.insert((at, name), c);
                        c
                    }
                };
                t.nodes[next as usize].bytes = t.nodes[next as usize].bytes.saturating_add(s.bytes);
                at = next;
            }
        }
        let bytes: Vec<u64> = t.nodes.iter().map(|n| n.bytes).collect();
        for n in &mut t.nodes {
            n.children.sort_by(|a, b| bytes[*b as usize].cmp(&bytes[*a as usize]).then(a.cmp(b)));
        }
        t
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
        Some(FlameView { total: self.total(), stacks: self.stacks, focus: focus.to_vec(), tree, matched })
    }

    fn shown(&self, v: u32, min: u64, left: &mut usize, depth: usize) -> ShownNode {
        let n = &self.nodes[v as usize];
        *left = left.saturating_sub(1);
        let mut out = ShownNode { name: self.names[n.name as usize].clone(), bytes: n.bytes, children: Vec::new(), hidden: 0 };
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
