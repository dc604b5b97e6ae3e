//! The workload generator: heap-consistent CLRProfiler logs of any size,
//! with ground truth.
//!
//! It simulates a .NET service (threads walking a synthetic call tree of
//! framework and application functions, allocating strings, arrays and
//! objects with a skewed size mix and some large objects; a generational
//! heap with gen-0 GCs at an allocation budget, gen-1 and gen-2 GCs by
//! their own budgets, induced GCs, compaction and sweeping, pinning; a
//! first-fit large-object heap collected by gen-2 GCs; finalization; GC
//! handles; heap dumps; comments) and writes what CLRProfiler's profiler
//! would write, streaming, through the format layer's
//! [`LogWriter`](clrprof::format::LogWriter).
//!
//! The log is *heap-consistent*: CLRProfiler's reader, replaying it with
//! its own rules, arrives at exactly the heap the generator simulated, so
//! the [`Truth`] returned beside the log (allocations, moves, deaths, ages,
//! and the figures of CLRProfiler's Summary) is what a correct reader must
//! find. Same options, same bytes: all randomness comes from a
//! self-contained seeded generator.
//!
//! # API structure
//!
//! - [`GenOptions`] says what to generate; [`Preset`] gives the named sizes
//!   (`tiny`, `small`, `medium`, `seed`).
//! - [`generate`] writes a log to any `Write` and returns the [`Truth`].
//! - [`Truth::to_json`] is the `FILE.truth.json` beside a log.
//! - [`nettrace::generate_nettrace`] writes the same simulation as a
//!   NetTrace (EventPipe) trace.
//!
//! ```
//! use clrprof_gen::{generate, GenOptions, Preset};
//! let opts = GenOptions { objects: 2_000, gcs: 3, ..Preset::Tiny.options() };
//! let (log, truth) = generate(&opts, Vec::new()).unwrap();
//! assert_eq!(truth.allocated.objects, 2_000);
//! assert_eq!(truth.gcs.total, 3);
//! assert_eq!(truth.log.bytes, log.len() as u64);
//! let (_, warnings) = clrprof::format::read_all(&log);
//! assert_eq!(warnings.total(), 0);
//! ```
//!
//! # How the pieces fit
//!
//! Two stages on two threads, like a profiled process and its profiler:
//! the *simulation* (calling thread) runs the program and the heap and
//! reports events; the *profiler stage* (a scoped thread) interns stacks,
//! writes definitions and formats every line (see `pipeline.rs`).
//!
//! | file | concept |
//! |---|---|
//! | `options.rs` | options and presets |
//! | `rng.rs` | the seeded random generator |
//! | `names.rs`, `types.rs`, `calltree.rs`, `program.rs` | the synthetic program |
//! | `process.rs`, `threads.rs`, `ids.rs` | the simulation's main loop, thread stacks, function and type ids |
//! | `heap.rs`, `lifetime.rs`, `sizer.rs` | objects, where they live, how long, how big |
//! | `schedule.rs`, `gc.rs` | when GCs happen and what they write |
//! | `handles.rs`, `dump.rs` | `h`/`j` events, heap dumps |
//! | `clock.rs`, `reader_clock.rs` | `i` lines, CLRProfiler's tick indices |
//! | `pipeline.rs`, `emit.rs` | events and records between the stages |
//! | `profiler.rs`, `stacks.rs`, `idmap.rs`, `loader.rs` | the profiler stage: stacks (`n`), definitions (`t`/`f`/`m`/`y`) |
//! | `truth.rs` | the ground truth |
//! | `nettrace/` | the same simulation written as a `.nettrace` trace (EventPipe) |
#![deny(missing_docs)]
// Input reaches most paths: no unwrap, expect or panic outside tests
// (`cargo clippy --lib` checks it).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

mod calltree;
mod clock;
mod dump;
mod emit;
mod error;
mod gc;
mod handles;
mod heap;
mod idmap;
mod ids;
mod lifetime;
mod loader;
mod names;
pub mod nettrace;
mod options;
mod pipeline;
mod process;
mod profiler;
mod program;
mod reader_clock;
mod rng;
mod schedule;
mod sizer;
mod stacks;
mod threads;
pub mod truth;
mod types;

pub use clock::TickStats;
pub use error::GenError;
pub use handles::HandleStats;
pub use options::{GenOptions, PointerBits, Preset};
pub use truth::{ClrSummary, Truth};

use std::io::{self, Write};
use std::sync::mpsc::sync_channel;

/// Generates the log `opts` describe into `out`; returns the writer (after
/// a flush) and the ground truth.
///
/// The simulation runs on the calling thread and the profiler stage
/// (stacks, definitions, formatting) on a second, scoped thread (see
/// `pipeline.rs`), so `out` must be `Send`.
pub fn generate<W: Write + Send>(opts: &GenOptions, out: W) -> Result<(W, Truth), GenError> {
    opts.validate()?;
    let mut rng = rng::Rng::stream(opts.seed, rng::Stream::Process);
    let program = program::Program::new(opts, &mut rng)?;
    let (tx, rx) = sync_channel(pipeline::QUEUE);
    let (recycle_tx, recycle_rx) = sync_channel(pipeline::QUEUE);
    let style = opts.pointer_bits.style();
    std::thread::scope(|s| {
        let program = &program;
        let writer = s.spawn(move || {
            profiler::Profiler::new(out, style, program, opts.calls, opts.pointer_bits).run(rx, recycle_tx)
        });
        let simulated = process::Process::new(opts, program, rng, emit::Emitter::new(tx, recycle_rx)).and_then(|p| p.run());
        // The emitter is gone (finished, or dropped on an error), so the
        // profiler sees the channel close and returns.
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(GenError::Io(io::Error::other("the log writer thread panicked"))));
        match (simulated, written) {
            (Ok(mut truth), Ok(report)) => {
                truth.attach_log(report.bytes, &report.counts, report.stacks);
                Ok((report.writer, truth))
            }
            // A writer failure explains a simulation stopped by it.
            (_, Err(e)) => Err(e),
            (Err(e), Ok(_)) => Err(e),
        }
    })
}
