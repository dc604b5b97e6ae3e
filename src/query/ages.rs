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

use super::objects::{add_at, apportion_pinned, log2_bin, log2_bounds, merge_tallies, millis_between, par_fold, Clock, RowTypes, Tally};
use super::types::Uncertainty;
use super::Filter;
use crate::model::{Fate, Model};
use serde::Serialize;
use std::collections::BTreeMap;

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
    /// For a sampled trace: the samples and 95% range of each figure.
    #[serde(skip_serializing_if = "AgeRanges::is_empty")]
    pub ranges: AgeRanges,
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
    /// For a sampled trace: the samples and 95% range of each figure.
    #[serde(skip_serializing_if = "AgeRanges::is_empty")]
    pub ranges: AgeRanges,
}

/// The 95% ranges of a line's figures (a sampled trace; all `None` for a
/// log of every allocation, or for an empty figure).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AgeRanges {
    /// Of `died`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub died: Option<Uncertainty>,
    /// Of `erased`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub erased: Option<Uncertainty>,
    /// Of `alive_at_end`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alive_at_end: Option<Uncertainty>,
}

impl AgeRanges {
    /// No range (a log of every allocation).
    pub fn is_empty(&self) -> bool {
        self.died.is_none() && self.erased.is_none() && self.alive_at_end.is_none()
    }

    fn of(model: &Model, figures: [Tally; 3], samples: [Tally; 3]) -> AgeRanges {
        let u = |k: usize| Uncertainty::of_tally(model, samples[k].objects, figures[k].bytes, figures[k].objects);
        AgeRanges { died: u(0), erased: u(1), alive_at_end: u(2) }
    }
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
    /// For a sampled trace: the samples and 95% range of the totals
    /// (`died`, `erased`, `alive_at_end`, `untracked`, `unknown`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub ranges: BTreeMap<&'static str, Uncertainty>,
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
    /// For a sampled trace: the same counts of samples (each sampled
    /// object once), for the figures' ranges.
    samples: Option<Box<Acc>>,
    /// For a sampled trace: per stack row, its samples that died, were
    /// erased, are alive at the end, untracked, unknown; the totals are
    /// each row's estimate split among them ([`apportion`]), so that they
    /// add up to the row's allocated objects as `types` gives them.
    by_row: Vec<[u64; 5]>,
}

/// Where [`Acc::add`] counts an object.
#[derive(Clone, Copy)]
enum Slot {
    /// Died (0), erased (1) or alive (2): GCs survived, ms bin, age.
    Aged(usize, usize, usize, u64),
    Untracked,
    Unknown,
}

impl Acc {
    fn new(sampled: bool) -> Acc {
        Acc { samples: sampled.then(|| Box::new(Acc::default())), ..Acc::default() }
    }

    /// Counts `n` objects of `size` bytes each (one sample standing for
    /// `n`).
    fn add(&mut self, row: usize, slot: Slot, n: u64, size: u64) {
        match slot {
            Slot::Aged(kind, survived, bin, age) => {
                self.totals[kind].add_n(n, size);
                self.age_ms[kind] += age.saturating_mul(n);
                add_at(&mut self.gcs[kind], survived, n, size);
                add_at(&mut self.ms[kind], bin, n, size);
            }
            Slot::Untracked => self.untracked.add_n(n, size),
            Slot::Unknown => self.unknown.add_n(n, size),
        }
        if let Some(s) = &mut self.samples {
            s.add_sample(slot, size);
            let k = match slot {
                Slot::Aged(kind, ..) => kind,
                Slot::Untracked => 3,
                Slot::Unknown => 4,
            };
            if self.by_row.len() <= row {
                self.by_row.resize(row + 1, [0; 5]);
            }
            self.by_row[row][k] += 1;
        }
    }

    /// Counts one sampled object (the figures' ranges).
    fn add_sample(&mut self, slot: Slot, size: u64) {
        self.add(0, slot, 1, size);
    }

    fn merge(mut self, o: Acc) -> Acc {
        let Acc { gcs, ms, totals, age_ms, untracked, unknown, samples, by_row } = o;
        if self.by_row.len() < by_row.len() {
            self.by_row.resize(by_row.len(), [0; 5]);
        }
        for (x, y) in self.by_row.iter_mut().zip(by_row) {
            for (p, q) in x.iter_mut().zip(y) {
                *p += q;
            }
        }
        self.samples = match (self.samples.take(), samples) {
            (Some(a), Some(b)) => Some(Box::new(a.merge(*b))),
            (a, b) => a.or(b),
        };
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
    let sampled = model.sampling().is_some();
    let acc = par_fold(
        filter.object_range(model),
        || Acc::new(sampled),
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
                    Fate::Untracked => return acc.add(row.stack.index(), Slot::Untracked, n, size),
                    Fate::Unknown { .. } => return acc.add(row.stack.index(), Slot::Unknown, n, size),
                };
                let age = millis_between(&ms, row.tick, until);
                acc.add(row.stack.index(), Slot::Aged(kind, survived as usize, log2_bin(age), age), n, size);
            });
        },
        Acc::merge,
    );
    // A sampled trace: the totals from each row's estimate, split.
    let mut acc = acc;
    if acc.samples.is_some() {
        let mut totals = [Tally::default(); 5];
        for (r, raw) in acc.by_row.iter().enumerate() {
            let row = crate::model::StackRef(r as u32);
            let size = types.size(row);
            // Alive at the end (2) as `types --kind final` gives it.
            for (t, n) in totals.iter_mut().zip(apportion_pinned(model, row, raw, Some(2))) {
                t.add_n(n, size);
            }
        }
        acc.totals = [totals[0], totals[1], totals[2]];
        acc.untracked = totals[3];
        acc.unknown = totals[4];
    }
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
    let three = |v: &[Vec<Tally>; 3], k: usize| [get(&v[0], k), get(&v[1], k), get(&v[2], k)];
    let ranges = |v: &[Vec<Tally>; 3], sampled: Option<&[Vec<Tally>; 3]>, k: usize| match sampled {
        Some(s) => AgeRanges::of(model, three(v, k), three(s, k)),
        None => AgeRanges::default(),
    };
    if let Some(s) = &acc.samples {
        let figures =
            [("died", a.died), ("erased", a.erased), ("alive_at_end", a.alive_at_end), ("untracked", a.untracked), ("unknown", a.unknown)];
        let samples = [s.totals[0], s.totals[1], s.totals[2], s.untracked, s.unknown];
        for ((name, t), k) in figures.into_iter().zip(samples) {
            if let Some(u) = Uncertainty::of_tally(model, k.objects, t.bytes, t.objects) {
                a.ranges.insert(name, u);
            }
        }
    }
    let (gcs, ms) = (&acc.gcs, &acc.ms);
    for k in 0..len(gcs) {
        let r = GcsAgeRow {
            gcs_survived: k as u32,
            died: get(&gcs[0], k),
            erased: get(&gcs[1], k),
            alive_at_end: get(&gcs[2], k),
            ranges: ranges(gcs, acc.samples.as_deref().map(|s| &s.gcs), k),
        };
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
            ranges: ranges(ms, acc.samples.as_deref().map(|s| &s.ms), k),
        };
        if !(r.died.is_empty() && r.erased.is_empty() && r.alive_at_end.is_empty()) {
            a.by_ms.push(r);
        }
    }
    a
}
