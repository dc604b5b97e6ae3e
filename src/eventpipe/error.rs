//! Errors and warnings of the NetTrace reader.
//!
//! An [`Error`] is small and `Copy`: the byte offset in the trace where
//! reading stopped and what was expected there. Recoverable irregularities
//! (dropped events, a trace cut short, an event whose payload does not fit
//! its schema) are [`Warning`]s collected by the reader.

use super::ids::ThreadId;
use std::fmt;

/// Why a trace (or a part of it) could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Error {
    /// Byte offset from the start of the trace.
    pub offset: u64,
    /// What was expected there.
    pub kind: ErrorKind,
}

/// What went wrong, without the position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input ended while `expected` was being read.
    UnexpectedEnd {
        /// What was being read ("a 4-byte block size").
        expected: &'static str,
    },
    /// A value that is not what the format allows there.
    Invalid {
        /// What was expected ("the tag BeginPrivateObject (5)").
        expected: &'static str,
        /// The value found (a byte, a number), when it is a number.
        found: u64,
    },
    /// A version of the format this reader does not read.
    Unsupported {
        /// What is unsupported ("Trace object version").
        what: &'static str,
        /// The version found.
        version: u64,
    },
}

impl Error {
    #[cold]
    #[inline(never)]
    pub(crate) fn end(offset: u64, expected: &'static str) -> Error {
        Error { offset, kind: ErrorKind::UnexpectedEnd { expected } }
    }
    #[cold]
    #[inline(never)]
    pub(crate) fn invalid(offset: u64, expected: &'static str, found: u64) -> Error {
        Error { offset, kind: ErrorKind::Invalid { expected, found } }
    }
    #[cold]
    #[inline(never)]
    pub(crate) fn unsupported(offset: u64, what: &'static str, version: u64) -> Error {
        Error { offset, kind: ErrorKind::Unsupported { what, version } }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "byte {}: ", self.offset)?;
        match self.kind {
            ErrorKind::UnexpectedEnd { expected } => write!(f, "the trace ends where {expected} was expected"),
            ErrorKind::Invalid { expected, found } => write!(f, "expected {expected}, found {found}"),
            ErrorKind::Unsupported { what, version } => write!(f, "unsupported {what} {version}"),
        }
    }
}

impl std::error::Error for Error {}

/// A recoverable irregularity, with where it was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Warning {
    /// Sequence numbers show that the runtime dropped events of a thread
    /// (its buffers were full): `count` events are missing before the
    /// event or sequence point at `offset`.
    LostEvents {
        /// The thread that captured the events.
        thread: ThreadId,
        /// How many events are missing.
        count: u64,
        /// Where the gap was noticed.
        offset: u64,
    },
    /// The trace stops before its end mark (the process was killed or the
    /// file is being written): everything up to the last complete block
    /// at `complete_until` was read, the rest is missing.
    Truncated {
        /// End of the last complete block.
        complete_until: u64,
        /// Bytes after it that could not be read (a partial block).
        unread_bytes: u64,
        /// Why the rest could not be read.
        error: Error,
    },
    /// An object of a type this reader does not know was skipped whole.
    UnknownBlock {
        /// Where it starts.
        offset: u64,
    },
    /// An event whose metadata id was never defined: it is reported without
    /// a name or fields.
    UndefinedMetadata {
        /// The event's offset.
        offset: u64,
        /// The id it names.
        id: u32,
    },
    /// V6: an event names a thread index that no ThreadBlock defined (or
    /// that was removed): its thread is reported as the index.
    UndefinedThread {
        /// The event's offset.
        offset: u64,
        /// The index it names.
        index: u64,
    },
    /// V6: an event names a label list that is not defined in its
    /// sequence-point region: it is reported without labels.
    UndefinedLabelList {
        /// The event's offset.
        offset: u64,
        /// The id it names.
        id: u32,
    },
    /// A metadata record that could not be read: events of that kind are
    /// reported with their provider and id when known, without fields.
    BadMetadata {
        /// Why.
        error: Error,
    },
    /// Time order: more events waited to be merged than the reader's
    /// bound ([`super::ReadOptions::max_pending`]); they were handed out
    /// at once in timestamp order, so events read after `offset` may be
    /// older than events before it.
    OrderCap {
        /// The event that went past the bound.
        offset: u64,
        /// Events waiting then.
        pending: u64,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::LostEvents { thread, count, offset } => {
                write!(f, "byte {offset}: {count} events of thread {} were dropped by the runtime", thread.0)
            }
            Warning::Truncated { complete_until, unread_bytes, error } => write!(
                f,
                "the trace is cut short: read up to its last complete block (byte {complete_until}); \
                 the {unread_bytes} bytes after it and any later events are missing ({error})"
            ),
            Warning::UnknownBlock { offset } => write!(f, "byte {offset}: an object of unknown type was skipped"),
            Warning::UndefinedMetadata { offset, id } => {
                write!(f, "byte {offset}: event names metadata id {id}, which was never defined")
            }
            Warning::UndefinedThread { offset, index } => {
                write!(f, "byte {offset}: event names thread index {index}, which no thread block defines")
            }
            Warning::UndefinedLabelList { offset, id } => {
                write!(f, "byte {offset}: event names label list {id}, which is not defined since the last sequence point")
            }
            Warning::BadMetadata { error } => write!(f, "unreadable metadata record: {error}"),
            Warning::OrderCap { offset, pending } => write!(
                f,
                "byte {offset}: {pending} events waited to be put in time order, more than the reader holds; \
                 they were handed out at once, and events after them may be out of time order"
            ),
        }
    }
}
