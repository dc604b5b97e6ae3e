//! Which objects a type histogram counts: one of CLRProfiler's five
//! histograms, narrowed by a time window and threads, or the objects live
//! at a given moment. The answer is a count per stack row
//! ([`StackCounts`]), which [`super::types::group_by_name`] turns into rows
//! by type name and [`super::size_buckets()`] into CLRProfiler's size
//! histogram.
//!
//! What a [`Filter`] means for each kind:
//!
//! | kind | window | threads |
//! |---|---|---|
//! | allocated | allocation time | allocating thread |
//! | final heap (at the end or at a time) | allocation time | allocating thread |
//! | finalized, critical | time the `l` record was read | the object's allocating thread |
//! | relocated | refused: the model counts moves per stack, not per event | refused |
//!
//! With the default filter and no time, every kind is the model's own
//! histogram, so the figures are CLRProfiler's.
//!
//! ```
//! use clrprof::query::{type_counts, Filter, HistogramKind, TypeSelection};
//! let log = b"t 1 0 T\nn 1 1 1 24\ni 5\n! 7 0x1000 1\ni 10\n! 7 0x1018 1\n";
//! let model = clrprof::model::load(log, &Default::default()).unwrap();
//! let at = model.time().tick_at(0.007); // 7 ms
//! let sel = TypeSelection { kind: HistogramKind::FinalHeap, at: Some(at) };
//! let counts = type_counts(&model, &sel, &Filter::all()).unwrap();
//! assert_eq!(counts.total(), 1);
//! ```

use super::filter::Filter;
use super::types::HistogramKind;
use crate::model::{Fate, GcIndex, Model, ObjectId, StackCounts, TickIndex};
use std::fmt;

/// What to count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypeSelection {
    /// Which histogram.
    pub kind: HistogramKind,
    /// For [`HistogramKind::FinalHeap`]: the objects live at the end of this
    /// tick slot instead of at the end of the log (allocated at or before
    /// it, and not dead at or before it).
    pub at: Option<TickIndex>,
}

/// A selection the model cannot answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeQueryError {
    /// A time or thread filter on a kind whose events carry no time.
    FilterNotApplicable(HistogramKind),
    /// A time (`at`) on a kind other than the final heap.
    AtNeedsFinalHeap(HistogramKind),
}

impl fmt::Display for TypeQueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeQueryError::FilterNotApplicable(k) => write!(
                f,
                "a time window or thread filter cannot apply to {}: the model keeps those counts per stack, \
                 not per event",
                kind_name(*k)
            ),
            TypeQueryError::AtNeedsFinalHeap(k) => {
                write!(f, "a time (--at) applies to the final heap (live objects), not to {}", kind_name(*k))
            }
        }
    }
}

impl std::error::Error for TypeQueryError {}

fn kind_name(k: HistogramKind) -> &'static str {
    match k {
        HistogramKind::Allocated => "allocated objects",
        HistogramKind::Relocated => "relocated objects",
        HistogramKind::FinalHeap => "the final heap",
        HistogramKind::Finalized => "finalized objects",
        HistogramKind::CriticalFinalized => "critical finalized objects",
    }
}

/// Counts per stack row of the selected objects (see the module
/// documentation for what the filter means per kind).
pub fn type_counts(model: &Model, sel: &TypeSelection, filter: &Filter) -> Result<StackCounts, TypeQueryError> {
    if sel.at.is_some() && sel.kind != HistogramKind::FinalHeap {
        return Err(TypeQueryError::AtNeedsFinalHeap(sel.kind));
    }
    if filter.is_all() && sel.at.is_none() {
        return Ok(sel.kind.of(model).clone());
    }
    let rows = model.stacks().len();
    Ok(match sel.kind {
        HistogramKind::Allocated => {
            let mut counts = vec![0u64; rows];
            for r in filter.objects(model) {
                add(&mut counts, r.stack.index());
            }
            model.estimate_rows(&mut counts);
            StackCounts::from_vec(counts)
        }
        HistogramKind::FinalHeap => live_at(model, sel.at, filter),
        HistogramKind::Finalized | HistogramKind::CriticalFinalized => {
            let critical_only = sel.kind == HistogramKind::CriticalFinalized;
            let mut counts = vec![0u64; rows];
            let a = model.allocations();
            for e in model.finalizers().events() {
                if (critical_only && !e.critical) || !filter.has_tick(e.tick) || !filter.has_thread(a.thread(e.object)) {
                    continue;
                }
                add(&mut counts, a.stack(e.object).index());
            }
            model.estimate_rows(&mut counts);
            StackCounts::from_vec(counts)
        }
        HistogramKind::Relocated => return Err(TypeQueryError::FilterNotApplicable(sel.kind)),
    })
}

#[inline]
fn add(counts: &mut Vec<u64>, row: usize) {
    if row >= counts.len() {
        counts.resize(row + 1, 0);
    }
    counts[row] += 1;
}

/// The objects in the simulated heap at the end of tick slot `at` (the end
/// of the log when `None`) that the filter keeps: allocated at or before
/// it and neither removed by a GC that ended at or before it nor erased at
/// or before it. Objects under 12 bytes never are in the heap.
///
/// Most objects have the default fate (dead at the first GC after their
/// allocation, or alive when none followed), so the objects alive by
/// default form one run of ids: those allocated after the last GC that
/// ended at or before `at`. That run is counted from the stack column; the
/// other objects are the model's stored fates, looked at one by one.
fn live_at(model: &Model, at: Option<TickIndex>, filter: &Filter) -> StackCounts {
    let a = model.allocations();
    let mut counts = vec![0u64; model.stacks().len()];
    let until = match at {
        Some(t) => a.allocated_between(TickIndex(0), t).end,
        None => ObjectId(a.len() as u32),
    };
    let range = filter.object_range(model);
    let (first, last) = (range.start, range.end.min(until));
    if first >= last {
        return StackCounts::from_vec(counts);
    }
    let alive = |fate: Fate| match (fate, at) {
        (Fate::Alive, _) => true,
        // Counted only while it is known to be alive.
        (Fate::Unknown { gc }, Some(t)) => model.gcs().get(gc).is_some_and(|g| g.end > t),
        (Fate::Untracked, _) | (_, None) => false,
        (f, Some(t)) => model.death_tick_of(f).is_some_and(|d| d > t),
    };
    // GC `g` removes, by default, the objects allocated after GC `g - 1`
    // ended; the first GC that ends after `at` (or none, at the end) starts
    // the run of objects alive by default.
    let before = a.allocated_before_gcs();
    let first_alive_gc = match at {
        None => before.len(),
        Some(t) => (0..before.len())
            .find(|&g| model.death_tick_of(Fate::DiedAtGc { gc: GcIndex(g as u32), generation: 0 }).is_some_and(|d| d > t))
            .unwrap_or(before.len()),
    };
    let run_start = match first_alive_gc {
        0 => ObjectId(0),
        g => ObjectId(before[g - 1]),
    }
    .clamp(first, last);
    // The run, as if every object in it had the default fate.
    for r in a.rows_in(run_start..last) {
        if filter.has_thread(r.thread) {
            add(&mut counts, r.stack.index());
        }
    }
    // The objects whose fate is stored: before the run they count when
    // alive; in it they were counted, and stay only when alive.
    let threads = filter.threads.is_some();
    for (obj, fate) in a.stored_fates_in(first..last) {
        if threads && !filter.has_thread(a.thread(obj)) {
            continue;
        }
        let row = a.stack(obj).index();
        match (obj >= run_start, alive(fate)) {
            (false, true) => add(&mut counts, row),
            (true, false) => {
                if let Some(c) = counts.get_mut(row) {
                    *c = c.saturating_sub(1);
                }
            }
            _ => {}
        }
    }
    model.estimate_rows(&mut counts);
    StackCounts::from_vec(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::TimeWindow;

    #[test]
    fn relocated_refuses_a_filter_and_at_needs_the_final_heap() {
        let log = b"t 1 0 T\nn 1 1 1 24\ni 5\n! 7 0x1000 1\n";
        let m = crate::model::load(log, &Default::default()).unwrap();
        let f = Filter::resolve(&m, &TimeWindow::Millis { from: Some(1.0), to: None }, &[]).unwrap();
        let sel = TypeSelection { kind: HistogramKind::Relocated, at: None };
        assert_eq!(type_counts(&m, &sel, &f), Err(TypeQueryError::FilterNotApplicable(HistogramKind::Relocated)));
        assert!(type_counts(&m, &sel, &Filter::all()).is_ok());
        let sel = TypeSelection { kind: HistogramKind::Allocated, at: Some(TickIndex(1)) };
        assert!(type_counts(&m, &sel, &Filter::all()).unwrap_err().to_string().contains("--at"));
    }
}
