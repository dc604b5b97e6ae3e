//! What the lifetime queries need to know per object, read from dense
//! tables instead of per-object lookups: the type (merged by name) and size
//! of each stack row, and the time of each tick and GC end.
//!
//! Built once per query in time proportional to the stack rows and GCs,
//! then read in O(1) per object.

use crate::model::{Fate, Model, ObjectId, StackRef, TickIndex};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::HashMap;
use std::ops::Range;

/// Objects and their bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Objects.
    pub objects: u64,
    /// Bytes.
    pub bytes: u64,
}

impl Tally {
    /// Adds one object of `bytes`.
    #[inline]
    pub fn add(&mut self, bytes: u64) {
        self.objects += 1;
        self.bytes = self.bytes.saturating_add(bytes);
    }

    /// Adds `n` objects of `bytes` each (a sampled object standing for
    /// `n`).
    #[inline]
    pub fn add_n(&mut self, n: u64, bytes: u64) {
        self.objects += n;
        self.bytes = self.bytes.saturating_add(bytes.saturating_mul(n));
    }

    /// Adds another tally.
    #[inline]
    pub fn merge(&mut self, other: Tally) {
        self.objects += other.objects;
        self.bytes = self.bytes.saturating_add(other.bytes);
    }

    /// True when it counts nothing.
    pub fn is_empty(&self) -> bool {
        self.objects == 0
    }
}

/// The slot of objects whose stack has no type (an undefined stack).
pub(crate) const NO_TYPE_NAME: &str = "(no type)";

/// Per stack row: a dense type slot (types with equal names share one) and
/// the object size as CLRProfiler's heap holds it (`u32`).
pub(crate) struct RowTypes {
    /// Per row: slot and size, together (one memory access per object).
    rows: Vec<[u32; 2]>,
    /// Slot -> name.
    pub names: Vec<String>,
    /// Slot -> the type ids merged under the name, ascending.
    pub type_ids: Vec<Vec<i32>>,
    /// Per row: the objects one sampled object stands for (empty for a
    /// log of every allocation: one each).
    weights: Vec<u32>,
}

impl RowTypes {
    pub(crate) fn new(model: &Model) -> RowTypes {
        let stacks = model.stacks();
        let n = stacks.len();
        let mut rows = Vec::with_capacity(n);
        let mut by_id: HashMap<i32, u32> = HashMap::new();
        let mut by_name: HashMap<String, u32> = HashMap::new();
        let mut names: Vec<String> = Vec::new();
        let mut type_ids: Vec<Vec<i32>> = Vec::new();
        let mut slot_of_name = |name: String, names: &mut Vec<String>, type_ids: &mut Vec<Vec<i32>>| -> u32 {
            *by_name.entry(name.clone()).or_insert_with(|| {
                names.push(name);
                type_ids.push(Vec::new());
                (names.len() - 1) as u32
            })
        };
        for r in 0..n {
            match stacks.type_and_size(StackRef(r as u32)) {
                Some((ty, s)) => {
                    let k = match by_id.get(&ty.0) {
                        Some(&k) => k,
                        None => {
                            let k = slot_of_name(model.type_name(ty).into_owned(), &mut names, &mut type_ids);
                            type_ids[k as usize].push(ty.0);
                            by_id.insert(ty.0, k);
                            k
                        }
                    };
                    rows.push([k, s as u32]);
                }
                None => {
                    let k = slot_of_name(NO_TYPE_NAME.to_string(), &mut names, &mut type_ids);
                    rows.push([k, 0]);
                }
            }
        }
        for ids in &mut type_ids {
            ids.sort_unstable();
        }
        let mut weights = vec![1u64; if model.sampling().is_some() { n } else { 0 }];
        model.estimate_rows(&mut weights);
        let weights = weights.into_iter().map(|w| w.min(u64::from(u32::MAX)) as u32).collect();
        RowTypes { rows, names, type_ids, weights }
    }

    /// The objects one object of a stack row stands for: 1, or for a
    /// sampled trace the row's estimate (see `Model::estimate_rows`).
    #[inline]
    pub(crate) fn weight(&self, row: StackRef) -> u64 {
        self.weights.get(row.index()).map_or(1, |&w| u64::from(w))
    }

    /// Number of type slots.
    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }

    /// The type slot and object size of a stack row.
    #[inline]
    pub(crate) fn get(&self, row: StackRef) -> (usize, u64) {
        self.rows.get(row.index()).map_or((0, 0), |&[k, s]| (k as usize, s as u64))
    }

    /// The type slot of a stack row.
    #[inline]
    pub(crate) fn slot(&self, row: StackRef) -> usize {
        self.get(row).0
    }

    /// The object size of a stack row.
    #[inline]
    pub(crate) fn size(&self, row: StackRef) -> u64 {
        self.get(row).1
    }
}

/// Times of ticks and GC ends, for ages.
pub(crate) struct Clock<'m> {
    model: &'m Model,
    gc_end: Vec<TickIndex>,
    last: TickIndex,
}

impl<'m> Clock<'m> {
    pub(crate) fn new(model: &'m Model) -> Clock<'m> {
        let last = TickIndex(model.time().len().saturating_sub(1) as u32);
        Clock { model, gc_end: model.gcs().iter().map(|(_, g)| g.end).collect(), last }
    }

    /// The newest tick of the log (the end).
    pub(crate) fn last(&self) -> TickIndex {
        self.last
    }

    /// A tick's time in seconds.
    #[inline]
    pub(crate) fn seconds(&self, t: TickIndex) -> f64 {
        self.model.time().seconds(t).unwrap_or(0.0)
    }

    /// When an object died (as [`Model::death_tick`], without its search).
    #[inline]
    pub(crate) fn death_tick(&self, fate: Fate) -> Option<TickIndex> {
        match fate {
            Fate::DiedAtGc { gc, .. } => Some(self.gc_end.get(gc.index()).copied().unwrap_or(self.last)),
            Fate::Erased { tick, .. } => Some(tick),
            Fate::Alive | Fate::Untracked | Fate::Unknown { .. } => None,
        }
    }

    /// Whether an object of fate `Unknown { gc }` is known to be alive at
    /// `tick`: before the end of the GC that left it unknown.
    #[inline]
    pub(crate) fn known_alive_at(&self, gc: crate::model::GcIndex, tick: TickIndex) -> bool {
        self.gc_end.get(gc.index()).is_some_and(|&e| tick < e)
    }

    /// Every tick's time in whole milliseconds (for [`millis_between`]).
    pub(crate) fn tick_millis(&self) -> Vec<i64> {
        let time = self.model.time();
        (0..time.len()).map(|t| (time.seconds(TickIndex(t as u32)).unwrap_or(0.0) * 1000.0).round() as i64).collect()
    }
}

/// Whole milliseconds from tick `from` to tick `to` (0 when `to` is
/// earlier), given [`Clock::tick_millis`].
#[inline]
pub(crate) fn millis_between(ms: &[i64], from: TickIndex, to: TickIndex) -> u64 {
    let at = |t: TickIndex| ms.get(t.index()).copied().unwrap_or(0);
    at(to).saturating_sub(at(from)).max(0) as u64
}

/// The power-of-two bin of an age in ms: 0 for 0, `k` for `[2^(k-1), 2^k)`.
#[inline]
pub(crate) fn log2_bin(ms: u64) -> usize {
    (64 - ms.leading_zeros()) as usize
}

/// The bounds `[min, max)` of a power-of-two bin.
pub(crate) fn log2_bounds(bin: usize) -> (u64, u64) {
    let min = if bin == 0 { 0 } else { 1u64 << (bin - 1).min(63) };
    let max = if bin >= 64 { u64::MAX } else { 1u64 << bin };
    (min, max)
}

/// Adds `bytes` at index `k` of a growable list of tallies.
#[inline]
pub(crate) fn add_at(v: &mut Vec<Tally>, k: usize, n: u64, bytes: u64) {
    if v.len() <= k {
        v.resize(k + 1, Tally::default());
    }
    v[k].add_n(n, bytes);
}

/// Objects per chunk of [`par_fold`] (small, so that tests on small logs
/// cross chunk boundaries too; accumulators are made per rayon job, not per
/// chunk).
const CHUNK: u32 = 1 << 15;

/// Folds `range` in chunks on the rayon pool: `fold(acc, chunk)` for each
/// chunk into accumulators made by `init()`, merged with `merge` (which must
/// not depend on the order, so that answers are deterministic).
pub(crate) fn par_fold<A: Send>(
    range: Range<ObjectId>,
    init: impl Fn() -> A + Sync + Send,
    fold: impl Fn(&mut A, Range<ObjectId>) + Sync + Send,
    merge: impl Fn(A, A) -> A + Sync + Send,
) -> A {
    let (start, end) = (range.start.0, range.end.0.max(range.start.0));
    let chunks = (end - start).div_ceil(CHUNK);
    (0..chunks)
        .into_par_iter()
        .fold(&init, |mut acc, k| {
            let a = start + k * CHUNK;
            let b = end.min(a.saturating_add(CHUNK));
            fold(&mut acc, ObjectId(a)..ObjectId(b));
            acc
        })
        .reduce(&init, &merge)
}

/// A stack row's sampled objects, counted per category (a lifetime
/// column, a thread), turned into the objects they stand for so that the
/// categories add up to the row's estimate as every view gives it
/// ([`Model::estimate_count`] of their sum): each category's share,
/// rounded down, then the objects left over to the largest remainders
/// (ties to the first). For a log of every allocation, the counts as
/// they are.
pub(crate) fn apportion(model: &Model, row: StackRef, raw: &[u64]) -> Vec<u64> {
    apportion_pinned(model, row, raw, None)
}

/// [`apportion`], with category `pinned` (when given) estimated on its own
/// as every view estimates it ([`Model::estimate_count`] of its samples:
/// the objects alive at the end, which `types --kind final` and
/// `survivors` give), and the rest of the row's estimate shared among the
/// others.
pub(crate) fn apportion_pinned(model: &Model, row: StackRef, raw: &[u64], pinned: Option<usize>) -> Vec<u64> {
    split(raw, pinned, |n| model.estimate_count(row, n))
}

/// [`apportion_pinned`] with the row's estimate of `n` samples given by
/// `estimate_of` (which never falls as `n` grows).
fn split(raw: &[u64], pinned: Option<usize>, estimate_of: impl Fn(u64) -> u64) -> Vec<u64> {
    let total: u64 = raw.iter().sum();
    let estimate = estimate_of(total);
    if total == 0 || estimate == total {
        return raw.to_vec();
    }
    let fixed = pinned.and_then(|k| raw.get(k).map(|&n| (k, n, estimate_of(n).min(estimate))));
    let (estimate, total) = match fixed {
        Some((_, n, e)) => (estimate - e, total - n),
        None => (estimate, total),
    };
    let mut out = Vec::with_capacity(raw.len());
    let mut rest: Vec<(u128, usize)> = Vec::with_capacity(raw.len());
    for (k, &r) in raw.iter().enumerate() {
        if fixed.is_some_and(|(p, _, _)| p == k) || total == 0 {
            out.push(0);
            continue;
        }
        let share = u128::from(r) * u128::from(estimate);
        out.push((share / u128::from(total)) as u64);
        rest.push((share % u128::from(total), k));
    }
    let left = if total == 0 { 0 } else { estimate.saturating_sub(out.iter().sum()) };
    rest.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for &(_, k) in rest.iter().take(left as usize) {
        out[k] += 1;
    }
    if let Some((k, _, e)) = fixed {
        out[k] = e;
    }
    out
}

/// Adds `b` into `a`, element by element (growing `a`).
pub(crate) fn merge_tallies(mut a: Vec<Tally>, b: Vec<Tally>) -> Vec<Tally> {
    if a.len() < b.len() {
        a.resize(b.len(), Tally::default());
    }
    for (x, y) in a.iter_mut().zip(b) {
        x.merge(y);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::split;
    use proptest::prelude::*;

    /// A row's estimate of `n` samples at `w` objects a sample, as
    /// `Model::estimate_count` makes it.
    fn at(w: f64) -> impl Fn(u64) -> u64 {
        move |n| if n == 0 { 0 } else { (n as f64 * w).round().max(1.0) as u64 }
    }

    proptest! {
        /// The categories add up to the row's estimate, and the pinned one
        /// is its samples' own estimate (the figure other views give).
        #[test]
        fn the_pinned_category_is_its_own_estimate(raw in prop::collection::vec(0u64..50, 1..9), w in 1.0f64..400.0, p in 0usize..8) {
            let p = p % raw.len();
            let est = at(w);
            let out = split(&raw, Some(p), &est);
            prop_assert_eq!(out.iter().sum::<u64>(), est(raw.iter().sum()));
            prop_assert_eq!(out[p], est(raw[p]));
            for (k, (&o, &r)) in out.iter().zip(&raw).enumerate() {
                prop_assert!(r > 0 || o == 0 || k == p, "a category without samples got {} objects", o);
            }
        }
    }

    /// Unpinned, a category's share can miss its own estimate: why the
    /// lifetime view pins its alive column.
    #[test]
    fn a_share_can_differ_from_the_categorys_estimate() {
        let est = at(2.5);
        // 2 samples: 5 objects, 2.5 each; the remainder goes to the first.
        let raw = [1, 1];
        assert_eq!(split(&raw, None, &est), vec![3, 2]);
        // The second's own estimate is round(2.5) = 3.
        assert_eq!(split(&raw, Some(1), &est), vec![2, 3]);
    }
}
