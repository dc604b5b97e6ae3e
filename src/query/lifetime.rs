//! Object lifetime per type (Visual Studio's Object Lifetime view): what
//! became of the objects of each type, by the generation that reclaimed
//! them.
//!
//! Every object allocated in the filter's window (and threads) falls in
//! exactly one column, from its [`Fate`]:
//!
//! | column | fate |
//! |---|---|
//! | `gen0`, `gen1`, `gen2` | reclaimed by a GC while in that generation |
//! | `loh` | reclaimed by a GC while in a large-object-heap range (generation 3) |
//! | `erased` | removed outside a GC: a later allocation overlapped it, or CLRProfiler's allocation-after-GC rule removed it (section 3.6 of `docs/src/reference-reader.md`); no GC reclaimed it, so it is in no generation column |
//! | `alive_at_end` | still in the simulated heap at the end of the log |
//! | `untracked` | under 12 bytes: CLRProfiler's heap simulation never holds it |
//! | `unknown` | a trace's sampled object in memory a GC condemned without reporting its survivors: neither reclaimed nor alive ([`Fate::Unknown`]) |
//!
//! so `allocated` is the sum of the eight. An object that a GC the log ended
//! inside of erased is reclaimed by that GC. Generations are the model's
//! (see [`Fate`]): by promotion through the GCs that condemned the object,
//! 3 for the large-object heap.
//!
//! ```
//! use clrprof::query::{lifetime, Filter};
//! let log = b"t 1 0 T\nn 1 1 1 24\ni 5\n! 7 0x1000 1\n! 7 0x1018 1\n";
//! let model = clrprof::model::load(log, &Default::default()).unwrap();
//! let l = lifetime(&model, &Filter::all());
//! assert_eq!(l.total.alive_at_end.objects, 2);
//! assert_eq!(l.rows[0].name, "T");
//! ```

use super::objects::{apportion_pinned, par_fold, RowTypes, Tally};
use super::types::Uncertainty;
use super::Filter;
use crate::model::{Fate, Model, StackRef};
use serde::Serialize;
use std::collections::BTreeMap;

/// What became of the objects of one type (or of all, for the total).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LifetimeRow {
    /// The type name (types with equal names are merged; `(total)` for the
    /// total row).
    pub name: String,
    /// The type ids merged under the name, ascending.
    pub type_ids: Vec<i32>,
    /// Allocated in the window.
    pub allocated: Tally,
    /// Reclaimed by a GC while in generation 0.
    pub gen0: Tally,
    /// Reclaimed while in generation 1.
    pub gen1: Tally,
    /// Reclaimed while in generation 2.
    pub gen2: Tally,
    /// Reclaimed while in the large-object heap.
    pub loh: Tally,
    /// Removed outside a GC (see the module documentation).
    pub erased: Tally,
    /// Alive at the end of the log.
    pub alive_at_end: Tally,
    /// Under 12 bytes: never in CLRProfiler's heap.
    pub untracked: Tally,
    /// A trace's sampled objects whose fate the runtime's reports leave
    /// unknown (never counted as reclaimed or alive).
    pub unknown: Tally,
    /// For a sampled trace: each non-empty column's sampled objects and
    /// 95% range, by column name (`allocated`, `gen0`, ... `unknown`);
    /// empty for a log of every allocation.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub ranges: BTreeMap<&'static str, Uncertainty>,
}

/// The columns' names, in the order of each row's figures.
pub const COLUMNS: [&str; 9] = ["allocated", "gen0", "gen1", "gen2", "loh", "erased", "alive_at_end", "untracked", "unknown"];

impl LifetimeRow {
    /// Objects reclaimed by GCs (the four generation columns).
    pub fn reclaimed(&self) -> Tally {
        let mut t = self.gen0;
        for g in [self.gen1, self.gen2, self.loh] {
            t.merge(g);
        }
        t
    }

    /// The row's columns in [`COLUMNS`] order.
    pub fn columns(&self) -> [Tally; 9] {
        [self.allocated, self.gen0, self.gen1, self.gen2, self.loh, self.erased, self.alive_at_end, self.untracked, self.unknown]
    }

    /// Sets [`LifetimeRow::ranges`] from the samples behind each column.
    fn set_ranges(&mut self, model: &Model, samples: &[u64; 9]) {
        for ((name, t), &k) in COLUMNS.iter().zip(self.columns()).zip(samples) {
            if let Some(u) = Uncertainty::of_tally(model, k, t.bytes, t.objects) {
                self.ranges.insert(name, u);
            }
        }
    }

    fn merge(&mut self, o: &LifetimeRow) {
        for (a, b) in [
            (&mut self.allocated, o.allocated),
            (&mut self.gen0, o.gen0),
            (&mut self.gen1, o.gen1),
            (&mut self.gen2, o.gen2),
            (&mut self.loh, o.loh),
            (&mut self.erased, o.erased),
            (&mut self.alive_at_end, o.alive_at_end),
            (&mut self.untracked, o.untracked),
            (&mut self.unknown, o.unknown),
        ] {
            a.merge(b);
        }
    }
}

/// The lifetime view.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Lifetime {
    /// One row per type with objects in the window, by allocated bytes
    /// (largest first), then name.
    pub rows: Vec<LifetimeRow>,
    /// The sum of all rows.
    pub total: LifetimeRow,
}

/// The columns of one type while counting: allocated, gen 0, gen 1,
/// gen 2, LOH, erased, alive at end, untracked, unknown.
type Columns = [Tally; 9];

/// Computes the lifetime view over the objects the filter keeps (by their
/// allocation time and thread).
pub fn lifetime(model: &Model, filter: &Filter) -> Lifetime {
    let types = RowTypes::new(model);
    let table = model.allocations();
    // Objects per stack row and column (columns 1-7; 0 is their sum),
    // estimated per row at the end so that the totals are every view's.
    let by_row = par_fold(
        filter.object_range(model),
        Vec::<[u64; 9]>::new,
        |acc, range| {
            table.for_each_in(range, |row, fate| {
                if !filter.has_thread(row.thread) {
                    return;
                }
                let column = match fate {
                    Fate::DiedAtGc { generation: 0, .. } => 1,
                    Fate::DiedAtGc { generation: 1, .. } => 2,
                    Fate::DiedAtGc { generation: 2, .. } => 3,
                    Fate::DiedAtGc { .. } => 4,
                    Fate::Erased { .. } => 5,
                    Fate::Alive => 6,
                    Fate::Untracked => 7,
                    Fate::Unknown { .. } => 8,
                };
                let r = row.stack.index();
                if acc.len() <= r {
                    acc.resize(r + 1, [0; 9]);
                }
                acc[r][column] += 1;
            });
        },
        |mut a, b| {
            if a.len() < b.len() {
                a.resize(b.len(), [0; 9]);
            }
            for (x, y) in a.iter_mut().zip(b) {
                for (p, q) in x.iter_mut().zip(y) {
                    *p += q;
                }
            }
            a
        },
    );
    let mut counts = vec![Columns::default(); types.len()];
    // The sampled objects behind each type's columns (a sampled trace).
    let mut samples = vec![[0u64; 9]; types.len()];
    let mut total_samples = [0u64; 9];
    for (r, raw) in by_row.iter().enumerate() {
        if raw.iter().all(|&n| n == 0) {
            continue;
        }
        let row = StackRef(r as u32);
        let (slot, size) = types.get(row);
        // Alive at the end (column 6) as `types --kind final` gives it.
        let est = apportion_pinned(model, row, &raw[1..], Some(5));
        if let Some(c) = counts.get_mut(slot) {
            for (k, &n) in est.iter().enumerate() {
                c[0].add_n(n, size);
                c[k + 1].add_n(n, size);
            }
        }
        if let Some(s) = samples.get_mut(slot) {
            for (k, &n) in raw.iter().enumerate().skip(1) {
                s[0] += n;
                s[k] += n;
                total_samples[0] += n;
                total_samples[k] += n;
            }
        }
    }
    let mut total = LifetimeRow { name: "(total)".to_string(), ..LifetimeRow::default() };
    let mut out = Vec::new();
    for (k, c) in counts.into_iter().enumerate() {
        if c[0].is_empty() {
            continue;
        }
        let r = LifetimeRow {
            name: types.names[k].clone(),
            type_ids: types.type_ids[k].clone(),
            allocated: c[0],
            gen0: c[1],
            gen1: c[2],
            gen2: c[3],
            loh: c[4],
            erased: c[5],
            alive_at_end: c[6],
            untracked: c[7],
            unknown: c[8],
            ranges: BTreeMap::new(),
        };
        total.merge(&r);
        let mut r = r;
        if let Some(s) = samples.get(k) {
            r.set_ranges(model, s);
        }
        out.push(r);
    }
    total.set_ranges(model, &total_samples);
    out.sort_by(|a, b| b.allocated.bytes.cmp(&a.allocated.bytes).then_with(|| a.name.cmp(&b.name)));
    Lifetime { rows: out, total }
}
