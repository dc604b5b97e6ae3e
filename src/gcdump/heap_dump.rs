//! The `GCHeapDump` entry object: the graph, then the sampling multipliers
//! and what the collector says about the process.
//!
//! ```text
//! version >= 9:  MemoryGraph  bool is64Bit  f32 avgCountMultiplier  f32 avgSizeMultiplier
//!                JSHeapInfo  DotNetHeapInfo  string log  i64 timeTicks  string machine
//!                string process  i32 pid  i64 commit  i64 workingSet
//!                i32 n  f32 countMultiplierByType * n
//!                [SkipRegion InteropInfo]  [String creationTool]
//! version 4..7:  MemoryGraph  i64 segmentsSize  i64  i64  bool
//!                (>= 5) string log  i64 timeTicks  string machine  string process
//!                       i32 pid  i64 commit  i64 workingSet
//!                (>= 6) i32 n  GCHeapDumpSegment * n   (>= 7) bool is64Bit
//! ```

use super::error::Error;
use super::graph::HeapGraph;
use super::memory_graph::read_memory_graph;
use super::serialization::{tag, Deserializer, TypeRef};

/// The entry object's type name.
pub(crate) const GC_HEAP_DUMP: &str = "GCHeapDump";
const MEMORY_GRAPH: &str = "Graphs.MemoryGraph";

/// Reads a whole file.
pub(crate) fn read_heap_dump(data: &[u8]) -> Result<HeapGraph, Error> {
    let mut de = Deserializer::new(data)?;
    let at = de.cur.pos();
    let ty = de.begin_object("the GCHeapDump object (BeginObject 4)")?;
    let ty = ty.ok_or(Error::invalid(at, "the GCHeapDump object (BeginObject 4)", i64::from(tag::NULL_REFERENCE)))?;
    if ty.name != GC_HEAP_DUMP {
        return Err(Error::unsupported(at, "entry object (not a GCHeapDump), version", i64::from(ty.version)));
    }
    let mut g = HeapGraph::default();
    g.info.version = ty.version;
    match ty.version {
        v if v < 4 => return Err(Error::unsupported(at, "GCHeapDump version (4 and later are read)", i64::from(v))),
        8 => return Err(Error::unsupported(at, "GCHeapDump version", 8)),
        v if v < 8 => read_before_8(&mut de, v, &mut g)?,
        _ => read_from_9(&mut de, &mut g)?,
    }
    de.end_object()?;
    Ok(g)
}

/// The graph object, which every version starts with.
fn graph(de: &mut Deserializer<'_>, g: &mut HeapGraph) -> Result<(), Error> {
    let at = de.cur.pos();
    match de.begin_object("the MemoryGraph object (BeginObject 4)")? {
        Some(t) if t.name == MEMORY_GRAPH => read_memory_graph(de, &t, g),
        Some(t) => Err(Error::unsupported(at, "graph object type (not Graphs.MemoryGraph), version", i64::from(t.version))),
        None => Err(Error::invalid(at, "the MemoryGraph object (BeginObject 4)", i64::from(tag::NULL_REFERENCE))),
    }
}

fn read_from_9(de: &mut Deserializer<'_>, g: &mut HeapGraph) -> Result<(), Error> {
    graph(de, g)?;
    // The graph's own flag, when present, is the one PerfView uses; this
    // one is older.
    let is64 = de.cur.bool("the 64-bit flag")?;
    if g.pointer_size() == 4 {
        g.is_64bit |= is64;
    }
    g.sampling.average_count_multiplier = de.cur.f32("the average count multiplier")?;
    g.sampling.average_size_multiplier = de.cur.f32("the average size multiplier")?;
    heap_info(de)?;
    heap_info(de)?;
    g.info.collection_log = de.cur.string("the collection log")?;
    g.info.time_collected_ticks = de.cur.i64("the time collected")?;
    g.info.machine_name = de.cur.string("the machine name")?;
    g.info.process_name = de.cur.string("the process name")?;
    g.info.process_id = de.cur.i32("the process id")?;
    g.info.total_process_commit = de.cur.i64("the process's committed bytes")?;
    g.info.total_process_working_set = de.cur.i64("the process's working set")?;
    let n = de.cur.count(4, "the count of per-type count multipliers")?;
    let mut m = Vec::with_capacity(n);
    for _ in 0..n {
        m.push(de.cur.f32("a count multiplier")?);
    }
    g.sampling.count_multipliers_by_type = m;
    // Tagged fields of later versions: interop data (skipped), the tool.
    if de.try_tag(tag::SKIP_REGION) {
        de.skip_region()?;
    }
    if de.try_tag(tag::STRING) {
        g.info.creation_tool = de.cur.string("the creation tool")?;
    }
    Ok(())
}

fn read_before_8(de: &mut Deserializer<'_>, version: i32, g: &mut HeapGraph) -> Result<(), Error> {
    graph(de, g)?;
    de.cur.i64("the size of all segments")?;
    de.cur.i64("the size of dumped objects")?;
    de.cur.i64("the number of dumped objects")?;
    de.cur.bool("the all-objects-dumped flag")?;
    if version >= 5 {
        g.info.collection_log = de.cur.string("the collection log")?;
        g.info.time_collected_ticks = de.cur.i64("the time collected")?;
        g.info.machine_name = de.cur.string("the machine name")?;
        g.info.process_name = de.cur.string("the process name")?;
        g.info.process_id = de.cur.i32("the process id")?;
        g.info.total_process_commit = de.cur.i64("the process's committed bytes")?;
        g.info.total_process_working_set = de.cur.i64("the process's working set")?;
        if version >= 6 {
            let n = de.cur.count(1, "the segment count")?;
            for _ in 0..n {
                object(de, "a GCHeapDumpSegment object")?;
            }
            if version >= 7 {
                let is64 = de.cur.bool("the 64-bit flag")?;
                g.is_64bit |= is64;
            }
        }
    }
    Ok(())
}

/// A `JSHeapInfo` (no fields) or `DotNetHeapInfo` (segments) object, or null.
fn heap_info(de: &mut Deserializer<'_>) -> Result<(), Error> {
    object(de, "a heap info object (NullReference 1 or BeginObject 4)")
}

/// Reads (and drops) one of the small objects a GCHeapDump holds.
fn object(de: &mut Deserializer<'_>, what: &'static str) -> Result<(), Error> {
    let at = de.cur.pos();
    let Some(t) = de.begin_object(what)? else { return Ok(()) };
    body(de, &t, at)?;
    de.end_object()
}

fn body(de: &mut Deserializer<'_>, t: &TypeRef, at: usize) -> Result<(), Error> {
    match t.name.as_str() {
        "JSHeapInfo" => Ok(()),
        "DotNetHeapInfo" => {
            de.cur.i64("the size of all segments")?;
            let n = de.cur.count(1, "the segment count")?;
            for _ in 0..n {
                object(de, "a GCHeapDumpSegment object")?;
            }
            Ok(())
        }
        "GCHeapDumpSegment" => {
            // Start, end, and the ends of generations 0 to 3 (and 4 from
            // version 1).
            let n = if t.version >= 1 { 7 } else { 6 };
            de.cur.bytes(8 * n, "a segment's bounds")?;
            Ok(())
        }
        _ => Err(Error::unsupported(at, "object type inside a GCHeapDump, version", i64::from(t.version))),
    }
}
