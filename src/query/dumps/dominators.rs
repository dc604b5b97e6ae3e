//! Dominator trees: `x` dominates `y` when every path from the root to `y`
//! passes through `x`.
//!
//! The algorithm is Semi-NCA (Georgiadis and Tarjan's variant of
//! Lengauer-Tarjan): a depth-first numbering, semidominators computed in
//! reverse preorder with a path-compressed link/eval forest, then each
//! immediate dominator found as the nearest common ancestor of the DFS
//! parent and the semidominator. Everything is iterative over dense
//! indices (no recursion, so a deep graph cannot overflow the stack);
//! time O(m log n), memory a few words per node.

use super::graph::Csr;

const NONE: u32 = u32::MAX;

/// The dominator tree of the nodes reachable from a root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DominatorTree {
    root: u32,
    idom: Vec<u32>,
    preorder: Vec<u32>,
}

impl DominatorTree {
    /// The root.
    pub fn root(&self) -> u32 {
        self.root
    }

    /// The immediate dominator of a node; `None` for the root and for
    /// nodes the root does not reach.
    pub fn idom(&self, v: u32) -> Option<u32> {
        if v == self.root {
            return None;
        }
        self.idom.get(v as usize).copied().filter(|&d| d != NONE)
    }

    /// Whether the root reaches a node.
    pub fn is_reachable(&self, v: u32) -> bool {
        v == self.root || self.idom.get(v as usize).is_some_and(|&d| d != NONE)
    }

    /// The reachable nodes in depth-first preorder from the root (the root
    /// first); every node comes after its immediate dominator.
    pub fn preorder(&self) -> &[u32] {
        &self.preorder
    }

    /// Whether `a` dominates `b` (every node dominates itself; nothing
    /// dominates an unreachable node). Walks up the tree from `b`.
    pub fn dominates(&self, a: u32, b: u32) -> bool {
        if !self.is_reachable(b) {
            return false;
        }
        let mut x = b;
        loop {
            if x == a {
                return true;
            }
            match self.idom(x) {
                Some(d) => x = d,
                None => return false,
            }
        }
    }
}

/// The dominator tree of `graph` from `root`.
pub fn dominators(graph: &Csr, root: u32) -> DominatorTree {
    let n = graph.nodes();
    let mut idom_of = vec![NONE; n];
    if root as usize >= n {
        return DominatorTree { root, idom: idom_of, preorder: Vec::new() };
    }
    // Depth-first preorder numbering, iteratively.
    let mut num = vec![NONE; n];
    let mut vertex: Vec<u32> = Vec::new();
    let mut parent: Vec<u32> = Vec::new();
    let mut stack: Vec<(u32, u32)> = vec![(root, 0)];
    num[root as usize] = 0;
    vertex.push(root);
    parent.push(NONE);
    while let Some(top) = stack.last_mut() {
        let (v, pos) = *top;
        let succ = graph.successors(v);
        if let Some(&w) = succ.get(pos as usize) {
            top.1 += 1;
            if num[w as usize] == NONE {
                num[w as usize] = vertex.len() as u32;
                parent.push(num[v as usize]);
                vertex.push(w);
                stack.push((w, 0));
            }
        } else {
            stack.pop();
        }
    }
    let r = vertex.len();
    let preds = graph.reversed();
    // Semidominators, by preorder number.
    let mut semi: Vec<u32> = (0..r as u32).collect();
    let mut label: Vec<u32> = (0..r as u32).collect();
    let mut ancestor: Vec<u32> = vec![NONE; r];
    let mut path: Vec<u32> = Vec::new();
    for i in (1..r).rev() {
        let w = vertex[i];
        let mut s = semi[i];
        for &v in preds.successors(w) {
            let j = num[v as usize];
            if j == NONE {
                continue;
            }
            let u = eval(j, &mut ancestor, &mut label, &semi, &mut path);
            s = s.min(semi[u as usize]);
        }
        semi[i] = s;
        ancestor[i] = parent[i];
    }
    // Immediate dominators: the nearest ancestor of the DFS parent whose
    // number is at most the semidominator's.
    let mut idom: Vec<u32> = vec![0; r];
    for i in 1..r {
        let mut d = parent[i];
        while d > semi[i] {
            d = idom[d as usize];
        }
        idom[i] = d;
    }
    for i in 1..r {
        idom_of[vertex[i] as usize] = vertex[idom[i] as usize];
    }
    idom_of[root as usize] = root;
    DominatorTree { root, idom: idom_of, preorder: vertex }
}

/// The node of smallest semidominator on the forest path from `v` up to
/// (not including) its forest root, compressing the path on the way.
fn eval(v: u32, ancestor: &mut [u32], label: &mut [u32], semi: &[u32], path: &mut Vec<u32>) -> u32 {
    if ancestor[v as usize] == NONE {
        return v;
    }
    path.clear();
    let mut x = v;
    while ancestor[ancestor[x as usize] as usize] != NONE {
        path.push(x);
        x = ancestor[x as usize];
    }
    while let Some(y) = path.pop() {
        let a = ancestor[y as usize];
        if semi[label[a as usize] as usize] < semi[label[y as usize] as usize] {
            label[y as usize] = label[a as usize];
        }
        ancestor[y as usize] = ancestor[a as usize];
    }
    label[v as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diamond_and_a_chain() {
        // 0 -> 1 -> 3, 0 -> 2 -> 3, 3 -> 4, 5 unreachable, 4 -> 1 (back edge)
        let g = Csr::from_edges(6, &[(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (4, 1), (5, 0)]);
        let t = dominators(&g, 0);
        assert_eq!(t.idom(0), None);
        assert_eq!(t.idom(1), Some(0));
        assert_eq!(t.idom(2), Some(0));
        assert_eq!(t.idom(3), Some(0));
        assert_eq!(t.idom(4), Some(3));
        assert_eq!(t.idom(5), None);
        assert!(!t.is_reachable(5));
        assert!(t.dominates(3, 4) && t.dominates(0, 4) && !t.dominates(1, 4));
    }

    #[test]
    fn a_deep_chain_does_not_overflow() {
        let n = 1_000_000u32;
        let edges: Vec<(u32, u32)> = (0..n - 1).map(|k| (k, k + 1)).collect();
        let t = dominators(&Csr::from_edges(n as usize, &edges), 0);
        assert_eq!(t.idom(n - 1), Some(n - 2));
    }
}
