//! Warnings: what the reader recovered from, with positions.

use super::fields::FieldProblem;
use super::record::Kind;
use std::fmt;

/// What a warning is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(feature = "model", derive(serde::Serialize, serde::Deserialize))]
pub enum WarningKind {
    /// A line whose first byte names no record kind; skipped whole.
    UnknownRecord {
        /// The first byte of the line.
        byte: u8,
    },
    /// A record names a stack id that no `n`/`s` line defined before it
    /// (CLRProfiler's reader fails on such a log).
    UndefinedStack {
        /// The record kind.
        kind: Kind,
        /// The stack id.
        id: i32,
    },
    /// A `b` line has a range of generation 4 or more (the pinned object
    /// heap of .NET 5+), which CLRProfiler's reader cannot read.
    UnreadableGeneration {
        /// The generation.
        generation: i32,
    },
    /// An unknown record on the last line, with no line end (CLRProfiler's
    /// reader never returns on such a file); skipped.
    UnknownRecordAtEnd {
        /// The first byte of the line.
        byte: u8,
    },
    /// Text left on a line after a record's fields, read as a new record
    /// (as CLRProfiler's reader does).
    TrailingText {
        /// The record the text followed.
        after: Kind,
    },
    /// A field was missing, overflowed, or a name ran across a line end.
    Field {
        /// The record holding the field.
        kind: Kind,
        /// What was wrong.
        problem: FieldProblem,
        /// What the field should hold.
        #[cfg_attr(feature = "model", serde(deserialize_with = "static_str"))]
        expected: StaticText,
    },
    /// The file ends inside this record; it was dropped, as CLRProfiler's
    /// reader drops it.
    TruncatedDropped {
        /// The record kind.
        kind: Kind,
    },
    /// The file ends right after this record without a line end; it was
    /// applied the way CLRProfiler's reader applies it.
    TruncatedApplied {
        /// The record kind.
        kind: Kind,
    },
}

/// A text the parser names (what a field should hold). An alias, so that
/// the serde derive does not take it for a string borrowed from its input.
pub type StaticText = &'static str;

/// A saved warning's `expected` text, as the `&'static str` the parser
/// gives. The text is leaked: a model keeps at most a few hundred warnings
/// in detail ([`DEFAULT_KEPT_WARNINGS`]), each read once per process.
#[cfg(feature = "model")]
fn static_str<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    let s: String = serde::Deserialize::deserialize(d)?;
    Ok(Box::leak(s.into_boxed_str()))
}

impl WarningKind {
    /// A dense index for counting warnings by kind.
    pub fn index(&self) -> usize {
        match self {
            WarningKind::UnknownRecord { .. } => 0,
            WarningKind::UnknownRecordAtEnd { .. } => 1,
            WarningKind::TrailingText { .. } => 2,
            WarningKind::Field { problem: FieldProblem::Missing, .. } => 3,
            WarningKind::Field { problem: FieldProblem::Overflow, .. } => 4,
            WarningKind::Field { problem: FieldProblem::NameCrossedLine, .. } => 5,
            WarningKind::TruncatedDropped { .. } => 6,
            WarningKind::TruncatedApplied { .. } => 7,
            WarningKind::UndefinedStack { .. } => 8,
            WarningKind::UnreadableGeneration { .. } => 9,
        }
    }

    /// Short names for [`WarningKind::index`], for reports.
    pub const NAMES: [&'static str; KINDS] = [
        "unknown_record",
        "unknown_record_at_end",
        "trailing_text",
        "missing_field",
        "number_overflow",
        "name_crossed_line",
        "truncated_dropped",
        "truncated_applied",
        "undefined_stack",
        "unreadable_generation",
    ];
}

fn show_byte(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("'{}'", b as char)
    } else {
        format!("byte 0x{b:02x}")
    }
}

impl fmt::Display for WarningKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            WarningKind::UnknownRecord { byte } => {
                write!(f, "unknown record kind {}: line skipped", show_byte(byte))
            }
            WarningKind::UnknownRecordAtEnd { byte } => write!(
                f,
                "unknown record kind {} on the last line without a line end: skipped (CLRProfiler's reader hangs here)",
                show_byte(byte)
            ),
            WarningKind::TrailingText { after } => write!(
                f,
                "text after a complete '{}' record: read as a new record, as CLRProfiler does",
                after.letter()
            ),
            WarningKind::Field { kind, problem, expected } => match problem {
                FieldProblem::Missing => {
                    write!(f, "'{}' record: expected {expected}; read as -1", kind.letter())
                }
                FieldProblem::Overflow => write!(
                    f,
                    "'{}' record: {expected} does not fit its field; wrapped as CLRProfiler does",
                    kind.letter()
                ),
                FieldProblem::NameCrossedLine => write!(
                    f,
                    "'{}' record: {expected} has an unbalanced '<' and was read across a line end",
                    kind.letter()
                ),
            },
            WarningKind::TruncatedDropped { kind } => write!(
                f,
                "the file ends inside a '{}' record: record dropped (truncated log)",
                kind.letter()
            ),
            WarningKind::UndefinedStack { kind, id } => write!(
                f,
                "'{}' record: stack {id} is not defined before this line (CLRProfiler's reader fails here)",
                kind.letter()
            ),
            WarningKind::UnreadableGeneration { generation } => write!(
                f,
                "'b' record: a range of generation {generation}, which CLRProfiler's reader cannot read"
            ),
            WarningKind::TruncatedApplied { kind } => write!(
                f,
                "the file ends after a '{}' record without a line end: applied as CLRProfiler applies it",
                kind.letter()
            ),
        }
    }
}

/// Number of warning kinds.
pub const KINDS: usize = 10;

/// A warning at a position in the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "model", derive(serde::Serialize, serde::Deserialize))]
pub struct Warning {
    /// Byte offset in the file.
    pub offset: u64,
    /// Line number (1-based), once resolved with [`Diagnostics::resolve_lines`].
    pub line: u64,
    /// What happened.
    pub kind: WarningKind,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, byte {}: {}", self.line, self.offset, self.kind)
    }
}

/// Warnings collected while reading: the first few in detail, all counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "model", derive(serde::Serialize, serde::Deserialize))]
pub struct Diagnostics {
    kept: Vec<Warning>,
    keep: usize,
    total: u64,
    by_kind: [u64; KINDS],
}

/// How many warnings are kept in detail by default.
pub const DEFAULT_KEPT_WARNINGS: usize = 100;

impl Diagnostics {
    /// Keeps at most `keep` warnings in detail.
    pub fn new(keep: usize) -> Self {
        Diagnostics { kept: Vec::new(), keep, total: 0, by_kind: [0; KINDS] }
    }

    /// Adds a warning.
    #[cold]
    pub fn push(&mut self, offset: u64, kind: WarningKind) {
        self.total += 1;
        self.by_kind[kind.index()] += 1;
        if self.kept.len() < self.keep {
            self.kept.push(Warning { offset, line: 0, kind });
        }
    }

    /// Appends the warnings of a later part of the log.
    pub fn merge(&mut self, other: Diagnostics) {
        self.total += other.total;
        for (a, b) in self.by_kind.iter_mut().zip(other.by_kind) {
            *a += b;
        }
        let room = self.keep.saturating_sub(self.kept.len());
        self.kept.extend(other.kept.into_iter().take(room));
    }

    /// Whether a record reached the end of the data read (a line with no
    /// end, a record cut short there): such a record may read differently
    /// once the log has grown.
    pub fn reached_end_of_data(&self) -> bool {
        [
            WarningKind::UnknownRecordAtEnd { byte: 0 },
            WarningKind::TruncatedDropped { kind: super::Kind::Tick },
            WarningKind::TruncatedApplied { kind: super::Kind::Tick },
        ]
        .iter()
        .any(|k| self.by_kind[k.index()] > 0)
    }

    /// Total number of warnings.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Counts by [`WarningKind::index`].
    pub fn counts_by_kind(&self) -> &[u64; KINDS] {
        &self.by_kind
    }

    /// The warnings kept in detail, in file order.
    pub fn warnings(&self) -> &[Warning] {
        &self.kept
    }

    /// The first warning, if any.
    pub fn first(&self) -> Option<&Warning> {
        self.kept.first()
    }

    /// Puts the kept warnings in file order (after adding warnings found
    /// by a later pass).
    pub fn sort(&mut self) {
        self.kept.sort_by_key(|w| w.offset);
    }

    /// Fills in line numbers by counting line ends in `data` (one pass up
    /// to the last kept warning).
    pub fn resolve_lines(&mut self, data: &[u8]) {
        let mut line = 1u64;
        let mut at = 0usize;
        for w in &mut self.kept {
            let to = (w.offset as usize).min(data.len());
            if to >= at {
                line += memchr::memchr_iter(b'\n', &data[at..to]).count() as u64;
                at = to;
            }
            w.line = line;
        }
    }
}

impl Diagnostics {
    /// Turns the offsets of warnings found in `data`, a part of a stream
    /// that starts at byte `base` after `line_base` line ends, into offsets
    /// and line numbers in the whole stream.
    pub(crate) fn rebase(&mut self, data: &[u8], base: u64, line_base: u64) {
        self.sort();
        self.place(data, base, line_base);
    }

    /// Like [`Diagnostics::rebase`], the warnings left in the order they
    /// were found (as one reader of the whole stream leaves them).
    pub(crate) fn place(&mut self, data: &[u8], base: u64, line_base: u64) {
        self.resolve_lines(data);
        for w in &mut self.kept {
            w.offset += base;
            w.line += line_base;
        }
    }
}

/// Line number (1-based) of a byte offset.
pub fn line_of(data: &[u8], offset: u64) -> u64 {
    let to = (offset as usize).min(data.len());
    1 + memchr::memchr_iter(b'\n', &data[..to]).count() as u64
}
