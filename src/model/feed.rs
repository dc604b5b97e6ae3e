//! [`RecordFeed`]: the model's builder as a [`RecordSink`], for records
//! made without log text (a trace's events, a snapshot's graph, an
//! embedder's own events).

use super::builder::Builder;
use super::{Error, Model};
use crate::format::{Diagnostics, Parsed, Record, RecordSink, DEFAULT_KEPT_WARNINGS};

/// A [`Builder`] fed records one at a time, in log order, as a
/// [`RecordSink`]: the way a trace or a heap snapshot goes into the model
/// ([`crate::import::nettrace::import`], [`crate::gcdump::write_records`]),
/// and the way an embedder feeds records of its own.
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
}

impl RecordFeed {
    /// A feed for an input of `input_bytes` bytes: the size the memory
    /// rule allows for ([`crate::limits`]), and the model's
    /// [`Model::file_bytes`].
    pub fn new(input_bytes: u64) -> Self {
        RecordFeed { builder: Builder::for_records(input_bytes), next: 0, failed: None }
    }

    /// Whether a record could not be applied (the feed takes no more).
    pub fn failed(&self) -> bool {
        self.failed.is_some()
    }

    /// The model of the records given, or the first error.
    pub fn finish(self) -> Result<Model, Error> {
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
    }
}
