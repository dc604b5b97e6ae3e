//! Errors of the model: where CLRProfiler's reader would throw.
//!
//! CLRProfiler's reader stops at the first record it cannot apply (an
//! allocation naming no stack, a generation it has no counter for, ...); the
//! figures it shows are the state reached so far. The model reports such a
//! record as an [`Error`] naming the line, the byte offset, the record kind
//! and what was wrong. The list of such inputs is section 9.2 of
//! `docs/src/reference-reader.md` (the `T` numbers below refer to it).

/// A record the model cannot apply, with its position in the log.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, byte {offset}: {}: {problem}", describe_kind(*kind))]
pub struct Error {
    /// Line number, 1-based.
    pub line: u64,
    /// Byte offset of the record's first character.
    pub offset: u64,
    /// The record kind letter, or `None` for a problem found after the last
    /// record (while walking the final heap).
    pub kind: Option<char>,
    /// What was wrong.
    pub problem: Problem,
}

fn describe_kind(kind: Option<char>) -> String {
    match kind {
        Some(k) => format!("`{k}` record"),
        None => "end of log".to_string(),
    }
}

/// What was wrong with a record.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// T1: an allocation (or a heap object read back) whose stack index holds
    /// no stack.
    #[error("stack id {id} (stack index {index}) is not defined")]
    UndefinedStack {
        /// The stack id as written in the log (after `-1` for "read back").
        id: i64,
        /// The stack index it maps to.
        index: i64,
    },
    /// T2: an allocation whose stack has fewer than two elements, so it names
    /// no type and size.
    #[error("stack index {index} has {len} element(s); an allocation stack needs a type and a size")]
    ShortStack {
        /// The stack index.
        index: i64,
        /// How many elements it has.
        len: usize,
    },
    /// T3, T4, T7: a stack id outside the stack table (negative, beyond its
    /// capacity, or beyond the renumbering table).
    #[error("stack id {id} is outside the stack table (valid: 0..{limit})")]
    StackIdOutOfRange {
        /// The stack id as written.
        id: i64,
        /// The table length it was checked against.
        limit: u64,
    },
    /// T5: an `n` record whose reference stack is not defined.
    #[error("the reference stack {id} (stack index {index}) is not defined")]
    UndefinedReferenceStack {
        /// The reference id as written.
        id: i64,
        /// The stack index it maps to.
        index: i64,
    },
    /// T6: an `n` record copying a function id outside the function table.
    #[error("the shared prefix copies function id {function}, outside the function table (valid: 0..{limit})")]
    CopiedFunctionOutOfRange {
        /// The function id.
        function: i64,
        /// The table's capacity.
        limit: u64,
    },
    /// T8: a `b` range of generation 4 or more.
    #[error("generation {generation} has no counter (0-2 and 3 for the large object heap)")]
    GenerationOutOfRange {
        /// The generation.
        generation: i32,
    },
    /// T9: an induced GC start condemning generation 3 or more.
    #[error("an induced GC condemning generation {condemned} (induced counts exist for 0-2)")]
    InducedGenerationOutOfRange {
        /// The condemned generation.
        condemned: i32,
    },
    /// T10: a GC end condemning generation 4 or more.
    #[error("a GC condemning generation {condemned} (counts exist for 0-3)")]
    CondemnedGenerationOutOfRange {
        /// The condemned generation.
        condemned: i32,
    },
    /// T11, T12: a negative stack id in an `h`, `j` or `c` record.
    #[error("stack id {id} is negative")]
    NegativeStackId {
        /// The stack id.
        id: i64,
    },
    /// T13: an `o` record whose type id is outside the type table.
    #[error("type id {type_id} is outside the type table (valid: 0..{limit})")]
    TypeIdOutOfRange {
        /// The type id.
        type_id: i64,
        /// The table's capacity.
        limit: u64,
    },
    /// T14: an `o` record matching a live object before any heap dump
    /// started.
    #[error("a heap-dump object before any `e` or `r` record started a dump")]
    ObjectOutsideHeapDump,
    /// T15: a `t`, `f` or `m` record with a negative id.
    #[error("id {id} is negative")]
    NegativeId {
        /// The id.
        id: i64,
    },
    /// T16: an `m` record whose last backslash lies after its address.
    #[error("the module path's last backslash lies after the load address")]
    ModulePathAfterAddress,
    /// A range so large that recording its history would need more than
    /// 2^28 entries at once (CLRProfiler's reader would exhaust memory).
    #[error("an address range of {bytes} bytes is too large to record")]
    RangeTooLarge {
        /// The range length in bytes.
        bytes: u64,
    },
    /// Loading the log would take more memory than the memory rule allows
    /// for its size (see [`crate::limits`]): its records describe far more
    /// than their bytes (objects of gigabytes scattered over the address
    /// space, stacks copying long prefixes of each other).
    #[error(
        "this record takes the log past the memory rule: {count} {what}, where a log of this size may have at most {limit} (see \"The memory rule\" in the guide's Security chapter)"
    )]
    OverMemoryRule {
        /// What grew (with its unit).
        what: &'static str,
        /// How much of it the log would need so far.
        count: u64,
        /// The most the memory rule allows for this log.
        limit: u64,
    },
    /// A stack deeper than [`crate::limits::MAX_STACK_DEPTH`] frames.
    #[error("a stack deeper than {limit} frames")]
    StackTooDeep {
        /// The deepest stack allowed.
        limit: u32,
    },
    /// A [`super::GrowingLog`] whose last read was interrupted (by a panic)
    /// midway: its state is lost, and the log has to be read again.
    #[error("an earlier read of this growing log was interrupted; it must be read again from the start")]
    Interrupted,
    /// More than 2^32 - 1 of something the model counts with 32 bits.
    #[error("more than 4,294,967,295 {what}")]
    TooMany {
        /// What overflowed.
        what: &'static str,
    },
}

/// Result type of the model.
pub type Result<T> = std::result::Result<T, Error>;
