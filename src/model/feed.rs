//! [`RecordFeed`]: the model's builder as a [`RecordSink`], for records
//! made without log text (a trace's events, a snapshot's graph, an
//! embedder's own events).

use super::builder::Builder;
use super::deferred::{Deferred, Recorder};
use super::{Error, Model};
use crate::format::records::Alloc;
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
    /// Allocations not applied yet, with their record numbers: applied
    /// in order, before any other record, a few at a time, each one's
    /// stack fetched [`AHEAD`] allocations before (as a log's loader does).
    allocs: Vec<(u64, Alloc)>,
}

/// Allocations held before they are applied.
const ALLOCS: usize = 64;

/// How many allocations ahead a stack is fetched.
const AHEAD: usize = 8;

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
        RecordFeed { builder, next: 0, failed: None, recorder, allocs: Vec::with_capacity(ALLOCS) }
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

    /// Applies the allocations held.
    fn apply_allocs(&mut self) {
        let allocs = std::mem::take(&mut self.allocs);
        for (k, &(number, a)) in allocs.iter().enumerate() {
            if let Some((_, ahead)) = allocs.get(k + AHEAD) {
                self.builder.prefetch_stack(ahead.stack);
            }
            self.apply(&Parsed { record: Record::Alloc(a), offset: number, at_end_of_file: false });
            if self.failed.is_some() {
                break;
            }
        }
        self.allocs = allocs;
        self.allocs.clear();
    }

    fn apply(&mut self, p: &Parsed<'_>) {
        if let Err(e) = self.builder.push(p) {
            self.failed = Some(e);
        }
        if self.builder.queued() >= BATCH {
            self.hand_over();
        }
    }

    /// Whether a record could not be applied (the feed takes no more;
    /// allocations are applied a few at a time: one that failed shows
    /// when the next record that is not an allocation comes, or at
    /// [`RecordFeed::finish`]).
    pub fn failed(&self) -> bool {
        self.failed.is_some()
    }

    /// The model of the records given, or the first error.
    pub fn finish(mut self) -> Result<Model, Error> {
        if self.failed.is_none() {
            self.apply_allocs();
        }
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
        let number = self.next;
        self.next += 1;
        if let Record::Alloc(a) = record {
            self.allocs.push((number, *a));
            if self.allocs.len() >= ALLOCS {
                self.apply_allocs();
            }
            return;
        }
        if !self.allocs.is_empty() {
            self.apply_allocs();
            if self.failed.is_some() {
                return;
            }
        }
        self.apply(&Parsed { record: *record, offset: number, at_end_of_file: false });
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::records::{StackDef, TypeDef};
    use crate::format::{Address, List, StackId, ThreadId, TypeId};

    fn alloc(feed: &mut RecordFeed, address: u64, stack: i32) {
        feed.record(&Record::Alloc(Alloc { thread: Some(ThreadId(1)), address: Address(address), stack: StackId(stack) }));
    }

    fn stack(feed: &mut RecordFeed, id: i32) {
        feed.record(&Record::Stack(StackDef {
            id: StackId(id),
            flag: 1,
            alloc: Some((TypeId(1), 24)),
            reference: None,
            frames: List::Items(&[]),
        }));
    }

    /// Allocations held back are applied before the next other record,
    /// in order, and an error names the allocation's own number.
    #[test]
    fn held_allocations_keep_their_order_and_numbers() {
        for before in [0u64, 3, ALLOCS as u64 - 1, ALLOCS as u64, 5 * ALLOCS as u64 + 7] {
            let mut feed = RecordFeed::new(0);
            feed.record(&Record::Type(TypeDef { id: TypeId(1), finalizable: Some(false), name: b"T" }));
            stack(&mut feed, 1);
            for k in 0..before {
                alloc(&mut feed, 0x1000 + 32 * k, 1);
            }
            // Stack 2 is defined after its first use: that use is an error.
            alloc(&mut feed, 0x10_0000, 2);
            stack(&mut feed, 2);
            alloc(&mut feed, 0x20_0000, 2);
            let e = feed.finish().expect_err("an allocation on an undefined stack");
            assert_eq!((e.offset, e.kind), (2 + before, Some('!')), "after {before} allocations");
        }
        // Every allocation applied, the last ones at the end.
        let mut feed = RecordFeed::new(0);
        feed.record(&Record::Type(TypeDef { id: TypeId(1), finalizable: Some(false), name: b"T" }));
        stack(&mut feed, 1);
        for k in 0..(3 * ALLOCS as u64 + 5) {
            alloc(&mut feed, 0x1000 + 32 * k, 1);
        }
        assert_eq!(feed.finish().expect("a model").allocations().len(), 3 * ALLOCS + 5);
    }
}
