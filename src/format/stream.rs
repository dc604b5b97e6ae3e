//! Records of any [`Read`]: a file, a pipe, a decompressor, a socket.
//!
//! [`RecordStream`] reads the input in blocks and runs a [`RecordReader`]
//! over each, so memory stays at about one block however long the log is,
//! and records come out in log order with their byte offsets in the whole
//! stream and warnings with line numbers, exactly as [`read_all`] would
//! give them for the whole log at once.
//!
//! ```text
//!  buffer:  | records parsed now ........ | margin (>= margin_bytes) |
//!           0                        stop (after a line end)     filled
//! ```
//!
//! A block is parsed up to a line end that lies at least `margin_bytes`
//! before the end of what has been read. A record only reads past its own
//! line end for a name with an unbalanced `<` (at most 1,279 bytes), so no
//! record parsed from a block can see the block's end unless the stream has
//! ended: the end of the data means the end of the log, as it must for the
//! last-line rules. The bytes after the last parsed record move to the
//! front of the buffer and the next block is read behind them.
//!
//! [`read_all`]: super::read_all

use super::diagnostics::{Diagnostics, DEFAULT_KEPT_WARNINGS};
use super::error::{Error, Result};
use super::reader::{DumpState, RecordReader};
use super::record::Parsed;
use std::io::{ErrorKind, Read};
use std::path::PathBuf;

/// How a [`RecordStream`] reads.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct StreamOptions {
    /// Bytes read per block (the buffer grows beyond it only for a line
    /// longer than a block).
    pub block_bytes: usize,
    /// Bytes kept unparsed behind a block's last parsed line (see the
    /// module docs); at least 1,280.
    pub margin_bytes: usize,
    /// Warnings kept in detail (all are counted).
    pub keep_warnings: usize,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions { block_bytes: 4 << 20, margin_bytes: 64 << 10, keep_warnings: DEFAULT_KEPT_WARNINGS }
    }
}

impl StreamOptions {
    /// Options with a given block size and the default margin.
    pub fn with_block_bytes(block_bytes: usize) -> Self {
        StreamOptions { block_bytes, ..Default::default() }
    }

    /// Options with a given block size and margin (small values exercise
    /// block boundaries in tests; the margin must exceed how far a record
    /// reads past its line end, or such a record would be read as the
    /// log's last).
    pub fn with_block_and_margin(block_bytes: usize, margin_bytes: usize) -> Self {
        StreamOptions { block_bytes, margin_bytes, ..Default::default() }
    }
}

/// The records of a log read from any [`Read`], in order.
///
/// ```
/// use clrprof::format::{Record, RecordStream};
/// let log: &[u8] = b"t 1 0 System.String\nn 1 1 1 24\n! 7 0x1000 1\n! 7 0x1018 1\n";
/// let mut stream = RecordStream::new(log);
/// let mut by_thread = std::collections::BTreeMap::new();
/// stream.for_each(|p| {
///     if let Record::Alloc(a) = p.record {
///         *by_thread.entry(a.thread.map(|t| t.0)).or_insert(0u32) += 1;
///     }
/// })?;
/// assert_eq!(by_thread[&Some(7)], 2);
/// assert_eq!(stream.diagnostics().total(), 0);
/// # Ok::<(), clrprof::format::Error>(())
/// ```
pub struct RecordStream<R> {
    input: R,
    name: PathBuf,
    options: StreamOptions,
    buf: Vec<u8>,
    filled: usize,
    base: u64,
    line_base: u64,
    state: DumpState,
    eof: bool,
    diagnostics: Diagnostics,
    records: u64,
}

impl<R: Read> RecordStream<R> {
    /// A stream over `input` with default options.
    pub fn new(input: R) -> Self {
        Self::with_options(input, StreamOptions::default())
    }

    /// A stream over `input`.
    pub fn with_options(input: R, options: StreamOptions) -> Self {
        let options = StreamOptions {
            block_bytes: options.block_bytes.max(1),
            margin_bytes: options.margin_bytes.max(1),
            ..options
        };
        RecordStream {
            input,
            name: PathBuf::from("<stream>"),
            buf: Vec::new(),
            filled: 0,
            base: 0,
            line_base: 0,
            state: DumpState::default(),
            eof: false,
            diagnostics: Diagnostics::new(options.keep_warnings),
            records: 0,
            options,
        }
    }

    /// Names the input in read errors (a path; `<stream>` by default).
    pub fn named(mut self, name: impl Into<PathBuf>) -> Self {
        self.name = name.into();
        self
    }

    /// Calls `f` with every record, in log order; [`Parsed::offset`] is the
    /// record's byte offset in the whole stream. Returns at the end of the
    /// input, or with the first read error (records before it were
    /// delivered).
    pub fn for_each(&mut self, mut f: impl FnMut(&Parsed<'_>)) -> Result<()> {
        loop {
            let Some(stop) = self.fill()? else { return Ok(()) };
            let data = &self.buf[..self.filled];
            let mut reader = RecordReader::range_with_state(data, 0, stop, self.state);
            for mut parsed in reader.by_ref() {
                parsed.offset += self.base;
                self.records += 1;
                f(&parsed);
            }
            let next = reader.offset().min(self.filled);
            self.state = reader.state();
            let mut found = reader.take_diagnostics();
            found.rebase(data, self.base, self.line_base);
            self.diagnostics.merge(found);
            self.line_base += memchr::memchr_iter(b'\n', &data[..next]).count() as u64;
            self.base += next as u64;
            self.buf.copy_within(next..self.filled, 0);
            self.filled -= next;
            if self.eof && self.filled == 0 {
                return Ok(());
            }
        }
    }

    /// Reads until a block can be parsed; the offset to parse up to, or
    /// `None` when everything has been parsed.
    fn fill(&mut self) -> Result<Option<usize>> {
        loop {
            if self.eof {
                return Ok((self.filled > 0).then_some(self.filled));
            }
            if self.filled > self.options.margin_bytes {
                let limit = self.filled - self.options.margin_bytes;
                if self.filled >= self.options.block_bytes {
                    if let Some(k) = memchr::memrchr(b'\n', &self.buf[..limit]) {
                        return Ok(Some(k + 1));
                    }
                }
            }
            self.read_more()?;
        }
    }

    /// Reads once into the free space (growing the buffer when full);
    /// notes the end of the input.
    fn read_more(&mut self) -> Result<()> {
        let want = (self.options.block_bytes + self.options.margin_bytes).max(self.filled * 2).max(4096);
        if self.buf.len() < want {
            self.buf.resize(want, 0);
        } else if self.filled == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        loop {
            match self.input.read(&mut self.buf[self.filled..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.filled += n;
                    return Ok(());
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(source) => return Err(Error::Io { path: self.name.clone(), source }),
            }
        }
    }

    /// The warnings so far, with line numbers and offsets in the stream.
    pub fn diagnostics(&self) -> &Diagnostics {
        &self.diagnostics
    }

    /// Takes the warnings.
    pub fn into_diagnostics(self) -> Diagnostics {
        self.diagnostics
    }

    /// Bytes of the input parsed so far.
    pub fn bytes_parsed(&self) -> u64 {
        self.base
    }

    /// Records delivered so far.
    pub fn records(&self) -> u64 {
        self.records
    }
}

#[cfg(test)]
mod tests {
    use super::super::read_all;
    use super::*;

    /// A reader that hands out at most `n` bytes per call.
    struct Trickle<'a>(&'a [u8], usize);
    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(out.len()).min(self.0.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn same_as_read_all(log: &[u8], block: usize, margin: usize, trickle: usize) {
        let (want, mut want_d) = read_all(log);
        want_d.sort();
        let mut got = Vec::new();
        let mut s = RecordStream::with_options(Trickle(log, trickle), StreamOptions::with_block_and_margin(block, margin));
        s.for_each(|p| got.push((p.offset, format!("{:?}", p.record), p.at_end_of_file))).unwrap();
        let want: Vec<_> = want.iter().map(|p| (p.offset, format!("{:?}", p.record), p.at_end_of_file)).collect();
        assert_eq!(got, want);
        assert_eq!(s.diagnostics(), &want_d);
        assert_eq!(s.bytes_parsed(), log.len() as u64);
    }

    #[test]
    fn equals_one_pass_at_any_block_size() {
        let log = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/corpus/tricky.log")).unwrap();
        for block in [1, 7, 64, 300, 4096] {
            for trickle in [1, 5, 1 << 20] {
                same_as_read_all(&log, block, 1280, trickle);
            }
        }
        let all = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/corpus/all-kinds.log")).unwrap();
        same_as_read_all(&all, 100, 1280, 3);
        same_as_read_all(b"", 10, 1280, 1);
        same_as_read_all(b"i 5", 10, 1280, 1);
    }

    #[test]
    fn read_errors_name_the_input() {
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("disk on fire"))
            }
        }
        let err = RecordStream::new(Broken).named("x.log").for_each(|_| {}).unwrap_err();
        assert!(err.to_string().contains("x.log"), "{err}");
    }
}
