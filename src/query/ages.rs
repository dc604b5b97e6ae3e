//! Object ages: how long objects lived, by GCs survived and by
//! milliseconds, for the objects that died and for those alive at the end.
//!
//! Definitions (the generator's ground truth uses the same ones, see
//! `src/gen/truth.rs`):
//!
//! - an object is *born* at its allocation tick and *dies* at the end tick
//!   of the GC that reclaimed it ([`crate::model::Model::death_tick`]); an
//!   object alive at the end is measured at the log's last tick;
//! - its *age in ms* is the difference of the two ticks' times, in whole
//!   milliseconds; its power-of-two bin is `[0, 1)` for 0 and
//!   `[2^(k-1), 2^k)` otherwise;
//! - *GCs survived* counts the GCs that ended after its allocation and
//!   before its death (for a survivor, before the end of the log).
//!
//! Objects erased outside a GC are counted in their own column (their age
//! runs to the tick they were erased at); objects under 12 bytes, which
//! CLRProfiler's heap never holds, are left out, and so are a trace's
//! sampled objects whose fate is unknown ([`Fate::Unknown`]: counted in
//! [`Ages::unknown`], never as dead or alive).
//!
//! CLRProfiler's "Histogram by Age" of the live objects at a given time is
//! [`age_histogram_at`](super::age_histogram_at) (in `age_histogram.rs`).

use super::objects::{add_at, log2_bin, log2_bounds, merge_tallies, millis_between, par_fold, Clock, RowTypes, Tally};
use super::Filter;
use crate::model::{Fate, Model};
use serde::Serialize;

/// One line of the histogram by GCs survived.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GcsAgeRow {
    /// GCs survived.
    pub gcs_survived: u32,
    /// Reclaimed by a GC after surviving that many.
    pub died: Tally,
    /// Erased outside a GC after surviving that many.
    pub erased: Tally,
    /// Alive at the end, having survived that many.
    pub alive_at_end: Tally,
}

/// One line of the histogram by age in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MsAgeRow {
    /// Lower bound of the bin, ms.
    pub age_ms_min: u64,
    /// Upper bound (exclusive), ms.
    pub age_ms_max_exclusive: u64,
    /// Reclaimed by a GC at an age in the bin.
    pub died: Tally,
    /// Erased outside a GC at an age in the bin.
    pub erased: Tally,
    /// Alive at the end with an age in the bin.
    pub alive_at_end: Tally,
}

/// Age histograms of the objects a filter keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Ages {
    /// Objects reclaimed by GCs.
    pub died: Tally,
    /// The sum of their ages in ms.
    pub died_total_age_ms: u64,
    /// Objects erased outside a GC.
    pub erased: Tally,
    /// Objects alive at the end.
    pub alive_at_end: Tally,
    /// The sum of their ages at the end, in ms.
    pub alive_total_age_ms: u64,
    /// Objects under 12 bytes (in no histogram).
    pub untracked: Tally,
    /// A trace's sampled objects whose fate the runtime's reports leave
    /// unknown (in no histogram).
    pub unknown: Tally,
    /// By GCs survived, ascending; lines with no object are left out.
    pub by_gcs: Vec<GcsAgeRow>,
    /// By age in ms, in power-of-two bins, ascending; empty bins are left
    /// out.
    pub by_ms: Vec<MsAgeRow>,
}

/// Counts while folding: [died, erased, alive] by GCs survived and by ms
/// bin, and the totals.
#[derive(Default)]
struct Acc {
    gcs: [Vec<Tally>; 3],
    ms: [Vec<Tally>; 3],
    totals: [Tally; 3],
    age_ms: [u64; 3],
    untracked: Tally,
    unknown: Tally,
}

impl Acc {
    fn merge(mut self, o: Acc) -> Acc {
        let Acc { gcs, ms, totals, age_ms, untracked, unknown } = o;
        for (k, (g, m)) in gcs.into_iter().zip(ms).enumerate() {
            self.gcs[k] = merge_tallies(std::mem::take(&mut self.gcs[k]), g);
            self.ms[k] = merge_tallies(std::mem::take(&mut self.ms[k]), m);
            self.totals[k].merge(totals[k]);
            self.age_ms[k] += age_ms[k];
        }
        self.untracked.merge(untracked);
        self.unknown.merge(unknown);
        self
    }
}

/// Computes the age histograms over the objects the filter keeps (by
/// allocation time and thread).
pub fn ages(model: &Model, filter: &Filter) -> Ages {
    let types = RowTypes::new(model);
    let clock = Clock::new(model);
    let table = model.allocations();
    let before_gcs = table.allocated_before_gcs();
    let gcs_ended = before_gcs.len() as u32;
    let end = clock.last();
    let ms = clock.tick_millis();
    let acc = par_fold(
        filter.object_range(model),
        Acc::default,
        |acc, range| {
            let mut born = before_gcs.partition_point(|&b| b <= range.start.0);
            table.for_each_in(range, |row, fate| {
                while born < before_gcs.len() && before_gcs[born] <= row.id.0 {
                    born += 1;
                }
                if !filter.has_thread(row.thread) {
                    return;
                }
                let size = types.size(row.stack);
                let n = types.weight(row.stack);
                let b = born as u32;
                let (kind, until, survived) = match fate {
                    Fate::DiedAtGc { gc, .. } => (0, clock.death_tick(fate).unwrap_or(end), gc.0.saturating_sub(b)),
                    Fate::Erased { tick, gcs_before, .. } => (1, tick, gcs_before.saturating_sub(b)),
                    Fate::Alive => (2, end, gcs_ended.saturating_sub(b)),
                    Fate::Untracked => {
                        acc.untracked.add_n(n, size);
                        return;
                    }
                    Fate::Unknown { .. } => {
                        acc.unknown.add_n(n, size);
                        return;
                    }
                };
                let age = millis_between(&ms, row.tick, until);
                acc.totals[kind].add_n(n, size);
                acc.age_ms[kind] += age.saturating_mul(n);
                add_at(&mut acc.gcs[kind], survived as usize, n, size);
                add_at(&mut acc.ms[kind], log2_bin(age), n, size);
            });
        },
        Acc::merge,
    );
    let mut a = Ages {
        died: acc.totals[0],
        died_total_age_ms: acc.age_ms[0],
        erased: acc.totals[1],
        alive_at_end: acc.totals[2],
        alive_total_age_ms: acc.age_ms[2],
        untracked: acc.untracked,
        unknown: acc.unknown,
        ..Ages::default()
    };
    let get = |v: &Vec<Tally>, k: usize| v.get(k).copied().unwrap_or_default();
    let len = |v: &[Vec<Tally>; 3]| v.iter().map(Vec::len).max().unwrap_or(0);
    let (gcs, ms) = (&acc.gcs, &acc.ms);
    for k in 0..len(gcs) {
        let r = GcsAgeRow { gcs_survived: k as u32, died: get(&gcs[0], k), erased: get(&gcs[1], k), alive_at_end: get(&gcs[2], k) };
        if !(r.died.is_empty() && r.erased.is_empty() && r.alive_at_end.is_empty()) {
            a.by_gcs.push(r);
        }
    }
    for k in 0..len(ms) {
        let (lo, hi) = log2_bounds(k);
        let r = MsAgeRow {
            age_ms_min: lo,
            age_ms_max_exclusive: hi,
            died: get(&ms[0], k),
            erased: get(&ms[1], k),
            alive_at_end: get(&ms[2], k),
        };
        if !(r.died.is_empty() && r.erased.is_empty() && r.alive_at_end.is_empty()) {
            a.by_ms.push(r);
        }
    }
    a
}
