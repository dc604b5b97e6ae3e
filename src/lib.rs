//! `clrprof`: load, query, write and record CLRProfiler .NET memory-profile
//! logs.
//!
//! The crate has layers whose arrows point one way:
//! [`format`] (bytes and records) <- `model` (tables and the heap
//! simulation) <- `query` (answers) <- the `clrprof` binary.
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
#![deny(missing_docs)]

pub mod format;
pub mod model;
pub mod query;
pub mod gen;
