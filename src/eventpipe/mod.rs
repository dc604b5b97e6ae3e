//! NetTrace (EventPipe) traces: bytes to events, streaming.
//!
//! `.nettrace` files are what .NET's EventPipe writes (`dotnet-trace`,
//! `dotnet-monitor`, or the runtime itself with `DOTNET_EnableEventPipe=1`).
//! This module reads both formats over a byte slice (a mapped file), in
//! one pass, holding no events but those waiting to be merged in time
//! order:
//!
//! - the FastSerialization-framed format (Trace object version 4, the "V4"
//!   and "V5" formats of .NET Core 3.0 to .NET 9);
//! - the block format V6 of .NET 10-era writers (`dotnet-trace
//!   collect-linux` and others): a TraceBlock with key-value pairs, metadata
//!   rows with UTF-8 names and the new field types (varints, fixed-length
//!   arrays, UTF-8 code units, RelLoc/DataLoc, 1-byte booleans) and
//!   optional metadata (opcode, keywords, level, version, message template,
//!   description, provider GUID, key-value pairs), thread blocks (events
//!   name threads by index; the table gives OS thread and process ids),
//!   label lists (activity ids, trace context, per-event overrides),
//!   sequence points that may flush the thread table and the metadata, and
//!   RemoveThread blocks.
//!
//! Either way the same [`Event`]s come out: V6 thread indexes are resolved
//! to OS thread ids in [`EventHeader::thread`] and
//! [`EventHeader::capture_thread`] (the indexes stay in
//! [`EventHeader::thread_index`]), a label list's activity ids fill
//! [`EventHeader::activity_id`] and [`EventHeader::related_activity_id`],
//! and the runtime's events decode through the same built-in schemas.
//! Memory is bounded by the event kinds, the stacks and label lists of one
//! sequence-point region, the threads and the events waiting to be merged
//! (at most one region's, capped by [`ReadOptions::max_pending`]).
//!
//! Events come in time order across threads: EventPipe orders events
//! within a thread only, and the reader merges the threads by timestamp
//! within each sequence-point region, as TraceEvent does (see
//! [`ReadOptions`] for the bound, and [`Order::File`] for the file's
//! order).
//!
//! How it was checked: V4 and V5 against traces written by .NET Core 3.0,
//! 5.0 and 6.0 and TraceEvent's own readings of them
//! (`tests/eventpipe_reader.rs`). No trace written by a runtime or tool in
//! V6 was available: V6 is tested only against traces built from the
//! format's description (PerfView's `NetTraceFormat.md`) by an independent
//! writer in the tests (`tests/eventpipe_v6.rs`: hand-made traces, and the
//! V5 corpus traces re-encoded as V6, which must read back event for event
//! as they read in V5), with TraceEvent's reader
//! consulted where the description is silent (the high bit of an
//! uncompressed metadata id means "not sorted"), and with the block
//! pattern of one V6 writer whose source was read (microsoft/one-collect's
//! exporter: the thread table flushed at every sequence point, one capture
//! thread, losses reported by the last sequence point) rebuilt by that
//! test writer. Differences from TraceEvent: a V6 trace
//! that names an undefined thread index or label list, or whose metadata
//! row cannot be read, is read on with a [`Warning`] where TraceEvent
//! stops; an uncompressed V6 event ends where its size says; a label
//! list's opcode does not rename the event (TraceEvent's name follows it),
//! though its version does choose the runtime schema.
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
//!   [`NetTraceReader::next_event`] hands out [`Event`]s in time order
//!   across threads (a lending iterator: each borrows the reader until the
//!   next call; [`NetTraceReader::with_options`] and [`ReadOptions`] give
//!   file order, [`Order::File`], or another bound on the merge) or
//!   [`NetTraceReader::for_each`] visits them; [`NetTraceReader::finish`]
//!   gives the [`ReadSummary`] (lost events, [`Warning`]s).
//! - [`Event`]: the decoded [`EventHeader`] (typed ids: [`MetadataId`],
//!   [`StackId`], [`ThreadId`], [`Timestamp`]), the payload bytes, its
//!   [`EventKind`] (the [`EventMetadata`] and TraceEvent's name for it), its
//!   [`Stack`], and [`Event::fields`] decoding the payload on demand into
//!   [`Field`]s: from the metadata for EventSource events, from built-in
//!   schemas (the runtime's manifest, every version) for the runtime's own.
//! - V6 extras: [`Event::labels`] ([`LabelList`]), [`Event::thread_info`]
//!   ([`ThreadInfo`]: OS ids, name, process), [`NetTraceReader::trace_info`]
//!   ([`TraceInfo`]: the TraceBlock's key-value pairs),
//!   [`EventMetadata::message_template`] and the other optional metadata.
//! - [`Census`]: what a trace holds (events per provider and kind,
//!   losses, time span) and which [`Question`]s it can answer.
//! - The layers underneath, usable alone: [`read_header`],
//!   [`read_trace_info`], [`read_block`] and [`read_block_v6`] ([`Block`]),
//!   [`EventBlobs`] (the events of one block, [`EventBlobs::new_v6`] for
//!   V6), [`parse_metadata`], [`parse_metadata_v6`], [`SequencePoint`].
//!
//! # Errors and recoveries
//!
//! Every [`Error`] names the byte offset and what was expected there. A
//! trace that stops early (a killed process) is read up to its last
//! complete block and ends with [`Warning::Truncated`]; gaps in the
//! per-thread sequence numbers are [`Warning::LostEvents`] (in V6 a
//! thread's numbering starts at its ThreadBlock, so a first event numbered
//! above 1 is a loss, and RemoveThread blocks close the count); an event
//! whose metadata is unknown is handed out without a kind and warned
//! about; a metadata record whose field descriptions cannot be read gives
//! a kind without fields (as TraceEvent does for V5); blocks of kinds this
//! reader does not know are skipped with [`Warning::UnknownBlock`]. A V6
//! trace with a major version above 6 is refused with
//! [`ErrorKind::Unsupported`]; a higher minor version is read.

mod allocation_tick;
mod block;
mod bulk;
mod census;
mod cursor;
mod error;
mod event_header;
mod header;
mod ids;
mod kinds;
mod labels;
mod metadata;
mod order;
mod payload;
mod reader;
mod runtime_schemas;
mod runtime_table;
mod sequence_points;
mod stacks;
mod threads;

pub use allocation_tick::AllocationTick;
pub use block::{read_block, read_block_v6, Block, BlockKind};
pub use bulk::{Bulk, Member};
pub use census::{Census, KindCount, Question};
pub use error::{Error, ErrorKind, Warning};
pub use event_header::{EventBlobs, EventHeader};
pub use header::{is_nettrace, read_header, read_trace_info, TraceHeader, TraceInfo, MAGIC};
pub use ids::{MetadataId, StackId, ThreadId, Timestamp};
pub use labels::{LabelList, LabelValue};
pub use metadata::{parse_metadata, parse_metadata_v6, EventMetadata, FieldDesc, FieldType};
pub use order::{Order, ReadOptions};
pub use payload::{Field, Utf16, Value};
pub use reader::{Event, EventKind, NetTraceReader, Next, ReadSummary};
pub use runtime_schemas::ValueMap;
pub use sequence_points::SequencePoint;
pub use stacks::Stack;
pub use threads::ThreadInfo;
