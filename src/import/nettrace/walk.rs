//! A heap walk's batches joined by their positions, whatever order they
//! arrive in.
//!
//! The runtime walks the heap once, object by object, and fills three
//! buffers as it goes: nodes (`GC/BulkNode`: address, size, type and
//! `EdgeCount`), edges (`GC/BulkEdge`: the referenced addresses of each
//! node, in node order) and roots (`GC/BulkRootEdge`). Each buffer is
//! written out as an event when it is full, independently of the others,
//! and numbered by its own counter, the event's `Index` (0, 1, 2, ...). So
//! the edges of an array with 3 M references arrive long before the node
//! event that holds the array, and nothing but the numbering joins them:
//!
//! ```text
//! node batch k  = nodes [k * N, k * N + Count)          N: a full batch's Count
//! edge batch k  = edges [k * E, k * E + Count)          E: likewise
//! node i's edges = edges [sum of EdgeCount of nodes 0..i, + EdgeCount of node i)
//! ```
//!
//! Every batch but the last of its kind is full, so a missing number is a
//! lost batch of `N` (or `E`) entries. The edges of nodes that follow a
//! lost node batch cannot be placed, unless the lost batch's edges are
//! known (one lost node batch, every edge batch there: the difference):
//! then they are. Edges that cannot be placed are left out and counted,
//! never hung on another object.

/// One object of the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct WalkNode {
    pub address: u64,
    pub size: u64,
    pub type_handle: u64,
    pub edge_count: u64,
}

/// A root of the walk: (object, kind code, flags, id).
pub(super) type WalkRoot = (u64, i32, u64, u64);

/// What the join could not place.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct WalkGaps {
    /// Nodes in lost node batches (their objects are not in the dump).
    pub missing_nodes: u64,
    /// Edges that were not in the trace: in lost edge batches, or after
    /// the last edge batch when the nodes' `EdgeCount`s ask for more.
    pub missing_edges: u64,
    /// Edges of nodes whose edges could not be placed (after a lost node
    /// batch): those nodes are in the dump without references.
    pub unplaced_edges: u64,
    /// Roots in lost root batches.
    pub missing_roots: u64,
    /// Batches whose number came twice (the second was left out).
    pub duplicate_batches: u64,
}

#[cfg(test)]
impl WalkGaps {
    /// Whether the graph is whole.
    pub fn is_whole(&self) -> bool {
        *self == WalkGaps::default()
    }
}

/// Batches numbered by their `Index`, as they arrive.
#[derive(Debug)]
struct Batches<T> {
    batches: Vec<(u32, Vec<T>)>,
}

impl<T> Default for Batches<T> {
    fn default() -> Self {
        Batches { batches: Vec::new() }
    }
}

impl<T> Batches<T> {
    fn add(&mut self, index: u32, items: Vec<T>) {
        self.batches.push((index, items));
    }

    fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }

    /// The batches in their numbers' order, each with the position of its
    /// first entry, or `None` for a run of lost entries (position, count).
    /// A repeated number keeps its first batch.
    fn in_order(mut self, gaps_dup: &mut u64) -> Vec<(u64, Result<Vec<T>, u64>)> {
        self.batches.sort_by_key(|b| b.0);
        let full = self.batches.iter().map(|b| b.1.len() as u64).max().unwrap_or(0);
        let mut out = Vec::with_capacity(self.batches.len());
        let mut next_index = 0u64;
        let mut pos = 0u64;
        for (index, items) in self.batches {
            let index = u64::from(index);
            if index < next_index {
                *gaps_dup += 1;
                continue;
            }
            if index > next_index {
                let lost = (index - next_index).saturating_mul(full);
                out.push((pos, Err(lost)));
                pos = pos.saturating_add(lost);
            }
            let n = items.len() as u64;
            out.push((pos, Ok(items)));
            pos = pos.saturating_add(n);
            next_index = index + 1;
        }
        out
    }
}

/// A walk being read.
#[derive(Debug, Default)]
pub(super) struct Walk {
    nodes: Batches<WalkNode>,
    edges: Batches<u64>,
    roots: Batches<WalkRoot>,
    /// Roots without a batch number (`GC/BulkRootStaticVar`), in arrival
    /// order.
    other_roots: Vec<WalkRoot>,
}

/// A joined walk: each node with its references.
#[derive(Debug, Default)]
pub(super) struct Joined {
    pub roots: Vec<WalkRoot>,
    /// Nodes in walk order.
    pub nodes: Vec<WalkNode>,
    /// `refs[ref_start[i]..ref_start[i + 1]]` are node `i`'s references
    /// (null references and unknown ones left out).
    pub refs: Vec<u64>,
    pub ref_start: Vec<usize>,
    pub gaps: WalkGaps,
}

impl Walk {
    /// Whether anything was read.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.edges.is_empty() && self.roots.is_empty() && self.other_roots.is_empty()
    }

    /// A `GC/BulkNode` batch.
    pub fn add_nodes(&mut self, index: u32, nodes: Vec<WalkNode>) {
        self.nodes.add(index, nodes);
    }

    /// A `GC/BulkEdge` batch (the referenced addresses).
    pub fn add_edges(&mut self, index: u32, edges: Vec<u64>) {
        self.edges.add(index, edges);
    }

    /// A `GC/BulkRootEdge` batch.
    pub fn add_roots(&mut self, index: u32, roots: Vec<WalkRoot>) {
        self.roots.add(index, roots);
    }

    /// Roots that carry no batch number.
    pub fn add_other_roots(&mut self, roots: impl IntoIterator<Item = WalkRoot>) {
        self.other_roots.extend(roots);
    }

    /// Joins the batches.
    pub fn join(self) -> Joined {
        let mut gaps = WalkGaps::default();
        // Roots: in number order, then the unnumbered ones.
        let mut roots = Vec::new();
        for (_, batch) in self.roots.in_order(&mut gaps.duplicate_batches) {
            match batch {
                Ok(r) => roots.extend(r),
                Err(lost) => gaps.missing_roots += lost,
            }
        }
        roots.extend(self.other_roots);

        // Edges: one array by position; lost runs are holes of null
        // references (left out like the runtime's own nulls).
        let mut edges: Vec<u64> = Vec::new();
        let mut holes = 0u64;
        let edge_batches = self.edges.in_order(&mut gaps.duplicate_batches);
        let full_edge_batch = edge_batches.iter().filter_map(|b| b.1.as_ref().ok()).map(Vec::len).max().unwrap_or(0);
        // A last batch short of full is the walk's final one: no edge was
        // lost after it.
        let tail_known = edge_batches.last().is_some_and(|b| b.1.as_ref().is_ok_and(|e| e.len() < full_edge_batch));
        for (_, batch) in edge_batches {
            match batch {
                Ok(e) => edges.extend(e),
                Err(lost) => {
                    holes += 1;
                    edges.resize(edges.len().saturating_add(lost as usize), 0);
                    gaps.missing_edges += lost;
                }
            }
        }
        let edges_total = edges.len() as u64;

        // Nodes: in number order; after a lost batch the edge positions
        // are known only when the lost batch's edges can be told.
        let node_batches = self.nodes.in_order(&mut gaps.duplicate_batches);
        let lost_node_batches = node_batches.iter().filter(|b| b.1.is_err()).count();
        let known_edge_counts: u64 =
            node_batches.iter().filter_map(|b| b.1.as_ref().ok()).flat_map(|v| v.iter().map(|n| n.edge_count)).sum();
        let lost_batch_edges =
            if lost_node_batches == 1 && holes == 0 && tail_known { edges_total.checked_sub(known_edge_counts) } else { None };
        let mut nodes = Vec::new();
        let mut refs = Vec::new();
        let mut ref_start = vec![0usize];
        let mut at = 0u64;
        let mut placeable = true;
        for (_, batch) in node_batches {
            let batch = match batch {
                Ok(b) => b,
                Err(lost) => {
                    gaps.missing_nodes += lost;
                    match lost_batch_edges {
                        Some(e) => at += e,
                        None => placeable = false,
                    }
                    continue;
                }
            };
            for n in batch {
                if placeable {
                    let end = at.saturating_add(n.edge_count);
                    let have = end.min(edges_total).max(at);
                    gaps.missing_edges += end - have;
                    if let Some(run) = edges.get(at as usize..have as usize) {
                        refs.extend(run.iter().copied().filter(|&t| t != 0));
                    }
                    at = end;
                } else {
                    gaps.unplaced_edges += n.edge_count;
                }
                nodes.push(n);
                ref_start.push(refs.len());
            }
        }
        // Edges no node asked for (the node batch that holds them is lost
        // and could not be told): counted as unplaced.
        if placeable && at < edges_total {
            gaps.unplaced_edges += edges_total - at;
        }
        Joined { roots, nodes, refs, ref_start, gaps }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(address: u64, edge_count: u64) -> WalkNode {
        WalkNode { address, size: 24, type_handle: 1, edge_count }
    }

    fn refs_of(j: &Joined) -> Vec<(u64, Vec<u64>)> {
        j.nodes.iter().enumerate().map(|(i, n)| (n.address, j.refs[j.ref_start[i]..j.ref_start[i + 1]].to_vec())).collect()
    }

    /// A walk: node 0x10 has 5 edges, 0x20 none, 0x30 two, 0x40 one;
    /// batches of 2 nodes and of 3 edges, arriving edges first, in
    /// reverse.
    fn sample(drop_node_batch: Option<u32>, drop_edge_batch: Option<u32>) -> Joined {
        let mut w = Walk::default();
        let edges = [0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xc1, 0xc2, 0xd1];
        for (k, chunk) in edges.chunks(3).enumerate().rev() {
            if drop_edge_batch != Some(k as u32) {
                w.add_edges(k as u32, chunk.to_vec());
            }
        }
        if drop_node_batch != Some(1) {
            w.add_nodes(1, vec![node(0x30, 2), node(0x40, 1)]);
        }
        if drop_node_batch != Some(0) {
            w.add_nodes(0, vec![node(0x10, 5), node(0x20, 0)]);
        }
        w.add_roots(0, vec![(0x10, 3, 0, 7)]);
        w.join()
    }

    #[test]
    fn edges_join_their_nodes_by_position_whatever_the_arrival() {
        let j = sample(None, None);
        assert_eq!(
            refs_of(&j),
            vec![(0x10, vec![0xa1, 0xa2, 0xa3, 0xa4, 0xa5]), (0x20, vec![]), (0x30, vec![0xc1, 0xc2]), (0x40, vec![0xd1])]
        );
        assert!(j.gaps.is_whole());
        assert_eq!(j.roots, vec![(0x10, 3, 0, 7)]);
    }

    #[test]
    fn a_lost_edge_batch_leaves_holes_not_wrong_edges() {
        // Edges 3..6 (a4 a5 c1) lost: the others stay on their nodes.
        let j = sample(None, Some(1));
        assert_eq!(refs_of(&j), vec![(0x10, vec![0xa1, 0xa2, 0xa3]), (0x20, vec![]), (0x30, vec![0xc2]), (0x40, vec![0xd1])]);
        assert_eq!(j.gaps.missing_edges, 3);
        assert!(!j.gaps.is_whole());
    }

    #[test]
    fn a_lost_node_batch_is_counted_and_later_edges_still_placed_when_they_can_be() {
        // The first node batch is lost; its 5 edges are told by the total.
        let j = sample(Some(0), None);
        assert_eq!(refs_of(&j), vec![(0x30, vec![0xc1, 0xc2]), (0x40, vec![0xd1])]);
        assert_eq!((j.gaps.missing_nodes, j.gaps.unplaced_edges), (2, 0));
        // Both a node and an edge batch lost: the later nodes keep no
        // edges rather than wrong ones.
        let j = sample(Some(0), Some(2));
        assert_eq!(refs_of(&j), vec![(0x30, vec![]), (0x40, vec![])]);
        // (The lost last edge batch cannot be told from a walk's end.)
        assert_eq!((j.gaps.missing_nodes, j.gaps.unplaced_edges, j.gaps.missing_edges), (2, 3, 0));
    }

    #[test]
    fn the_last_edges_missing_are_counted() {
        let j = sample(None, Some(2));
        assert_eq!(refs_of(&j).last(), Some(&(0x40, vec![])));
        assert_eq!(j.gaps.missing_edges, 2);
    }
}
