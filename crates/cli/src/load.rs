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

/// Opens and loads the log named by `args`: from the model cache when it
/// holds this log's model (see the `clrprof-cache` crate), else from the log (then saved
/// in the cache when the load took long enough).
pub fn load(args: &LoadArgs, quiet: bool) -> Result<Loaded> {
    let start = Instant::now();
    let path = (args.log.as_os_str() != "-").then_some(args.log.as_path());
    let got = clrprof_cache::load_through(path, || load_source(args, &args.open()?, quiet), |l| &l.model)?;
    match got {
        clrprof_cache::Got::Loaded(loaded) => Ok(loaded),
        clrprof_cache::Got::Cached(model) => {
            let model = *model;
            let seconds = start.elapsed().as_secs_f64();
            let mut memory = MemoryProbe::default();
            memory.sample();
            strict_check(args, &model)?;
            Ok(Loaded { model, seconds, memory })
        }
    }
}

/// `--strict`: the first warning of the log is an error.
fn strict_check(args: &LoadArgs, model: &Model) -> Result<()> {
    if args.strict {
        if let Some(w) = model.diagnostics().first() {
            bail!("{}: {}", args.shown().display(), FormatError::from_warning(w));
        }
    }
    Ok(())
}

/// Loads an opened log.
pub fn load_source(args: &LoadArgs, source: &LogSource, quiet: bool) -> Result<Loaded> {
    let data = source.bytes();
    let path = args.shown();
    let defaults = LoadOptions::default();
    let options = LoadOptions { chunks: ChunkOptions { threads: args.threads.map(usize::from), ..defaults.chunks } };
    let mut progress = Progress::new(data.len() as u64, quiet);
    let mut memory = MemoryProbe::default();
    let start = Instant::now();
    let result = model::load_source_with_progress(source, &options, |done| {
        progress.update(done);
        memory.sample();
    });
    progress.finish();
    let seconds = start.elapsed().as_secs_f64();
    memory.sample();
    let model = match result {
        Ok(m) => m,
        Err(e) => bail!("{}: {e}", path.display()),
    };
    strict_check(args, &model)?;
    Ok(Loaded { model, seconds, memory })
}
