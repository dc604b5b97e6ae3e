//! Why a `.gcdump` could not be read: a small `Copy` error naming the byte
//! offset in the file and what was expected there.

use std::fmt;

/// Why a heap snapshot (or a part of it) could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Error {
    /// Byte offset from the start of the file.
    pub offset: u64,
    /// What was expected there.
    pub kind: ErrorKind,
}

/// What went wrong, without the position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The file ended while `expected` was being read.
    UnexpectedEnd {
        /// What was being read ("a 4-byte node count").
        expected: &'static str,
    },
    /// A value that is not what the format allows there.
    Invalid {
        /// What was expected ("a child node index below the node count").
        expected: &'static str,
        /// The value found (a tag, a count, an index).
        found: i64,
    },
    /// A version or an object type this reader does not read.
    Unsupported {
        /// What is unsupported ("GCHeapDump version").
        what: &'static str,
        /// The version found (0 when not a version).
        version: i64,
    },
}

impl Error {
    pub(crate) fn end(offset: usize, expected: &'static str) -> Error {
        Error { offset: offset as u64, kind: ErrorKind::UnexpectedEnd { expected } }
    }
    pub(crate) fn invalid(offset: usize, expected: &'static str, found: i64) -> Error {
        Error { offset: offset as u64, kind: ErrorKind::Invalid { expected, found } }
    }
    pub(crate) fn unsupported(offset: usize, what: &'static str, version: i64) -> Error {
        Error { offset: offset as u64, kind: ErrorKind::Unsupported { what, version } }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "byte {}: ", self.offset)?;
        match self.kind {
            ErrorKind::UnexpectedEnd { expected } => write!(f, "the .gcdump ends where {expected} was expected"),
            ErrorKind::Invalid { expected, found } => write!(f, "expected {expected}, found {found}"),
            ErrorKind::Unsupported { what, version } => write!(f, "unsupported {what} {version}"),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_offset() {
        assert_eq!(Error::end(7, "a tag").to_string(), "byte 7: the .gcdump ends where a tag was expected");
        assert_eq!(Error::invalid(9, "a type index", -1).to_string(), "byte 9: expected a type index, found -1");
        assert_eq!(Error::unsupported(0, "GCHeapDump version", 8).to_string(), "byte 0: unsupported GCHeapDump version 8");
    }
}
