//! Loading a log from a path: the source picked for the file (a memory map
//! for a plain log, a read for pipes and standard input, decompression for
//! `.gz` and `.zst`), and the mapped pages given back as the parse moves on.

use super::{load_with_progress, Error, LoadOptions, Model};
use crate::format::{display_path, LogSource};
use crate::import::nettrace::Pass;
use std::path::{Path, PathBuf};

/// Why a log file could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The file could not be read, or is not a log (empty, binary, an
    /// unknown compression, a damaged compressed stream).
    #[error(transparent)]
    Read(#[from] crate::format::Error),
    /// A NetTrace trace that could not be read or imported.
    #[error("{}: {source}", path.display())]
    Trace {
        /// The file (`<stdin>` for standard input).
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: super::sampled::TraceError,
    },
    /// A record the model cannot apply (where CLRProfiler's reader throws).
    #[error("{}: {source}", path.display())]
    Model {
        /// The file (`<stdin>` for standard input).
        path: PathBuf,
        /// The record and what was wrong.
        #[source]
        source: Error,
    },
}

/// Loads the log at `path` (`-`: standard input). A NetTrace (EventPipe)
/// trace or a `.gcdump`, recognised by their first bytes, is imported
/// ([`super::load_foreign`]).
///
/// ```no_run
/// let model = clrprof::model::load_path("app.log.gz".as_ref(), &Default::default())?;
/// println!("{} objects", model.allocations().len());
/// # Ok::<(), clrprof::model::OpenError>(())
/// ```
pub fn load_path(path: &Path, options: &LoadOptions) -> Result<Model, OpenError> {
    load_path_with_progress(path, options, |_| {})
}

/// Like [`load_path`], calling `progress` with the bytes of log text read so
/// far after each chunk (of [`LogSource::bytes`]'s length in all).
pub fn load_path_with_progress(path: &Path, options: &LoadOptions, progress: impl FnMut(u64)) -> Result<Model, OpenError> {
    let source = LogSource::open(path)?;
    let mut progress = progress;
    let bytes = source.bytes();
    if crate::eventpipe::is_nettrace(bytes) {
        // Both passes give back the pages of a mapped trace behind them:
        // the resident set is the model and a window of the trace.
        let mut release = ReleaseConsumed::new(match &source {
            LogSource::Mapped(m) => Some(m),
            LogSource::Owned(_) => None,
        });
        let (len, mut pass_now) = (bytes.len() as u64, Pass::Methods);
        let loaded = super::sampled::load_trace_at(bytes, options, &mut |pass, at| {
            if pass != pass_now {
                pass_now = pass;
                release.restart();
            }
            release.upto(at as usize);
            progress(super::sampled::halves(len, pass, at));
        });
        return loaded.map_err(|source| OpenError::Trace { path: display_path(path), source });
    }
    if let Some(loaded) = super::load_foreign(bytes, options, &mut progress) {
        return loaded.map_err(|source| OpenError::Trace { path: display_path(path), source });
    }
    load_source_with_progress(&source, options, progress).map_err(|source| OpenError::Model { path: display_path(path), source })
}

/// Loads an opened log. For a mapped file, the pages already parsed are
/// given back to the kernel as the load moves on (the model copies what it
/// keeps), so the resident set stays at the model plus a window of the
/// file, however large the file is.
pub fn load_source_with_progress(source: &LogSource, options: &LoadOptions, mut progress: impl FnMut(u64)) -> Result<Model, Error> {
    let mut release = ReleaseConsumed::new(match source {
        LogSource::Mapped(m) => Some(m),
        LogSource::Owned(_) => None,
    });
    load_with_progress(source.bytes(), options, |done| {
        release.upto(done as usize);
        progress(done);
    })
}

/// Gives back the resident pages of the part of a mapped log that has been
/// read: the consumed text need not stay in this process's resident set (it
/// stays in the page cache).
///
/// Before the parse starts, the map is advised as random access: cutting the
/// log into chunks reads one line end per chunk, and with the kernel's
/// fault-around every such read would map 64 KB (an eighth of the file at
/// the default chunk size). Sequential access is advised again once the
/// first chunk is back.
struct ReleaseConsumed<'a> {
    map: Option<&'a memmap2::Mmap>,
    released: usize,
    started: bool,
}

impl<'a> ReleaseConsumed<'a> {
    const STEP: usize = 32 << 20;
    const MARGIN: usize = 4 << 20;

    fn new(map: Option<&'a memmap2::Mmap>) -> Self {
        if let Some(m) = map {
            let _ = m.advise(memmap2::Advice::Random);
        }
        ReleaseConsumed { map, released: 0, started: false }
    }

    /// A new pass from the file's start: what it reads is given back again.
    fn restart(&mut self) {
        self.released = 0;
    }

    fn upto(&mut self, done: usize) {
        let Some(map) = self.map else { return };
        if !self.started {
            self.started = true;
            let _ = map.advise(memmap2::Advice::Sequential);
        }
        let end = done.saturating_sub(Self::MARGIN) & !0xFFF;
        if end >= self.released + Self::STEP && end <= map.len() {
            // Safety: the mapping is a read-only, shared mapping of a file
            // that this process never writes. MADV_DONTNEED only drops the
            // page-table entries of `[released, end)` (page-aligned, inside
            // the map): a later read of those bytes (an error message
            // counting lines) faults them in again from the file, with the
            // same contents. Nothing is freed that Rust code could observe.
            unsafe {
                let _ = map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, self.released, end - self.released);
            }
            self.released = end;
        }
    }
}
