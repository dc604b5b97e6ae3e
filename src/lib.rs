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
//! let log = b"t 1 0 System.String\nn 1 1 1 24\ni 5\n! 42 0x1000 1\n";
//! let model = clrprof::model::load(log, &Default::default()).unwrap();
//! let summary = clrprof::query::summary(&model);
//! assert_eq!(summary.allocated_bytes, 24);
//! assert_eq!(summary.final_heap_bytes, 24);
//! assert_eq!(summary.gen0_heap_bytes, None); // "Unknown": no GC
//! ```
#![deny(missing_docs)]
// Input reaches nearly every path of the library: no unwrap, expect or
// panic outside tests (`cargo clippy --lib` checks it).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod format;
#[cfg(feature = "model")]
pub mod model;
#[cfg(feature = "model")]
pub mod query;
