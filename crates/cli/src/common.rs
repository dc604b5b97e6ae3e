//! Options and helpers shared by the subcommands.

use anyhow::Result;
use clrprof::format::{display_path, ChunkOptions, LogSource};
use clrprof::model::Model;
use clrprof::query::{Filter, TimeWindow};
use std::path::PathBuf;

/// Options every log-reading command takes.
#[derive(clap::Args, Clone, Debug)]
pub struct LoadArgs {
    /// The log file (`-` for standard input).
    pub log: PathBuf,
    /// Threads to parse with (default: all cores).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
    /// Treat the first irregularity in the log as an error.
    #[arg(long)]
    pub strict: bool,
}

impl LoadArgs {
    /// Chunking options from the flags.
    pub fn chunk_options(&self) -> ChunkOptions {
        ChunkOptions { threads: self.threads.map(usize::from), ..ChunkOptions::default() }
    }

    /// Opens the log.
    pub fn open(&self) -> Result<LogSource> {
        Ok(LogSource::open(&self.log)?)
    }

    /// The path for messages.
    pub fn shown(&self) -> PathBuf {
        display_path(&self.log)
    }
}

/// Prints JSON, pretty.
pub fn print_json(v: &serde_json::Value) -> Result<()> {
    let s = serde_json::to_string_pretty(v)?;
    println!("{s}");
    Ok(())
}

/// A number with thousands separators.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// How a query command prints: a table or JSON, and how many rows.
#[derive(clap::Args, Clone, Debug)]
pub struct OutputArgs {
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Show at most this many rows per table (0: all).
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// No progress bar and no warning count.
    #[arg(long, short)]
    pub quiet: bool,
}

impl OutputArgs {
    /// `top` as a limit (`usize::MAX` for 0).
    pub fn limit(&self) -> usize {
        if self.top == 0 {
            usize::MAX
        } else {
            self.top
        }
    }
}

/// Options every query command takes: the log, output form, how many rows,
/// and which part of the log to look at.
#[derive(clap::Args, Clone, Debug)]
pub struct QueryArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub out: OutputArgs,
    /// Only what happened at or after this time (milliseconds).
    #[arg(long, value_name = "MS")]
    pub from: Option<f64>,
    /// Only what happened at or before this time (milliseconds).
    #[arg(long, value_name = "MS")]
    pub to: Option<f64>,
    /// Only what happened between two comments (`z` lines), given by their
    /// text (exact, or else a substring).
    #[arg(long, num_args = 2, value_names = ["A", "B"], conflicts_with_all = ["from", "to"])]
    pub between_comments: Option<Vec<String>>,
    /// Only what these threads did (thread ids as in the log; repeatable).
    #[arg(long = "thread", id = "thread_filter", value_name = "ID")]
    pub threads: Vec<i32>,
}

impl QueryArgs {
    /// The time window from the flags.
    pub fn window(&self) -> TimeWindow {
        match &self.between_comments {
            Some(v) if v.len() == 2 => TimeWindow::BetweenComments(v[0].clone(), v[1].clone()),
            _ if self.from.is_some() || self.to.is_some() => TimeWindow::Millis { from: self.from, to: self.to },
            _ => TimeWindow::All,
        }
    }

    /// The filter, resolved against a loaded model.
    pub fn filter(&self, model: &Model) -> Result<Filter> {
        Ok(Filter::resolve(model, &self.window(), &self.threads)?)
    }

    /// `top` as a limit (`usize::MAX` for 0).
    pub fn limit(&self) -> usize {
        self.out.limit()
    }

    /// Loads the model (progress bar unless `--quiet`).
    pub fn load(&self) -> Result<crate::load::Loaded> {
        crate::load::load(&self.load, self.out.quiet)
    }

    /// Tells on standard error how many warnings the load produced.
    pub fn report_warnings(&self, model: &Model) {
        if model.diagnostics().total() > 0 && !self.out.quiet {
            eprintln!(
                "clrprof: {} warning(s) while reading; `clrprof stats` lists them",
                thousands(model.diagnostics().total())
            );
        }
    }
}

/// Prints a table: a header row and rows of cells; columns after the first
/// are right-aligned.
pub fn print_table(header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i < widths.len() {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let w = widths.get(i).copied().unwrap_or(0);
            if i > 0 {
                s.push_str("  ");
            }
            if i == 0 {
                s.push_str(&format!("{c:<w$}"));
            } else {
                s.push_str(&format!("{c:>w$}"));
            }
        }
        println!("{}", s.trim_end());
    };
    line(header.to_vec());
    for r in rows {
        line(r.iter().map(String::as_str).collect());
    }
}
