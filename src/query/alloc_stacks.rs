//! Allocations per stack row, and the frames CLRProfiler's views read from an
//! allocation stack: the shared first step of every "allocation by code"
//! query ([`super::by_code`], [`super::who`], [`super::alloc_graph`],
//! [`super::flame`]).
//!
//! Those queries work per stack row, never per object: [`StackWeights`]
//! counts the objects of each row under a [`Filter`] (one sequential pass
//! over the allocation columns, or the model's allocated histogram when the
//! filter takes everything), and the queries then walk each counted row's
//! frames once.
//!
//! [`CanonicalPaths`] numbers distinct frame paths: the stack table's prefix
//! tree may hold the same path under several nodes (an `n` record adds nodes
//! for the frames it lists), and queries whose result depends only on the
//! path (the allocation graph, folded stacks) do their per-path work once.

use super::Filter;
use crate::format::{FunctionId, TypeId};
use crate::model::{FrameNode, Model, StackRef};
use std::collections::HashMap;

/// Objects allocated per stack row under a filter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StackWeights {
    counts: Vec<u64>,
    /// For a sampled trace: the sampled objects behind each row's count
    /// (empty for a log of every allocation, whose counts are exact).
    samples: Vec<u64>,
}

impl StackWeights {
    /// Counts the objects the filter keeps, per stack row.
    pub fn new(model: &Model, filter: &Filter) -> StackWeights {
        let rows = model.stacks().len();
        let mut counts = vec![0u64; rows];
        let sampled = model.sampling().is_some();
        let mut samples = Vec::new();
        if filter.is_all() {
            for (row, c) in model.histograms().allocated.iter() {
                if let Some(slot) = counts.get_mut(row.index()) {
                    *slot += c;
                }
            }
            if sampled {
                samples = counts.iter().enumerate().map(|(r, &c)| model.samples_behind(StackRef(r as u32), c)).collect();
            }
        } else {
            for r in filter.objects(model) {
                if let Some(slot) = counts.get_mut(r.stack.index()) {
                    *slot += 1;
                }
            }
            if sampled {
                samples = counts.clone();
            }
            model.estimate_rows(&mut counts);
        }
        StackWeights { counts, samples }
    }

    /// The sampled objects one row's count rests on (for a sampled trace;
    /// 0 for a log of every allocation, whose counts are exact).
    pub fn samples(&self, row: StackRef) -> u64 {
        self.samples.get(row.index()).copied().unwrap_or(0)
    }

    /// The objects of one row.
    pub fn count(&self, row: StackRef) -> u64 {
        self.counts.get(row.index()).copied().unwrap_or(0)
    }

    /// Rows with at least one object, in row order, with their counts.
    pub fn iter(&self) -> impl Iterator<Item = (StackRef, u64)> + '_ {
        self.counts.iter().enumerate().filter(|(_, &c)| c > 0).map(|(r, &c)| (StackRef(r as u32), c))
    }

    /// All objects counted.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// Type, size and bytes of `count` objects allocated with a row, with the
/// arithmetic of CLRProfiler's Summary (the size is read as a signed 32-bit
/// value and widened, so a negative size gives a huge byte count;
/// multiplication wraps). `None` when the row has no type and size.
pub fn row_bytes(model: &Model, row: StackRef, count: u64) -> Option<(TypeId, u64)> {
    let (ty, size) = model.stacks().type_and_size(row)?;
    Some((ty, (size as i64 as u64).wrapping_mul(count)))
}

/// The frame nodes of an allocation stack row, innermost first, as
/// CLRProfiler's views read them: for a row declared as an allocation stack,
/// all its frames; for a frames-only row used by an allocation (whose first
/// two function ids the reader takes as type and size), its frames without
/// the two outermost.
pub fn allocation_frames(model: &Model, row: StackRef, out: &mut Vec<FrameNode>) {
    out.clear();
    let stacks = model.stacks();
    let mut n = stacks.leaf(row);
    while n.0 != 0 {
        out.push(n);
        n = stacks.parent(n);
    }
    if !stacks.is_allocation_stack(row) {
        let keep = out.len().saturating_sub(2);
        out.truncate(keep);
    }
}

/// The function of a frame node (`-1` for the root, which no frame list
/// holds).
#[inline]
pub fn node_function(model: &Model, node: FrameNode) -> FunctionId {
    model.stacks().function(node).unwrap_or(FunctionId(-1))
}

/// Distinct frame paths, numbered: path 0 is the empty path, and every other
/// path is its parent path plus one function.
#[derive(Clone, Debug)]
pub struct CanonicalPaths {
    parent: Vec<u32>,
    function: Vec<FunctionId>,
    children: HashMap<(u32, i32), u32>,
    /// Canonical path of each prefix-tree node (`u32::MAX`: not yet known).
    of_node: Vec<u32>,
}

impl CanonicalPaths {
    /// An empty numbering for a model's prefix tree.
    pub fn new(model: &Model) -> CanonicalPaths {
        let mut of_node = vec![u32::MAX; model.stacks().node_count()];
        if let Some(root) = of_node.first_mut() {
            *root = 0;
        }
        CanonicalPaths { parent: vec![0], function: vec![FunctionId(-1)], children: HashMap::new(), of_node }
    }

    /// The path of `parent` followed by `f`.
    pub fn child(&mut self, parent: u32, f: FunctionId) -> u32 {
        let next = self.parent.len() as u32;
        let id = *self.children.entry((parent, f.0)).or_insert(next);
        if id == next {
            self.parent.push(parent);
            self.function.push(f);
        }
        id
    }

    /// The path of a row's allocation frames (see [`allocation_frames`]);
    /// `scratch` is a caller-owned buffer.
    pub fn of_row(&mut self, model: &Model, row: StackRef, scratch: &mut Vec<FrameNode>) -> u32 {
        let stacks = model.stacks();
        if stacks.is_allocation_stack(row) {
            return self.of_node(model, stacks.leaf(row), scratch);
        }
        allocation_frames(model, row, scratch);
        let mut p = 0;
        for &n in scratch.iter().rev() {
            p = self.child(p, node_function(model, n));
        }
        p
    }

    /// The path of a prefix-tree node.
    pub fn of_node(&mut self, model: &Model, node: FrameNode, scratch: &mut Vec<FrameNode>) -> u32 {
        let known = |s: &Self, n: FrameNode| s.of_node.get(n.index()).copied().filter(|&p| p != u32::MAX);
        if let Some(p) = known(self, node) {
            return p;
        }
        // Climb to the nearest node whose path is known, then come back down.
        scratch.clear();
        let stacks = model.stacks();
        let mut n = node;
        let mut p = 0;
        while n.0 != 0 {
            if let Some(k) = known(self, n) {
                p = k;
                break;
            }
            scratch.push(n);
            n = stacks.parent(n);
        }
        for &m in scratch.iter().rev() {
            p = self.child(p, node_function(model, m));
            if let Some(slot) = self.of_node.get_mut(m.index()) {
                *slot = p;
            }
        }
        p
    }

    /// The parent path of a path (0 for the empty path).
    pub fn parent(&self, path: u32) -> u32 {
        self.parent.get(path as usize).copied().unwrap_or(0)
    }

    /// The innermost function of a path (`-1` for the empty path).
    pub fn function(&self, path: u32) -> FunctionId {
        self.function.get(path as usize).copied().unwrap_or(FunctionId(-1))
    }

    /// The functions of a path, outermost first.
    pub fn functions(&self, mut path: u32, out: &mut Vec<FunctionId>) {
        out.clear();
        while path != 0 {
            out.push(self.function(path));
            path = self.parent(path);
        }
        out.reverse();
    }

    /// Number of distinct paths seen (the empty path included).
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// Never true: the empty path is always there.
    pub fn is_empty(&self) -> bool {
        self.parent.is_empty()
    }
}

/// Display name, signature and module (short name) of a function as
/// CLRProfiler names it: `???? function N` and `( ???????? )` when the log
/// never defined it; no module when its module is unknown.
pub fn function_names(model: &Model, f: FunctionId) -> (String, String, Option<String>) {
    match model.functions().get(f) {
        Some(def) => {
            let module = model.modules().module(def.module).map(|m| model.names().get(m.short_name).to_string());
            (model.names().get(def.name).to_string(), model.names().get(def.signature).to_string(), module)
        }
        None => (format!("???? function {}", f.0), "( ???????? )".to_string(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_paths_share_a_number() {
        // Stacks 2 and 3 list the same frames under different nodes.
        let log = b"f 1 A::a () 0 0 0 0\nf 2 B::b () 0 0 0 0\nt 1 0 T\nn 2 1 1 24 1 2\nn 3 1 1 32 1 2\nn 4 1 1 8 1\ni 1\n! 1 0x1000 2\n! 1 0x1100 3\n! 1 0x1200 4\n";
        let m = crate::model::load(log, &Default::default()).unwrap();
        let w = StackWeights::new(&m, &Filter::all());
        assert_eq!(w.total(), 3);
        let mut c = CanonicalPaths::new(&m);
        let mut s = Vec::new();
        let paths: Vec<u32> = w.iter().map(|(r, _)| c.of_row(&m, r, &mut s)).collect();
        assert_eq!(paths.len(), 3);
        assert_eq!(paths[0], paths[1]);
        assert_ne!(paths[0], paths[2]);
        let mut f = Vec::new();
        c.functions(paths[0], &mut f);
        assert_eq!(f, vec![FunctionId(1), FunctionId(2)]);
        assert_eq!(c.parent(paths[0]), paths[2]);
    }
}
