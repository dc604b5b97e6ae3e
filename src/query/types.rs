//! Histograms by type name (CLRProfiler's histogram views; the `*_by_type`
//! objects of the reference files, section 8.2 of
//! `docs/reference-reader.md`).

use crate::model::{Model, StackCounts};
use serde::Serialize;
use std::collections::BTreeMap;

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

    fn of(self, model: &Model) -> &StackCounts {
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
}

/// A histogram grouped by type name, sorted by name.
pub fn by_type(model: &Model, kind: HistogramKind) -> Vec<TypeRow> {
    let mut rows: BTreeMap<String, TypeRow> = BTreeMap::new();
    for (row, count) in kind.of(model).iter() {
        let Some((type_id, size)) = model.stacks().type_and_size(row) else { continue };
        let name = model.type_name(type_id).into_owned();
        let e = rows.entry(name.clone()).or_insert_with(|| TypeRow { name, bytes: 0, count: 0, type_ids: Vec::new() });
        e.count += count;
        e.bytes = e.bytes.saturating_add((size as i64).saturating_mul(count as i64));
        if !e.type_ids.contains(&type_id.0) {
            e.type_ids.push(type_id.0);
        }
    }
    rows.into_values()
        .map(|mut r| {
            r.type_ids.sort_unstable();
            r
        })
        .collect()
}
