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
    /// bits set joined by ", " for a bit map. `None` when nothing names it.
    pub fn name(&self, v: u64) -> Option<String> {
        if !self.bits {
            return self.entries.iter().find(|e| u64::from(e.0) == v).map(|e| e.1.to_string());
        }
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

/// Names of events whose layout is not built in (their payloads are not
/// decoded): TraceEvent's names for them.
static NAMES_ONLY: &[(RuntimeProvider, u16, &str)] = &[(Runtime, 204, "GC/PerHeapHistory")];

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
        .or_else(|| NAMES_ONLY.iter().find(|n| n.0 == provider && u32::from(n.1) == id).map(|n| n.2))
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
    }
}
