//! A cursor over one record's fields that remembers the first anomaly.

use super::scan::{self, Number};

/// What was wrong with a field (the reader recovers from all of these).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "model", derive(serde::Serialize, serde::Deserialize))]
pub enum FieldProblem {
    /// No number where one was expected: read as -1.
    Missing,
    /// The number does not fit the field: wrapped like CLRProfiler's reader.
    Overflow,
    /// A name was read across a line end (an unbalanced `<`).
    NameCrossedLine,
}

/// The first anomaly found in a record's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldIssue {
    /// Bytes left in the input when the field started (the caller turns
    /// this into a file offset).
    pub remaining: usize,
    /// What was wrong.
    pub problem: FieldProblem,
    /// What the field should have held.
    pub expected: &'static str,
}

/// Reads the fields of one record, nom-style, from a byte slice whose first
/// byte is the reader's look-ahead character.
pub(crate) struct Fields<'a> {
    pub rest: &'a [u8],
    pub issue: Option<FieldIssue>,
}

impl<'a> Fields<'a> {
    #[inline]
    pub fn new(rest: &'a [u8]) -> Self {
        Fields { rest, issue: None }
    }

    #[inline]
    fn note(&mut self, remaining: usize, problem: FieldProblem, expected: &'static str) {
        if self.issue.is_none() {
            self.issue = Some(FieldIssue { remaining, problem, expected });
        }
    }

    #[inline(always)]
    fn raw(&mut self, expected: &'static str, required: bool, wide: bool) -> Number {
        let before = scan::skip_blanks(self.rest);
        let (rest, n) = scan::number_at(before);
        if (!n.present && required) || (wide && n.overflow64) || (!wide && n.overflow32) {
            self.problem(before.len(), n.present, expected);
        }
        self.rest = rest;
        n
    }

    #[cold]
    #[inline(never)]
    fn problem(&mut self, remaining: usize, present: bool, expected: &'static str) {
        let p = if present { FieldProblem::Overflow } else { FieldProblem::Missing };
        self.note(remaining, p, expected);
    }

    /// A required 32-bit field (`ReadInt`).
    #[inline]
    pub fn int(&mut self, expected: &'static str) -> i32 {
        self.raw(expected, true, false).as_i32()
    }

    /// A 32-bit field that may be absent (reads as -1 without a warning).
    #[inline]
    pub fn opt_int(&mut self, expected: &'static str) -> Number {
        self.raw(expected, false, false)
    }

    /// A required 64-bit field (`ReadULong`).
    #[inline]
    pub fn long(&mut self, expected: &'static str) -> u64 {
        self.raw(expected, true, true).as_u64()
    }

    /// A 64-bit field that may be absent.
    #[inline]
    pub fn opt_long(&mut self, expected: &'static str) -> Number {
        self.raw(expected, false, true)
    }

    /// Skips spaces and tabs.
    #[inline]
    pub fn blanks(&mut self) {
        self.rest = scan::skip_blanks(self.rest);
    }

    /// A name read with the reader's `ReadString` rules.
    #[inline]
    pub fn name(&mut self, rule: scan::NameRule, expected: &'static str) -> &'a [u8] {
        let before = self.rest;
        let (rest, n) = scan::name(before, rule);
        if n.crossed_line {
            self.note(before.len(), FieldProblem::NameCrossedLine, expected);
        }
        self.rest = rest;
        n.raw
    }

    /// Raw text up to a control byte (`m`, `y`, `z`).
    #[inline]
    pub fn text(&mut self) -> &'a [u8] {
        let (rest, t) = scan::raw_text(self.rest);
        self.rest = rest;
        t
    }

    /// The look-ahead byte, or `None` at end of input.
    #[inline]
    pub fn peek(&self) -> Option<u8> {
        self.rest.first().copied()
    }
}
