//! Counts per stack row (CLRProfiler's histograms: allocated, relocated,
//! finalized, final heap, calls, ...).

use super::ids::StackRef;

/// A count per stack row, as a dense column.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StackCounts {
    counts: Vec<u64>,
}

impl StackCounts {
    /// Adds one to a row.
    #[inline]
    pub(crate) fn add(&mut self, row: StackRef) {
        let r = row.index();
        if r >= self.counts.len() {
            self.counts.resize((r + 1).max(self.counts.len() * 2).max(16), 0);
        }
        self.counts[r] += 1;
    }

    /// Adds `n` to a row.
    #[inline]
    pub(crate) fn add_n(&mut self, row: StackRef, n: u64) {
        let r = row.index();
        if r >= self.counts.len() {
            self.counts.resize((r + 1).max(self.counts.len() * 2).max(16), 0);
        }
        self.counts[r] += n;
    }

    /// The count of a row.
    pub fn get(&self, row: StackRef) -> u64 {
        self.counts.get(row.index()).copied().unwrap_or(0)
    }

    /// Rows with a count, in row order.
    pub fn iter(&self) -> impl Iterator<Item = (StackRef, u64)> + '_ {
        self.counts.iter().enumerate().filter(|(_, &c)| c > 0).map(|(r, &c)| (StackRef(r as u32), c))
    }

    /// The sum of all counts.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// True when every count is zero.
    pub fn is_empty(&self) -> bool {
        self.counts.iter().all(|&c| c == 0)
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.counts.capacity() * 8
    }

    pub(crate) fn shrink(&mut self) {
        while self.counts.last() == Some(&0) {
            self.counts.pop();
        }
        self.counts.shrink_to_fit();
    }

    pub(crate) fn from_vec(counts: Vec<u64>) -> Self {
        StackCounts { counts }
    }
}

/// The histograms CLRProfiler's reader keeps, by stack row.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Histograms {
    /// Objects allocated (`!`/`a` records applied).
    pub allocated: StackCounts,
    /// Objects moved by `u` records.
    pub relocated: StackCounts,
    /// Objects queued for finalization that matched a live object.
    pub finalized: StackCounts,
    /// The critical ones among them.
    pub critical_finalized: StackCounts,
    /// Objects in the final-heap walk.
    pub final_heap: StackCounts,
    /// `c` records.
    pub calls: StackCounts,
}

impl Histograms {
    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.allocated.heap_bytes()
            + self.relocated.heap_bytes()
            + self.finalized.heap_bytes()
            + self.critical_finalized.heap_bytes()
            + self.final_heap.heap_bytes()
            + self.calls.heap_bytes()
    }

    pub(crate) fn shrink(&mut self) {
        self.allocated.shrink();
        self.relocated.shrink();
        self.finalized.shrink();
        self.critical_finalized.shrink();
        self.final_heap.shrink();
        self.calls.shrink();
    }
}
