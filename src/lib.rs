//! `clrprof`: load, query, write and record CLRProfiler .NET memory-profile
//! logs.
//!
//! The crate has layers whose arrows point one way:
//! [`mod@format`] (bytes and records) <- [`model`] (tables and the heap
//! simulation) <- [`query`] (answers). Everything else depends on this
//! crate and lives in its own: the pictures (`clrprof-render`), the
//! workload generator (`clrprof-gen`), the command-line tool
//! (`clrprof-cli`) and the capture agent.
//!
//! ```
//! use clrprof::format::{read_all, Record};
//! let log = b"t 1 0 System.String\nn 1 1 1 24\n! 42 0x1000 1\n";
//! let (records, warnings) = read_all(log);
//! assert_eq!(records.len(), 3);
//! assert_eq!(warnings.total(), 0);
//! match records[2].record {
//!     Record::Alloc(a) => assert_eq!(a.address.0, 0x1000),
//!     _ => unreachable!(),
//! }
//! ```
//!
//! Loading a log and asking for CLRProfiler's Summary:
//!
//! ```
//! # #[cfg(feature = "model")] {
//! let log = b"t 1 0 System.String\nn 1 1 1 24\ni 5\n! 42 0x1000 1\n";
//! let model = clrprof::model::load(log, &Default::default()).unwrap();
//! let summary = clrprof::query::summary(&model);
//! assert_eq!(summary.allocated_bytes, 24);
//! assert_eq!(summary.final_heap_bytes, 24);
//! assert_eq!(summary.gen0_heap_bytes, None); // "Unknown": no GC
//! # }
//! ```
//!
//! # API structure
//!
//! - [`mod@format`]: [`format::LogSource`] (a file mapped or read,
//!   `.gz`/`.zst` decompressed, non-logs refused), [`format::RecordReader`]
//!   over bytes in memory, [`format::RecordStream`] over any
//!   [`std::io::Read`] (a pipe, a socket, a decompressor) in constant
//!   memory, [`format::parse_chunks`] on all cores, [`format::LogWriter`].
//! - [`model`]: [`model::load_path`] / [`model::load`] build the immutable
//!   columnar [`model::Model`] (CLRProfiler's heap simulation).
//! - [`query`]: pure functions over a `Model`, one per CLRProfiler view.
//! - [`import`]: other profilers' files as CLRProfiler records given
//!   straight to a [`format::RecordSink`] ([`import::nettrace::import`];
//!   the model's sink is `model::RecordFeed`), with the weights of
//!   sampled allocations; [`import::nettrace::to_log`] writes them as
//!   log text.
//! - [`eventpipe`]: [`eventpipe::NetTraceReader`] streams the events of a
//!   `.nettrace` (EventPipe) trace from bytes in memory.
//! - [`gcdump`]: [`gcdump::read`] reads a `.gcdump` heap snapshot
//!   (PerfView's `GCHeapDump`) into a [`gcdump::HeapGraph`];
//!   [`gcdump::write_records`] gives it as a CLRProfiler heap dump's
//!   records ([`gcdump::write_log`] as log text).
//!
//! # Features
//!
//! | feature | default | what it adds | crates |
//! |---|---|---|---|
//! | `model` | yes | [`model`], [`query`] (and `parallel`) | rayon, serde |
//! | `parallel` | with `model` | [`format::parse_chunks`], [`format::LogStats`] | rayon |
//! | `gzip` | yes | `.gz` logs read transparently | flate2 |
//! | `zstd` | no | `.zst` logs read transparently | zstd (builds libzstd) |
//!
//! With `default-features = false` the crate is the format layer alone
//! (records, the streaming reader, the writer): what the capture agent
//! uses. The command-line tool, the pictures and the generator are the
//! workspace crates `clrprof-cli`, `clrprof-render` and `clrprof-gen`.
//!
//! # Streaming without a model
//!
//! ```
//! use clrprof::format::{Record, RecordStream};
//! let pipe: &[u8] = b"t 1 0 System.String\nn 1 1 1 24\n! 7 0x1000 1\n";
//! let mut allocations = 0;
//! RecordStream::new(pipe).for_each(|p| {
//!     if let Record::Alloc(_) = p.record {
//!         allocations += 1;
//!     }
//! })?;
//! assert_eq!(allocations, 1);
//! # Ok::<(), clrprof::format::Error>(())
//! ```
#![deny(missing_docs)]
// Input reaches nearly every path of the library: no unwrap, expect or
// panic outside tests (`cargo clippy --lib` checks it).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod eventpipe;
pub mod format;
pub mod gcdump;
mod hash;
pub mod import;
pub mod limits;
#[cfg(feature = "model")]
pub mod model;
#[cfg(feature = "model")]
pub mod query;
