//! Heap snapshots in PerfView's `.gcdump` format, as `dotnet-gcdump` and
//! PerfView write them: a FastSerialization stream holding a `GCHeapDump`
//! object, which holds the heap as a `MemoryGraph` (nodes with a type, a
//! size and the nodes they reference, under one root node).
//!
//! [`read`] gives the [`HeapGraph`] from the bytes of a file, which
//! [`is_gcdump`] recognises by its first bytes; [`write_log`] transcodes
//! it into CLRProfiler log text that `clrprof::model::load` reads as one
//! heap dump with the same objects.
//!
//! ```no_run
//! let bytes = std::fs::read("app.gcdump")?;
//! assert!(clrprof::gcdump::is_gcdump(&bytes));
//! let graph = clrprof::gcdump::read(&bytes)?;
//! println!("{} objects, {} bytes", graph.object_count(), graph.object_bytes());
//! if graph.sampling().is_sampled() {
//!     println!("(a sample of the heap: figures are estimates)");
//! }
//! let mut log = Vec::new();
//! clrprof::gcdump::write_log(&graph, &mut log);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # API structure
//!
//! - [`is_gcdump`], [`read`] -> [`HeapGraph`] or an [`Error`] naming the
//!   byte offset and what was expected there.
//! - [`HeapGraph`]: types ([`HeapGraph::type_name`], module, size), nodes
//!   ([`HeapGraph::node_type`], [`HeapGraph::node_size`],
//!   [`HeapGraph::children`], [`HeapGraph::node_address`],
//!   [`HeapGraph::node_kind`]), the [`HeapGraph::root`], the
//!   [`Sampling`] multipliers and the [`DumpInfo`] (collection log,
//!   process, time).
//! - [`write_records`]: the graph as records for a [`crate::format::RecordSink`]
//!   (the model's builder takes them straight); [`write_log`] the same as
//!   CLRProfiler log text.
//!
//! # What is read
//!
//! `GCHeapDump` versions 4 to 7 and 9 and later (PerfView itself refuses
//! version 8), with `Graphs.MemoryGraph` graphs. Types known only by id
//! (ProjectN's deferred types) keep the name the file gives them. Interop
//! (COM) data is skipped. Memory is proportional to the graph: counts read
//! from the file are checked against the bytes left before anything is
//! sized by them, and a file whose nodes claim more children than its node
//! data can hold is refused.

mod cursor;
mod error;
mod graph;
mod heap_dump;
mod ids;
mod memory_graph;
pub(crate) mod orphans;
mod serialization;
mod to_log;

pub use error::{Error, ErrorKind};
pub use graph::{DumpInfo, HeapGraph, NodeKind, Sampling};
pub use ids::{NodeIndex, TypeIndex};
pub use to_log::{write_log, write_records};

/// Bytes [`is_gcdump`] needs to decide.
pub const SNIFF_BYTES: usize = serialization::SIGNATURE.len() + 3 + 8 + 4 + heap_dump::GC_HEAP_DUMP.len();

/// True when `head` (the first [`SNIFF_BYTES`] bytes of a file or more)
/// starts as a `.gcdump` does: the FastSerialization header
/// (`i32 20, "!FastSerialization.1"`), then the entry object with its type
/// defined in place (`04 04 01`, two 32-bit versions) named `GCHeapDump`.
/// [`read`] also takes files that start otherwise (a blob before the
/// entry object, private-object tags); no known writer makes them.
pub fn is_gcdump(head: &[u8]) -> bool {
    use serialization::{tag, SIGNATURE};
    if head.len() < SNIFF_BYTES || !head.starts_with(SIGNATURE) {
        return false;
    }
    let rest = &head[SIGNATURE.len()..];
    let name = heap_dump::GC_HEAP_DUMP.as_bytes();
    let begin = |t: u8| t == tag::BEGIN_OBJECT || t == tag::BEGIN_PRIVATE_OBJECT;
    begin(rest[0])
        && begin(rest[1])
        && rest[2] == tag::NULL_REFERENCE
        && rest[11..15] == (name.len() as u32).to_le_bytes()
        && &rest[15..15 + name.len()] == name
}

/// Reads a whole `.gcdump` file from memory.
///
/// Errors name the byte offset where reading stopped and what was
/// expected there; a file cut short is an error (its graph is written
/// first, its nodes' data in the middle: nothing useful precedes a cut).
pub fn read(bytes: &[u8]) -> Result<HeapGraph, Error> {
    heap_dump::read_heap_dump(bytes)
}
