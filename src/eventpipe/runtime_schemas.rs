//! Built-in schemas of the runtime's own events.
//!
//! The runtime sends no field descriptions for the events of its
//! providers (`Microsoft-Windows-DotNETRuntime`, `-Rundown`, `-Private`,
//! `-Stress`): their layouts are in its manifest, `ClrEtwAll.man`.
//! `runtime_table.rs` holds every event of that manifest, each version,
//! with TraceEvent's names for them ("GC/Start", "Method/LoadVerbose"). It
//! was generated from the copy of the manifest and of TraceEvent's parsers
//! in `microsoft/perfview` (commit f3ec1b38, `src/TraceEvent/Parsers/`) by a
//! script that reads each `<template>` (`<data>`, `<struct>`, `count=`,
//! `map=`) and each `<event value= version= template=>` (`gen_runtime_table.py`
//! beside this file, run with `PERFVIEW=<checkout>`); events the
//! runtime added later are appended below by hand (`EXTRA`).
//! A version newer than any known is decoded with the newest known one
//! (versions only append fields); the bytes after them are left undecoded.

use super::runtime_table::EVENTS;

/// The runtime's providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum RuntimeProvider {
    Runtime,
    Rundown,
    Stress,
    Private,
    /// `Microsoft-DotNETCore-SampleProfiler` (CPU samples).
    SampleProfiler,
}

impl RuntimeProvider {
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "Microsoft-Windows-DotNETRuntime" => RuntimeProvider::Runtime,
            "Microsoft-Windows-DotNETRuntimeRundown" => RuntimeProvider::Rundown,
            "Microsoft-Windows-DotNETRuntimeStress" => RuntimeProvider::Stress,
            "Microsoft-Windows-DotNETRuntimePrivate" => RuntimeProvider::Private,
            "Microsoft-DotNETCore-SampleProfiler" => RuntimeProvider::SampleProfiler,
            _ => return None,
        })
    }
}

/// A manifest input type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum In {
    U8,
    U16,
    U32,
    U64,
    I32,
    I64,
    F64,
    /// 4-byte boolean.
    Bool32,
    /// The trace's pointer size.
    Ptr,
    Utf16Z,
    AnsiZ,
    Guid,
}

/// How many times a field repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Count {
    One,
    Fixed(u16),
    /// As many as the value of the sibling field at this index.
    Field(u16),
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum SType {
    Prim(In),
    Struct(&'static [SField]),
}

/// A field of a runtime event.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SField {
    pub(crate) name: &'static str,
    pub(crate) ty: SType,
    pub(crate) count: Count,
    pub(crate) map: Option<&'static ValueMap>,
}

/// A manifest value map or bit map: the names of a field's values.
#[derive(Debug, PartialEq, Eq)]
pub struct ValueMap {
    pub(crate) bits: bool,
    pub(crate) entries: &'static [(u32, &'static str)],
}

impl ValueMap {
    /// The name of `v`: the entry's name for a value map, the names of the
    /// bits set joined by ", " for a bit map (bits whose entry has no name
    /// are markers, left out). `None` when nothing names it.
    pub fn name(&self, v: u64) -> Option<String> {
        if !self.bits {
            return self.entries.iter().find(|e| u64::from(e.0) == v).map(|e| e.1.to_string());
        }
        // Entries without a name are marker bits: they name nothing.
        let markers = self.entries.iter().filter(|e| e.1.is_empty()).fold(0u64, |m, e| m | u64::from(e.0));
        let v = v & !markers;
        if v == 0 {
            // TraceEvent's convention for a flags field with no bit set.
            return Some(self.entries.iter().find(|e| e.0 == 0).map_or("None", |e| e.1).to_string());
        }
        let mut parts = Vec::new();
        let mut rest = v;
        for &(bit, name) in self.entries {
            if bit != 0 && v & u64::from(bit) == u64::from(bit) {
                parts.push(name);
                rest &= !u64::from(bit);
            }
        }
        (rest == 0 && !parts.is_empty()).then(|| parts.join(", "))
    }
}

/// One event of the manifest.
#[derive(Debug)]
pub(crate) struct RuntimeEvent {
    pub(crate) provider: RuntimeProvider,
    pub(crate) id: u16,
    pub(crate) version: u8,
    pub(crate) name: &'static str,
    pub(crate) fields: &'static [SField],
}

use Count::*;
use In::*;
use SType::*;

const fn f(name: &'static str, ty: In) -> SField {
    SField { name, ty: Prim(ty), count: One, map: None }
}

static ALLOCATION_KIND: ValueMap = ValueMap { bits: false, entries: &[(0, "Small"), (1, "Large"), (2, "Pinned")] };
static CONTENTION_FLAGS: ValueMap = ValueMap { bits: false, entries: &[(0, "Managed"), (1, "Native")] };
static SAMPLE_TYPE: ValueMap = ValueMap { bits: false, entries: &[(0, "Error"), (1, "External"), (2, "Managed")] };
static GC_REASON: ValueMap = ValueMap {
    bits: false,
    entries: &[
        (0, "AllocSmall"),
        (1, "Induced"),
        (2, "LowMemory"),
        (3, "Empty"),
        (4, "AllocLarge"),
        (5, "OutOfSpaceSmallObjectHeap"),
        (6, "OutOfSpaceLargeObjectHeap"),
        (7, "InducedNoForce"),
        (8, "Stress"),
        (9, "InducedLowMemory"),
    ],
};
static GC_GLOBAL_MECHANISMS: ValueMap = ValueMap {
    bits: true,
    entries: &[(1, "Concurrent"), (2, "Compaction"), (4, "Promotion"), (8, "Demotion"), (16, "CardBundles"), (32, "ElevatedLogic")],
};

/// The GC's compaction reasons (`gc_heap_compact_reason` of the runtime's
/// `gcrecords.h`), one bit each in GC/PerHeapHistory's `CompactMechanisms`;
/// 0 is TraceEvent's "not_specified". The GC sets bit 31 with the reason
/// (a marker: "a mechanism was recorded"). TraceEvent shows the lowest bit
/// set.
static GC_COMPACT_REASON: ValueMap = ValueMap {
    bits: true,
    entries: &[
        (0, "not_specified"),
        (1 << 31, ""),
        (1, "compact_low_ephemeral"),
        (1 << 1, "compact_high_frag"),
        (1 << 2, "compact_no_gaps"),
        (1 << 3, "compact_loh_forced"),
        (1 << 4, "compact_last_gc"),
        (1 << 5, "compact_induced_compacting"),
        (1 << 6, "compact_fragmented_gen0"),
        (1 << 7, "compact_high_mem_load"),
        (1 << 8, "compact_high_mem_frag"),
        (1 << 9, "compact_vhigh_mem_frag"),
        (1 << 10, "compact_no_gc_mode"),
    ],
};
/// The GC's heap expansion mechanisms (`gc_heap_expand_mechanism`), one
/// bit each in GC/PerHeapHistory's `ExpandMechanisms`, bit 31 the marker.
static GC_EXPAND_MECHANISM: ValueMap = ValueMap {
    bits: true,
    entries: &[
        (0, "not_specified"),
        (1 << 31, ""),
        (1, "expand_reuse_normal"),
        (1 << 1, "expand_reuse_bestfit"),
        (1 << 2, "expand_new_seg_ep"),
        (1 << 3, "expand_new_seg"),
        (1 << 4, "expand_no_memory"),
        (1 << 5, "expand_next_full_gc"),
    ],
};

/// One generation's figures in GC/PerHeapHistory (the manifest's
/// `GCPerHeapHistory_V3` struct `Values`: ten pointer-sized integers).
static GC_PER_HEAP_GEN_DATA: &[SField] = &[
    f("SizeBefore", Ptr),
    f("FreeListBefore", Ptr),
    f("FreeObjBefore", Ptr),
    f("SizeAfter", Ptr),
    f("FreeListAfter", Ptr),
    f("FreeObjAfter", Ptr),
    f("In", Ptr),
    f("PinnedSurv", Ptr),
    f("NonePinnedSurv", Ptr),
    f("NewAllocation", Ptr),
];

const fn m(name: &'static str, ty: In, map: &'static ValueMap) -> SField {
    SField { name, ty: Prim(ty), count: One, map: Some(map) }
}

const fn ev(provider: RuntimeProvider, id: u16, version: u8, name: &'static str, fields: &'static [SField]) -> RuntimeEvent {
    RuntimeEvent { provider, id, version, name, fields }
}

use RuntimeProvider::{Rundown, Runtime, SampleProfiler};

/// Events the runtime added after the manifest copy the table was made
/// from, and the sample profiler's event (from the current `ClrEtwAll.man`
/// of dotnet/runtime and the runtime's sample profiler).
static EXTRA: &[RuntimeEvent] = &[
    ev(SampleProfiler, 0, 0, "Thread/Sample", &[m("Type", U32, &SAMPLE_TYPE)]),
    ev(Runtime, 10, 4, "GC/AllocationTick", &[
        f("AllocationAmount", U32),
        m("AllocationKind", U32, &ALLOCATION_KIND),
        f("ClrInstanceID", U16),
        f("AllocationAmount64", U64),
        f("TypeID", Ptr),
        f("TypeName", Utf16Z),
        f("HeapIndex", U32),
        f("Address", Ptr),
        f("ObjectSize", U64),
    ]),
    ev(Runtime, 57, 0, "ThreadPoolWorkerThread/Wait", &[
        f("ActiveWorkerThreadCount", U32),
        f("RetiredWorkerThreadCount", U32),
        f("ClrInstanceID", U16),
    ]),
    ev(Runtime, 91, 1, "Contention/Stop", &[
        m("ContentionFlags", U8, &CONTENTION_FLAGS),
        f("ClrInstanceID", U16),
        f("DurationNs", F64),
    ]),
    ev(Runtime, 159, 0, "Method/R2RGetEntryPoint", &[
        f("MethodID", U64),
        f("MethodNamespace", Utf16Z),
        f("MethodName", Utf16Z),
        f("MethodSignature", Utf16Z),
        f("EntryPoint", U64),
        f("ClrInstanceID", U16),
    ]),
    ev(Runtime, 202, 0, "GC/MarkWithType", &[f("HeapNum", U32), f("ClrInstanceID", U16), f("Type", U32), f("Bytes", U64)]),
    ev(Runtime, 205, 1, "GC/GlobalHeapHistory", &[
        f("FinalYoungestDesired", U64),
        f("NumHeaps", I32),
        f("CondemnedGeneration", U32),
        f("Gen0ReductionCount", U32),
        m("Reason", U32, &GC_REASON),
        m("GlobalMechanisms", U32, &GC_GLOBAL_MECHANISMS),
        f("ClrInstanceID", U16),
    ]),
    // The manifest's GCPerHeapHistory_V3 (the runtime provider's only
    // layout of event 204): `Count` generations follow.
    ev(Runtime, 204, 3, "GC/PerHeapHistory", &[
        f("ClrInstanceID", U16),
        f("FreeListAllocated", Ptr),
        f("FreeListRejected", Ptr),
        f("EndOfSegAllocated", Ptr),
        f("CondemnedAllocated", Ptr),
        f("PinnedAllocated", Ptr),
        f("PinnedAllocatedAdvance", Ptr),
        f("RunningFreeListEfficiency", U32),
        f("CondemnReasons0", U32),
        f("CondemnReasons1", U32),
        m("CompactMechanisms", U32, &GC_COMPACT_REASON),
        m("ExpandMechanisms", U32, &GC_EXPAND_MECHANISM),
        f("HeapIndex", U32),
        f("ExtraGen0Commit", Ptr),
        f("Count", U32),
        SField { name: "Values", ty: Struct(GC_PER_HEAP_GEN_DATA), count: Field(14), map: None },
    ]),
    // .NET 10: randomized allocation sampling (keyword 0x80000000000).
    ev(Runtime, 303, 0, "AllocationSampled", &[
        m("AllocationKind", U32, &ALLOCATION_KIND),
        f("ClrInstanceID", U16),
        f("TypeID", Ptr),
        f("TypeName", Utf16Z),
        f("Address", Ptr),
        f("ObjectSize", U64),
        f("SampledByteOffset", U64),
    ]),
    ev(Rundown, 300, 0, "ExecutionCheckpointRundown/ExecutionCheckpointDCEnd", &[
        f("ClrInstanceID", U16),
        f("Name", Utf16Z),
        f("Timestamp", I64),
    ]),
];

/// The schema for (provider, id, version): the exact one, else the newest
/// older version of the same event. The flag says whether it was exact.
pub(crate) fn lookup(provider: RuntimeProvider, id: u32, version: u32) -> Option<(&'static RuntimeEvent, bool)> {
    let id = u16::try_from(id).ok()?;
    let mut best: Option<&'static RuntimeEvent> = None;
    for e in EVENTS.iter().chain(EXTRA) {
        if e.provider != provider || e.id != id {
            continue;
        }
        if u32::from(e.version) == version {
            return Some((e, true));
        }
        if u32::from(e.version) < version && best.map_or(true, |b| b.version < e.version) {
            best = Some(e);
        }
    }
    best.map(|b| (b, false))
}

/// TraceEvent's name for an event of a runtime provider with no schema at
/// its version: the name of any version of it.
pub(crate) fn name_of(provider: RuntimeProvider, id: u32) -> Option<&'static str> {
    EVENTS
        .iter()
        .chain(EXTRA)
        .find(|e| e.provider == provider && u32::from(e.id) == id)
        .map(|e| e.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups() {
        let (e, exact) = lookup(RuntimeProvider::Runtime, 1, 2).unwrap();
        assert!(exact);
        assert_eq!(e.name, "GC/Start");
        let (e, exact) = lookup(RuntimeProvider::Runtime, 10, 4).unwrap();
        assert!(exact && e.fields.len() == 9);
        let (e, exact) = lookup(RuntimeProvider::Runtime, 1, 9).unwrap();
        assert!(!exact && e.version == 2);
        assert!(lookup(RuntimeProvider::Runtime, 60000, 0).is_none());
    }

    #[test]
    fn maps_name_values_and_bits() {
        assert_eq!(ALLOCATION_KIND.name(1).as_deref(), Some("Large"));
        let m = ValueMap { bits: true, entries: &[(1, "A"), (2, "B"), (8, "D")] };
        assert_eq!(m.name(11).as_deref(), Some("A, B, D"));
        assert_eq!(m.name(4), None);
        // the GC's mechanisms: bit 31 marks a recorded one
        assert_eq!(GC_COMPACT_REASON.name(0x8000_0002).as_deref(), Some("compact_high_frag"));
        assert_eq!(GC_COMPACT_REASON.name(0x8000_0000).as_deref(), Some("not_specified"));
        assert_eq!(GC_EXPAND_MECHANISM.name(0).as_deref(), Some("not_specified"));
        assert_eq!(GC_EXPAND_MECHANISM.name(0x8000_0008).as_deref(), Some("expand_new_seg"));
    }
}
