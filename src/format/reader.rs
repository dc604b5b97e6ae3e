//! Stepping through a log record by record, with CLRProfiler's rules.
//!
//! A record starts at the reader's position and ends where its fields end;
//! then blanks, one `\r` and one `\n` are consumed. Anything else left on the
//! line starts the next record (with a warning), exactly as the reference
//! reader behaves.

use super::diagnostics::{Diagnostics, WarningKind, DEFAULT_KEPT_WARNINGS};
use super::fields::Fields;
use super::hot;
use super::record::{Kind, Parsed, Record};
use super::records::*;

/// Receives the records of [`RecordReader::read_frequent`]. A closure
/// `FnMut(Parsed)` is one; a type that implements `visit` with
/// `#[inline(always)]` makes sure the visit is compiled into the reading
/// loop (so that what it does not use is never computed).
pub trait FrequentVisitor<'a> {
    /// One record.
    fn visit(&mut self, record: Parsed<'a>);

    /// One `c` record (`thread`, `stack`) at `offset`: what the reading
    /// loop for runs of call lines hands over without building a record.
    /// By default, a [`Record::Call`] given to [`FrequentVisitor::visit`].
    #[inline(always)]
    fn call(&mut self, thread: i32, stack: i32, offset: u64) {
        let record = Record::Call(Call { thread: super::ids::ThreadId(thread), stack: super::ids::StackId(stack) });
        self.visit(Parsed { record, offset, at_end_of_file: false });
    }
}

impl<'a, F: FnMut(Parsed<'a>)> FrequentVisitor<'a> for F {
    #[inline(always)]
    fn visit(&mut self, record: Parsed<'a>) {
        self(record)
    }
}

/// An iterator over the records of a byte range of a log.
///
/// The reader sees the whole log (`data`), so that a record near the end of
/// its range can read past it and end of file is only where the log ends;
/// it yields the records that *start* in `[start, stop)`.
pub struct RecordReader<'a> {
    data: &'a [u8],
    pos: usize,
    stop: usize,
    diagnostics: Diagnostics,
    state: DumpState,
    initial: DumpState,
    used_initial: bool,
    /// Whether the frequent records try [`hot`] first.
    fast: bool,
    /// Whether the log may still grow (see [`RecordReader::growing`]).
    growing: bool,
}

/// The little state that decides how far the reference reader consumes
/// `r` and `o` lines: after any `e` line, an `r` line is skipped up to the
/// first control byte; before any `e` or `r` line, so is an `o` line. The
/// difference matters only when such a line has text after its numbers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DumpState {
    /// An `e` line was seen.
    pub root_seen: bool,
    /// An `e` or `r` line was seen (a heap dump has started).
    pub dump_started: bool,
}

impl<'a> RecordReader<'a> {
    /// Reads a whole log.
    pub fn new(data: &'a [u8]) -> Self {
        Self::range(data, 0, data.len())
    }

    /// Reads the records that start in `[start, stop)` of `data`.
    pub fn range(data: &'a [u8], start: usize, stop: usize) -> Self {
        Self::range_with_state(data, start, stop, DumpState::default())
    }

    /// Reads the records that start in `[start, stop)`, given the state
    /// left by the records before `start`.
    pub fn range_with_state(data: &'a [u8], start: usize, stop: usize, state: DumpState) -> Self {
        RecordReader {
            data,
            pos: start,
            stop: stop.min(data.len()),
            diagnostics: Diagnostics::new(DEFAULT_KEPT_WARNINGS),
            state,
            initial: state,
            used_initial: false,
            fast: true,
            growing: false,
        }
    }

    /// The same reader without the fast path for the frequent records
    /// (every line read by the general field parser). The records and
    /// warnings are the same either way; tests and the fuzz targets compare
    /// the two.
    pub fn general_only(mut self) -> Self {
        self.fast = false;
        self
    }

    /// The same reader for a log that may still grow: a record that reaches
    /// the end of `data` (a name that goes on past the last line end, a
    /// line with no end) is neither read nor warned about; the reader
    /// stops before it, at [`RecordReader::offset`], with
    /// [`RecordReader::state`] as it was before it, so that the record can
    /// be read once more of the log has come.
    pub fn growing(mut self) -> Self {
        self.growing = true;
        self
    }

    /// Stops before the record at `start` (a growing log's unfinished
    /// record), the dump state as it was before it.
    #[cold]
    fn hold_back(&mut self, start: usize, state: DumpState) {
        self.pos = start;
        self.stop = start;
        self.state = state;
    }

    /// The state after the records read so far.
    pub fn state(&self) -> DumpState {
        self.state
    }

    /// The state this reader started from.
    pub fn initial_state(&self) -> DumpState {
        self.initial
    }

    /// True when a record's extent depended on the initial state (so that a
    /// different initial state could have read the range differently).
    pub fn depended_on_initial_state(&self) -> bool {
        self.used_initial
    }

    /// Where the next record starts.
    pub fn offset(&self) -> usize {
        self.pos
    }

    /// The warnings so far (line numbers not yet resolved).
    pub fn diagnostics(&self) -> &Diagnostics {
        &self.diagnostics
    }

    /// Takes the warnings.
    pub fn take_diagnostics(&mut self) -> Diagnostics {
        std::mem::replace(&mut self.diagnostics, Diagnostics::new(DEFAULT_KEPT_WARNINGS))
    }

    /// Reads the frequent records (`!`, `c`, `i`, `u`, `v`, `o`) that come
    /// next in their canonical form, handing each to `each`, and stops
    /// before the first record that is not one or at the end of the range.
    /// The records are exactly those [`RecordReader::next_record`] would
    /// yield (none of them has a warning), delivered without leaving a
    /// loop compiled for the CPU's vector instructions; a caller alternates
    /// this with `next_record`. Does nothing in a
    /// [`RecordReader::general_only`] reader.
    #[inline]
    pub fn read_frequent<V: FrequentVisitor<'a>>(&mut self, visitor: &mut V) {
        if self.fast {
            self.pos = hot::run(self.data, self.pos, self.stop, visitor);
        }
    }

    /// Consumes blanks and one line end; true when a line end (or the end
    /// of the file) was reached.
    #[inline]
    fn finish_line(&mut self) -> bool {
        let d = self.data;
        let mut p = self.pos;
        while p < d.len() && (d[p] == b' ' || d[p] == b'\t') {
            p += 1;
        }
        let mut ended = p == d.len();
        if p < d.len() && d[p] == b'\r' {
            p += 1;
            ended = true;
        }
        if p < d.len() && d[p] == b'\n' {
            p += 1;
            ended = true;
        }
        self.pos = p;
        ended
    }

    /// The next record, or `None` at the end of the range.
    #[inline]
    pub fn next_record(&mut self) -> Option<Parsed<'a>> {
        loop {
            if self.pos >= self.stop {
                return None;
            }
            let data = self.data;
            let start = self.pos;
            let first = data[start];
            let state_before = self.state;
            let Some(kind) = Kind::from_byte(first) else {
                self.skip_unknown(start, first);
                continue;
            };
            if self.fast && kind.is_frequent() {
                if let Some((record, len)) = hot::record(kind, &data[start + 1..]) {
                    self.pos = start + 1 + len;
                    return Some(Parsed { record, offset: start as u64, at_end_of_file: false });
                }
            }
            let mut f = Fields::new(&data[start + 1..]);
            let record = parse_fields(kind, &mut f);
            match kind {
                Kind::Root => {
                    self.state.root_seen = true;
                    self.state.dump_started = true;
                }
                Kind::Roots | Kind::HeapObject => {
                    let skipped = if kind == Kind::Roots {
                        let from_initial = !self.state.root_seen || self.state == self.initial;
                        let skip = self.state.root_seen;
                        self.state.dump_started = true;
                        (skip, from_initial)
                    } else {
                        (!self.state.dump_started, self.state == self.initial)
                    };
                    let skip_end = skip_to_control(&data[start + 1..]);
                    if skip_end.len() != f.rest.len() {
                        self.used_initial |= skipped.1;
                        if skipped.0 {
                            f.rest = skip_end;
                        }
                    }
                }
                Kind::AssemblyD => {
                    // CLRProfiler's reader does not know `d`: it skips the
                    // line, and never returns when no line end follows.
                    f.issue = None;
                    match memchr::memchr2(b'\n', b'\r', &data[start..]) {
                        Some(k) => f.rest = &data[start + k..],
                        None if self.growing => {
                            self.hold_back(start, state_before);
                            continue;
                        }
                        None => {
                            self.diagnostics.push(start as u64, WarningKind::UnknownRecordAtEnd { byte: first });
                            f.rest = &data[data.len()..];
                        }
                    }
                }
                _ => {}
            }
            let at_end_of_file = f.rest.is_empty() && kind != Kind::AssemblyD;
            if at_end_of_file && self.growing {
                self.hold_back(start, state_before);
                continue;
            }
            let dropped = at_end_of_file && kind.dropped_at_end_of_file();
            if let Some(issue) = f.issue.filter(|_| !dropped) {
                let offset = (data.len() - issue.remaining) as u64;
                self.diagnostics.push(
                    offset,
                    WarningKind::Field { kind, problem: issue.problem, expected: issue.expected },
                );
            }
            self.pos = data.len() - f.rest.len();
            if !self.finish_line() {
                self.diagnostics.push(self.pos as u64, WarningKind::TrailingText { after: kind });
            }
            if at_end_of_file {
                if kind.dropped_at_end_of_file() {
                    self.diagnostics.push(start as u64, WarningKind::TruncatedDropped { kind });
                    continue;
                }
                self.diagnostics.push(start as u64, WarningKind::TruncatedApplied { kind });
            }
            return Some(Parsed { record, offset: start as u64, at_end_of_file });
        }
    }

    #[cold]
    fn skip_unknown(&mut self, start: usize, first: u8) {
        match memchr::memchr2(b'\n', b'\r', &self.data[start..]) {
            Some(k) => {
                // An empty line is skipped without a word.
                if k > 0 {
                    self.diagnostics.push(start as u64, WarningKind::UnknownRecord { byte: first });
                }
                self.pos = start + k;
                self.finish_line();
            }
            None if self.growing => self.hold_back(start, self.state),
            None => {
                self.diagnostics.push(start as u64, WarningKind::UnknownRecordAtEnd { byte: first });
                self.pos = self.data.len();
            }
        }
    }
}

impl<'a> Iterator for RecordReader<'a> {
    type Item = Parsed<'a>;
    #[inline]
    fn next(&mut self) -> Option<Parsed<'a>> {
        self.next_record()
    }
}

/// The input after skipping bytes at or above `' '` (how the reference
/// reader passes over a line it does not read).
fn skip_to_control(i: &[u8]) -> &[u8] {
    let k = i.iter().position(|&b| b < b' ').unwrap_or(i.len());
    &i[k..]
}

#[inline]
fn parse_fields<'a>(kind: Kind, f: &mut Fields<'a>) -> Record<'a> {
    match kind {
        Kind::Alloc => Record::Alloc(Alloc::parse_with_thread(f)),
        Kind::AllocOld => Record::Alloc(Alloc::parse_without_thread(f)),
        Kind::Call => Record::Call(Call::parse(f)),
        Kind::Moved => Record::Moved(Moved::parse(f)),
        Kind::Survived => Record::Survived(Survived::parse(f)),
        Kind::Stack => Record::Stack(StackDef::parse(f)),
        Kind::HeapObject => Record::HeapObject(HeapObject::parse(f)),
        Kind::Tick => Record::Tick(Tick::parse(f)),
        Kind::Type => Record::Type(TypeDef::parse(f)),
        Kind::Function => Record::Function(FunctionDef::parse(f)),
        Kind::Module => Record::Module(ModuleLoad::parse(f)),
        Kind::Assembly => Record::Assembly(AssemblyLoad::parse(f)),
        Kind::AssemblyD => Record::AssemblyD(AssemblyLoad::parse(f)),
        Kind::StackOld => Record::StackOld(StackDefOld::parse(f)),
        Kind::Comment => Record::Comment(Comment::parse(f)),
        Kind::GcBoundary => Record::GcBoundary(GcBoundary::parse(f)),
        Kind::GcCounts => Record::GcCounts(GcCounts::parse(f)),
        Kind::Finalizer => Record::Finalizer(FinalizerQueued::parse(f)),
        Kind::HandleCreated => Record::HandleCreated(HandleCreated::parse(f)),
        Kind::HandleDestroyed => Record::HandleDestroyed(HandleDestroyed::parse(f)),
        Kind::Root => Record::Root(Root::parse(f)),
        Kind::Roots => Record::Roots(Roots::parse(f)),
    }
}

/// Reads a whole (small) log into a vector, with line numbers resolved.
pub fn read_all(data: &[u8]) -> (Vec<Parsed<'_>>, Diagnostics) {
    let mut r = RecordReader::new(data);
    let records: Vec<_> = r.by_ref().collect();
    let mut d = r.take_diagnostics();
    d.resolve_lines(data);
    (records, d)
}
