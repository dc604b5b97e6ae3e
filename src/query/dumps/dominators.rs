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
    /// By preorder number: the number of the immediate dominator.
    idom_numbers: Vec<u32>,
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

    /// By preorder number (a node's position in [`Self::preorder`]): the
    /// number of its immediate dominator (the root's entry is 0, its own).
    /// A dominator's number is below its nodes', so a pass from the last
    /// number down meets every node before its dominator; and a pass over
    /// these numbers reads the tree in order where [`Self::idom`] over
    /// [`Self::preorder`] reaches the nodes at random.
    pub fn idom_numbers(&self) -> &[u32] {
        &self.idom_numbers
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
    if root as usize >= n {
        return DominatorTree { root, idom: vec![NONE; n], preorder: Vec::new(), idom_numbers: Vec::new() };
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
    drop(stack);
    let r = vertex.len();
    // Semidominators, by preorder number, from the predecessors taken
    // over the preorder numbers (so that this loop reads them in order).
    // Each working array is freed as soon as it is done with, or taken
    // over by a later one (whose pages are then not faulted in again):
    // the peak is this loop's, a few words a node besides the graph.
    let preds = graph.reversed_numbered(&num, r);
    let mut semi = refill(num, r, |i| i);
    {
        let mut label: Vec<u32> = (0..r as u32).collect();
        let mut ancestor: Vec<u32> = vec![NONE; r];
        let mut path: Vec<u32> = Vec::new();
        for i in (1..r).rev() {
            let mut s = semi[i];
            for &j in preds.successors(i as u32) {
                let u = eval(j, &mut ancestor, &mut label, &semi, &mut path);
                s = s.min(semi[u as usize]);
            }
            semi[i] = s;
            ancestor[i] = parent[i];
        }
    }
    drop(preds);
    // Immediate dominators: the nearest ancestor of the DFS parent whose
    // number is at most the semidominator's. Each replaces its node's
    // parent in place (read just before; the loop reads only lower
    // numbers' dominators).
    let mut idom = parent;
    if let Some(first) = idom.first_mut() {
        *first = 0;
    }
    for i in 1..r {
        let mut d = idom[i];
        while d > semi[i] {
            d = idom[d as usize];
        }
        idom[i] = d;
    }
    let mut idom_of = refill(semi, n, |_| NONE);
    for i in 1..r {
        idom_of[vertex[i] as usize] = vertex[idom[i] as usize];
    }
    idom_of[root as usize] = root;
    DominatorTree { root, idom: idom_of, preorder: vertex, idom_numbers: idom }
}

/// `buffer`'s memory holding `len` values, `value(i)` at `i`.
fn refill(mut buffer: Vec<u32>, len: usize, value: impl Fn(u32) -> u32) -> Vec<u32> {
    buffer.clear();
    buffer.extend((0..len as u32).map(value));
    buffer
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
    use proptest::prelude::*;

    /// Dominators the plain way: `dom(v)` = {v} + the intersection of its
    /// predecessors' sets, iterated to a fixed point from "everything".
    fn naive_idoms(n: usize, edges: &[(u32, u32)], root: u32) -> Vec<Option<u32>> {
        let g = Csr::from_edges(n, edges);
        let mut reach = vec![false; n];
        let mut todo = vec![root];
        while let Some(v) = todo.pop() {
            if !std::mem::replace(&mut reach[v as usize], true) {
                todo.extend(g.successors(v));
            }
        }
        let mut dom: Vec<Vec<bool>> =
            (0..n).map(|v| if v == root as usize { (0..n).map(|u| u == v).collect() } else { vec![true; n] }).collect();
        let mut changed = true;
        while changed {
            changed = false;
            for v in (0..n).filter(|&v| reach[v] && v != root as usize) {
                let mut d = vec![true; n];
                for &(p, _) in edges.iter().filter(|&&(p, b)| b as usize == v && reach[p as usize]) {
                    for u in 0..n {
                        d[u] &= dom[p as usize][u];
                    }
                }
                d[v] = true;
                if d != dom[v] {
                    dom[v] = d;
                    changed = true;
                }
            }
        }
        // The immediate dominator: the strict dominator that every other
        // strict dominator dominates.
        (0..n)
            .map(|v| {
                if !reach[v] || v == root as usize {
                    return None;
                }
                let strict: Vec<usize> = (0..n).filter(|&u| u != v && dom[v][u]).collect();
                strict.iter().copied().find(|&u| strict.iter().all(|&w| dom[u][w])).map(|u| u as u32)
            })
            .collect()
    }

    proptest! {
        #[test]
        fn the_tree_equals_iterated_dominator_sets(
            n in 1usize..24,
            edges in proptest::collection::vec((0u32..24, 0u32..24), 0..60),
        ) {
            let edges: Vec<(u32, u32)> = edges.into_iter().filter(|&(a, b)| (a as usize) < n && (b as usize) < n).collect();
            let t = dominators(&Csr::from_edges(n, &edges), 0);
            let want = naive_idoms(n, &edges, 0);
            for v in 0..n as u32 {
                prop_assert_eq!(t.idom(v), want[v as usize], "node {}", v);
                prop_assert_eq!(t.is_reachable(v), v == 0 || want[v as usize].is_some());
            }
            // The same tree over preorder numbers: each dominator numbered
            // below its node, the root its own.
            let (pre, up) = (t.preorder(), t.idom_numbers());
            prop_assert_eq!(up.len(), pre.len());
            prop_assert_eq!(up.first().copied(), Some(0));
            for i in 1..pre.len() {
                prop_assert!((up[i] as usize) < i);
                prop_assert_eq!(Some(pre[up[i] as usize]), t.idom(pre[i]), "number {}", i);
            }
        }

        #[test]
        fn reversing_swaps_every_edge(
            n in 1usize..30,
            edges in proptest::collection::vec((0u32..30, 0u32..30), 0..80),
        ) {
            let g = Csr::from_edges(n, &edges);
            let r = g.reversed();
            prop_assert_eq!(r.nodes(), n);
            for b in 0..n as u32 {
                let want: Vec<u32> = (0..n as u32).flat_map(|a| g.successors(a).iter().filter(move |&&x| x == b).map(move |_| a)).collect();
                prop_assert_eq!(r.successors(b), &want[..]);
            }
        }

        #[test]
        fn reversing_over_numbers_swaps_the_numbered_edges(
            n in 1usize..30,
            edges in proptest::collection::vec((0u32..30, 0u32..30), 0..80),
            numbers in proptest::collection::vec(proptest::option::of(0u32..30), 30),
        ) {
            // Distinct numbers below `count` for some nodes, the later
            // nodes the lower numbers; the others (none, or a number at or
            // beyond `count`) are left out.
            let mut number = vec![NONE; n];
            let mut used = 0usize;
            for (v, x) in numbers.iter().take(n).enumerate() {
                number[v] = match x {
                    Some(x) if *x % 4 != 0 => { used += 1; used as u32 - 1 }
                    Some(x) => 100 + x,
                    None => NONE,
                };
            }
            let count = used;
            for x in number.iter_mut().filter(|x| (**x as usize) < count) {
                *x = (count - 1) as u32 - *x;
            }
            let g = Csr::from_edges(n, &edges);
            let r = g.reversed_numbered(&number, count);
            prop_assert_eq!(r.nodes(), count);
            let inside = |v: u32| (number[v as usize] as usize) < count;
            for b in (0..n as u32).filter(|&b| inside(b)) {
                let want: Vec<u32> = (0..n as u32)
                    .filter(|&a| inside(a))
                    .flat_map(|a| g.successors(a).iter().filter(move |&&x| x == b).map(|_| number[a as usize]).collect::<Vec<_>>())
                    .collect();
                prop_assert_eq!(r.successors(number[b as usize]), &want[..]);
            }
        }
    }

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
