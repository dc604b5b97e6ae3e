//! Getting a log's bytes: a memory map for files, a plain read for pipes
//! and standard input (`-`), decompression for `.gz` and `.zst` logs.

use super::decompress::{decompress_all, not_a_log, read_head};
use super::error::{Error, Result};
use super::sniff::{sniff, Content};
use crate::limits::DecompressLimits;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The bytes of a log.
///
/// [`LogSource::open`] looks at the first bytes ([`sniff`]) and maps a text
/// log (or a NetTrace trace, which the model imports), decompresses a gzip or Zstandard one into memory, and refuses an
/// empty file, binary data or another compression format with a message
/// saying what the file looks like.
#[non_exhaustive]
pub enum LogSource {
    /// A memory-mapped regular file.
    Mapped(memmap2::Mmap),
    /// Bytes read into memory (pipes, standard input, empty files).
    Owned(Vec<u8>),
}

impl LogSource {
    /// Opens `path`; `-` reads standard input. A compressed log is
    /// decompressed within the default [`DecompressLimits`].
    pub fn open(path: &Path) -> Result<LogSource> {
        Self::open_with(path, &DecompressLimits::default())
    }

    /// [`LogSource::open`] with decompression limits of the caller's
    /// choice (a stream that expands past them is
    /// [`Error::TooExpanded`]).
    pub fn open_with(path: &Path, limits: &DecompressLimits) -> Result<LogSource> {
        let io = |source| Error::Io { path: path.to_path_buf(), source };
        if path.as_os_str() == "-" {
            let mut stdin = std::io::stdin();
            let head = read_head(&mut stdin).map_err(io)?;
            return Self::from_reader(path, head, stdin, limits, None);
        }
        let mut file = std::fs::File::open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        let head = read_head(&mut file).map_err(io)?;
        if !matches!(sniff(&head), Content::Text | Content::NetTrace | Content::GcDump) {
            let size = meta.is_file().then_some(meta.len());
            return Self::from_reader(path, head, file, limits, size);
        }
        if meta.is_file() && meta.len() > 0 {
            // Safety: the map is read-only and private to this process. A log
            // that another process truncates while we read it could fault;
            // that is the documented limit of mapping a file (as in ripgrep),
            // and the reader never writes through the map.
            match unsafe { memmap2::Mmap::map(&file) } {
                Ok(map) => {
                    #[cfg(unix)]
                    let _ = map.advise(memmap2::Advice::Sequential);
                    return Ok(LogSource::Mapped(map));
                }
                Err(_) => { /* fall back to reading */ }
            }
        }
        let mut v = head;
        file.read_to_end(&mut v).map_err(io)?;
        Ok(LogSource::Owned(v))
    }

    /// The log read from `r`, whose first bytes `head` were already read.
    fn from_reader(
        path: &Path,
        head: Vec<u8>,
        mut r: impl Read + Send,
        limits: &DecompressLimits,
        compressed_size: Option<u64>,
    ) -> Result<LogSource> {
        let io = |source| Error::Io { path: path.to_path_buf(), source };
        match sniff(&head) {
            Content::Text | Content::NetTrace | Content::GcDump => {
                let mut v = head;
                r.read_to_end(&mut v).map_err(io)?;
                Ok(LogSource::Owned(v))
            }
            c @ (Content::Gzip | Content::Zstd) => Ok(LogSource::Owned(decompress_all(path, c, head, r, limits, compressed_size)?)),
            other => Err(not_a_log(path, other)),
        }
    }

    /// Wraps bytes already in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> LogSource {
        LogSource::Owned(bytes)
    }

    /// The log's bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            LogSource::Mapped(m) => m,
            LogSource::Owned(v) => v,
        }
    }
}

/// A path for messages (`-` reads as standard input).
pub fn display_path(path: &Path) -> PathBuf {
    if path.as_os_str() == "-" {
        PathBuf::from("<stdin>")
    } else {
        path.to_path_buf()
    }
}
