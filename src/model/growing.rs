//! [`GrowingLog`]: the model of a log that is still being written (a
//! collector's live session), kept up to date by reading only what was
//! added.
//!
//! [`super::load`] reads a log from its first byte. A log that grows would
//! have to be read again, whole, for every new view of it. A `GrowingLog`
//! instead keeps the builder's state between reads: each [`GrowingLog::extend`]
//! parses and simulates only the new whole lines, and [`GrowingLog::model`]
//! finishes a copy of that state, so that the builder can go on.
//!
//! The model given after any number of extends is the model
//! [`super::load`] gives for the same bytes (up to the last line end):
//! the same records in the same order reach the same builder, the parser's
//! state between heap-dump lines is carried over, and its warnings are
//! kept in order (a test compares the two at every line of every reference
//! log).

use super::builder::Builder;
use super::error::{Error, Result};
use super::Model;
use crate::format::{Diagnostics, DumpState, RecordReader, DEFAULT_KEPT_WARNINGS};

/// A log read as it grows (see the module documentation).
///
/// ```
/// use clrprof::model::{load, GrowingLog, LoadOptions};
/// let log: &[u8] = b"t 1 0 System.String\nn 1 1 1 24\n! 7 0x1000 1\n! 7 0x1018 1\n";
/// let mut g = GrowingLog::new();
/// g.extend(&log[..35]).unwrap(); // two whole lines and part of a third
/// assert_eq!(g.parsed_bytes(), 31);
/// assert_eq!(g.model().unwrap().allocations().len(), 0);
/// g.extend(&log[35..]).unwrap();
/// let m = g.model().unwrap();
/// assert_eq!(m.allocations().len(), 2);
/// assert_eq!(m.records(), load(log, &LoadOptions::default()).unwrap().records());
/// ```
#[derive(Clone)]
pub struct GrowingLog {
    /// Every byte given so far (the builder reads back into it: line
    /// numbers, heap-dump continuation, module lines).
    data: Vec<u8>,
    /// The bytes parsed: up to the last line end given.
    parsed: usize,
    /// The builder, reading nothing between calls (`None` only while it
    /// reads, or after a panic in the middle of a read).
    builder: Option<Builder<'static>>,
    /// The parser's state after the records parsed.
    reader: DumpState,
    /// The parser's warnings so far (offsets in the log; lines are filled
    /// in by [`GrowingLog::model`]).
    diagnostics: Diagnostics,
    /// The first error: the log is read no further (as [`super::load`]
    /// stops there).
    failed: Option<Error>,
}

impl Default for GrowingLog {
    fn default() -> Self {
        GrowingLog::new()
    }
}

impl GrowingLog {
    /// An empty log.
    pub fn new() -> Self {
        GrowingLog {
            data: Vec::new(),
            parsed: 0,
            builder: Some(Builder::new(&[])),
            reader: DumpState::default(),
            diagnostics: Diagnostics::new(DEFAULT_KEPT_WARNINGS),
            failed: None,
        }
    }

    /// Bytes given so far.
    pub fn len(&self) -> u64 {
        self.data.len() as u64
    }

    /// True when nothing was given yet.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Bytes read into the model: up to the last line end given (a line
    /// still being written waits for its end), or to the start of a record
    /// that reaches that line end and may go on (a type name that crosses
    /// a line, in a damaged log).
    pub fn parsed_bytes(&self) -> u64 {
        self.parsed as u64
    }

    /// The first error met, if any (then [`GrowingLog::model`] gives it
    /// too, and nothing more is read).
    pub fn error(&self) -> Option<&Error> {
        self.failed.as_ref()
    }

    /// The bytes given so far.
    pub fn bytes(&self) -> &[u8] {
        &self.data
    }

    /// Appends `bytes` (the next part of the log) and reads every line
    /// they complete. After an error nothing more is kept and the error
    /// is given again.
    pub fn extend(&mut self, bytes: &[u8]) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.data.extend_from_slice(bytes);
        let Some(last) = memchr::memrchr(b'\n', &self.data[self.parsed..]) else { return Ok(()) };
        let end = self.parsed + last + 1;
        let data = &self.data[..end];
        let Some(builder) = self.builder.take() else {
            return Err(Error { line: 0, offset: self.parsed as u64, kind: None, problem: super::Problem::Interrupted });
        };
        let mut builder = builder.rebind(data);
        let mut reader = RecordReader::range_with_state(data, self.parsed, end, self.reader).growing();
        let mut failed = None;
        while let Some(p) = reader.next_record() {
            if let Err(e) = builder.push(&p) {
                failed = Some(e);
                break;
            }
        }
        self.reader = reader.state();
        self.diagnostics.merge(reader.take_diagnostics());
        self.builder = Some(builder.rebind(&[]));
        self.parsed = reader.offset();
        match failed {
            Some(e) => {
                self.failed = Some(e.clone());
                self.data = Vec::new();
                self.builder = None;
                Err(e)
            }
            None => Ok(()),
        }
    }

    /// The model of the records read so far: what [`super::load`] gives
    /// for the first [`GrowingLog::parsed_bytes`] bytes. The state goes on;
    /// this finishes a copy of it.
    pub fn model(&self) -> Result<Model> {
        self.finish_copy(self.parsed)
    }

    /// The model of every byte given, as if the log ended there (a
    /// session that has ended): what [`super::load`] gives for
    /// [`GrowingLog::bytes`], the last line read even without its line end.
    pub fn model_at_end(&self) -> Result<Model> {
        self.finish_copy(self.data.len())
    }

    /// Finishes a copy of the state after reading the rest of the first
    /// `end` bytes as the end of the log.
    fn finish_copy(&self, end: usize) -> Result<Model> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let Some(builder) = &self.builder else {
            return Err(Error { line: 0, offset: self.parsed as u64, kind: None, problem: super::Problem::Interrupted });
        };
        let data = &self.data[..end];
        let mut builder = builder.clone().rebind(data);
        let mut diagnostics = self.diagnostics.clone();
        if end > self.parsed {
            let mut reader = RecordReader::range_with_state(data, self.parsed, end, self.reader);
            while let Some(p) = reader.next_record() {
                builder.push(&p)?;
            }
            diagnostics.merge(reader.take_diagnostics());
        }
        let mut model = builder.finish()?;
        diagnostics.resolve_lines(data);
        model.diagnostics = diagnostics;
        Ok(model)
    }
}
