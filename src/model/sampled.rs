//! Models of traces and snapshots: their records ([`crate::import`],
//! [`crate::gcdump`]) given straight to the model's builder (a
//! [`RecordFeed`]), then the allocated histogram weighted by what each
//! sampled allocation stands for.

use super::{load_with_progress, Error, LoadOptions, Model, ObjectId, RecordFeed, StackCounts};
use crate::import::nettrace::Pass;
use crate::import::{Import, Imported, Sampling};

/// Loads a NetTrace (EventPipe) trace: its events become CLRProfiler
/// records ([`crate::import::nettrace::import`]) that go straight into the
/// model's builder (no log text is made); the model then carries the
/// trace's [`Sampling`] and facts, and its allocated histogram counts the
/// objects the samples stand for.
///
/// `progress` is called with a figure that grows from 0 to the trace's
/// length over the import's two passes (half of it each).
pub fn load_trace(bytes: &[u8], options: &LoadOptions, mut progress: impl FnMut(u64)) -> Result<Model, TraceError> {
    let len = bytes.len() as u64;
    load_trace_at(bytes, options, &mut |pass, at| progress(halves(len, pass, at)))
}

/// The progress figure of a position `at` in a pass over a trace of
/// `len` bytes: the first pass the first half, the second the second.
pub(crate) fn halves(len: u64, pass: Pass, at: u64) -> u64 {
    match pass {
        Pass::Methods => at / 2,
        Pass::Records => len / 2 + at.div_ceil(2).min(len - len / 2),
    }
}

/// [`load_trace`], calling `position` with each pass's place in `bytes`.
pub(crate) fn load_trace_at(bytes: &[u8], _options: &LoadOptions, position: &mut dyn FnMut(Pass, u64)) -> Result<Model, TraceError> {
    let mut feed = RecordFeed::new(bytes.len() as u64);
    feed.fates_to_come();
    let import = crate::import::nettrace::import(bytes, &mut feed, position).map_err(TraceError::Read)?;
    let model = feed.finish().map_err(TraceError::Model)?;
    Ok(with_import(model, import))
}

/// Loads a file another tool wrote, recognised by its first bytes: a
/// NetTrace trace ([`load_trace`]) or a `.gcdump` heap snapshot
/// ([`load_gcdump`]); `None` for anything else (a log).
pub fn load_foreign(bytes: &[u8], options: &LoadOptions, progress: impl FnMut(u64)) -> Option<Result<Model, TraceError>> {
    if crate::eventpipe::is_nettrace(bytes) {
        Some(load_trace(bytes, options, progress))
    } else if crate::gcdump::is_gcdump(bytes) {
        Some(load_gcdump(bytes, options, progress))
    } else {
        None
    }
}

/// Loads a `.gcdump` heap snapshot (`dotnet-gcdump`, PerfView) as one heap
/// dump: its records ([`crate::gcdump::write_records`]) go straight into
/// the model's builder. `progress` is called once, at the end, with the
/// file's length.
pub fn load_gcdump(bytes: &[u8], _options: &LoadOptions, mut progress: impl FnMut(u64)) -> Result<Model, TraceError> {
    let graph = crate::gcdump::read(bytes).map_err(TraceError::GcDump)?;
    let mut feed = RecordFeed::new(bytes.len() as u64);
    crate::gcdump::write_records(&graph, &mut feed);
    let info = graph.info();
    let mut warnings = Vec::new();
    let sampling = graph.sampling();
    if sampling.is_sampled() {
        warnings.push(format!(
            "the snapshot holds a sample of the heap (the tool kept about 1 object in {:.1}); the dump shows the objects kept, not the whole heap",
            sampling.average_count_multiplier
        ));
    }
    let facts = crate::import::TraceFacts {
        format: format!("gcdump (GCHeapDump version {})", info.version),
        process_id: u32::try_from(info.process_id).ok().filter(|&p| p > 0),
        heap_snapshots: 1,
        warnings,
        ..Default::default()
    };
    drop(graph);
    let model = feed.finish().map_err(TraceError::Model)?;
    progress(bytes.len() as u64);
    Ok(with_import(model, Import { sampling: None, facts }))
}

/// Why a trace could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The trace's start could not be read.
    #[error(transparent)]
    Read(crate::eventpipe::Error),
    /// The `.gcdump` could not be read.
    #[error(transparent)]
    GcDump(crate::gcdump::Error),
    /// The records made from it did not load (a bug in the import: the
    /// error names the made log's record).
    #[error("the records made from the file did not load: {0}")]
    Model(Error),
}

/// The model of a file imported as log text ([`crate::import::nettrace::to_log`]):
/// the text loaded as a log, with the import's sampling and facts. The
/// same model as [`load_trace`] gives, but for the text's size and
/// offsets ([`Model::file_bytes`], the time table's record offsets); the
/// way traces were loaded before they went straight into the builder,
/// kept to compare the two.
pub fn load_imported(imported: Imported, options: &LoadOptions, progress: impl FnMut(u64)) -> Result<Model, Error> {
    let Imported { log, sampling, facts } = imported;
    let model = load_with_progress(&log, options, progress)?;
    Ok(with_import(model, Import { sampling, facts }))
}

/// A model of imported records with the import's sampling (the
/// histograms weighted) and facts.
fn with_import(mut model: Model, import: Import) -> Model {
    let Import { mut sampling, mut facts } = import;
    if let Some(s) = sampling.as_mut() {
        let fates = std::mem::take(&mut s.fates);
        follow(&mut model, &fates, &mut facts);
        weigh(&mut model, s);
    }
    // When the importer's fates did not replace the simulation's.
    model.allocations.settle_fates();
    model.sampling = sampling;
    model.imported = Some(facts);
    model
}

/// Takes the importer's fates of the sampled objects (followed by the
/// trace's moved and surviving ranges) over the heap simulation's, and
/// the heap at the end with them. The simulation (CLRProfiler's rules,
/// made for logs of every object) still gives the address history.
fn follow(model: &mut Model, fates: &[crate::import::SampledFate], facts: &mut crate::import::TraceFacts) {
    let n = model.allocations.len();
    if fates.len() != n || model.gcs.len() as u64 != facts.gcs {
        let whose = if model.allocations.settle_fates() {
            "survival is the heap simulation's"
        } else {
            "survival is not known (each object is counted dead at the first GC after it)"
        };
        if !fates.is_empty() {
            facts.warnings.push(format!(
                "the sampled objects' fates ({} objects, {} GCs) do not match the model ({n} objects, {} GCs): {whose}",
                fates.len(),
                facts.gcs,
                model.gcs.len()
            ));
        }
        return;
    }
    model.allocations.set_imported_fates(fates);
    let mut final_heap = StackCounts::default();
    model.allocations.for_each_in(ObjectId(0)..ObjectId(n as u32), |row, fate| {
        if fate == super::Fate::Alive {
            final_heap.add(row.stack);
        }
    });
    model.histograms.final_heap = final_heap;
}

/// Weighs the histograms of sampled objects: the allocated one counts
/// each sample as the objects it stands for (rounded per stack row, at
/// least 1 for a row that was sampled); the relocated, final-heap and
/// finalized ones count each sampled object as its row's average weight
/// (what the row's samples stand for, per sample): a sample that moved,
/// survived or was finalized stands for that many objects that did.
fn weigh(model: &mut Model, s: &Sampling) {
    let rows = model.stacks.len();
    let n = model.allocations.len();
    let weights = super::row_weights::RowWeights::new(
        rows,
        s.weights.iter().enumerate().take(n).map(|(k, &w)| (model.allocations.stack(ObjectId(k as u32)).index(), f64::from(w))),
    );
    let scaled = |h: &StackCounts| StackCounts::from_vec((0..rows).map(|r| weights.estimate(r, h.get(super::StackRef(r as u32)))).collect());
    let allocated = StackCounts::from_vec((0..rows).map(|r| weights.whole(r)).collect());
    let h = &model.histograms;
    let relocated = scaled(&h.relocated);
    let final_heap = scaled(&h.final_heap);
    let finalized = scaled(&h.finalized);
    let critical = scaled(&h.critical_finalized);
    model.row_weights = weights;
    let h = &mut model.histograms;
    h.allocated = allocated;
    h.relocated = relocated;
    h.final_heap = final_heap;
    h.finalized = finalized;
    h.critical_finalized = critical;
    h.shrink();
}

impl Model {
    /// The objects an allocated object stands for: 1 in a log of every
    /// allocation; for a sampled trace, what the sample stands for.
    pub fn object_weight(&self, obj: ObjectId) -> f64 {
        self.sampling.as_ref().and_then(|s| s.weights.get(obj.0 as usize)).map_or(1.0, |&w| f64::from(w))
    }

    /// The sampled objects an estimated count of a stack row rests on:
    /// the inverse of [`Model::estimate_count`] (the row's weight is at
    /// least 1, so the rounding is undone exactly); the count itself for a
    /// log of every allocation.
    pub fn samples_behind(&self, row: super::StackRef, estimated: u64) -> u64 {
        self.row_weights.samples_behind(row.index(), estimated)
    }

    /// [`Model::estimate_rows`] for one row's count.
    pub fn estimate_count(&self, row: super::StackRef, count: u64) -> u64 {
        self.row_weights.estimate(row.index(), count)
    }

    /// The objects one sample of a stack row stands for on average (1 in
    /// a log of every allocation).
    pub fn row_weight(&self, row: super::StackRef) -> f64 {
        self.row_weights.per_sample(row.index())
    }

    /// Counts of sampled objects per stack row (a filtered view's) turned
    /// into the objects they stand for: each row's count as its share of
    /// what the row's samples stand for, rounded (at least 1 where there
    /// was a sample); all of a row's samples give the row's allocated
    /// objects exactly as `types` counts them. For a log of every
    /// allocation, the counts as they are.
    pub fn estimate_rows(&self, counts: &mut [u64]) {
        if self.row_weights.is_empty() {
            return;
        }
        for (r, c) in counts.iter_mut().enumerate() {
            *c = self.row_weights.estimate(r, *c);
        }
    }
}
