//! CLRProfiler's Summary page: 18 figures (section 7 of
//! `docs/reference-reader.md`).

use crate::model::{Model, StackCounts};
use serde::Serialize;

/// The 18 Summary figures. `None` is CLRProfiler's "Unknown" (JSON `null`).
/// Field names are the JSON keys of the reference files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Bytes allocated (`!`/`a` records applied).
    pub allocated_bytes: u64,
    /// Bytes of objects moved by `u` records.
    pub relocated_bytes: u64,
    /// Bytes of the objects alive in the simulated heap at the end.
    pub final_heap_bytes: u64,
    /// Gen 0 collections (the heap simulation's counter).
    pub gen0_collections: i64,
    /// Gen 1 collections.
    pub gen1_collections: i64,
    /// Gen 2 collections.
    pub gen2_collections: i64,
    /// Induced collections.
    pub induced_collections: Option<u64>,
    /// Average gen 0 size at the counted GCs.
    pub gen0_heap_bytes: Option<u64>,
    /// Average gen 1 size.
    pub gen1_heap_bytes: Option<u64>,
    /// Average gen 2 size.
    pub gen2_heap_bytes: Option<u64>,
    /// Average large object heap size.
    pub loh_bytes: Option<u64>,
    /// Objects queued for finalization.
    pub objects_finalized: Option<u64>,
    /// Objects with a critical finalizer queued.
    pub critical_objects_finalized: Option<u64>,
    /// GC handles created.
    pub handles_created: Option<u64>,
    /// GC handles destroyed.
    pub handles_destroyed: Option<u64>,
    /// GC handles alive at the end.
    pub handles_surviving: Option<u64>,
    /// Comments kept.
    pub comments: u64,
    /// Heap dumps counted.
    pub heap_dumps: u64,
}

/// The bytes of a histogram: per row, the stack's size (as CLRProfiler
/// reads it: `i32`, widened to `u64`, so a negative size is huge) times the
/// count. CLRProfiler sums these in an `f64`; the exact sum is the same for
/// totals below 2^53 and saturates at `u64::MAX`.
pub fn histogram_bytes(model: &Model, h: &StackCounts) -> u64 {
    let mut total: u128 = 0;
    for (row, count) in h.iter() {
        let size = model.stacks().type_and_size(row).map_or(0, |(_, s)| s as i64 as u64);
        total += size.wrapping_mul(count) as u128;
    }
    total.min(u64::MAX as u128) as u64
}

/// Computes the Summary.
pub fn summary(model: &Model) -> Summary {
    let h = model.histograms();
    let book = model.gc_bookkeeping();
    let counts = book.counts();
    let cumulative = book.cumulative_sizes();
    let last = book.last_sizes();
    let c = model.collections();
    let any_handle = !model.handles().created().is_empty();
    let counted = counts[0] > 0;
    let known_or_zero = |v: u64| {
        if counted {
            Some(v)
        } else if any_handle {
            Some(0)
        } else {
            None
        }
    };
    let heap = |g: usize| {
        if !counted {
            None
        } else {
            Some(cumulative[g].checked_div(counts[g]).unwrap_or(last[g]))
        }
    };
    let handles = |v: u64| any_handle.then_some(v);
    Summary {
        allocated_bytes: histogram_bytes(model, &h.allocated),
        relocated_bytes: histogram_bytes(model, &h.relocated),
        final_heap_bytes: histogram_bytes(model, &h.final_heap),
        gen0_collections: c.gen0,
        gen1_collections: c.gen1,
        gen2_collections: c.gen2,
        induced_collections: known_or_zero(book.induced()[0]),
        gen0_heap_bytes: heap(0),
        gen1_heap_bytes: heap(1),
        gen2_heap_bytes: heap(2),
        loh_bytes: heap(3),
        objects_finalized: known_or_zero(h.finalized.total()),
        critical_objects_finalized: known_or_zero(h.critical_finalized.total()),
        handles_created: handles(model.handles().created().len() as u64),
        handles_destroyed: handles(model.handles().destroyed().len() as u64),
        handles_surviving: handles(model.handles().surviving_count() as u64),
        comments: model.comments().kept().len() as u64,
        heap_dumps: model.heap_dumps().counted() as u64,
    }
}
