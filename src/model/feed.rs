//! [`RecordFeed`]: the model's builder as a [`RecordSink`], for records
//! made without log text (a trace's events, a snapshot's graph, an
//! embedder's own events).

use super::builder::Builder;
use super::deferred::{Deferred, Recorder};
use super::{Error, Model};
use crate::format::{Diagnostics, Parsed, Record, RecordSink, DEFAULT_KEPT_WARNINGS};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// A [`Builder`] fed records one at a time, in log order, as a
/// [`RecordSink`]: the way a trace or a heap snapshot goes into the model
/// ([`crate::import::nettrace::import`], [`crate::gcdump::write_records`]),
/// and the way an embedder feeds records of its own.
///
/// As in a log's load, the allocation columns and the sample table are
/// built on a thread of their own from what the simulation hands over
/// (in batches; at most a few in flight).
///
/// Each record's offset is its number (0, 1, ...); an error names the
/// record by its number as its line (the line it would have in the same
/// records as log text). After the first error the feed takes no more
/// records, and [`RecordFeed::finish`] returns that error.
///
/// ```
/// use clrprof::format::records::{Alloc, StackDef, TypeDef};
/// use clrprof::format::{Address, List, Record, RecordSink, StackId, ThreadId, TypeId};
/// let mut feed = clrprof::model::RecordFeed::new(0);
/// feed.record(&Record::Type(TypeDef { id: TypeId(1), finalizable: Some(false), name: b"System.String" }));
/// let stack = StackDef { id: StackId(1), flag: 1, alloc: Some((TypeId(1), 24)), reference: None, frames: List::Items(&[]) };
/// feed.record(&Record::Stack(stack));
/// feed.record(&Record::Alloc(Alloc { thread: Some(ThreadId(7)), address: Address(0x1000), stack: StackId(1) }));
/// let model = feed.finish().unwrap();
/// assert_eq!(model.allocations().len(), 1);
/// ```
pub struct RecordFeed {
    builder: Builder<'static>,
    next: u64,
    failed: Option<Error>,
    recorder: Option<RecorderThread>,
}

/// The recorder's thread and the batches to and from it.
struct RecorderThread {
    to: SyncSender<Vec<Deferred>>,
    back: Receiver<Vec<Deferred>>,
    thread: JoinHandle<Box<Recorder>>,
}

/// Records queued before a batch goes to the recorder.
const BATCH: usize = 1 << 16;

/// Batches in flight to the recorder, at most.
const IN_FLIGHT: usize = 4;

impl RecordFeed {
    /// A feed for an input of `input_bytes` bytes: the size the memory
    /// rule allows for ([`crate::limits`]), and the model's
    /// [`Model::file_bytes`].
    pub fn new(input_bytes: u64) -> Self {
        let mut builder = Builder::for_records(input_bytes);
        let recorder = builder.take_recorder().and_then(|r| match spawn(r) {
            Ok(t) => Some(t),
            Err(r) => {
                // No thread: the recorder works inline.
                builder.put_recorder(r);
                None
            }
        });
        RecordFeed { builder, next: 0, failed: None, recorder }
    }

    /// Hands the queued records to the recorder's thread.
    fn hand_over(&mut self) {
        if let Some(t) = &self.recorder {
            let batch = self.builder.swap_queue(t.back.try_recv().unwrap_or_default());
            // A closed channel means the recorder panicked: `finish`
            // passes that on.
            let _ = t.to.send(batch);
        }
    }

    /// The fates of the objects are to come from a trace's importer
    /// (the simulation's are not sorted, see
    /// [`super::AllocationTable::fates_to_come`]).
    pub(crate) fn fates_to_come(&mut self) {
        self.builder.fates_to_come();
    }

    /// Whether a record could not be applied (the feed takes no more).
    pub fn failed(&self) -> bool {
        self.failed.is_some()
    }

    /// The model of the records given, or the first error.
    pub fn finish(mut self) -> Result<Model, Error> {
        if let Some(t) = self.recorder.take() {
            let _ = t.to.send(self.builder.swap_queue(Vec::new()));
            drop(t.to);
            let recorder = match t.thread.join() {
                Ok(r) => r,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            self.builder.put_recorder(recorder);
        }
        match self.failed {
            Some(e) => Err(e),
            None => {
                let mut model = self.builder.finish()?;
                // No text, so nothing for the parser to warn about.
                model.diagnostics = Diagnostics::new(DEFAULT_KEPT_WARNINGS);
                Ok(model)
            }
        }
    }
}

impl RecordSink for RecordFeed {
    #[inline]
    fn record(&mut self, record: &Record<'_>) {
        if self.failed.is_some() {
            return;
        }
        let p = Parsed { record: *record, offset: self.next, at_end_of_file: false };
        self.next += 1;
        if let Err(e) = self.builder.push(&p) {
            self.failed = Some(e);
        }
        if self.builder.queued() >= BATCH {
            self.hand_over();
        }
    }
}

/// The recorder on a thread of its own; the recorder back when no thread
/// can be made.
fn spawn(recorder: Box<Recorder>) -> Result<RecorderThread, Box<Recorder>> {
    let (to, from) = sync_channel::<Vec<Deferred>>(IN_FLIGHT);
    let (back_to, back) = channel::<Vec<Deferred>>();
    // The recorder goes to the thread through a slot, so that it can be
    // given back if the thread cannot start.
    let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(recorder)));
    let theirs = std::sync::Arc::clone(&slot);
    let started = std::thread::Builder::new().name("clrprof-recorder".into()).spawn(move || {
        let mut recorder = theirs.lock().ok().and_then(|mut r| r.take()).unwrap_or_else(|| Box::new(Recorder::new()));
        for mut batch in from {
            recorder.apply_all(&batch);
            batch.clear();
            let _ = back_to.send(batch);
        }
        recorder.finish();
        recorder
    });
    match started {
        Ok(thread) => Ok(RecorderThread { to, back, thread }),
        Err(_) => match slot.lock().ok().and_then(|mut r| r.take()) {
            Some(r) => Err(r),
            None => Err(Box::new(Recorder::new())),
        },
    }
}
