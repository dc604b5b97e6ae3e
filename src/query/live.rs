//! What was alive at a moment: bytes and objects per type at tick `T`.
//!
//! Two answers:
//!
//! - [`live_at`]: exact, from the objects themselves: an object is alive at
//!   `T` when it was allocated at or before `T` and had not died by then
//!   (its death tick, [`Model::death_tick`], is later than `T`, or it is
//!   alive at the end). Objects under 12 bytes, which CLRProfiler's heap
//!   simulation never holds, are left out. At the log's last tick this is
//!   CLRProfiler's final heap.
//! - [`estimated_live_at`]: CLRProfiler's Time Line estimate ("estimated
//!   sizes live at T"), from the sample table: 1 KB per grain whose entry
//!   valid at `T` holds the type. Objects that stay within one grain never
//!   make an entry, so small objects are missed, and large ones are rounded
//!   to grains.

use super::types::Uncertainty;
use super::Filter;
use crate::format::TypeId;
use crate::model::{Fate, Model, ObjectId, SampleId, TickIndex};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// One type name's line of [`live_at`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LiveType {
    /// The type name (types with equal names are merged).
    pub name: String,
    /// Bytes alive.
    pub bytes: u64,
    /// Objects alive.
    pub count: u64,
    /// CLRProfiler's Time Line estimate for the same types (see
    /// [`estimated_live_at`]).
    pub estimated_bytes: u64,
    /// The type ids merged under this name, ascending.
    pub type_ids: Vec<i32>,
    /// For a sampled trace: the live sampled objects behind `bytes` and
    /// `count`, and their 95% range (see [`Uncertainty`]).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<Uncertainty>,
    /// The live sampled objects counted (summed into `uncertainty`).
    #[serde(skip)]
    pub samples: u64,
}

/// Bytes and objects alive at `tick` per type name, of the objects the
/// filter keeps (its allocation window and threads), most bytes first
/// (then by name). Types with an estimate but no live object get a line
/// with zero bytes.
pub fn live_at(model: &Model, tick: TickIndex, filter: &Filter) -> Vec<LiveType> {
    let stacks = model.stacks();
    let range = filter.object_range(model);
    let end = model.allocations().allocated_between(TickIndex(0), tick).end;
    let (start, end) = (range.start.0, range.end.0.min(end.0).max(range.start.0));
    let gcs = model.gcs();
    let last = super::timeline::last_tick(model);
    // Objects in parallel slices, a count per stack row for each.
    let parts = rayon::current_num_threads().max(1) as u32;
    let step = (end - start).div_ceil(parts).max(1 << 16);
    let slices: Vec<u32> = (start..end).step_by(step as usize).collect();
    let count_objects = || {
        slices
            .into_par_iter()
            .map(|s| {
                let e = s.saturating_add(step).min(end);
                let ids = ObjectId(s)..ObjectId(e);
                let allocations = model.allocations();
                let mut counts = vec![0u64; stacks.len()];
                let alive = |how: Fate| match how {
                    Fate::Alive => true,
                    Fate::Untracked => false,
                    // Counted only while it is known to be alive.
                    Fate::Unknown { gc } => gcs.get(gc).is_some_and(|g| g.end > tick),
                    Fate::DiedAtGc { gc, .. } => gcs.get(gc).map_or(last, |g| g.end) > tick,
                    Fate::Erased { tick: t, .. } => t > tick,
                };
                let mut add = |stack: crate::model::StackRef| {
                    if let Some(c) = counts.get_mut(stack.index()) {
                        *c += 1;
                    }
                };
                if filter.threads.is_none() {
                    // Most objects are dead: read the stack of the others only.
                    for (i, how) in (s..e).zip(allocations.fates_in(ids)) {
                        if alive(how) {
                            add(allocations.stack(ObjectId(i)));
                        }
                    }
                } else {
                    for (row, how) in allocations.rows_in(ids.clone()).zip(allocations.fates_in(ids)) {
                        if alive(how) && filter.has_thread(row.thread) {
                            add(row.stack);
                        }
                    }
                }
                counts
            })
            .reduce(
                || vec![0u64; stacks.len()],
                |mut a, b| {
                    for (x, y) in a.iter_mut().zip(b) {
                        *x += y;
                    }
                    a
                },
            )
    };
    // The estimate reads other tables: both at once.
    let (mut per_stack, estimate) = rayon::join(count_objects, || estimated_live_at(model, tick));
    // A sampled trace: each live sample as the objects it stands for.
    let samples = if model.sampling().is_some() { per_stack.clone() } else { Vec::new() };
    model.estimate_rows(&mut per_stack);
    let mut by_name: BTreeMap<String, LiveType> = BTreeMap::new();
    for (i, &count) in per_stack.iter().enumerate() {
        if count == 0 {
            continue;
        }
        let Some((t, size)) = stacks.type_and_size(crate::model::StackRef(i as u32)) else { continue };
        let e = by_name_entry(&mut by_name, model, t);
        e.count += count;
        e.bytes = e.bytes.saturating_add((size.max(0) as u64).saturating_mul(count));
        e.samples += samples.get(i).copied().unwrap_or(0);
    }
    for (t, bytes) in estimate {
        let e = by_name_entry(&mut by_name, model, t);
        e.estimated_bytes += bytes;
    }
    let mut rows: Vec<LiveType> = by_name
        .into_values()
        .map(|mut r| {
            r.type_ids.sort_unstable();
            r.uncertainty = Uncertainty::of_tally(model, r.samples, r.bytes, r.count);
            r
        })
        .collect();
    rows.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| b.estimated_bytes.cmp(&a.estimated_bytes)).then_with(|| a.name.cmp(&b.name)));
    rows
}

fn by_name_entry<'a>(by_name: &'a mut BTreeMap<String, LiveType>, model: &Model, t: TypeId) -> &'a mut LiveType {
    let name = model.type_name(t).into_owned();
    let e = by_name.entry(name.clone()).or_insert_with(|| LiveType {
        name,
        bytes: 0,
        count: 0,
        estimated_bytes: 0,
        type_ids: Vec::new(),
        uncertainty: None,
        samples: 0,
    });
    if !e.type_ids.contains(&t.0) {
        e.type_ids.push(t.0);
    }
    e
}

/// CLRProfiler's estimate of the bytes alive at `tick` per type id: 1 KB
/// for every grain whose entry valid at `tick` (its newest entry with a
/// change tick at or before `tick`) is not free. Ascending type id.
///
/// Two passes over the packed samples made by `tick` (each in parallel
/// slices), no per-grain walk: an entry is the valid one at `tick` when
/// its change tick is at or before `tick` and no such entry names it as
/// its previous entry. Change ticks never decrease along the sample ids
/// (the reader's current tick never decreases), so those entries are a
/// prefix of the table.
pub fn estimated_live_at(model: &Model, tick: TickIndex) -> Vec<(TypeId, u64)> {
    let packed = model.samples().samples();
    let n = packed.len();
    // The end of the prefix, by bisection.
    let (mut lo, mut hi) = (0usize, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if packed.get(SampleId(mid as u32)).is_some_and(|s| s.change <= tick) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let prefix = lo as u32;
    let parts = (rayon::current_num_threads().max(1) * 2) as u32;
    let step = prefix.div_ceil(parts).max(1 << 16);
    let slices: Vec<std::ops::Range<SampleId>> =
        (0..prefix).step_by(step as usize).map(|a| SampleId(a)..SampleId(a.saturating_add(step).min(prefix))).collect();
    // Pass 1: mark the entries a later entry (made by `tick`) replaced.
    let superseded: Vec<AtomicU64> = (0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
    slices.par_iter().for_each(|r| {
        for (_, s) in packed.iter_range(r.clone()) {
            if let Some(p) = s.prev {
                if let Some(w) = superseded.get(p.index() / 64) {
                    w.fetch_or(1 << (p.index() % 64), Ordering::Relaxed);
                }
            }
        }
    });
    // Pass 2: count the others per type (runs of one type added up first).
    let per_type = slices
        .par_iter()
        .map(|r| {
            let mut per_type: BTreeMap<i32, u64> = BTreeMap::new();
            let mut last: Option<(i32, u64)> = None;
            for (id, s) in packed.iter_range(r.clone()) {
                if s.type_id.0 == 0 {
                    continue;
                }
                let word = superseded.get(id.index() / 64).map_or(0, |w| w.load(Ordering::Relaxed));
                if word & (1 << (id.index() % 64)) != 0 {
                    continue;
                }
                match &mut last {
                    Some((t, k)) if *t == s.type_id.0 => *k += 1,
                    _ => {
                        if let Some((t, k)) = last.take() {
                            *per_type.entry(t).or_default() += k;
                        }
                        last = Some((s.type_id.0, 1));
                    }
                }
            }
            if let Some((t, k)) = last {
                *per_type.entry(t).or_default() += k;
            }
            per_type
        })
        .reduce(BTreeMap::new, |mut a, b| {
            for (t, k) in b {
                *a.entry(t).or_default() += k;
            }
            a
        });
    per_type.into_iter().map(|(t, k)| (TypeId(t), k * super::timeline::GRAIN_BYTES)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_and_estimated() {
        let log = b"t 1 0 Big\nt 2 0 Small\nn 1 1 1 2048\nn 2 1 2 24\n\
i 10\n! 7 0x100000 1\n! 7 0x100800 2\ni 20\n! 7 0x900000 1\ni 30\n\
b 1 0 0 0x100000 0x1000 0x10000 0\nv 0x100800 24\nv 0x900000 2048\nb 0 0 0 0x100000 0x1000 0x10000 0\ni 40\n";
        let m = crate::model::load(log, &Default::default()).expect("loads");
        let at = |ms: f64| live_at(&m, super::super::timeline::tick_at_ms(&m, ms), &Filter::all());
        let r = at(20.0);
        assert_eq!(r[0].name, "Big");
        assert_eq!((r[0].bytes, r[0].count, r[0].estimated_bytes), (4096, 2, 4096));
        assert_eq!((r[1].name.as_str(), r[1].bytes, r[1].count, r[1].estimated_bytes), ("Small", 24, 1, 0));
        let r = at(10.0);
        assert_eq!((r[0].bytes, r[0].count), (2048, 1));
        // After the GC: the first Big died; the one outside the ranges and
        // Small (kept by `v`) live.
        let r = at(40.0);
        assert_eq!((r[0].bytes, r[0].count, r[0].estimated_bytes), (2048, 1, 2048));
        assert_eq!((r[1].bytes, r[1].count), (24, 1));
    }
}
