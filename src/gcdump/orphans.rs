//! Objects a snapshot holds without naming what holds them.
//!
//! Every object in a heap snapshot survived the GC that took it, so an
//! object no root of the snapshot reaches is held by something the
//! snapshot does not name (a root category the dumper did not record, a
//! runtime-internal reference), not garbage. As PerfView's `MemoryGraph`
//! does for its "orphans", such objects get a minimal set of unnamed
//! roots: one object in each group of unreached objects that no other
//! unreached object reaches (a source of the unreached part of the graph,
//! counting a cycle as one). Every unreached object is then reached from
//! exactly those, and retained sizes, paths and diffs cover it.
//!
//! How: a depth-first walk of the unreached objects gives each a finish
//! time; taken in decreasing finish time, an object not yet covered is
//! in a source component (Kosaraju's first-pass property), becomes a
//! root, and covers everything it reaches.

/// The unnamed roots of a graph of `n` nodes whose successors `children`
/// gives, where `reached[v]` tells the nodes the named roots reach and
/// `eligible(v)` the nodes that take part (the objects; edges through
/// other nodes are not followed). Returns them in increasing node order;
/// `reached` is updated to cover every eligible node.
pub(crate) fn unnamed_roots<I>(n: usize, children: impl Fn(usize) -> I, eligible: impl Fn(usize) -> bool, reached: &mut [bool]) -> Vec<u32>
where
    I: Iterator<Item = usize>,
{
    // Finish order of a depth-first walk over the unreached nodes.
    let mut visited = vec![false; n];
    let mut finish: Vec<u32> = Vec::new();
    let mut stack: Vec<(u32, I)> = Vec::new();
    let open = |v: usize, reached: &[bool], visited: &[bool]| v < n && eligible(v) && !reached[v] && !visited[v];
    for s in 0..n {
        if !open(s, reached, &visited) {
            continue;
        }
        visited[s] = true;
        stack.push((s as u32, children(s)));
        while let Some((v, succ)) = stack.last_mut() {
            match succ.next() {
                Some(c) => {
                    if open(c, reached, &visited) {
                        visited[c] = true;
                        stack.push((c as u32, children(c)));
                    }
                }
                None => {
                    finish.push(*v);
                    stack.pop();
                }
            }
        }
    }
    // Decreasing finish time: each object not yet covered is a root.
    let mut roots = Vec::new();
    let mut todo: Vec<usize> = Vec::new();
    for &r in finish.iter().rev() {
        if reached[r as usize] {
            continue;
        }
        roots.push(r);
        reached[r as usize] = true;
        todo.push(r as usize);
        while let Some(v) = todo.pop() {
            for c in children(v) {
                if c < n && eligible(c) && !reached[c] {
                    reached[c] = true;
                    todo.push(c);
                }
            }
        }
    }
    roots.sort_unstable();
    roots
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(n: usize, edges: &[(u32, u32)], reached_from: &[u32]) -> Vec<u32> {
        let mut adj = vec![Vec::new(); n];
        for &(a, b) in edges {
            adj[a as usize].push(b);
        }
        let mut reached = vec![false; n];
        let mut todo: Vec<u32> = reached_from.to_vec();
        while let Some(v) = todo.pop() {
            if !std::mem::replace(&mut reached[v as usize], true) {
                todo.extend(&adj[v as usize]);
            }
        }
        let roots = unnamed_roots(n, |v| adj[v].iter().map(|&c| c as usize), |_| true, &mut reached);
        assert!(reached.iter().all(|&r| r), "every node is reached");
        roots
    }

    #[test]
    fn one_root_per_source_group() {
        // 0 -> 1 named; 2 -> 3 -> 4 unreached chain; 5 <-> 6 cycle with
        // 6 -> 7; 8 alone; 9 -> 5 (so the cycle is not a source).
        let edges = [(0, 1), (2, 3), (3, 4), (5, 6), (6, 5), (6, 7), (9, 5)];
        assert_eq!(run(10, &edges, &[0]), vec![2, 8, 9]);
        // A pure cycle gets one root.
        assert_eq!(run(3, &[(0, 1), (1, 2), (2, 0)], &[]).len(), 1);
        // Reaching into the named part adds nothing.
        assert_eq!(run(3, &[(2, 0)], &[0, 1]), vec![2]);
    }

    #[test]
    fn a_long_chain_needs_no_deep_recursion() {
        let n = 200_000u32;
        let edges: Vec<(u32, u32)> = (0..n - 1).map(|i| (i + 1, i)).collect();
        assert_eq!(run(n as usize, &edges, &[]), vec![n - 1]);
    }
}
