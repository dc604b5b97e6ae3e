//! A dump as a graph over dense indices: objects `0..n` in log order and a
//! virtual root `n` that references every strong root's object.

use super::DumpIndex;
use crate::format::address_index::{AddressIndex, ReferenceFinder};
use crate::format::records::ROOT_WEAK;
use crate::model::{DumpRoot, Model};

/// A directed graph in compressed sparse rows: the successors of node `v`
/// are `targets[start[v]..start[v + 1]]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Csr {
    start: Vec<u32>,
    targets: Vec<u32>,
}

impl Csr {
    /// A graph of `nodes` nodes from `(from, to)` edges (edges naming a
    /// node out of range are left out).
    pub fn from_edges(nodes: usize, edges: &[(u32, u32)]) -> Csr {
        let mut start = vec![0u32; nodes + 1];
        for &(a, b) in edges {
            if (a as usize) < nodes && (b as usize) < nodes {
                start[a as usize + 1] += 1;
            }
        }
        for k in 0..nodes {
            start[k + 1] += start[k];
        }
        let mut fill = start.clone();
        let mut targets = vec![0u32; start[nodes] as usize];
        for &(a, b) in edges {
            if (a as usize) < nodes && (b as usize) < nodes {
                targets[fill[a as usize] as usize] = b;
                fill[a as usize] += 1;
            }
        }
        Csr { start, targets }
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    /// Number of edges.
    pub fn edges(&self) -> usize {
        self.targets.len()
    }

    /// The successors of a node (empty out of range).
    pub fn successors(&self, v: u32) -> &[u32] {
        let v = v as usize;
        match (self.start.get(v), self.start.get(v + 1)) {
            (Some(&a), Some(&b)) => &self.targets[a as usize..b as usize],
            _ => &[],
        }
    }

    /// The same graph with every edge reversed.
    pub fn reversed(&self) -> Csr {
        let n = self.nodes();
        // Counts at `b + 2`, summed: `start[b + 1]` is then where `b`'s
        // predecessors begin, and serves as its fill cursor, which leaves
        // it where they end (no second array of cursors).
        let mut start = vec![0u32; n + 2];
        for &b in &self.targets {
            start[b as usize + 2] += 1;
        }
        for k in 2..n + 2 {
            start[k] += start[k - 1];
        }
        let mut targets = vec![0u32; self.targets.len()];
        for a in 0..n {
            for &b in self.successors(a as u32) {
                let slot = &mut start[b as usize + 1];
                targets[*slot as usize] = a as u32;
                *slot += 1;
            }
        }
        start.truncate(n + 1);
        Csr { start, targets }
    }

    /// The reversed graph of the numbered nodes, over their numbers:
    /// `number[v]` is node `v`'s number below `count` (`u32::MAX`, or
    /// beyond `count`: left out, with its edges). Node `number[b]`'s
    /// successors are the numbers of `b`'s predecessors, in node order.
    ///
    /// Both passes read the graph in node order; only the counts and the
    /// filled slots are reached at random, with no load waiting on
    /// another (a depth-first walk over the renumbered graph then reads
    /// it in order).
    pub fn reversed_numbered(&self, number: &[u32], count: usize) -> Csr {
        let n = self.nodes().min(number.len());
        let numbered = |v: u32| number.get(v as usize).copied().filter(|&i| (i as usize) < count);
        let mut start = vec![0u32; count + 2];
        for v in 0..n as u32 {
            if numbered(v).is_none() {
                continue;
            }
            for &b in self.successors(v) {
                if let Some(j) = numbered(b) {
                    start[j as usize + 2] += 1;
                }
            }
        }
        for k in 2..count + 2 {
            start[k] += start[k - 1];
        }
        let mut targets = vec![0u32; start[count + 1] as usize];
        for v in 0..n as u32 {
            let Some(i) = numbered(v) else { continue };
            for &b in self.successors(v) {
                if let Some(j) = numbered(b) {
                    let slot = &mut start[j as usize + 1];
                    targets[*slot as usize] = i;
                    *slot += 1;
                }
            }
        }
        start.truncate(count + 1);
        Csr { start, targets }
    }
}

/// One dump's object graph.
///
/// ```text
/// node   0 .. n-1            the dump's objects, in log order
/// node   n                   the virtual root
/// edges  object -> object    the `o` records' references that name an
///                            object of the same dump
///        root -> object      one per strong (non-weak) root naming an
///                            object of the dump, in log order
/// ```
#[derive(Clone, Debug)]
pub struct DumpGraph {
    /// The dump.
    pub index: DumpIndex,
    /// The edges.
    pub graph: Csr,
    /// Addresses, per object.
    pub addresses: Vec<u64>,
    /// Type ids, per object.
    pub types: Vec<i32>,
    /// Sizes, per object.
    pub sizes: Vec<u32>,
    /// The strong roots that name an object of the dump: (object, root).
    pub roots: Vec<(u32, DumpRoot)>,
    /// References naming no object of the dump (left out of the graph).
    pub dangling_references: u64,
    /// Strong roots naming no object of the dump (left out of the graph).
    pub dangling_roots: u64,
}

impl DumpGraph {
    /// Builds the graph of a dump; `None` if there is no such dump.
    pub fn build(model: &Model, index: DumpIndex) -> Option<DumpGraph> {
        let d = index.get(model)?;
        let t = model.heap_dumps();
        let n = t.object_count(d);
        let mut addresses = Vec::with_capacity(n);
        let mut types = Vec::with_capacity(n);
        let mut sizes = Vec::with_capacity(n);
        for o in t.objects(d) {
            addresses.push(o.address.0);
            types.push(o.type_id.0);
            sizes.push(o.size);
        }
        // Address -> object: for an address listed twice the later object
        // wins, as in CLRProfiler's table, where the later entry hides the
        // earlier. A reference is guessed from the one before or searched
        // from its referring object (see `ReferenceFinder`, `AddressIndex`:
        // a walk's objects mostly reference their neighbours).
        let by_address = AddressIndex::new(&addresses);
        let find = |a: u64, hint: usize| by_address.find(&addresses, a, hint);
        let mut finder = ReferenceFinder::new(&by_address, &addresses);
        let mut start = Vec::with_capacity(n + 2);
        let mut targets = Vec::new();
        let mut dangling_references = 0;
        start.push(0u32);
        for k in 0..n {
            for (j, r) in t.reference_iter(d, k).enumerate() {
                match finder.find(r, k, j) {
                    Some(x) => targets.push(x),
                    None => dangling_references += 1,
                }
            }
            start.push(targets.len() as u32);
        }
        let mut roots = Vec::new();
        let mut dangling_roots = 0;
        for r in t.roots(d).iter().filter(|r| r.flags & ROOT_WEAK == 0) {
            match find(r.address.0, n / 2) {
                Some(x) => {
                    targets.push(x);
                    roots.push((x, *r));
                }
                None => dangling_roots += 1,
            }
        }
        start.push(targets.len() as u32);
        Some(DumpGraph {
            index,
            graph: Csr { start, targets },
            addresses,
            types,
            sizes,
            roots,
            dangling_references,
            dangling_roots,
        })
    }

    /// Number of objects (the virtual root is node `objects()`).
    pub fn objects(&self) -> usize {
        self.sizes.len()
    }

    /// The virtual root's node.
    pub fn root(&self) -> u32 {
        self.sizes.len() as u32
    }
}
