//! Compressed logs: `.gz` and `.zst` read transparently, by their first
//! bytes rather than their names (flate2 and zstd, behind the `gzip` and
//! `zstd` features).
//!
//! Users keep logs compressed (text logs shrink 10-20x). A log is
//! decompressed into memory for [`LogSource`](super::LogSource), or
//! streamed through a decoder for [`RecordStream`](super::RecordStream)
//! via [`open_read`].
//!
//! Decompression is capped ([`DecompressLimits`]): a stream that expands
//! past its ratio or size limit stops with [`Error::TooExpanded`], before
//! the bytes are held (a megabyte of gzip can claim a gigabyte, a
//! megabyte of zstd run-length blocks 32 GB).

use super::error::{Error, Result};
use super::sniff::{sniff, Content, SNIFF_BYTES};
use crate::limits::DecompressLimits;
use std::io::{Cursor, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Reads up to [`SNIFF_BYTES`] from `r`, for [`sniff`].
pub(crate) fn read_head(r: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    r.by_ref().take(SNIFF_BYTES as u64).read_to_end(&mut head)?;
    Ok(head)
}

/// Counts the compressed bytes a decoder reads.
struct Counted<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Why a decoder's output was cut: the decompressed bytes passed the
/// limit allowed for the compressed bytes (carried inside an
/// [`std::io::Error`] out of [`Read::read`]).
#[derive(Debug)]
struct Expanded {
    compressed: u64,
    limit: u64,
}

impl std::fmt::Display for Expanded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "expands past {} bytes from {} compressed bytes", self.limit, self.compressed)
    }
}

impl std::error::Error for Expanded {}

/// A decoder's output, cut at the limits: at most
/// [`DecompressLimits::allowed`] bytes for the compressed size (the
/// file's, when known; else the compressed bytes read so far).
#[cfg_attr(not(any(feature = "gzip", feature = "zstd")), allow(dead_code))]
struct Capped<D> {
    decoder: D,
    read: Arc<AtomicU64>,
    compressed_size: Option<u64>,
    limits: DecompressLimits,
    out: u64,
}

impl<D: Read> Read for Capped<D> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let compressed = self.compressed_size.unwrap_or_else(|| self.read.load(Ordering::Relaxed));
        let limit = self.limits.allowed(compressed);
        if self.out >= limit {
            // One byte more than the limit tells a stream that ends exactly
            // there from one that goes on.
            let mut probe = [0u8; 1];
            if self.decoder.read(&mut probe)? == 0 {
                return Ok(0);
            }
            return Err(std::io::Error::other(Expanded { compressed, limit }));
        }
        let room = (limit - self.out).min(buf.len() as u64) as usize;
        let n = self.decoder.read(&mut buf[..room])?;
        self.out += n as u64;
        Ok(n)
    }
}

/// A reader of the log's text from `r`, whose first bytes `head` were
/// already read: a decoder for compressed content (cut at `limits`; the
/// whole compressed input has `compressed_size` bytes when known), the
/// bytes as they are for text; an error for anything else.
#[cfg_attr(not(any(feature = "gzip", feature = "zstd")), allow(unused_variables))]
pub(crate) fn text_reader<'r>(
    path: &Path,
    head: Vec<u8>,
    r: impl Read + Send + 'r,
    limits: &DecompressLimits,
    compressed_size: Option<u64>,
) -> Result<Box<dyn Read + Send + 'r>> {
    let content = sniff(&head);
    let read = Arc::new(AtomicU64::new(0));
    let whole = Counted { inner: Cursor::new(head).chain(r), read: read.clone() };
    #[cfg(any(feature = "gzip", feature = "zstd"))]
    let capped = |decoder: Box<dyn Read + Send + 'r>| Capped { decoder, read, compressed_size, limits: *limits, out: 0 };
    match content {
        Content::Text => Ok(Box::new(whole)),
        #[cfg(feature = "gzip")]
        Content::Gzip => Ok(Box::new(capped(Box::new(flate2::read::MultiGzDecoder::new(whole)) as Box<dyn Read + Send>))),
        #[cfg(feature = "zstd")]
        Content::Zstd => match zstd::stream::read::Decoder::new(whole) {
            Ok(d) => Ok(Box::new(capped(Box::new(d) as Box<dyn Read + Send>))),
            Err(source) => Err(Error::Io { path: path.to_path_buf(), source }),
        },
        other => Err(not_a_log(path, other)),
    }
}

/// The error for content that is not read as a log.
pub(crate) fn not_a_log(path: &Path, content: Content) -> Error {
    let why = match content {
        #[cfg(not(feature = "gzip"))]
        Content::Gzip => Some("this build of clrprof has no `gzip` feature"),
        #[cfg(not(feature = "zstd"))]
        Content::Zstd => Some("this build of clrprof has no `zstd` feature"),
        _ => None,
    };
    Error::NotALog { path: path.to_path_buf(), looks_like: content.describe(), why }
}

/// Opens `path` (`-`: standard input) for reading its text: compressed
/// logs are decompressed on the fly, anything that is not a log is refused
/// with a message saying what it looks like.
///
/// ```no_run
/// use clrprof::format::{open_read, RecordStream};
/// let mut stream = RecordStream::new(open_read("app.log.gz".as_ref())?);
/// let mut allocations = 0u64;
/// stream.for_each(|p| {
///     if let clrprof::format::Record::Alloc(_) = p.record {
///         allocations += 1;
///     }
/// })?;
/// # Ok::<(), clrprof::format::Error>(())
/// ```
pub fn open_read(path: &Path) -> Result<Box<dyn Read + Send>> {
    open_read_with(path, &DecompressLimits::default())
}

/// [`open_read`] with decompression limits of the caller's choice.
pub fn open_read_with(path: &Path, limits: &DecompressLimits) -> Result<Box<dyn Read + Send>> {
    let io = |source| Error::Io { path: path.to_path_buf(), source };
    let (mut input, size): (Box<dyn Read + Send>, Option<u64>) = if path.as_os_str() == "-" {
        (Box::new(std::io::stdin()), None)
    } else {
        let f = std::fs::File::open(path).map_err(io)?;
        let size = f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
        (Box::new(f), size)
    };
    let head = read_head(&mut input).map_err(io)?;
    if head.is_empty() {
        return Err(not_a_log(path, Content::Empty));
    }
    text_reader(path, head, input, limits, size)
}

/// Decompresses all of `r` (whose first bytes are `head`; the compressed
/// input has `compressed_size` bytes when known) into memory, within
/// `limits`. A stream cut short is an error that names the last complete
/// line; so is one that expands past the limits.
pub(crate) fn decompress_all(
    path: &Path,
    content: Content,
    head: Vec<u8>,
    r: impl Read + Send,
    limits: &DecompressLimits,
    compressed_size: Option<u64>,
) -> Result<Vec<u8>> {
    let mut reader = text_reader(path, head, r, limits, compressed_size)?;
    let mut out = Vec::new();
    match reader.read_to_end(&mut out) {
        Ok(_) => Ok(out),
        Err(source) => {
            let complete = memchr::memrchr(b'\n', &out).map_or(0, |k| k + 1);
            let lines = memchr::memchr_iter(b'\n', &out[..complete]).count() as u64;
            let format = if content == Content::Zstd { "zstd" } else { "gzip" };
            let decompressed = out.len() as u64;
            if let Some(e) = source.get_ref().and_then(|e| e.downcast_ref::<Expanded>()) {
                return Err(Error::TooExpanded {
                    path: path.to_path_buf(),
                    format,
                    decompressed,
                    lines,
                    compressed: e.compressed,
                    limit: e.limit,
                    limits: *limits,
                });
            }
            Err(Error::Decompress { path: path.to_path_buf(), format, decompressed, lines, source })
        }
    }
}

#[cfg(all(test, feature = "gzip", feature = "zstd"))]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn gzip_and_zstd_round_trip() {
        let log = b"t 1 0 System.String\nn 1 1 1 24\n! 1 0x1000 1\n".repeat(100);
        for packed in [gz(&log), zstd::encode_all(&log[..], 3).unwrap()] {
            let content = sniff(&packed);
            let out = decompress_all(Path::new("x"), content, packed.clone(), &[][..], &Default::default(), None).unwrap();
            assert_eq!(out, log);
        }
    }

    #[test]
    fn truncated_gzip_names_the_last_complete_line() {
        let log: Vec<u8> = (0..20_000).flat_map(|i| format!("! 1 0x{:x} 1\n", 0x1000 + 16 * i).into_bytes()).collect();
        let packed = gz(&log);
        let cut = &packed[..packed.len() / 2];
        let err = decompress_all(Path::new("cut.log.gz"), Content::Gzip, cut.to_vec(), &[][..], &Default::default(), None).unwrap_err();
        let Error::Decompress { lines, decompressed, .. } = &err else { panic!("{err}") };
        assert!(*lines > 0 && *decompressed > 0);
        let text = err.to_string();
        assert!(text.contains("cut.log.gz") && text.contains(&format!("line {lines}")), "{text}");
    }

    #[test]
    fn expansion_past_the_limits_stops_with_the_last_line() {
        let log = b"! 1 0x1000 1\n".repeat(100_000);
        let limits = DecompressLimits { max_ratio: 10, floor: 1000, max_bytes: u64::MAX };
        for packed in [gz(&log), zstd::encode_all(&log[..], 3).unwrap()] {
            let content = sniff(&packed);
            let size = Some(packed.len() as u64);
            let err = decompress_all(Path::new("b.gz"), content, packed.clone(), &[][..], &limits, size).unwrap_err();
            let Error::TooExpanded { decompressed, limit, lines, .. } = &err else { panic!("{err}") };
            assert_eq!(*limit, 10 * packed.len() as u64);
            assert_eq!(*decompressed, *limit);
            assert_eq!(*lines, *decompressed / 13);
            // Within the limits (exactly at them, too), the log reads.
            let exact = DecompressLimits { max_bytes: log.len() as u64, ..DecompressLimits::UNLIMITED };
            let out = decompress_all(Path::new("b.gz"), content, packed.clone(), &[][..], &exact, size).unwrap();
            assert_eq!(out, log);
        }
    }
}
