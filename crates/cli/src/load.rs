//! Loading a log into a model, with a progress bar on a terminal.

use crate::common::LoadArgs;
use anyhow::{bail, Result};
use clrprof::format::{ChunkOptions, Error as FormatError, Kind, LogSource};
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
    let loaded = match got {
        clrprof_cache::Got::Loaded(loaded) => loaded,
        clrprof_cache::Got::Cached(model) => {
            let model = *model;
            let seconds = start.elapsed().as_secs_f64();
            let mut memory = MemoryProbe::default();
            memory.sample();
            strict_check(args, &model)?;
            Loaded { model, seconds, memory }
        }
    };
    crate::common::note_estimates(&loaded.model, &args.shown(), quiet);
    crate::common::note_incomplete(&loaded.model, &args.shown());
    Ok(loaded)
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
    if clrprof::eventpipe::is_nettrace(data) || clrprof::gcdump::is_gcdump(data) {
        return load_foreign(args, data, quiet);
    }
    if let Err(e) = some_record(data) {
        bail!("{}: {e}", path.display());
    }
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

/// How many of a trace's import warnings are printed.
const SHOWN_WARNINGS: usize = 10;

/// Loads a NetTrace (EventPipe) trace or a `.gcdump`: imported into CLRProfiler records,
/// then loaded as a log; what the import could not do is said on standard
/// error (unless `quiet`).
fn load_foreign(args: &LoadArgs, data: &[u8], quiet: bool) -> Result<Loaded> {
    let path = args.shown();
    let defaults = LoadOptions::default();
    let options = LoadOptions { chunks: ChunkOptions { threads: args.threads.map(usize::from), ..defaults.chunks } };
    let mut memory = MemoryProbe::default();
    let start = Instant::now();
    let model = match model::load_foreign(data, &options, |_| memory.sample()) {
        Some(Ok(m)) => m,
        Some(Err(e)) => bail!("{}: {e}", path.display()),
        None => bail!("{}: neither a NetTrace trace nor a .gcdump", path.display()),
    };
    let seconds = start.elapsed().as_secs_f64();
    memory.sample();
    if let Some(facts) = model.imported() {
        if args.strict {
            if let Some(w) = facts.warnings.first() {
                bail!("{}: {w}", path.display());
            }
        }
        if !quiet {
            // The first ones; a trace that lost events at every turn would
            // bury the answer under them (their total is said by the
            // `incomplete` warning).
            for w in facts.warnings.iter().take(SHOWN_WARNINGS) {
                eprintln!("clrprof: warning: {}: {w}", path.display());
            }
            if facts.warnings.len() > SHOWN_WARNINGS {
                eprintln!("clrprof: warning: {}: ... and {} more warnings like these", path.display(), facts.warnings.len() - SHOWN_WARNINGS);
            }
        }
    }
    Ok(Loaded { model, seconds, memory })
}

/// Whether any line of `data` starts with a record letter: the reader skips
/// every other line (as CLRProfiler's does), so a file of only such lines
/// would load as an empty log and print all-zero figures. A log with some
/// junk lines among its records still loads, with warnings. An empty file
/// passes here: the library says it has no records.
///
/// Looks at the first line of a log only; reads a file that is not one to
/// its end (at memchr speed).
fn some_record(data: &[u8]) -> Result<(), String> {
    let mut at = 0;
    let mut lines = 0u64;
    while at < data.len() {
        if Kind::from_byte(data[at]).is_some() {
            return Ok(());
        }
        lines += 1;
        match memchr::memchr(b'\n', &data[at..]) {
            Some(i) => at += i + 1,
            None => break,
        }
    }
    if data.is_empty() {
        return Ok(());
    }
    let first: String = data
        .iter()
        .take_while(|&&b| b != b'\n' && b != b'\r')
        .take(40)
        .map(|&b| if (0x20..0x7f).contains(&b) { b as char } else { '.' })
        .collect();
    let letters: Vec<String> = Kind::ALL.iter().map(|k| k.letter().to_string()).collect();
    let letters = letters.join(" ");
    Err(format!(
        "not a CLRProfiler log: none of its {} starts with a record letter \
         (line 1, byte 0: {first:?}; expected a line such as `t 1 0 System.String`, \
         whose first character is one of {letters}, in either case); `clrprof stats` shows what the lines hold",
        crate::common::count(lines, "line", "lines")
    ))
}

#[cfg(test)]
mod tests {
    use super::some_record;

    #[test]
    fn a_file_without_a_record_line_is_not_a_log() {
        assert!(some_record(b"").is_ok());
        assert!(some_record(b"i 0\n").is_ok());
        assert!(some_record(b"# junk\n  indented\n1234\nz a comment").is_ok());
        assert!(some_record(b"# junk\n  indented\n1234\n").is_err());
        let e = some_record(b"# junk\r\n- more junk").err().unwrap_or_default();
        assert!(e.contains("none of its 2 lines") && e.contains("line 1, byte 0: \"# junk\""), "{e}");
        assert!(some_record(b"# no newline at all").err().unwrap_or_default().contains("its 1 line "));
    }
}
