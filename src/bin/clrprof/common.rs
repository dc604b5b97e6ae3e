//! Options and helpers shared by the subcommands.

use anyhow::Result;
use clrprof::format::{display_path, ChunkOptions, LogSource};
use std::path::PathBuf;

/// Options every log-reading command takes.
#[derive(clap::Args, Clone, Debug)]
pub struct LoadArgs {
    /// The log file (`-` for standard input).
    pub log: PathBuf,
    /// Threads to parse with (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Treat the first irregularity in the log as an error.
    #[arg(long)]
    pub strict: bool,
}

impl LoadArgs {
    /// Chunking options from the flags.
    pub fn chunk_options(&self) -> ChunkOptions {
        ChunkOptions { threads: self.threads, ..ChunkOptions::default() }
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
