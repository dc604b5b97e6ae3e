//! CLRProfiler's Summary page: 18 figures (section 7 of
//! `docs/src/reference-reader.md`).

use crate::model::{Model, StackCounts};
use serde::Serialize;

/// The 18 Summary figures. `None` is CLRProfiler's "Unknown" (JSON `null`).
/// Field names are the JSON keys of the reference files.
///
/// A log that says it was recorded without allocation events (clrprof's
/// agent writes so in its first comment when it was attached to a running
/// process, and in a heap dump file of its own) and has no allocation
/// record cannot tell the figures of the simulated objects: then
/// `allocations_known` is false, the three byte figures are 0 here and
/// `null` ("Unknown") in JSON, and the finalized counts are `None`. So
/// for a trace without allocation events and a `.gcdump`
/// ([`crate::query::allocations_unknown()`] says why). Any
/// other log gives CLRProfiler's figures, 0 included, as its reader does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(into = "SummaryJson")]
pub struct Summary {
    /// Bytes allocated (`!`/`a` records applied).
    pub allocated_bytes: u64,
    /// Bytes of objects moved by `u` records.
    pub relocated_bytes: u64,
    /// Bytes of the objects alive in the simulated heap at the end.
    pub final_heap_bytes: u64,
    /// Whether the three figures above and the finalized counts are
    /// known: false only for a log recorded without allocation events (see
    /// above). Not part of the JSON, where unknown figures are `null`.
    pub allocations_known: bool,
    /// Whether the byte figures and the finalized counts are estimates
    /// made from sampled allocations (a trace; see
    /// [`crate::query::estimates()`]). Not part of the JSON.
    pub estimated: bool,
    /// Whether the relocated and final-heap figures are known: false for a
    /// trace whose GCs did not report their survivors. Not part of the
    /// JSON, where they are then `null`.
    pub survivors_known: bool,
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

/// The Summary as JSON: the reference files' keys, in their order, with
/// `null` for what the log cannot tell.
#[derive(Serialize)]
struct SummaryJson {
    allocated_bytes: Option<u64>,
    relocated_bytes: Option<u64>,
    final_heap_bytes: Option<u64>,
    gen0_collections: i64,
    gen1_collections: i64,
    gen2_collections: i64,
    induced_collections: Option<u64>,
    gen0_heap_bytes: Option<u64>,
    gen1_heap_bytes: Option<u64>,
    gen2_heap_bytes: Option<u64>,
    loh_bytes: Option<u64>,
    objects_finalized: Option<u64>,
    critical_objects_finalized: Option<u64>,
    handles_created: Option<u64>,
    handles_destroyed: Option<u64>,
    handles_surviving: Option<u64>,
    comments: u64,
    heap_dumps: u64,
}

impl From<Summary> for SummaryJson {
    fn from(s: Summary) -> SummaryJson {
        let known = |v: u64| s.allocations_known.then_some(v);
        let survivors = |v: u64| known(v).filter(|_| s.survivors_known);
        SummaryJson {
            allocated_bytes: known(s.allocated_bytes),
            relocated_bytes: survivors(s.relocated_bytes),
            final_heap_bytes: survivors(s.final_heap_bytes),
            gen0_collections: s.gen0_collections,
            gen1_collections: s.gen1_collections,
            gen2_collections: s.gen2_collections,
            induced_collections: s.induced_collections,
            gen0_heap_bytes: s.gen0_heap_bytes,
            gen1_heap_bytes: s.gen1_heap_bytes,
            gen2_heap_bytes: s.gen2_heap_bytes,
            loh_bytes: s.loh_bytes,
            objects_finalized: s.objects_finalized,
            critical_objects_finalized: s.critical_objects_finalized,
            handles_created: s.handles_created,
            handles_destroyed: s.handles_destroyed,
            handles_surviving: s.handles_surviving,
            comments: s.comments,
            heap_dumps: s.heap_dumps,
        }
    }
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

/// Whether the log says it was recorded without allocation events: its
/// first comment is the header clrprof's agent writes for an attached
/// recording (`clrprof agent ... attached (no allocations)`) or for a heap
/// dump file of its own (`clrprof heap dump of pid ...`).
pub fn recorded_without_allocations(model: &Model) -> bool {
    model.comments().kept().first().is_some_and(|c| {
        let text = model.names().get(c.text);
        (text.starts_with("clrprof agent ") && text.ends_with(" attached (no allocations)"))
            || text.starts_with("clrprof heap dump of pid ")
    })
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
    // An `l` record counts only when it names an object the simulation
    // knows: in a log recorded without allocation events nothing can be
    // counted, and 0 would be a wrong number, not an unknown one.
    let allocations_known = super::allocations_unknown(model).is_none();
    // A trace: what the samples stand for. Its GCs are counted from the
    // GC table (a trace's times are finer than the log's milliseconds, so
    // CLRProfiler's one-start-per-tick rule would drop GCs that follow
    // each other within a millisecond); finalizations are not in it.
    let imported = model.imported();
    let estimated = model.sampling().is_some();
    let survivors_known = !imported.is_some_and(|f| !f.survival_known);
    let induced_in_table = || model.gcs().iter().filter(|(_, g)| g.induced).count() as u64;
    let induced_collections = match imported {
        Some(_) => Some(induced_in_table()),
        None => known_or_zero(book.induced()[0]),
    };
    let finalized = |v: u64| known_or_zero(v).filter(|_| allocations_known && imported.is_none());
    Summary {
        allocated_bytes: histogram_bytes(model, &h.allocated),
        relocated_bytes: histogram_bytes(model, &h.relocated),
        final_heap_bytes: histogram_bytes(model, &h.final_heap),
        allocations_known,
        estimated,
        survivors_known,
        gen0_collections: c.gen0,
        gen1_collections: c.gen1,
        gen2_collections: c.gen2,
        induced_collections,
        gen0_heap_bytes: heap(0),
        gen1_heap_bytes: heap(1),
        gen2_heap_bytes: heap(2),
        loh_bytes: heap(3),
        objects_finalized: finalized(h.finalized.total()),
        critical_objects_finalized: finalized(h.critical_finalized.total()),
        handles_created: handles(model.handles().created().len() as u64),
        handles_destroyed: handles(model.handles().destroyed().len() as u64),
        handles_surviving: handles(model.handles().surviving_count() as u64),
        comments: model.comments().kept().len() as u64,
        heap_dumps: model.heap_dumps().counted() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log without allocation records (as an attached recording writes):
    /// GCs and finalizer lines, but no object the simulation knows. The
    /// figures of the simulated objects are unknown, not 0; the GC counts
    /// are known.
    #[test]
    fn figures_of_objects_are_unknown_without_allocations() {
        let gc = "i 5\nb 1 0 0 0x1000 0x100 0x10000 0\ni 6\nl 0 0x1010\ni 7\nb 0 0 0 0x1000 0x100 0x10000 0\ng 1 0 0\n";
        // A log that says nothing of how it was made: CLRProfiler's 0.
        let m = crate::model::load(gc.as_bytes(), &Default::default()).expect("loads");
        let v = serde_json::to_value(summary(&m)).expect("json");
        assert_eq!((v["allocated_bytes"].as_u64(), v["objects_finalized"].as_u64()), (Some(0), Some(0)));
        let log = format!("i 1\nz clrprof agent 0.1.0 pid 7 stacks none attached (no allocations)\n{gc}");
        let log = log.as_bytes();
        let m = crate::model::load(log, &Default::default()).expect("loads");
        let s = summary(&m);
        assert!(!s.allocations_known);
        assert_eq!((s.objects_finalized, s.critical_objects_finalized), (None, None));
        assert_eq!(s.gen0_collections, 1);
        let v = serde_json::to_value(s).expect("json");
        for key in ["allocated_bytes", "relocated_bytes", "final_heap_bytes", "objects_finalized", "critical_objects_finalized"] {
            assert!(v[key].is_null(), "{key}: {}", v[key]);
        }
        assert_eq!(v["gen0_collections"], 1);
        // With an allocation, the same figures are numbers.
        let log = b"t 1 0 T\nn 1 1 1 24\ni 1\n! 7 0x1010 1\ni 5\nb 1 0 0 0x1000 0x100 0x10000 0\ni 6\nl 0 0x1010\ni 7\nb 0 0 0 0x1000 0x100 0x10000 0\ng 1 0 0\n";
        let m = crate::model::load(log, &Default::default()).expect("loads");
        let v = serde_json::to_value(summary(&m)).expect("json");
        assert_eq!(v["allocated_bytes"], 24);
        assert_eq!(v["objects_finalized"], 1);
    }
}
