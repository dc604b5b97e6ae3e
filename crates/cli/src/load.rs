//! Loading a log into a model, with a progress bar on a terminal.

use crate::common::LoadArgs;
use anyhow::{bail, Result};
use clrprof::format::{ChunkOptions, Error as FormatError, LogSource};
use clrprof::model::{self, LoadOptions, Model};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// A progress bar on standard error that appears only on a terminal, only
/// once a load has taken a second, and never with `--quiet`.
pub struct Progress {
    bar: ProgressBar,
    start: Instant,
    enabled: bool,
    shown: bool,
}

impl Progress {
    /// A bar for `total` bytes.
    pub fn new(total: u64, quiet: bool) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        if let Ok(style) =
            ProgressStyle::with_template("{spinner} loading [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        Progress { bar, start: Instant::now(), enabled: !quiet && std::io::stderr().is_terminal(), shown: false }
    }

    /// Bytes done so far.
    pub fn update(&mut self, done: u64) {
        if self.enabled && !self.shown && self.start.elapsed() >= Duration::from_secs(1) {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            self.shown = true;
        }
        self.bar.set_position(done);
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// Gives back the resident pages of the part of a mapped log that has been
/// read: the model copies what it keeps, so the consumed text need not stay
/// in this process's resident set (it stays in the page cache).
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

/// Peak memory of this process, from `/proc/self/status`.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoryProbe {
    /// Peak resident set (`VmHWM`), bytes.
    pub peak_rss: u64,
    /// Largest anonymous resident memory seen (`RssAnon`, sampled after
    /// every parsed chunk and at the end), bytes.
    pub peak_anon: u64,
}

impl MemoryProbe {
    /// Reads the current figures and keeps the largest.
    pub fn sample(&mut self) {
        let Ok(s) = std::fs::read_to_string("/proc/self/status") else { return };
        for line in s.lines() {
            let kb = |l: &str| l.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) * 1024;
            if line.starts_with("VmHWM:") {
                self.peak_rss = self.peak_rss.max(kb(line));
            } else if line.starts_with("RssAnon:") {
                self.peak_anon = self.peak_anon.max(kb(line));
            }
        }
    }
}

/// A loaded model and what loading it cost.
pub struct Loaded {
    /// The model.
    pub model: Model,
    /// Wall-clock seconds for parse and simulation.
    pub seconds: f64,
    /// Peak memory during the load.
    pub memory: MemoryProbe,
}

/// Opens and loads the log named by `args`.
pub fn load(args: &LoadArgs, quiet: bool) -> Result<Loaded> {
    let source = args.open()?;
    load_source(args, &source, quiet)
}

/// Loads an opened log.
pub fn load_source(args: &LoadArgs, source: &LogSource, quiet: bool) -> Result<Loaded> {
    let data = source.bytes();
    let path = args.shown();
    let defaults = LoadOptions::default();
    let options = LoadOptions { chunks: ChunkOptions { threads: args.threads.map(usize::from), ..defaults.chunks } };
    let mut progress = Progress::new(data.len() as u64, quiet);
    let mut memory = MemoryProbe::default();
    let mut release = ReleaseConsumed::new(match source {
        LogSource::Mapped(m) => Some(m),
        LogSource::Owned(_) => None,
    });
    let start = Instant::now();
    let result = model::load_with_progress(data, &options, |done| {
        progress.update(done);
        memory.sample();
        release.upto(done as usize);
    });
    progress.finish();
    let seconds = start.elapsed().as_secs_f64();
    memory.sample();
    let model = match result {
        Ok(m) => m,
        Err(e) => bail!("{}: {e}", path.display()),
    };
    if args.strict {
        if let Some(w) = model.diagnostics().first() {
            bail!("{}: {}", path.display(), FormatError::from_warning(w));
        }
    }
    Ok(Loaded { model, seconds, memory })
}
