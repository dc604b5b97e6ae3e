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

/// One object of the walk, as a `GC/BulkNode` element gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct WalkNode {
    pub address: u64,
    /// Its size (the caller rounds and caps it).
    pub size: u32,
    pub type_handle: u64,
    /// Its `EdgeCount` (a count beyond `u32::MAX`, which no heap has,
    /// is taken as `u32::MAX`).
    pub edge_count: u32,
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

/// Batches numbered by their `Index`, as they arrive: each a run of
/// entries in columns that the caller keeps (one growing column per
/// field, every batch appended: batches that come in their numbers'
/// order, as the runtime writes them, are already joined).
#[derive(Debug, Default)]
struct Runs {
    /// (number, first entry in the columns, entries).
    runs: Vec<(u32, usize, usize)>,
}

/// A run in number order: its entries in the columns, or a number of
/// lost entries.
type Placed = Result<(usize, usize), u64>;

impl Runs {
    fn add(&mut self, index: u32, start: usize, len: usize) {
        self.runs.push((index, start, len));
    }

    fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The runs in their numbers' order (a repeated number keeps its
    /// first run), with a run of lost entries for each missing number (a
    /// full batch's worth each: every batch but the last is full).
    fn in_order(mut self, gaps_dup: &mut u64) -> Vec<Placed> {
        self.runs.sort_by_key(|r| r.0);
        let full = self.runs.iter().map(|r| r.2 as u64).max().unwrap_or(0);
        let mut out = Vec::with_capacity(self.runs.len());
        let mut next_index = 0u64;
        for (index, start, len) in self.runs {
            let index = u64::from(index);
            if index < next_index {
                *gaps_dup += 1;
                continue;
            }
            if index > next_index {
                out.push(Err((index - next_index).saturating_mul(full)));
            }
            out.push(Ok((start, len)));
            next_index = index + 1;
        }
        out
    }
}

/// Whether the kept runs lie in the columns in order, one after the
/// other from the start (nothing to move).
fn in_place(order: &[Placed]) -> bool {
    let mut at = 0;
    for r in order.iter().filter_map(|r| r.as_ref().ok()) {
        if r.0 != at {
            return false;
        }
        at += r.1;
    }
    true
}

/// `column`'s kept runs in order (only called when they are not already).
fn reordered<T: Copy>(column: &[T], order: &[Placed]) -> Vec<T> {
    let mut out = Vec::with_capacity(order.iter().filter_map(|r| r.as_ref().ok()).map(|r| r.1).sum());
    for &(start, len) in order.iter().filter_map(|r| r.as_ref().ok()) {
        out.extend_from_slice(column.get(start..start + len).unwrap_or(&[]));
    }
    out
}

/// A walk being read.
#[derive(Debug, Default)]
pub(super) struct Walk {
    node_runs: Runs,
    addresses: Vec<u64>,
    sizes: Vec<u32>,
    types: Vec<u64>,
    edge_counts: Vec<u32>,
    edge_runs: Runs,
    edges: Vec<u64>,
    roots: Vec<(u32, Vec<WalkRoot>)>,
    /// Roots without a batch number (`GC/BulkRootStaticVar`), in arrival
    /// order.
    other_roots: Vec<WalkRoot>,
}

/// A joined walk: each node with its references, as columns.
///
/// ```text
/// node i:  addresses[i]  types[i]  sizes[i]
///          refs[ref_start[i] .. ref_start[i + 1]]   (the last node's end: refs.len())
/// ```
#[derive(Debug, Default)]
pub(super) struct Joined {
    pub roots: Vec<WalkRoot>,
    /// Per node, in walk order.
    pub addresses: Vec<u64>,
    /// Per node: its type handle.
    pub types: Vec<u64>,
    /// Per node.
    pub sizes: Vec<u32>,
    /// Per node: where its references start in `refs`.
    pub ref_start: Vec<u32>,
    /// The nodes' references, in node order (null references and unknown
    /// ones left out).
    pub refs: Vec<u64>,
    pub gaps: WalkGaps,
}

impl Joined {
    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.addresses.len()
    }

    /// The range of node `i`'s references in `refs` (empty out of range).
    #[inline]
    pub fn ref_range(&self, i: usize) -> std::ops::Range<usize> {
        let a = self.ref_start.get(i).map_or(0, |&a| a as usize);
        let b = self.ref_start.get(i + 1).map_or(self.refs.len(), |&b| b as usize);
        a..b.max(a)
    }

    /// Node `i`'s references.
    pub fn refs_of(&self, i: usize) -> &[u64] {
        self.refs.get(self.ref_range(i)).unwrap_or(&[])
    }
}

impl Walk {
    /// Whether anything was read.
    pub fn is_empty(&self) -> bool {
        self.node_runs.is_empty() && self.edge_runs.is_empty() && self.roots.is_empty() && self.other_roots.is_empty()
    }

    /// A `GC/BulkNode` batch.
    pub fn add_nodes(&mut self, index: u32, nodes: impl ExactSizeIterator<Item = WalkNode>) {
        let start = self.addresses.len();
        let n = nodes.len();
        self.addresses.reserve(n);
        self.sizes.reserve(n);
        self.types.reserve(n);
        self.edge_counts.reserve(n);
        for w in nodes {
            self.addresses.push(w.address);
            self.sizes.push(w.size);
            self.types.push(w.type_handle);
            self.edge_counts.push(w.edge_count);
        }
        self.node_runs.add(index, start, self.addresses.len() - start);
    }

    /// A `GC/BulkEdge` batch (the referenced addresses).
    pub fn add_edges(&mut self, index: u32, edges: impl Iterator<Item = u64>) {
        let start = self.edges.len();
        self.edges.extend(edges);
        self.edge_runs.add(index, start, self.edges.len() - start);
    }

    /// A `GC/BulkRootEdge` batch.
    pub fn add_roots(&mut self, index: u32, roots: Vec<WalkRoot>) {
        self.roots.push((index, roots));
    }

    /// Roots that carry no batch number.
    pub fn add_other_roots(&mut self, roots: impl IntoIterator<Item = WalkRoot>) {
        self.other_roots.extend(roots);
    }

    /// Joins the batches: the columns are taken over (moved only when the
    /// batches did not come in order), the edges become the references in
    /// place.
    pub fn join(self) -> Joined {
        let Walk {
            node_runs,
            mut addresses,
            mut sizes,
            mut types,
            mut edge_counts,
            edge_runs,
            mut edges,
            roots: root_batches,
            other_roots,
        } = self;
        let mut gaps = WalkGaps::default();
        // Roots: in number order, then the unnumbered ones.
        let mut root_runs = Runs::default();
        let mut root_items = Vec::new();
        for (index, r) in root_batches {
            root_runs.add(index, root_items.len(), r.len());
            root_items.extend(r);
        }
        let mut roots = Vec::new();
        for run in root_runs.in_order(&mut gaps.duplicate_batches) {
            match run {
                Ok((start, len)) => roots.extend_from_slice(root_items.get(start..start + len).unwrap_or(&[])),
                Err(lost) => gaps.missing_roots += lost,
            }
        }
        drop(root_items);
        roots.extend(other_roots);

        // Edges: one array by position; lost runs are holes of null
        // references (left out like the runtime's own nulls).
        let edge_order = edge_runs.in_order(&mut gaps.duplicate_batches);
        let mut holes = 0u64;
        for lost in edge_order.iter().filter_map(|r| r.err()) {
            holes += 1;
            gaps.missing_edges += lost;
        }
        let full_edge_batch = edge_order.iter().filter_map(|r| r.ok()).map(|r| r.1).max().unwrap_or(0);
        // A last batch short of full is the walk's final one: no edge was
        // lost after it.
        let tail_known = edge_order.last().is_some_and(|r| r.is_ok_and(|r| r.1 < full_edge_batch));
        if holes > 0 || !in_place(&edge_order) {
            // A hole is a claim (a batch number far ahead): it is filled
            // only while the holes stay within the edges read, so memory
            // follows what the trace holds; past that, the later edges
            // cannot be placed and are counted so.
            let mut hole_budget = edges.len() as u64;
            let mut placing = true;
            let mut joined = Vec::new();
            for run in &edge_order {
                match *run {
                    Ok((_, len)) if !placing => gaps.unplaced_edges += len as u64,
                    Ok((start, len)) => joined.extend_from_slice(edges.get(start..start + len).unwrap_or(&[])),
                    Err(lost) if placing && lost <= hole_budget => {
                        hole_budget -= lost;
                        joined.resize(joined.len() + lost as usize, 0);
                    }
                    Err(_) => placing = false,
                }
            }
            edges = joined;
        } else {
            edges.truncate(edge_order.iter().filter_map(|r| r.ok()).map(|r| r.1).sum());
        }
        let edges_total = edges.len() as u64;

        // Nodes: in number order; after a lost batch the edge positions
        // are known only when the lost batch's edges can be told.
        let node_order = node_runs.in_order(&mut gaps.duplicate_batches);
        if !in_place(&node_order) {
            addresses = reordered(&addresses, &node_order);
            sizes = reordered(&sizes, &node_order);
            types = reordered(&types, &node_order);
            edge_counts = reordered(&edge_counts, &node_order);
        } else {
            let n = node_order.iter().filter_map(|r| r.ok()).map(|r| r.1).sum();
            addresses.truncate(n);
            sizes.truncate(n);
            types.truncate(n);
            edge_counts.truncate(n);
        }
        let lost_node_batches = node_order.iter().filter(|r| r.is_err()).count();
        let known_edge_counts: u64 = edge_counts.iter().map(|&c| u64::from(c)).sum();
        let lost_batch_edges =
            if lost_node_batches == 1 && holes == 0 && tail_known { edges_total.checked_sub(known_edge_counts) } else { None };
        // Each node's edges are copied down to the references in place
        // (they never move up: the references are at most the edges read
        // so far), and its edge count becomes where its references start.
        let mut written = 0usize;
        let mut at = 0u64;
        let mut placeable = true;
        let mut node = 0usize;
        for run in node_order {
            let len = match run {
                Ok((_, len)) => len,
                Err(lost) => {
                    gaps.missing_nodes += lost;
                    match lost_batch_edges {
                        Some(e) => at += e,
                        None => placeable = false,
                    }
                    continue;
                }
            };
            for count in edge_counts.iter_mut().skip(node).take(len) {
                let c = u64::from(*count);
                // More references than a start position can say (4 G,
                // beyond any heap walk that fits in memory) are left out.
                let start = u32::try_from(written).ok();
                *count = start.unwrap_or(u32::MAX);
                if placeable && start.is_some() {
                    let end = at.saturating_add(c);
                    let have = end.min(edges_total).max(at);
                    gaps.missing_edges += end - have;
                    for k in at as usize..have as usize {
                        let t = edges[k];
                        if t != 0 {
                            edges[written] = t;
                            written += 1;
                        }
                    }
                    at = end;
                } else {
                    gaps.unplaced_edges += c;
                }
            }
            node += len;
        }
        // Edges no node asked for (the node batch that holds them is lost
        // and could not be told): counted as unplaced.
        if placeable && at < edges_total {
            gaps.unplaced_edges += edges_total - at;
        }
        edges.truncate(written);
        let ref_start = edge_counts;
        Joined { roots, addresses, types, sizes, ref_start, refs: edges, gaps }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(address: u64, edge_count: u32) -> WalkNode {
        WalkNode { address, size: 24, type_handle: 1, edge_count }
    }

    fn refs_of(j: &Joined) -> Vec<(u64, Vec<u64>)> {
        (0..j.len()).map(|i| (j.addresses[i], j.refs_of(i).to_vec())).collect()
    }

    /// A walk: node 0x10 has 5 edges, 0x20 none, 0x30 two, 0x40 one;
    /// batches of 2 nodes and of 3 edges, arriving edges first, in
    /// reverse.
    fn sample(drop_node_batch: Option<u32>, drop_edge_batch: Option<u32>) -> Joined {
        let mut w = Walk::default();
        let edges = [0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xc1, 0xc2, 0xd1];
        for (k, chunk) in edges.chunks(3).enumerate().rev() {
            if drop_edge_batch != Some(k as u32) {
                w.add_edges(k as u32, chunk.iter().copied());
            }
        }
        if drop_node_batch != Some(1) {
            w.add_nodes(1, [node(0x30, 2), node(0x40, 1)].into_iter());
        }
        if drop_node_batch != Some(0) {
            w.add_nodes(0, [node(0x10, 5), node(0x20, 0)].into_iter());
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
    fn batches_in_order_are_joined_where_they_lie() {
        let mut w = Walk::default();
        w.add_nodes(0, [node(0x10, 2), node(0x20, 0)].into_iter());
        w.add_edges(0, [0xa1, 0].into_iter());
        w.add_nodes(1, [node(0x30, 1)].into_iter());
        w.add_edges(1, [0xc1].into_iter());
        let j = w.join();
        assert_eq!(refs_of(&j), vec![(0x10, vec![0xa1]), (0x20, vec![]), (0x30, vec![0xc1])]);
        assert!(j.gaps.is_whole());
    }

    #[test]
    fn a_batch_number_far_ahead_costs_no_memory_for_its_hole() {
        // Three edges, then a batch that claims two million batches were
        // lost before it: its hole is not made, its edges not placed.
        let mut w = Walk::default();
        w.add_nodes(0, [node(0x10, 3)].into_iter());
        w.add_edges(0, [0xa1, 0xa2, 0xa3].into_iter());
        w.add_edges(2_000_000, [0xb1, 0xb2, 0xb3].into_iter());
        let j = w.join();
        assert_eq!(refs_of(&j), vec![(0x10, vec![0xa1, 0xa2, 0xa3])]);
        assert!(j.refs.capacity() < 1000, "{} references held", j.refs.capacity());
        assert_eq!(j.gaps.missing_edges, 1_999_999 * 3);
        assert_eq!(j.gaps.unplaced_edges, 3);
    }

    #[test]
    fn the_last_edges_missing_are_counted() {
        let j = sample(None, Some(2));
        assert_eq!(refs_of(&j).last(), Some(&(0x40, vec![])));
        assert_eq!(j.gaps.missing_edges, 2);
    }
}
