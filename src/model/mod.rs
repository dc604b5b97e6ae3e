//! Records -> [`Model`]: the tables and CLRProfiler's heap simulation.
//!
//! A [`Model`] is everything CLRProfiler's views answer from one pass over
//! a log, as immutable columns: name tables, types, functions, modules,
//! threads, the stack table (a prefix tree), the time table, every
//! allocated object with its fate, the GCs, the address history (the packed
//! sample table), histograms per stack, handles, finalizations, heap dumps
//! and comments. It is built once, in log order, by a [`Builder`], and then
//! only read (by [`crate::query`]).
//!
//! The simulation reproduces CLRProfiler's reader exactly, as
//! `docs/src/reference-reader.md` describes it (the section numbers in this
//! module's documentation refer to that page): the same objects are live
//! at every moment, the same sample entries are made, the same counters
//! kept, so every Summary figure equals CLRProfiler's. Where CLRProfiler's
//! reader throws, [`load`] returns an [`Error`] naming the record.
//!
//! # API structure
//!
//! - [`load_path`] loads a file by its path (memory map or read, `.gz` and
//!   `.zst` decompressed); [`load`] (and [`load_with_progress`]) load bytes
//!   already in memory: both parse the log in parallel and feed the records
//!   to a [`Builder`] on the calling thread; [`Builder`] can also be fed by
//!   hand.
//! - [`RecordFeed`] is a builder as a [`crate::format::RecordSink`]: the
//!   one way in for records made without log text (a trace's events, a
//!   `.gcdump`'s graph, an embedder's events).
//! - [`Model`] gives the tables: [`Model::stacks`] ([`StackTable`]),
//!   [`Model::allocations`] ([`AllocationTable`], with [`Fate`]),
//!   [`Model::samples`] ([`SampleTable`]), [`Model::gcs`] ([`GcTable`]),
//!   [`Model::histograms`] ([`Histograms`]), and so on.
//! - Ids: the log's ids are [`crate::format`]'s newtypes (`TypeId`,
//!   `FunctionId`, `StackId`, ...); the model's rows have their own dense
//!   ids ([`StackRef`], [`ObjectId`], [`TickIndex`], [`GcIndex`],
//!   [`ThreadRef`], [`SampleId`], [`NameId`]).
//!
//! # Example
//!
//! ```
//! let log = b"t 1 0 System.String\nn 1 1 1 24\ni 5\n! 7 0x1000 1\n! 7 0x1018 1\n";
//! let model = clrprof::model::load(log, &Default::default()).unwrap();
//! assert_eq!(model.allocations().len(), 2);
//! let (ty, size) = model.stacks().type_and_size(model.allocations().stack(clrprof::model::ObjectId(0))).unwrap();
//! assert_eq!(model.type_name(ty), "System.String");
//! assert_eq!(size, 24);
//! ```

mod allocations;
mod builder;
#[cfg(test)]
mod calls_test;
mod comments;
mod deferred;
mod dump_follow;
mod error;
#[cfg(test)]
mod fast_paths_test;
mod feed;
mod finalizers;
mod functions;
mod gc;
mod growing;
mod handles;
mod heap;
mod heap_dump;
mod histogram;
mod idmap;
mod ids;
mod intervals;
mod live;
mod modules;
mod names;
mod open;
mod ops;
mod sampled;
mod row_weights;
mod samples;
mod stacks;
#[cfg(test)]
mod test_rng;
mod threads;
mod time;
mod types;

pub use allocations::{AllocationTable, Fate, ObjectRow};
pub use builder::Builder;
pub use comments::{Comment, CommentTable};
pub use error::{Error, Problem, Result};
pub use feed::RecordFeed;
pub use finalizers::{Finalization, FinalizerTable};
pub use functions::{Function, FunctionTable};
pub use gc::{Gc, GcBookkeeping, GcSource, GcTable, GenerationRange};
pub use growing::GrowingLog;
pub use handles::{HandleEvent, HandleTable};
pub use heap_dump::{DumpObject, DumpRoot, HeapDump, HeapDumpTable};
pub use histogram::{Histograms, StackCounts};
pub use ids::{FrameNode, GcIndex, NameId, ObjectId, SampleId, StackRef, ThreadRef, TickIndex};
pub use modules::{AssemblyLoad, Module, ModuleTable};
pub use names::NameTable;
pub use open::{load_path, load_path_with_progress, load_source_with_progress, OpenError};
pub use sampled::{load_foreign, load_gcdump, load_imported, load_trace, TraceError};
pub use samples::{GrainIndex, PackedSamples, Sample, SampleTable, GROUP as SAMPLE_GROUP};
pub use stacks::StackTable;
pub use threads::ThreadTable;
pub use time::{TimeTable, COMMENT_SLOT_LIMIT, MAX_SLOTS};
pub use types::TypeTable;

use crate::format::{ChunkOptions, Diagnostics, TypeId};

/// The heap simulation's collection counters and generation limits
/// (section 3.7).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Collections {
    /// Gen 0 collections (every GC; a `g` line may overwrite the count).
    pub gen0: i64,
    /// Gen 1 collections.
    pub gen1: i64,
    /// Gen 2 collections.
    pub gen2: i64,
    /// The tick of the most recent GC.
    pub gen1_limit: TickIndex,
    /// The tick of the GC before the most recent GC of generation 1 or more.
    pub gen2_limit: TickIndex,
}

/// Everything loaded from one log (see the module documentation).
///
/// A model can be saved and read back with serde (the `clrprof-cache`
/// crate keeps one per log so that the next command need not load the log
/// again). Reading gives back the same tables, so every query answers as
/// on the loaded model; the bytes must be ones a model was saved as (the
/// cache checks a CRC first): tables read from altered bytes may not hold
/// together, and a query on them may panic.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Model {
    pub(crate) names: NameTable,
    pub(crate) types: TypeTable,
    pub(crate) functions: FunctionTable,
    pub(crate) modules: ModuleTable,
    pub(crate) threads: ThreadTable,
    pub(crate) stacks: StackTable,
    pub(crate) time: TimeTable,
    pub(crate) allocations: AllocationTable,
    pub(crate) samples: SampleTable,
    pub(crate) histograms: Histograms,
    pub(crate) gc_bookkeeping: GcBookkeeping,
    pub(crate) gcs: GcTable,
    pub(crate) collections: Collections,
    pub(crate) handles: HandleTable,
    pub(crate) finalizers: FinalizerTable,
    pub(crate) dumps: HeapDumpTable,
    pub(crate) comments: CommentTable,
    pub(crate) live_objects_at_end: u64,
    pub(crate) records: u64,
    pub(crate) had_alloc_info: bool,
    pub(crate) had_call_info: bool,
    pub(crate) diagnostics: Diagnostics,
    pub(crate) file_bytes: u64,
    /// How the allocations were sampled, for a model of a trace.
    pub(crate) sampling: Option<crate::import::Sampling>,
    /// What an imported file (a trace) said about itself.
    pub(crate) imported: Option<crate::import::TraceFacts>,
    /// For sampled allocations: per stack row, what its samples stand for
    /// (empty for a log).
    pub(crate) row_weights: row_weights::RowWeights,
}

impl Model {
    /// The interned strings.
    pub fn names(&self) -> &NameTable {
        &self.names
    }
    /// Type names and flags.
    pub fn types(&self) -> &TypeTable {
        &self.types
    }
    /// The name of a type (CLRProfiler's `???? type N` when it has none).
    pub fn type_name(&self, id: TypeId) -> std::borrow::Cow<'_, str> {
        match self.types.name(id) {
            Some(n) => std::borrow::Cow::Borrowed(self.names.get(n)),
            None => std::borrow::Cow::Owned(format!("???? type {}", id.0)),
        }
    }
    /// Functions.
    pub fn functions(&self) -> &FunctionTable {
        &self.functions
    }
    /// Modules and assemblies.
    pub fn modules(&self) -> &ModuleTable {
        &self.modules
    }
    /// Threads.
    pub fn threads(&self) -> &ThreadTable {
        &self.threads
    }
    /// The stack table.
    pub fn stacks(&self) -> &StackTable {
        &self.stacks
    }
    /// The time table.
    pub fn time(&self) -> &TimeTable {
        &self.time
    }
    /// Allocated objects and their fates.
    pub fn allocations(&self) -> &AllocationTable {
        &self.allocations
    }
    /// When an object died: the end of the GC that removed it (for a GC the
    /// log ended inside of, the log's last tick), or the tick it was erased
    /// at; `None` for objects alive at the end or never tracked.
    pub fn death_tick(&self, obj: ObjectId) -> Option<TickIndex> {
        self.death_tick_of(self.allocations.fate(obj))
    }
    /// [`Model::death_tick`] of an object whose fate is known already (as
    /// [`AllocationTable::fates`] gives them, without a search per object).
    #[inline]
    pub fn death_tick_of(&self, fate: Fate) -> Option<TickIndex> {
        match fate {
            Fate::DiedAtGc { gc, .. } => Some(self.gcs.get(gc).map_or(TickIndex(self.time.len().saturating_sub(1) as u32), |g| g.end)),
            Fate::Erased { tick, .. } => Some(tick),
            // Unknown: not known to have died.
            Fate::Alive | Fate::Untracked | Fate::Unknown { .. } => None,
        }
    }
    /// The address history.
    pub fn samples(&self) -> &SampleTable {
        &self.samples
    }
    /// Counts per stack row.
    pub fn histograms(&self) -> &Histograms {
        &self.histograms
    }
    /// CLRProfiler's own GC bookkeeping (induced counts, heap sizes).
    pub fn gc_bookkeeping(&self) -> &GcBookkeeping {
        &self.gc_bookkeeping
    }
    /// The GCs.
    pub fn gcs(&self) -> &GcTable {
        &self.gcs
    }
    /// The heap simulation's collection counters.
    pub fn collections(&self) -> &Collections {
        &self.collections
    }
    /// Handles.
    pub fn handles(&self) -> &HandleTable {
        &self.handles
    }
    /// Finalizations.
    pub fn finalizers(&self) -> &FinalizerTable {
        &self.finalizers
    }
    /// Heap dumps.
    pub fn heap_dumps(&self) -> &HeapDumpTable {
        &self.dumps
    }
    /// Comments.
    pub fn comments(&self) -> &CommentTable {
        &self.comments
    }
    /// Objects in the simulated heap at the end of the log.
    pub fn live_objects_at_end(&self) -> u64 {
        self.live_objects_at_end
    }
    /// Records applied.
    pub fn records(&self) -> u64 {
        self.records
    }
    /// Whether the log had allocation records (`!`/`a`).
    pub fn had_alloc_info(&self) -> bool {
        self.had_alloc_info
    }
    /// Whether the log had call records (`c`).
    pub fn had_call_info(&self) -> bool {
        self.had_call_info
    }
    /// What the parser recovered from (line numbers resolved).
    pub fn diagnostics(&self) -> &Diagnostics {
        &self.diagnostics
    }
    /// Size of the log in bytes.
    pub fn file_bytes(&self) -> u64 {
        self.file_bytes
    }
    /// How allocations were sampled, for a model of a trace: then the
    /// allocation table holds the samples and the allocated histogram the
    /// objects they stand for (estimates); `None` for a log of every
    /// allocation.
    pub fn sampling(&self) -> Option<&crate::import::Sampling> {
        self.sampling.as_ref()
    }
    /// What the file said about itself, for a model of an imported file (a
    /// `.nettrace` trace); `None` for a CLRProfiler log.
    pub fn imported(&self) -> Option<&crate::import::TraceFacts> {
        self.imported.as_ref()
    }

    /// Bytes held by each table, by name.
    pub fn table_bytes(&self) -> Vec<(&'static str, usize)> {
        let mut v = vec![
            ("names", self.names.heap_bytes()),
            ("types", self.types.heap_bytes()),
            ("functions", self.functions.heap_bytes()),
            ("modules", self.modules.heap_bytes()),
            ("threads", self.threads.heap_bytes()),
            ("stacks", self.stacks.heap_bytes()),
            ("time", self.time.heap_bytes()),
        ];
        v.extend(self.allocations.column_bytes());
        v.extend([
            ("samples", self.samples.heap_bytes()),
            ("histograms", self.histograms.heap_bytes()),
            ("gcs", self.gcs.heap_bytes()),
            ("handles", self.handles.heap_bytes()),
            ("finalizers", self.finalizers.heap_bytes()),
            ("heap_dumps", self.dumps.heap_bytes()),
            ("comments", self.comments.heap_bytes()),
            ("row_weights", self.row_weights.heap_bytes()),
        ]);
        v
    }
}

/// How to load a log.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// How the parser cuts and schedules the log.
    pub chunks: ChunkOptions,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions { chunks: ChunkOptions { chunk_bytes: 512 << 10, threads: None, in_flight: 0 } }
    }
}

/// Loads a log: parses it on the rayon pool while the calling thread runs
/// the simulation.
pub fn load(data: &[u8], options: &LoadOptions) -> Result<Model> {
    load_with_progress(data, options, |_| {})
}

/// Like [`load`], calling `progress` with the bytes read so far after each
/// chunk.
///
/// Three kinds of threads: the rayon pool parses chunks ahead; the calling
/// thread runs the simulation; a recorder thread builds the allocation
/// columns and the sample table from what the simulation hands it after
/// each chunk (see `deferred.rs`).
pub fn load_with_progress(data: &[u8], options: &LoadOptions, mut progress: impl FnMut(u64)) -> Result<Model> {
    match load_pipelined(data, options, &mut progress)? {
        Some(model) => Ok(model),
        // The sample table reached its size limit: run again with the
        // recorder on this thread, so that the error names its record.
        None => {
            let mut builder = Builder::new(data);
            let (failed, diagnostics) = simulate(data, options, &mut builder, &mut progress, |_| {});
            finish(data, builder, failed, diagnostics)
        }
    }
}

/// Batches of deferred records in flight to the recorder, at most.
const RECORDER_QUEUE: usize = 4;

/// Queued records past which the simulation hands a batch to the recorder
/// in the middle of a chunk (32 MB of records).
const QUEUE_HANDOVER: usize = 1 << 20;

/// [`load_with_progress`] with the recorder on its own thread; `None` when
/// the recorder failed.
fn load_pipelined(data: &[u8], options: &LoadOptions, progress: &mut impl FnMut(u64)) -> Result<Option<Model>> {
    match read_pipelined(data, options, true, progress)? {
        Some((builder, diagnostics)) => finish(data, builder, None, diagnostics).map(Some),
        None => Ok(None),
    }
}

/// [`load_pipelined`] up to the model: the builder after the last record
/// (its recorder back in it) and the parser's warnings (lines not yet
/// filled in); `None` when the recorder failed. With `freeze`, the
/// recorder's tables are finished on its thread (the log ends here);
/// without, more records can follow (a [`GrowingLog`]).
pub(crate) fn read_pipelined<'a>(
    data: &'a [u8],
    options: &LoadOptions,
    freeze: bool,
    progress: &mut impl FnMut(u64),
) -> Result<Option<(Builder<'a>, crate::format::Diagnostics)>> {
    let mut builder = Builder::new(data);
    let Some(mut recorder) = builder.take_recorder() else {
        let (failed, diagnostics) = simulate(data, options, &mut builder, progress, |_| {});
        return match failed {
            Some(e) => Err(e),
            None => Ok(Some((builder, diagnostics))),
        };
    };
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<deferred::Deferred>>(RECORDER_QUEUE);
    let (back_tx, back_rx) = std::sync::mpsc::channel::<Vec<deferred::Deferred>>();
    std::thread::scope(|s| {
        let worker = s.spawn(move || {
            for mut batch in rx {
                recorder.apply_all(&batch);
                batch.clear();
                let _ = back_tx.send(batch);
            }
            if freeze {
                recorder.finish();
            }
            recorder
        });
        let (failed, diagnostics) = simulate(data, options, &mut builder, progress, |b| {
            let batch = b.swap_queue(back_rx.try_recv().unwrap_or_default());
            if !batch.is_empty() {
                // A closed channel means the recorder panicked: `join`
                // below passes that on.
                let _ = tx.send(batch);
            }
        });
        let _ = tx.send(builder.swap_queue(Vec::new()));
        drop(tx);
        let recorder = match worker.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        if recorder.failed.is_some() {
            return Ok(None);
        }
        builder.put_recorder(recorder);
        match failed {
            Some(e) => Err(e),
            None => Ok(Some((builder, diagnostics))),
        }
    })
}

/// Parses `data` on the pool and feeds it to `builder`, calling
/// `after_chunk` after each chunk; returns the first error and the parser's
/// warnings.
fn simulate<'a>(
    data: &'a [u8],
    options: &LoadOptions,
    builder: &mut Builder<'a>,
    progress: &mut impl FnMut(u64),
    mut after_chunk: impl FnMut(&mut Builder<'a>),
) -> (Option<Error>, crate::format::Diagnostics) {
    let mut failed: Option<Error> = None;
    // Chunk buffers are handed back to the parsing threads for reuse.
    let pool = std::sync::Mutex::new(Vec::<ops::Chunk<'_>>::new());
    let diagnostics = crate::format::parse_chunks(
        data,
        &options.chunks,
        |r| {
            let mut c = pool.lock().ok().and_then(|mut p| p.pop()).unwrap_or_default();
            c.fill(r);
            c
        },
        |chunk: ops::Chunk<'_>, done| {
            if failed.is_none() {
                const AHEAD: usize = 8;
                for (k, op) in chunk.ops.iter().enumerate() {
                    if let Some(next) = chunk.ops.get(k + AHEAD) {
                        builder.prefetch(next);
                    }
                    if let Err((problem, kind)) = builder.push_op(op, &chunk.rare) {
                        // The calls of a run come at its end: one of them
                        // may have failed earlier in the log (see `ops`).
                        let (offset, problem, kind) = chunk.first_failure(data, k, problem, kind, |id| builder.check_call(id));
                        failed = Some(builder.error_at(offset, Some(kind), problem));
                        break;
                    }
                    // A record can queue many changes (a `u` moving a
                    // whole heap): hand them over before the chunk ends.
                    if builder.queued() >= QUEUE_HANDOVER {
                        after_chunk(builder);
                    }
                }
                after_chunk(builder);
            }
            if let Ok(mut p) = pool.lock() {
                p.push(chunk);
            }
            progress(done as u64);
        },
    );
    (failed, diagnostics)
}

/// The model, or the first error.
fn finish(data: &[u8], builder: Builder<'_>, failed: Option<Error>, mut diagnostics: crate::format::Diagnostics) -> Result<Model> {
    if let Some(e) = failed {
        return Err(e);
    }
    let mut model = builder.finish()?;
    diagnostics.resolve_lines(data);
    model.diagnostics = diagnostics;
    Ok(model)
}
