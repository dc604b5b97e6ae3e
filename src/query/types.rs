//! Histograms by type name (CLRProfiler's histogram views; the `*_by_type`
//! objects of the reference files, section 8.2 of
//! `docs/src/reference-reader.md`).

use crate::model::{Model, StackCounts, StackRef};
use serde::Serialize;
use std::collections::HashMap;

/// Which of the model's histograms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HistogramKind {
    /// Objects allocated.
    Allocated,
    /// Objects moved by `u` records.
    Relocated,
    /// Objects alive at the end.
    FinalHeap,
    /// Objects queued for finalization.
    Finalized,
    /// Objects with a critical finalizer queued.
    CriticalFinalized,
}

impl HistogramKind {
    /// Every kind, with its key in the reference files.
    pub const ALL: [(HistogramKind, &'static str); 5] = [
        (HistogramKind::Allocated, "allocated_by_type"),
        (HistogramKind::Relocated, "relocated_by_type"),
        (HistogramKind::FinalHeap, "final_heap_by_type"),
        (HistogramKind::Finalized, "finalized_by_type"),
        (HistogramKind::CriticalFinalized, "critical_finalized_by_type"),
    ];

    /// The model's histogram of this kind.
    pub fn of(self, model: &Model) -> &StackCounts {
        let h = model.histograms();
        match self {
            HistogramKind::Allocated => &h.allocated,
            HistogramKind::Relocated => &h.relocated,
            HistogramKind::FinalHeap => &h.final_heap,
            HistogramKind::Finalized => &h.finalized,
            HistogramKind::CriticalFinalized => &h.critical_finalized,
        }
    }
}

/// One type name's line of a histogram.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TypeRow {
    /// The type name (types with equal names are merged).
    pub name: String,
    /// Bytes: the stack's size times the count, summed.
    pub bytes: i64,
    /// Objects.
    pub count: u64,
    /// The type ids merged under this name, ascending.
    pub type_ids: Vec<i32>,
    /// The sampled objects the counts rest on (a sampled trace; the count
    /// itself for a log of every allocation).
    #[serde(skip)]
    pub samples: u64,
}

/// A histogram grouped by type name, sorted by name.
pub fn by_type(model: &Model, kind: HistogramKind) -> Vec<TypeRow> {
    group_by_name(model, kind.of(model).iter())
}

/// How a type is told apart when rows are grouped: by its interned name,
/// or by its id when it has none (CLRProfiler's `???? type N`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum TypeKey {
    Named(crate::model::NameId),
    Unnamed(i32),
}

/// Groups `(stack row, count)` pairs by the type name of each row's stack
/// (rows without a type and size are left out); the result is sorted by
/// name. One lookup per row, one `String` per distinct name.
pub fn group_by_name(model: &Model, counts: impl Iterator<Item = (StackRef, u64)>) -> Vec<TypeRow> {
    let mut index: HashMap<TypeKey, usize> = HashMap::new();
    let mut rows: Vec<TypeRow> = Vec::new();
    for (row, count) in counts {
        let Some((type_id, size)) = model.stacks().type_and_size(row) else { continue };
        let key = match model.types().name(type_id) {
            Some(n) => TypeKey::Named(n),
            None => TypeKey::Unnamed(type_id.0),
        };
        let k = *index.entry(key).or_insert_with(|| {
            rows.push(TypeRow { name: model.type_name(type_id).into_owned(), bytes: 0, count: 0, type_ids: Vec::new(), samples: 0 });
            rows.len() - 1
        });
        let e = &mut rows[k];
        e.count += count;
        e.samples += model.samples_behind(row, count);
        e.bytes = e.bytes.saturating_add((size as i64).saturating_mul(count as i64));
        if !e.type_ids.contains(&type_id.0) {
            e.type_ids.push(type_id.0);
        }
    }
    for r in &mut rows {
        r.type_ids.sort_unstable();
    }
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    rows
}

/// One line of a type histogram as `clrprof types` prints it (JSON:
/// `{"type": NAME, "bytes": N, "count": N}`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TypeCount {
    /// The type name (types with equal names are merged).
    #[serde(rename = "type")]
    pub name: String,
    /// Bytes: each object's stack size, summed.
    pub bytes: i64,
    /// Objects.
    pub count: u64,
    /// For an estimate (a sampled trace): the sampled objects it rests on
    /// and its 95% range; absent for a log of every allocation.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<Uncertainty>,
}

/// The uncertainty of a row of estimated objects and bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Uncertainty {
    /// Sampled objects the row's figures rest on.
    pub samples: u64,
    /// The 95% range of the bytes, `[low, high]`.
    pub bytes_range: [i64; 2],
    /// The 95% range of the objects, `[low, high]`.
    pub count_range: [u64; 2],
}

impl Uncertainty {
    /// The uncertainty of `bytes` and `count` estimated from `samples`
    /// sampled objects; `None` when the model's figures are exact (a log)
    /// or nothing was sampled.
    pub fn of(model: &Model, samples: u64, bytes: i64, count: u64) -> Option<Uncertainty> {
        model.sampling()?;
        let r = super::estimates::Range95::of(samples)?;
        let [bl, bh] = r.apply(bytes as f64);
        let [cl, ch] = r.apply(count as f64);
        Some(Uncertainty { samples, bytes_range: [bl as i64, bh as i64], count_range: [cl as u64, ch as u64] })
    }

    /// [`Uncertainty::of`] for figures kept as unsigned bytes.
    pub fn of_tally(model: &Model, samples: u64, bytes: u64, count: u64) -> Option<Uncertainty> {
        Uncertainty::of(model, samples, bytes.min(i64::MAX as u64) as i64, count)
    }

    /// The relative range as a table cell ("±6.4%").
    pub fn cell(&self) -> String {
        super::estimates::Range95::of(self.samples).map(|r| r.cell()).unwrap_or_default()
    }
}

/// Type rows as [`TypeCount`]s, sorted by bytes, largest first (ties by
/// name), each estimate with its [`Uncertainty`] when the model is a
/// sampled trace.
pub fn by_bytes_of(model: &Model, rows: Vec<TypeRow>) -> Vec<TypeCount> {
    let mut v: Vec<TypeCount> = rows
        .into_iter()
        .map(|r| {
            let uncertainty = Uncertainty::of(model, r.samples, r.bytes, r.count);
            TypeCount { name: r.name, bytes: r.bytes, count: r.count, uncertainty }
        })
        .collect();
    v.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
    v
}

/// Type rows as [`TypeCount`]s, sorted by bytes, largest first (ties by
/// name), without uncertainty (see [`by_bytes_of`]).
pub fn by_bytes(rows: Vec<TypeRow>) -> Vec<TypeCount> {
    let mut v: Vec<TypeCount> =
        rows.into_iter().map(|r| TypeCount { name: r.name, bytes: r.bytes, count: r.count, uncertainty: None }).collect();
    v.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
    v
}
