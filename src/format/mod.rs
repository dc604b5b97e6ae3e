//! Bytes to records and records to bytes.
//!
//! # API structure
//!
//! - [`LogSource`] opens a log (memory map, or a read for pipes and `-`).
//! - [`RecordReader`] steps through records with CLRProfiler's reader rules
//!   (see `FORMAT.md`), yielding [`Parsed`] records that borrow names and
//!   lists from the log, and collecting [`Warning`]s with byte offsets.
//! - [`parse_chunks`] runs readers over line-aligned chunks on the rayon
//!   pool and hands results back in file order.
//! - [`LogWriter`] formats records as CLRProfiler's profiler does.
//! - [`RecordSink`] takes records in log order from whatever makes them
//!   (the parser, the importers, an embedder); [`TextSink`] writes them as
//!   log text.
//! - [`LogStats`] counts records, definitions and lines in one pass.
//!
//! The parser never fails on content: like the reference reader, it reads a
//! missing number as -1, skips lines it does not know and reads text left
//! on a line as a new record, and it reports each of these as a warning.
//! Callers that want an error instead use [`Error::from_warning`] on the
//! first warning (the CLI's `--strict`).

pub(crate) mod address_index;
mod classify;
mod decompress;
mod diagnostics;
mod error;
mod fields;
mod hot;
mod ids;
mod list;
#[cfg(feature = "parallel")]
mod parallel;
mod reader;
mod record;
pub mod records;
pub mod scan;
mod sink;
mod sniff;
mod source;
mod stream;
#[cfg(feature = "parallel")]
mod stats;
#[cfg(feature = "parallel")]
mod stats_ids;
mod text;
mod writer;

pub use diagnostics::{line_of, Diagnostics, Warning, WarningKind, DEFAULT_KEPT_WARNINGS};
pub use error::{Error, Result};
pub use fields::FieldProblem;
pub use ids::{Address, FunctionId, HandleId, ModuleId, StackId, ThreadId, TypeId};
pub use list::{List, ListItem, ListIter};
#[cfg(feature = "parallel")]
pub use parallel::{cut, parse_chunks, ChunkOptions};
pub use reader::{read_all, DumpState, FrequentVisitor, RecordReader};
pub use record::{Kind, Parsed, Record};
pub use decompress::{open_read, open_read_with};
pub use sink::{RecordSink, TextSink};
pub use sniff::{sniff, Content, SNIFF_BYTES};
pub use source::{display_path, LogSource};
pub use stream::{RecordStream, StreamOptions};
#[cfg(feature = "parallel")]
pub use stats::LogStats;
#[cfg(feature = "parallel")]
pub use stats_ids::IdSet;
pub use text::{dec_i64, escape_name, hex_lower, Style};
pub use writer::{write_record, LogWriter};
