//! NetTrace (EventPipe) traces: bytes to events, streaming.
//!
//! `.nettrace` files are what .NET's EventPipe writes (`dotnet-trace`,
//! `dotnet-monitor`, or the runtime itself with `DOTNET_EnableEventPipe=1`).
//! This module reads the FastSerialization-framed format (Trace object
//! version 4, the "V4" and "V5" formats of .NET Core 3.0 to .NET 9) over a
//! byte slice (a mapped file), in one pass, holding no events: memory is
//! bounded by the event kinds, the stacks of one sequence-point region and
//! the threads. The block format V6 (.NET 10) is recognised and refused
//! with [`ErrorKind::Unsupported`].
//!
//! ```no_run
//! use clrprof::eventpipe::NetTraceReader;
//! let bytes = std::fs::read("trace.nettrace")?;
//! let mut reader = NetTraceReader::new(&bytes)?;
//! let mut ticks = 0;
//! while let Some(event) = reader.next_event()? {
//!     if event.name() == "GC/AllocationTick" {
//!         ticks += 1;
//!         for field in event.fields()?.unwrap_or_default() {
//!             println!("{} = {:?}", field.name, field.value);
//!         }
//!     }
//! }
//! let summary = reader.finish();
//! println!("{ticks} ticks, {} events lost", summary.lost_events);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # API structure
//!
//! - [`NetTraceReader`]: [`NetTraceReader::new`] reads the [`TraceHeader`];
//!   [`NetTraceReader::next_event`] hands out [`Event`]s (a lending
//!   iterator: each borrows the reader until the next call) or
//!   [`NetTraceReader::for_each`] visits them; [`NetTraceReader::finish`]
//!   gives the [`ReadSummary`] (lost events, [`Warning`]s).
//! - [`Event`]: the decoded [`EventHeader`] (typed ids: [`MetadataId`],
//!   [`StackId`], [`ThreadId`], [`Timestamp`]), the payload bytes, its
//!   [`EventKind`] (the [`EventMetadata`] and TraceEvent's name for it), its
//!   [`Stack`], and [`Event::fields`] decoding the payload on demand into
//!   [`Field`]s: from the metadata for EventSource events, from built-in
//!   schemas (the runtime's manifest, every version) for the runtime's own.
//! - The layers underneath, usable alone: [`read_header`], [`read_block`]
//!   ([`Block`]), [`EventBlobs`] (the events of one block),
//!   [`parse_metadata`], [`SequencePoint`].
//!
//! # Errors and recoveries
//!
//! Every [`Error`] names the byte offset and what was expected there. A
//! trace that stops early (a killed process) is read up to its last
//! complete block and ends with [`Warning::Truncated`]; gaps in the
//! per-thread sequence numbers are [`Warning::LostEvents`]; an event
//! whose metadata is unknown is handed out without a kind and warned
//! about; a metadata record whose field descriptions cannot be read gives
//! a kind without fields (as TraceEvent does).

mod block;
mod cursor;
mod error;
mod event_header;
mod header;
mod ids;
mod labels;
mod metadata;
mod payload;
mod reader;
mod runtime_schemas;
mod runtime_table;
mod sequence_points;
mod stacks;
mod threads;

pub use block::{read_block, read_block_v6, Block, BlockKind};
pub use error::{Error, ErrorKind, Warning};
pub use event_header::{EventBlobs, EventHeader};
pub use header::{is_nettrace, read_header, read_trace_info, TraceHeader, TraceInfo, MAGIC};
pub use ids::{MetadataId, StackId, ThreadId, Timestamp};
pub use labels::{LabelList, LabelValue};
pub use metadata::{parse_metadata, parse_metadata_v6, EventMetadata, FieldDesc, FieldType};
pub use payload::{Field, Utf16, Value};
pub use reader::{Event, EventKind, NetTraceReader, ReadSummary};
pub use runtime_schemas::ValueMap;
pub use sequence_points::SequencePoint;
pub use stacks::Stack;
pub use threads::ThreadInfo;
