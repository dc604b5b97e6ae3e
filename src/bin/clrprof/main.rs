//! The `clrprof` command-line tool: a thin layer over the library.

mod cmd_gen;
mod cmd_stats;
mod common;

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
    /// Write a synthetic, heap-consistent log and its ground truth.
    Gen(cmd_gen::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Stats(a) => cmd_stats::run(a),
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
