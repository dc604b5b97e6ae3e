//! The provider sets clrprof asks for.

use crate::protocol::Provider;

/// The runtime's provider.
pub const RUNTIME: &str = "Microsoft-Windows-DotNETRuntime";
/// The runtime's rundown provider (.NET Core 3.x needs it in the list to
/// name methods compiled before the session).
pub const RUNDOWN: &str = "Microsoft-Windows-DotNETRuntimeRundown";

/// The runtime's keywords (`ClrEtwAll.man`).
pub mod keywords {
    /// GC events; at Verbose also `GC/AllocationTick`.
    pub const GC: u64 = 0x1;
    /// Module and assembly loads.
    pub const LOADER: u64 = 0x8;
    /// Methods compiled (`Method/LoadVerbose` at Verbose).
    pub const JIT: u64 = 0x10;
    /// Rundown: the state at the session's end.
    pub const END_RUNDOWN: u64 = 0x100;
    /// Type names (`Type/BulkType`).
    pub const TYPE: u64 = 0x8_0000;
    /// The heap walk's nodes and edges.
    pub const GC_HEAP_DUMP: u64 = 0x10_0000;
    /// Surviving and moved object ranges at each GC.
    pub const GC_HEAP_SURVIVAL_AND_MOVEMENT: u64 = 0x40_0000;
    /// A GC with a heap walk, as the session starts.
    pub const GC_HEAP_COLLECT: u64 = 0x80_0000;
    /// Type names with the heap walk.
    pub const GC_HEAP_AND_TYPE_NAMES: u64 = 0x100_0000;
    /// ReadyToRun methods' entry points (`Method/R2RGetEntryPoint`, .NET 5+).
    pub const COMPILATION_DIAGNOSTIC: u64 = 0x20_0000_0000;
    /// Randomized allocation sampling (`AllocationSampled`, .NET 10; older
    /// runtimes ignore the keyword).
    pub const ALLOCATION_SAMPLING: u64 = 0x800_0000_0000;
}

/// Sampled allocations (`GC/AllocationTick` with stacks), every GC with
/// its ranges and survivors, and what names the frames (loader, JIT, and
/// at the end the rundown).
pub fn sampled_allocations(with_rundown_provider: bool) -> Vec<Provider> {
    use keywords::*;
    let mut v = vec![Provider {
        name: RUNTIME.into(),
        keywords: GC | LOADER | JIT | GC_HEAP_SURVIVAL_AND_MOVEMENT | COMPILATION_DIAGNOSTIC | ALLOCATION_SAMPLING,
        level: 5,
        filter: None,
    }];
    if with_rundown_provider {
        v.push(rundown());
    }
    v
}

/// A heap snapshot: the GC the runtime makes as the session starts, with
/// the walk of every object and reference, the roots and the type names
/// (what `dotnet-gcdump` asks for).
pub fn heap_snapshot() -> Vec<Provider> {
    use keywords::*;
    vec![Provider {
        name: RUNTIME.into(),
        keywords: GC | TYPE | GC_HEAP_DUMP | GC_HEAP_COLLECT | GC_HEAP_AND_TYPE_NAMES,
        // Informational: the walk's events, without the allocation ticks
        // that Verbose adds.
        level: 4,
        filter: None,
    }]
}

/// The rundown provider at its end-of-session keywords.
fn rundown() -> Provider {
    use keywords::*;
    // NGen (0x20): ReadyToRun methods in the rundown too.
    Provider { name: RUNDOWN.into(), keywords: LOADER | JIT | 0x20 | END_RUNDOWN, level: 5, filter: None }
}
