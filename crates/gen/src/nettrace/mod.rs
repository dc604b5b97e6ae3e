//! NetTrace output: the simulated process as the .NET runtime's EventPipe
//! would record it with the GC and loader events on (what `dotnet-trace
//! collect --profile gc-verbose` gives), streamed to a `.nettrace` file.
//!
//! The simulation is the one that writes CLRProfiler logs (same options,
//! same program, same allocations and GCs); a tracing stage (`stage.rs`)
//! takes the place of the profiler stage and writes, through
//! [`NetTraceWriter`] (`writer.rs`, file format V5):
//!
//! | event | when |
//! |---|---|
//! | `Loader/ModuleLoad` (V2) | a module's first function is jitted |
//! | `Method/LoadVerbose` (V2) | a function is first called: its code range names the stack frames in it |
//! | `GC/AllocationTick` (V4) | a thread's allocations of a kind reach [`NetTraceOptions::tick_bytes`] (100 KB, the runtime's; 0: every object), with the thread's stack |
//! | `GC/Start` (V2), `GC/Stop` (V1), `GC/HeapStats` (V1) | every GC |
//!
//! Memory stays bounded whatever the trace's length: one block of each
//! kind, the stacks of one sequence-point region (10 MB), the program.
//!
//! ```
//! use clrprof_gen::nettrace::{generate_nettrace, NetTraceOptions};
//! use clrprof_gen::{GenOptions, Preset};
//! let opts = GenOptions { objects: 2_000, gcs: 3, ..Preset::Tiny.options() };
//! let nt = NetTraceOptions { tick_bytes: 0, ..NetTraceOptions::default() };
//! let (trace, report) = generate_nettrace(&opts, &nt, Vec::new()).unwrap();
//! assert_eq!(report.counts.allocation_ticks, 2_000);
//! assert_eq!(report.counts.gc_starts, 3);
//! let summary = clrprof::eventpipe::NetTraceReader::new(&trace).unwrap().for_each(|_| {}).unwrap();
//! assert_eq!(summary.events, report.writer.events);
//! assert!(summary.warnings.is_empty());
//! ```
//!
//! # API structure
//!
//! - [`generate_nettrace`] runs the simulation of [`GenOptions`] and
//!   writes its trace; [`NetTraceOptions`] says how (the tick threshold,
//!   the writer's block and sequence-point sizes); the [`NetTraceReport`]
//!   counts what was written.
//! - [`NetTraceWriter`] is the format layer alone: [`TraceInfo`] (the
//!   Trace object), [`KindDef`] (metadata records), [`EventOut`] (an
//!   event with its stack and payload), usable for any trace.
//! - [`events`] encodes the runtime's payloads.

pub mod events;
mod stage;
mod writer;

pub use writer::{utf16z, EventOut, KindDef, NetTraceWriter, TraceInfo, WriterOptions, WriterStats};

use crate::error::GenError;
use crate::options::GenOptions;
use crate::{emit, process, program, rng};
use clrprof::eventpipe::Timestamp;
use std::io::{self, Write};
use std::sync::mpsc::sync_channel;

/// How to write the trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NetTraceOptions {
    /// An allocation tick every this many bytes allocated by a thread, per
    /// kind (small or large objects); the runtime's is 100,000. 0 writes
    /// one for every object (a trace as dense as a CLRProfiler log).
    pub tick_bytes: u64,
    /// Block sizes and sequence points.
    pub writer: WriterOptions,
    /// Every this many events one is dropped, its sequence number left as
    /// a gap, as the runtime drops events when its buffers are full (0:
    /// none): a trace whose readers must report lost events.
    pub lose_every: u64,
}

impl Default for NetTraceOptions {
    fn default() -> Self {
        NetTraceOptions { tick_bytes: 100_000, writer: WriterOptions::default(), lose_every: 0 }
    }
}

/// Events written, by kind, and what the simulation allocated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NetTraceCounts {
    /// `GC/AllocationTick` events.
    pub allocation_ticks: u64,
    /// Bytes the ticks account for (their `AllocationAmount64`s).
    pub ticked_bytes: u64,
    /// `GC/Start` events.
    pub gc_starts: u64,
    /// `GC/Stop` events.
    pub gc_stops: u64,
    /// `GC/HeapStats` events.
    pub heap_stats: u64,
    /// `Method/LoadVerbose` events.
    pub method_loads: u64,
    /// `Loader/ModuleLoad` events.
    pub module_loads: u64,
    /// Objects the simulation allocated.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// What [`generate_nettrace`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NetTraceReport {
    /// Events by kind.
    pub counts: NetTraceCounts,
    /// Bytes, events, blocks, stacks, sequence points.
    pub writer: WriterStats,
}

/// The trace's start: 2026-01-01 00:00:00 UTC (a Thursday), at 1,000 s of
/// a nanosecond clock (Linux's).
fn trace_info(opts: &GenOptions) -> TraceInfo {
    TraceInfo {
        sync_time_utc: [2026, 1, 4, 1, 0, 0, 0, 0],
        sync_time_qpc: Timestamp(1_000_000_000_000),
        qpc_frequency: 1_000_000_000,
        pointer_size: opts.pointer_bits.bytes() as u32,
        process_id: 4242,
        processors: stage::PROCESSORS,
        expected_cpu_sampling_rate: 1000,
    }
}

/// Runs the simulation `opts` describe and writes its NetTrace into
/// `out`; returns the writer (flushed) and what was written.
///
/// As [`generate`](crate::generate), the simulation runs on the calling
/// thread and the tracing stage on a second, scoped thread.
pub fn generate_nettrace<W: Write + Send>(opts: &GenOptions, nt: &NetTraceOptions, out: W) -> Result<(W, NetTraceReport), GenError> {
    opts.validate()?;
    let mut rng = rng::Rng::stream(opts.seed, rng::Stream::Process);
    let program = program::Program::new(opts, &mut rng)?;
    let info = trace_info(opts);
    let (tx, rx) = sync_channel(crate::pipeline::QUEUE);
    let (recycle_tx, recycle_rx) = sync_channel(crate::pipeline::QUEUE);
    std::thread::scope(|s| {
        let program = &program;
        let writer = s.spawn(move || -> Result<(W, NetTraceReport), GenError> {
            let mut w = NetTraceWriter::new(out, &info, nt.writer)?;
            w.lose_every(nt.lose_every);
            let tracer =
                stage::Tracer::new(w, program, opts.pointer_bits, nt.tick_bytes, opts.alloc_rate_mb_per_s, info.sync_time_qpc.0);
            let (w, counts) = tracer.run(rx, recycle_tx)?;
            let (out, writer) = w.finish()?;
            Ok((out, NetTraceReport { counts, writer }))
        });
        let simulated = process::Process::new(opts, program, rng, emit::Emitter::new(tx, recycle_rx)).and_then(|p| p.run());
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(GenError::Io(io::Error::other("the trace writer thread panicked"))));
        match (simulated, written) {
            (Ok(_), Ok(r)) => Ok(r),
            (_, Err(e)) => Err(e),
            (Err(e), Ok(_)) => Err(e),
        }
    })
}
