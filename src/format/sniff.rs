//! What a file looks like, from its first bytes: a CLRProfiler log, a
//! compressed file, binary data, or nothing at all.
//!
//! A CLRProfiler log is 8-bit text whose lines start with a record letter.
//! Reading anything else as a log gives misleading errors (a gzip file's
//! bytes happen to parse as a `t` record with a negative id), so the
//! sources look first and say in one line what they found.

/// What the start of a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Content {
    /// Text: read it as a log.
    Text,
    /// A gzip stream (`1f 8b`).
    Gzip,
    /// A Zstandard frame (`28 b5 2f fd`).
    Zstd,
    /// Another compressed or archive format this crate does not read; the
    /// name of the format.
    OtherCompressed(&'static str),
    /// Binary data: a NUL byte, or mostly bytes that text does not hold.
    Binary {
        /// Offset of the first byte that text does not hold (a NUL, another
        /// control character or, in mostly binary data, a byte >= 0x80).
        offset: u64,
    },
    /// No bytes at all.
    Empty,
    /// A NetTrace (EventPipe) trace (`Nettrace`): the model opens it through
    /// [`crate::import`]; a record stream does not.
    NetTrace,
    /// A `.gcdump` heap snapshot ([`crate::gcdump::is_gcdump`]): the model
    /// opens it; a record stream does not.
    GcDump,
}

/// How many leading bytes [`sniff`] looks at for NUL bytes.
pub const SNIFF_BYTES: usize = 4096;

/// Classifies a file by its first bytes (give it at least [`SNIFF_BYTES`]
/// when the file is that long).
///
/// ```
/// use clrprof::format::{sniff, Content};
/// assert_eq!(sniff(b"i 0\n! 1 0x1000 1\n"), Content::Text);
/// assert_eq!(sniff(&[0x1f, 0x8b, 8, 0]), Content::Gzip);
/// assert_eq!(sniff(b""), Content::Empty);
/// assert_eq!(sniff(b"t 1 0 A\0B"), Content::Binary { offset: 7 });
/// ```
pub fn sniff(head: &[u8]) -> Content {
    const MAGIC: &[(&[u8], Content)] = &[
        (&[0x1f, 0x8b], Content::Gzip),
        (b"Nettrace", Content::NetTrace),
        (&[0x28, 0xb5, 0x2f, 0xfd], Content::Zstd),
        (b"BZh", Content::OtherCompressed("bzip2")),
        (&[0xfd, b'7', b'z', b'X', b'Z', 0x00], Content::OtherCompressed("xz")),
        (&[0x5d, 0x00, 0x00], Content::OtherCompressed("lzma")),
        (&[0x04, 0x22, 0x4d, 0x18], Content::OtherCompressed("lz4")),
        (b"PK\x03\x04", Content::OtherCompressed("zip")),
        (&[b'7', b'z', 0xbc, 0xaf, 0x27, 0x1c], Content::OtherCompressed("7-zip")),
    ];
    if head.is_empty() {
        return Content::Empty;
    }
    if let Some((_, c)) = MAGIC.iter().find(|(m, _)| head.starts_with(m)) {
        return *c;
    }
    if crate::gcdump::is_gcdump(head) {
        return Content::GcDump;
    }
    let look = &head[..head.len().min(SNIFF_BYTES)];
    if let Some(k) = memchr::memchr(0, look) {
        return Content::Binary { offset: k as u64 };
    }
    // Logs are ASCII but for the odd Latin-1 name: a prefix where more than
    // a quarter of the bytes are control characters or >= 0x80 is not one.
    let odd = |b: &u8| (*b < 0x20 && !matches!(*b, b'\t' | b'\n' | b'\r')) || *b >= 0x80;
    let count = look.iter().filter(|b| odd(b)).count();
    if look.len() >= 16 && count * 4 > look.len() {
        let first = look.iter().position(odd).unwrap_or(0);
        return Content::Binary { offset: first as u64 };
    }
    Content::Text
}

impl Content {
    /// A one-line description for messages ("a gzip-compressed file").
    pub fn describe(self) -> String {
        match self {
            Content::Text => "text".into(),
            Content::Gzip => "a gzip-compressed file".into(),
            Content::Zstd => "a Zstandard-compressed file".into(),
            Content::OtherCompressed(name) => format!("a {name}-compressed file (decompress it first)"),
            Content::Binary { offset } => {
                format!("binary data, not a CLRProfiler log (logs are text; byte {offset} is not)")
            }
            Content::Empty => "empty: it has no records".into(),
            Content::NetTrace => "a NetTrace (EventPipe) trace, which this command reads only as a whole file".into(),
            Content::GcDump => "a .gcdump heap snapshot, which this command reads only as a whole file".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_magic() {
        assert_eq!(sniff(&[0x28, 0xb5, 0x2f, 0xfd, 1]), Content::Zstd);
        assert_eq!(sniff(b"BZh91AY"), Content::OtherCompressed("bzip2"));
        assert_eq!(sniff(b"PK\x03\x04rest"), Content::OtherCompressed("zip"));
        // A NUL byte past the sniffed prefix is not looked at.
        let mut v = vec![b'z'; SNIFF_BYTES + 10];
        v[SNIFF_BYTES + 5] = 0;
        assert_eq!(sniff(&v), Content::Text);
        // Random bytes: binary, with or without a NUL among them.
        let bytes: Vec<u8> = (0..5000u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        assert!(matches!(sniff(&bytes), Content::Binary { .. }));
        let no_nul: Vec<u8> = bytes.iter().map(|b| b.max(&1)).copied().take(64).collect();
        assert!(matches!(sniff(&no_nul), Content::Binary { .. }));
        // A log with a Latin-1 name is text.
        assert_eq!(sniff(b"t 1 0 Caf\xe9\ni 0\n! 1 0x1000 1\n"), Content::Text);
    }
}
