//! Errors of the format layer.

use super::diagnostics::Warning;
use std::path::PathBuf;

/// Why a log could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file could not be opened, mapped or read.
    #[error("cannot read {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a log this build can read: empty, binary, or
    /// compressed in a format it does not decompress.
    #[error("{}: {looks_like}{}", path.display(), why.map(|w| format!(" ({w})")).unwrap_or_default())]
    NotALog {
        /// The file.
        path: PathBuf,
        /// What it looks like ("a bzip2-compressed file (decompress it first)").
        looks_like: String,
        /// Why this build cannot read it, when it could with another feature.
        why: Option<&'static str>,
    },
    /// A compressed log whose stream is damaged or cut short.
    #[error(
        "{}: the {format} stream is damaged or cut short after {decompressed} bytes of log; {}",
        path.display(),
        if *lines == 0 { "no line was complete".to_string() } else { format!("the last complete line is line {lines}") }
    )]
    Decompress {
        /// The file.
        path: PathBuf,
        /// `gzip` or `zstd`.
        format: &'static str,
        /// Bytes of log text recovered before the damage.
        decompressed: u64,
        /// Complete lines among them.
        lines: u64,
        /// The decoder's error.
        #[source]
        source: std::io::Error,
    },
    /// A compressed log that expands past the decompression limits
    /// ([`crate::limits::DecompressLimits`]): decompression stopped there.
    #[error(
        "{}: the {format} stream expands past {limit} bytes ({}x its {compressed} compressed bytes, at most {} bytes in all are read); stopped after {decompressed} bytes of log, {}; if the file is trusted, raise the limits (clrprof: --max-ratio, --max-decompressed)",
        path.display(),
        limits.max_ratio,
        limits.max_bytes,
        if *lines == 0 { "no line complete".to_string() } else { format!("the last complete line is line {lines}") }
    )]
    TooExpanded {
        /// The file.
        path: PathBuf,
        /// `gzip` or `zstd`.
        format: &'static str,
        /// Bytes of log text decompressed before the stop.
        decompressed: u64,
        /// Complete lines among them.
        lines: u64,
        /// Compressed bytes the limit was computed from.
        compressed: u64,
        /// The decompressed bytes allowed.
        limit: u64,
        /// The limits in force.
        limits: crate::limits::DecompressLimits,
    },
    /// In strict mode: the first irregularity, with its position.
    #[error("line {line}, byte {offset}: {message}")]
    Malformed {
        /// Line number, 1-based.
        line: u64,
        /// Byte offset.
        offset: u64,
        /// The record kind, when one was being read.
        kind: Option<char>,
        /// What was expected and what was found.
        message: String,
    },
}

impl Error {
    /// The strict-mode error for a warning (line numbers resolved).
    pub fn from_warning(w: &Warning) -> Error {
        use super::diagnostics::WarningKind::*;
        let kind = match w.kind {
            UnknownRecord { byte } | UnknownRecordAtEnd { byte } => Some(byte as char),
            TrailingText { after } => Some(after.letter()),
            Field { kind, .. } | TruncatedDropped { kind } | TruncatedApplied { kind } | UndefinedStack { kind, .. } => Some(kind.letter()),
            UnreadableGeneration { .. } => Some('b'),
        };
        Error::Malformed { line: w.line, offset: w.offset, kind, message: w.kind.to_string() }
    }
}

/// Result type of the format layer.
pub type Result<T> = std::result::Result<T, Error>;
