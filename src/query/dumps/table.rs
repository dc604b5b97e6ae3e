//! One line per dump, and one dump's objects and bytes per type.

use super::roots::{RootCounts, RootFlagCounts};
use super::DumpIndex;
use crate::format::TypeId;
use crate::model::{HeapDump, Model};
use serde::Serialize;

/// One heap dump at a glance.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DumpInfo {
    /// Its index.
    pub index: DumpIndex,
    /// CLRProfiler's tick index at its first `e`/`r` record.
    pub tick_index: u32,
    /// The time of that tick in milliseconds.
    pub time_ms: Option<u64>,
    /// Counted in CLRProfiler's Summary (its tick is later than the
    /// previous counted dump's).
    pub counted: bool,
    /// `o` records.
    pub objects: u64,
    /// Their bytes (the size field of the `o` records).
    pub bytes: u64,
    /// Objects that matched a live object of the simulated heap with the
    /// same type (CLRProfiler's heap-dump histogram counts these).
    pub matched_objects: u64,
    /// References listed on the `o` records.
    pub references: u64,
    /// Roots (every `e` root with a non-zero address, weak ones included,
    /// or the `r` roots of a log without `e` records).
    pub roots: u64,
    /// Roots by kind.
    pub root_kinds: RootCounts,
    /// Roots by flag.
    pub root_flags: RootFlagCounts,
}

fn info(model: &Model, index: DumpIndex, d: &HeapDump) -> DumpInfo {
    let t = model.heap_dumps();
    let mut kinds = RootCounts::default();
    let mut flags = RootFlagCounts::default();
    for r in t.roots(d) {
        kinds.add(r);
        flags.add(r);
    }
    let n = t.object_count(d);
    let bytes = t.objects(d).map(|o| o.size as u64).sum();
    let references = (0..n).map(|k| t.reference_iter(d, k).count() as u64).sum();
    DumpInfo {
        index,
        tick_index: d.tick.0,
        time_ms: model.time().millis(d.tick),
        counted: d.counted,
        objects: n as u64,
        bytes,
        matched_objects: d.matched.total(),
        references,
        roots: kinds.total(),
        root_kinds: kinds,
        root_flags: flags,
    }
}

/// Every dump started by an `e`/`r` record, in log order.
pub fn list(model: &Model) -> Vec<DumpInfo> {
    model.heap_dumps().dumps().iter().enumerate().map(|(k, d)| info(model, DumpIndex(k as u32), d)).collect()
}

/// One type's objects in a dump.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DumpTypeRow {
    /// The type id of the `o` records.
    pub type_id: i32,
    /// Its name.
    pub name: String,
    /// Objects.
    pub objects: u64,
    /// Bytes.
    pub bytes: u64,
}

/// One dump's objects per type.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DumpTypes {
    /// The dump.
    pub dump: DumpInfo,
    /// One row per type id, by bytes (largest first), then by id.
    pub types: Vec<DumpTypeRow>,
}

/// Accumulates per type id over a dense range of ids (the builder only
/// accepts ids below the type table's capacity, or small negative ones).
pub(crate) struct PerType<T> {
    min: i32,
    slots: Vec<T>,
}

impl<T: Default + Clone> PerType<T> {
    /// Slots for every id from the smallest to the largest of `ids`.
    pub(crate) fn new(ids: impl Iterator<Item = i32>) -> Self {
        let (mut lo, mut hi) = (i32::MAX, i32::MIN);
        for t in ids {
            lo = lo.min(t);
            hi = hi.max(t);
        }
        if lo > hi {
            return PerType { min: 0, slots: Vec::new() };
        }
        let len = (hi as i64 - lo as i64 + 1) as usize;
        PerType { min: lo, slots: vec![T::default(); len] }
    }

    /// The slot of an id (one of those given to `new`).
    pub(crate) fn slot(&mut self, id: i32) -> &mut T {
        let i = (id as i64 - self.min as i64) as usize;
        &mut self.slots[i]
    }

    /// The position of an id's slot (one of those given to `new`).
    pub(crate) fn index(&self, id: i32) -> usize {
        (id as i64 - self.min as i64) as usize
    }

    /// Number of slots.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// The slot at a position.
    pub(crate) fn at(&mut self, k: usize) -> Option<&mut T> {
        self.slots.get_mut(k)
    }

    /// Every id with its slot.
    pub(crate) fn entries(self) -> impl Iterator<Item = (i32, T)> {
        let min = self.min;
        self.slots.into_iter().enumerate().map(move |(i, v)| ((min as i64 + i as i64) as i32, v))
    }
}

/// One dump's objects and bytes per type; `None` if there is no such dump.
pub fn by_type(model: &Model, index: DumpIndex) -> Option<DumpTypes> {
    let d = index.get(model)?;
    let t = model.heap_dumps();
    let mut acc: PerType<(u64, u64)> = PerType::new(t.objects(d).map(|o| o.type_id.0));
    for o in t.objects(d) {
        let s = acc.slot(o.type_id.0);
        s.0 += 1;
        s.1 += o.size as u64;
    }
    let mut types: Vec<DumpTypeRow> = acc
        .entries()
        .filter(|(_, (n, _))| *n > 0)
        .map(|(id, (objects, bytes))| DumpTypeRow {
            type_id: id,
            name: model.type_name(TypeId(id)).into_owned(),
            objects,
            bytes,
        })
        .collect();
    types.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.type_id.cmp(&b.type_id)));
    Some(DumpTypes { dump: info(model, index, d), types })
}
