//! Calls (logs with `c` records): call counts per function, caller/callee
//! edges and the call tree.
//!
//! Each `c` record is one call: its stack lists the frames outermost first
//! and ends with the function called (the *callee*). The model keeps the
//! number of `c` records per stack ([`crate::model::Histograms::calls`]);
//! from those:
//!
//! - a function's *exclusive* count is the number of calls to it (stacks
//!   whose last frame it is); its *inclusive* count is the number of calls
//!   made while it was on the stack, itself included, a recursive function
//!   counted once per call;
//! - an *edge* `caller -> callee` counts the calls whose last two frames are
//!   those (a call from the bottom of a stack has no caller: `None`);
//! - the *call tree* is the tree of call paths: a node is a path from the
//!   outermost frame, `calls` the calls made with exactly that path, and
//!   `inclusive` those of its whole subtree.
//!
//! The model does not keep when or on which thread a call happened, so these
//! figures are always over the whole log.
//!
//! ```
//! let log = b"f 1 Main ()\nf 2 Run ()\nn 1 0 1\nn 2 4 1 2\nc 7 1\nc 7 2\nc 7 2\n";
//! let model = clrprof::model::load(log, &Default::default()).unwrap();
//! let c = clrprof::query::calls(&model).unwrap();
//! assert_eq!(c.total, 3);
//! assert_eq!((c.functions[0].name.as_str(), c.functions[0].inclusive, c.functions[0].exclusive), ("Main", 3, 1));
//! ```

use super::survivors::function_name;
use crate::format::FunctionId;
use crate::model::{FrameNode, Model};
use serde::Serialize;
use std::collections::HashMap;
use std::fmt;

/// The log has no `c` records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoCalls;

impl fmt::Display for NoCalls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the log has no calls (no `c` records): it was recorded without call logging \
             (CLRProfiler's \"Profile: Calls\", `CLRPROF_CALLS=1` for our agent, `clrprof gen --calls`)"
        )
    }
}

impl std::error::Error for NoCalls {}

/// One function's counts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FunctionCalls {
    /// The function id.
    pub id: i32,
    /// Its name.
    pub name: String,
    /// Calls made while it was on the stack (itself included; recursion once).
    pub inclusive: u64,
    /// Calls to it.
    pub exclusive: u64,
}

/// Calls from one function to another.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CallEdge {
    /// The caller (`None`: the call is the bottom of its stack).
    pub caller: Option<i32>,
    /// The caller's name (`(root)` when none).
    pub caller_name: String,
    /// The callee.
    pub callee: i32,
    /// The callee's name.
    pub callee_name: String,
    /// Calls.
    pub count: u64,
}

/// Calls per function and per edge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Calls {
    /// `c` records counted.
    pub total: u64,
    /// Functions by inclusive count (largest first), then exclusive, then id.
    pub functions: Vec<FunctionCalls>,
    /// Edges by count (largest first), then caller and callee ids.
    pub edges: Vec<CallEdge>,
}

/// Counts per function and edge.
pub fn calls(model: &Model) -> Result<Calls, NoCalls> {
    let h = &model.histograms().calls;
    if h.is_empty() {
        return Err(NoCalls);
    }
    let st = model.stacks();
    let mut per_fn: HashMap<i32, (u64, u64)> = HashMap::new();
    let mut edges: HashMap<(Option<i32>, i32), u64> = HashMap::new();
    let mut seen: Vec<i32> = Vec::new();
    let mut total = 0u64;
    for (row, n) in h.iter() {
        total += n;
        seen.clear();
        let mut frames = st.frames(row);
        let Some(callee) = frames.next() else { continue };
        let caller = frames.next();
        per_fn.entry(callee.0).or_default().1 += n;
        *edges.entry((caller.map(|f| f.0), callee.0)).or_default() += n;
        seen.push(callee.0);
        for f in caller.into_iter().chain(frames) {
            seen.push(f.0);
        }
        seen.sort_unstable();
        seen.dedup();
        for &f in &seen {
            per_fn.entry(f).or_default().0 += n;
        }
    }
    let name = |id: i32| function_name(model, FunctionId(id));
    let mut functions: Vec<FunctionCalls> = per_fn
        .into_iter()
        .map(|(id, (inclusive, exclusive))| FunctionCalls { id, name: name(id), inclusive, exclusive })
        .collect();
    functions.sort_by(|a, b| b.inclusive.cmp(&a.inclusive).then(b.exclusive.cmp(&a.exclusive)).then(a.id.cmp(&b.id)));
    let mut edges: Vec<CallEdge> = edges
        .into_iter()
        .map(|((caller, callee), count)| CallEdge {
            caller,
            caller_name: caller.map_or_else(|| "(root)".to_string(), name),
            callee,
            callee_name: name(callee),
            count,
        })
        .collect();
    edges.sort_by(|a, b| b.count.cmp(&a.count).then(a.caller.cmp(&b.caller)).then(a.callee.cmp(&b.callee)));
    Ok(Calls { total, functions, edges })
}

/// One node of the call tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CallNode {
    /// The function id.
    pub id: i32,
    /// Its name.
    pub name: String,
    /// Calls made with exactly this path.
    pub calls: u64,
    /// Calls made with this path or a longer one.
    pub inclusive: u64,
    /// Children kept, by inclusive count (largest first).
    pub children: Vec<CallNode>,
    /// Children (and their subtrees) pruned by the options: their number.
    pub pruned_children: u64,
    /// And the calls under them.
    pub pruned_calls: u64,
}

/// The deepest call tree kept, whatever the options say (deeper paths are
/// counted as pruned).
pub const MAX_TREE_DEPTH: usize = 512;

/// What to keep of the call tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallTreeOptions {
    /// Keep nodes whose inclusive count is at least this.
    pub min_count: u64,
    /// Keep nodes at most this deep (1: the outermost frames only; at most
    /// [`MAX_TREE_DEPTH`]).
    pub depth: usize,
}

impl Default for CallTreeOptions {
    fn default() -> Self {
        CallTreeOptions { min_count: 1, depth: usize::MAX }
    }
}

/// The call tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CallTree {
    /// `c` records counted.
    pub total: u64,
    /// The outermost frames.
    pub roots: Vec<CallNode>,
    /// Roots pruned: their number.
    pub pruned_roots: u64,
    /// And the calls under them.
    pub pruned_calls: u64,
}

/// The call tree, pruned by `options`.
pub fn call_tree(model: &Model, options: &CallTreeOptions) -> Result<CallTree, NoCalls> {
    let h = &model.histograms().calls;
    if h.is_empty() {
        return Err(NoCalls);
    }
    let st = model.stacks();
    // The stack table's prefix tree is the tree of call paths: count calls
    // at leaf nodes, then add each node's total to its parent (a node's
    // parent is always created before it, so it has a smaller number).
    let n = st.node_count();
    let mut own = vec![0u64; n];
    let mut total = 0u64;
    for (row, c) in h.iter() {
        own[st.leaf(row).index()] += c;
        total += c;
    }
    let mut inclusive = own.clone();
    let mut children: Vec<Vec<u32>> = vec![Vec::new(); n];
    for k in (1..n).rev() {
        if inclusive[k] == 0 {
            continue;
        }
        let p = st.parent(FrameNode(k as u32)).index();
        if p < k {
            inclusive[p] += inclusive[k];
            children[p].push(k as u32);
        }
    }
    let ctx = TreeCtx { model, own: &own, inclusive: &inclusive, children: &children, options };
    let (roots, pruned_roots, pruned_calls) = ctx.build(0, 0);
    Ok(CallTree { total, roots, pruned_roots, pruned_calls })
}

struct TreeCtx<'a> {
    model: &'a Model,
    own: &'a [u64],
    inclusive: &'a [u64],
    children: &'a [Vec<u32>],
    options: &'a CallTreeOptions,
}

impl TreeCtx<'_> {
    /// The kept children of `node` at `depth` (0 for the roots), and the
    /// number and calls of those pruned.
    fn build(&self, node: usize, depth: usize) -> (Vec<CallNode>, u64, u64) {
        let mut kids: Vec<u32> = self.children[node].clone();
        kids.sort_by(|&a, &b| self.inclusive[b as usize].cmp(&self.inclusive[a as usize]).then(a.cmp(&b)));
        let mut out = Vec::new();
        let (mut pruned, mut pruned_calls) = (0u64, 0u64);
        for k in kids {
            let k = k as usize;
            if depth >= self.options.depth.min(MAX_TREE_DEPTH) || self.inclusive[k] < self.options.min_count {
                pruned += 1;
                pruned_calls += self.inclusive[k];
                continue;
            }
            let (children, pc, pcalls) = self.build(k, depth + 1);
            let id = self.model.stacks().function(FrameNode(k as u32)).map_or(-1, |f| f.0);
            out.push(CallNode {
                id,
                name: function_name(self.model, FunctionId(id)),
                calls: self.own[k],
                inclusive: self.inclusive[k],
                children,
                pruned_children: pc,
                pruned_calls: pcalls,
            });
        }
        (out, pruned, pruned_calls)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recursion_counts_once_and_tree_prunes() {
        // Main -> A -> A (recursion) -> B
        let log = b"f 1 Main ()\nf 2 A ()\nf 3 B ()\nn 1 0 1\nn 2 4 1 2\nn 3 8 2 2\nn 4 12 3 3\n\
c 7 1\nc 7 2\nc 7 3\nc 7 3\nc 7 4\n";
        let model = crate::model::load(log, &Default::default()).unwrap();
        let c = calls(&model).unwrap();
        assert_eq!(c.total, 5);
        let get = |name: &str| c.functions.iter().find(|f| f.name == name).map(|f| (f.inclusive, f.exclusive));
        assert_eq!(get("Main"), Some((5, 1)));
        assert_eq!(get("A"), Some((4, 3)));
        assert_eq!(get("B"), Some((1, 1)));
        let edge = |a: Option<i32>, b: i32| c.edges.iter().find(|e| e.caller == a && e.callee == b).map(|e| e.count);
        assert_eq!(edge(None, 1), Some(1));
        assert_eq!(edge(Some(1), 2), Some(1));
        assert_eq!(edge(Some(2), 2), Some(2));
        assert_eq!(edge(Some(2), 3), Some(1));
        let t = call_tree(&model, &CallTreeOptions::default()).unwrap();
        assert_eq!(t.roots.len(), 1);
        assert_eq!((t.roots[0].calls, t.roots[0].inclusive), (1, 5));
        let a = &t.roots[0].children[0];
        assert_eq!((a.name.as_str(), a.calls, a.inclusive), ("A", 1, 4));
        let t = call_tree(&model, &CallTreeOptions { min_count: 1, depth: 2 }).unwrap();
        let a = &t.roots[0].children[0];
        assert!(a.children.is_empty());
        assert_eq!((a.pruned_children, a.pruned_calls), (1, 3));
        let t = call_tree(&model, &CallTreeOptions { min_count: 6, depth: 9 }).unwrap();
        assert_eq!((t.roots.len(), t.pruned_roots, t.pruned_calls), (0, 1, 5));
    }

    #[test]
    fn no_calls_is_an_error() {
        let model = crate::model::load(b"t 1 0 T\nn 1 1 1 24\n! 7 0x1000 1\n", &Default::default()).unwrap();
        assert_eq!(calls(&model), Err(NoCalls));
        assert!(NoCalls.to_string().contains("no calls"));
    }
}
