//! The `clrprof` command-line tool: a thin layer over the library.

mod cmd_gen;
mod cmd_footprint;
mod cmd_stats;
mod cmd_summary;
mod common;
mod load;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Load, query, write and record CLRProfiler .NET memory-profile logs.
#[derive(Parser)]
#[command(name = "clrprof", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Record counts, definitions and warnings of a log (no heap simulation).
    Stats(cmd_stats::Args),
    /// CLRProfiler's Summary figures (loads the log and simulates the heap).
    Summary(cmd_summary::Args),
    /// Load time, peak memory and bytes held by each table of the model.
    Footprint(cmd_footprint::Args),
    /// Write a synthetic, heap-consistent log and its ground truth.
    Gen(cmd_gen::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Stats(a) => cmd_stats::run(a),
        Command::Summary(a) => cmd_summary::run(a),
        Command::Footprint(a) => cmd_footprint::run(a),
        Command::Gen(a) => cmd_gen::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("clrprof: {e:#}");
            ExitCode::FAILURE
        }
    }
}
