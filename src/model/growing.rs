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
//!
//! The log itself is not kept: only its bytes from the last record read
//! on (the builder looks back at that record to tell whether a heap-dump
//! root line continues a dump), with the count of line ends before them,
//! so that errors and warnings still name their lines.

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
    /// The log's bytes from `base` on (the last record read and what
    /// follows it).
    window: Vec<u8>,
    /// Where `window` starts in the log.
    base: u64,
    /// Line ends in the log before `base`.
    base_line: u64,
    /// Bytes given so far.
    given: u64,
    /// Bytes read into the model (an offset in the log).
    parsed: u64,
    /// The builder, reading nothing between calls (`None` only while it
    /// reads, or after a panic in the middle of a read).
    builder: Option<Builder<'static>>,
    /// The parser's state after the records parsed.
    reader: DumpState,
    /// The parser's warnings so far (offsets and lines in the log).
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
    /// A log that has `data` so far, read as [`super::load`] reads a log
    /// (parsed on every core while the calling thread simulates), but for
    /// its last line, read as [`GrowingLog::extend`] reads, so that it can
    /// go on growing. `progress` gets the bytes read so far. Where a
    /// record before the last line reaches that line's end (a name over
    /// two lines, in a damaged log), or the log has an error, it is read
    /// again as [`GrowingLog::extend`] reads it.
    pub fn load(data: &[u8], options: &super::LoadOptions, mut progress: impl FnMut(u64)) -> Self {
        // The start of the last whole line.
        let head = match memchr::memrchr(b'\n', data) {
            Some(last) => memchr::memrchr(b'\n', &data[..last]).map_or(0, |k| k + 1),
            None => 0,
        };
        if head > 0 {
            // An error, a record that reaches the end of the part read, or
            // the sample table's limit: read below, one record at a time.
            if let Ok(Some((builder, mut diagnostics))) = super::read_pipelined(&data[..head], options, false, &mut progress) {
                if !diagnostics.reached_end_of_data() {
                    diagnostics.resolve_lines(&data[..head]);
                    let keep = builder.looks_back_to().map_or(head, |k| (k as usize).min(head));
                    let mut g = GrowingLog {
                        window: data[keep..].to_vec(),
                        base: keep as u64,
                        base_line: memchr::memchr_iter(b'\n', &data[..keep]).count() as u64,
                        given: data.len() as u64,
                        parsed: head as u64,
                        reader: builder.dump_state(),
                        builder: Some(builder.rebind(&[], 0, 0)),
                        diagnostics,
                        failed: None,
                    };
                    // The last line, as a growing log reads it.
                    let _ = g.extend(&[]);
                    progress(data.len() as u64);
                    return g;
                }
            }
        }
        let mut g = GrowingLog::new();
        let _ = g.extend(data);
        progress(data.len() as u64);
        g
    }

    /// An empty log.
    pub fn new() -> Self {
        GrowingLog {
            window: Vec::new(),
            base: 0,
            base_line: 0,
            given: 0,
            parsed: 0,
            builder: Some(Builder::new(&[])),
            reader: DumpState::default(),
            diagnostics: Diagnostics::new(DEFAULT_KEPT_WARNINGS),
            failed: None,
        }
    }

    /// Bytes given so far.
    pub fn len(&self) -> u64 {
        self.given
    }

    /// True when nothing was given yet.
    pub fn is_empty(&self) -> bool {
        self.given == 0
    }

    /// Bytes read into the model: up to the last line end given (a line
    /// still being written waits for its end), or to the start of a record
    /// that reaches that line end and may go on (a type name that crosses
    /// a line, in a damaged log).
    pub fn parsed_bytes(&self) -> u64 {
        self.parsed
    }

    /// Bytes of the log held (from the last record read on).
    pub fn held_bytes(&self) -> usize {
        self.window.len()
    }

    /// The first error met, if any (then [`GrowingLog::model`] gives it
    /// too, and nothing more is read).
    pub fn error(&self) -> Option<&Error> {
        self.failed.as_ref()
    }

    fn interrupted(&self) -> Error {
        Error { line: 0, offset: self.parsed, kind: None, problem: super::Problem::Interrupted }
    }

    /// Appends `bytes` (the next part of the log) and reads every record
    /// they complete. After an error nothing more is read, and the error
    /// is given again.
    pub fn extend(&mut self, bytes: &[u8]) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.window.extend_from_slice(bytes);
        self.given += bytes.len() as u64;
        let from = (self.parsed - self.base) as usize;
        let Some(last) = memchr::memrchr(b'\n', &self.window[from..]) else { return Ok(()) };
        let end = from + last + 1;
        let builder = self.builder.take().ok_or_else(|| self.interrupted())?;
        let (base, base_line) = (self.base, self.base_line);
        let data = &self.window[..end];
        let mut builder = builder.rebind(data, base, base_line);
        let mut reader = RecordReader::range_with_state(data, from, end, self.reader).growing();
        let mut failed = None;
        while let Some(mut p) = reader.next_record() {
            p.offset += base;
            if let Err(e) = builder.push(&p) {
                failed = Some(e);
                break;
            }
        }
        self.reader = reader.state();
        self.parsed = base + reader.offset() as u64;
        let mut found = reader.take_diagnostics();
        found.place(data, base, base_line);
        self.diagnostics.merge(found);
        let looks_back = builder.looks_back_to();
        self.builder = Some(builder.rebind(&[], 0, 0));
        if let Some(e) = failed {
            // The log is read no further: what was given to the reader
            // counts as read (any longer part of the log gives the same
            // error, even where the record that failed had text after it
            // on its line).
            self.parsed = base + end as u64;
            self.failed = Some(e.clone());
            self.window = Vec::new();
            self.builder = None;
            return Err(e);
        }
        self.keep_from(looks_back);
        Ok(())
    }

    /// Drops the bytes held before `parsed`, but from `looks_back` on (the
    /// last record read, when the builder may read it again).
    fn keep_from(&mut self, looks_back: Option<u64>) {
        let keep = looks_back.map_or(self.parsed, |k| k.min(self.parsed)).max(self.base);
        let cut = (keep - self.base) as usize;
        self.base_line += memchr::memchr_iter(b'\n', &self.window[..cut]).count() as u64;
        self.window.drain(..cut);
        self.base = keep;
    }

    /// The model of the records read so far: what [`super::load`] gives
    /// for the first [`GrowingLog::parsed_bytes`] bytes. The state goes on;
    /// this finishes a copy of it.
    pub fn model(&self) -> Result<Model> {
        self.finish_copy(self.parsed)
    }

    /// The model of every byte given, as if the log ended there (a
    /// session that has ended): what [`super::load`] gives for all
    /// [`GrowingLog::len`] bytes, the last line read even without its
    /// line end.
    pub fn model_at_end(&self) -> Result<Model> {
        self.finish_copy(self.given)
    }

    /// Finishes a copy of the state after reading the log from
    /// `parsed` to `end` as its end.
    fn finish_copy(&self, end: u64) -> Result<Model> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let builder = self.builder.as_ref().ok_or_else(|| self.interrupted())?;
        let data = &self.window[..(end - self.base) as usize];
        if end == self.parsed {
            // Nothing more to read: the tables are copied, the heap is
            // read where it is.
            let mut model = builder.snapshot(data, self.base, self.base_line)?;
            model.diagnostics = self.diagnostics.clone();
            return Ok(model);
        }
        let mut builder = builder.clone().rebind(data, self.base, self.base_line);
        let mut diagnostics = self.diagnostics.clone();
        if end > self.parsed {
            let from = (self.parsed - self.base) as usize;
            let mut reader = RecordReader::range_with_state(data, from, data.len(), self.reader);
            while let Some(mut p) = reader.next_record() {
                p.offset += self.base;
                builder.push(&p)?;
            }
            let mut found = reader.take_diagnostics();
            found.place(data, self.base, self.base_line);
            diagnostics.merge(found);
        }
        let mut model = builder.finish()?;
        model.diagnostics = diagnostics;
        Ok(model)
    }
}
