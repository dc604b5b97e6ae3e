//! Compressed logs: `.gz` and `.zst` read transparently, by their first
//! bytes rather than their names (flate2 and zstd, behind the `gzip` and
//! `zstd` features).
//!
//! Users keep logs compressed (text logs shrink 10-20x). A log is
//! decompressed into memory for [`LogSource`](super::LogSource), or
//! streamed through a decoder for [`RecordStream`](super::RecordStream)
//! via [`open_read`].

use super::error::{Error, Result};
use super::sniff::{sniff, Content, SNIFF_BYTES};
use std::io::{Cursor, Read};
use std::path::Path;

/// Reads up to [`SNIFF_BYTES`] from `r`, for [`sniff`].
pub(crate) fn read_head(r: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    r.by_ref().take(SNIFF_BYTES as u64).read_to_end(&mut head)?;
    Ok(head)
}

/// A reader of the log's text from `r`, whose first bytes `head` were
/// already read: a decoder for compressed content, the bytes as they are
/// for text; an error for anything else.
pub(crate) fn text_reader<'r>(
    path: &Path,
    head: Vec<u8>,
    r: impl Read + Send + 'r,
) -> Result<Box<dyn Read + Send + 'r>> {
    let content = sniff(&head);
    let whole = Cursor::new(head).chain(r);
    match content {
        Content::Text => Ok(Box::new(whole)),
        #[cfg(feature = "gzip")]
        Content::Gzip => Ok(Box::new(flate2::read::MultiGzDecoder::new(whole))),
        #[cfg(feature = "zstd")]
        Content::Zstd => match zstd::stream::read::Decoder::new(whole) {
            Ok(d) => Ok(Box::new(d)),
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
    let io = |source| Error::Io { path: path.to_path_buf(), source };
    let mut input: Box<dyn Read + Send> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(path).map_err(io)?)
    };
    let head = read_head(&mut input).map_err(io)?;
    if head.is_empty() {
        return Err(not_a_log(path, Content::Empty));
    }
    text_reader(path, head, input)
}

/// Decompresses all of `r` (whose first bytes are `head`) into memory.
/// A stream cut short is an error that names the last complete line.
pub(crate) fn decompress_all(path: &Path, content: Content, head: Vec<u8>, r: impl Read + Send) -> Result<Vec<u8>> {
    let mut reader = text_reader(path, head, r)?;
    let mut out = Vec::new();
    match reader.read_to_end(&mut out) {
        Ok(_) => Ok(out),
        Err(source) => {
            let complete = memchr::memrchr(b'\n', &out).map_or(0, |k| k + 1);
            let lines = memchr::memchr_iter(b'\n', &out[..complete]).count() as u64;
            Err(Error::Decompress {
                path: path.to_path_buf(),
                format: if content == Content::Zstd { "zstd" } else { "gzip" },
                decompressed: out.len() as u64,
                lines,
                source,
            })
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
            let out = decompress_all(Path::new("x"), content, packed.clone(), &[][..]).unwrap();
            assert_eq!(out, log);
        }
    }

    #[test]
    fn truncated_gzip_names_the_last_complete_line() {
        let log: Vec<u8> = (0..20_000).flat_map(|i| format!("! 1 0x{:x} 1\n", 0x1000 + 16 * i).into_bytes()).collect();
        let packed = gz(&log);
        let cut = &packed[..packed.len() / 2];
        let err = decompress_all(Path::new("cut.log.gz"), Content::Gzip, cut.to_vec(), &[][..]).unwrap_err();
        let Error::Decompress { lines, decompressed, .. } = &err else { panic!("{err}") };
        assert!(*lines > 0 && *decompressed > 0);
        let text = err.to_string();
        assert!(text.contains("cut.log.gz") && text.contains(&format!("line {lines}")), "{text}");
    }
}
