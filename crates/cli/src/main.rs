//! The `clrprof` command-line tool: a thin layer over the library.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

mod cmd_ages;
mod cmd_cache;
mod cmd_calls;
mod cmd_check;
mod cmd_collect;
mod cmd_ctl;
mod cmd_dump;
mod cmd_dump_diff;
mod cmd_leaks;
mod cmd_dumps;
mod cmd_export;
mod cmd_heap_dump;
mod cmd_heap_dump_eventpipe;
mod cmd_lifetime;
mod cmd_load_model;
mod cmd_record;
mod cmd_record_attached;
mod cmd_record_sampled;
mod cmd_ps;
mod cmd_watch;
mod watch_actions;
mod watch_rules;
mod sampled_stream;
mod cmd_footprint;
mod cmd_gen;
mod cmd_join;
mod cmd_handles;
mod cmd_diff;
mod cmd_flame;
mod cmd_functions;
mod cmd_graph;
mod cmd_groups;
mod cmd_who;
mod cmd_stats;
mod stats_foreign;
mod cmd_summary;
mod cmd_sessions;
mod cmd_survivors;
mod cmd_threads;
mod cmd_types;
mod cmd_ui;
mod cmd_timeline;
mod common;
mod dump_cost;
mod help;
mod dump_compare;
mod interrupt;
mod dump_sites;
mod live;
mod load;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
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
    /// CLRProfiler's Summary figures (loads the log and simulates the heap).
    Summary(cmd_summary::Args),
    /// Bytes and objects per type: allocated, relocated, live (at the end or
    /// at a time), finalized; with CLRProfiler's size classes.
    Types(cmd_types::Args),
    /// Allocated bytes per function, inclusive and exclusive.
    Functions(cmd_functions::Args),
    /// Allocated bytes per module, inclusive and exclusive.
    Modules(cmd_groups::Args),
    /// Allocated bytes per class (the type part of function names).
    Classes(cmd_groups::Args),
    /// The functions and stacks that allocated a type.
    Who(cmd_who::Args),
    /// CLRProfiler's Allocation Graph: caller -> callee, weighted by bytes.
    Graph(cmd_graph::Args),
    /// A flame graph of allocated bytes by stack (SVG), or its folded stacks.
    Flame(cmd_flame::Args),
    /// Per type: objects reclaimed at gen 0/1/2/LOH collections and alive at the end.
    Lifetime(cmd_lifetime::Args),
    /// Age histograms (GCs survived, ms), or CLRProfiler's Histogram by Age at a time.
    Ages(cmd_ages::Args),
    /// Objects allocated in a window and still alive later, by type and stack.
    Survivors(cmd_survivors::Args),
    /// CLRProfiler's Time Line: a PNG (--png), or live bytes by type at a
    /// moment with the GC and comment markers.
    Timeline(cmd_timeline::Args),
    /// The threads (the ids `--thread` takes): objects and bytes each
    /// allocated, first and last allocation (tick and ms).
    Threads(cmd_threads::Args),
    /// Call counts per function, caller/callee edges, the call tree.
    Calls(cmd_calls::Args),
    /// GC handles created, destroyed and surviving, by creating stack.
    Handles(cmd_handles::Args),
    /// The heap dumps of a log: objects, bytes and roots by kind.
    Dumps(cmd_dumps::Args),
    /// One heap dump: objects per type, retained sizes, paths from roots.
    Dump(cmd_dump::Args),
    /// What changed between two heap dumps (new objects, growth by type).
    DumpDiff(cmd_dump_diff::Args),
    /// Leaks from three or more heap dumps of one process: the types that
    /// keep growing, what holds them, from which root (exit 1: a leak, 0:
    /// none, 2: cannot tell).
    Leaks(cmd_leaks::Args),
    /// Allocation and final-heap differences between two logs.
    Diff(cmd_diff::Args),
    /// A memory regression gate: a candidate log against a baseline under
    /// rules (exit 0 pass, 1 fail, 2 undecided); JSON and JUnit reports.
    Check(cmd_check::Args),
    /// Write the log as a pprof profile, a speedscope file or Parquet tables.
    Export(cmd_export::Args),
    /// What a file holds: a log's records, a trace's events and the
    /// questions it can answer (no heap simulation).
    Stats(cmd_stats::Args),
    /// Load time, peak memory and bytes held by each table of the model.
    Footprint(cmd_footprint::Args),
    /// Write a synthetic, heap-consistent log and its ground truth.
    Gen(cmd_gen::Args),
    /// Run a .NET program under the capture agent and write its log, or
    /// attach to a running one (-p PID).
    Record(cmd_record::Args),
    /// Take a heap dump of a running .NET process (attaching the agent if
    /// it has none).
    HeapDump(cmd_heap_dump::Args),
    /// The .NET processes you can see: runtime, profiler, sessions,
    /// container, command line.
    Ps(cmd_ps::Args),
    /// Follow running .NET processes' runtime counters live (agent-free),
    /// and act on rules: heap dumps, traces, commands.
    Watch(cmd_watch::Args),
    /// Every view in the browser: a local web server over the logs (the
    /// address it prints carries the token every request needs).
    Ui(cmd_ui::Args),
    /// Receive logs streamed by capture agents (prints CLRPROF_TARGET and
    /// CLRPROF_TOKEN for them).
    Collect(cmd_collect::Args),
    /// A collector's sessions, live and finished.
    Sessions(cmd_sessions::Args),
    /// The model cache: which logs' models it holds (--clear removes them).
    Cache(cmd_cache::Args),
    /// Send a command to a live session: dump, comment TEXT,
    /// allocations on|off, calls on|off, flush.
    Ctl(cmd_ctl::Args),
    /// Write pieces of one log (a collector's part, then the agent's
    /// spool) as one file.
    Join(cmd_join::Args),
    /// Load a file and write its model to standard output (the UI and the
    /// collector run it as a child under the file's memory budget).
    #[command(name = "__load-model", hide = true)]
    LoadModel(cmd_load_model::Args),
}

fn main() -> ExitCode {
    // Output piped into `head` and the like: end quietly when the reader
    // goes away, as command-line tools do, instead of failing to print.
    // Safety: restoring the default disposition of SIGPIPE before any
    // thread starts has no other effect.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let matches = help::grouped(Cli::command()).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // `--json`: an error is a JSON object on standard output too.
    let json = matches
        .subcommand()
        .and_then(|(_, m)| m.try_get_one::<bool>("json").ok().flatten().copied())
        .unwrap_or(false);
    let result = match cli.command {
        Command::Stats(a) => cmd_stats::run(a),
        Command::Summary(a) => cmd_summary::run(a),
        Command::Footprint(a) => cmd_footprint::run(a),
        Command::Types(a) => cmd_types::run(a),
        Command::Handles(a) => cmd_handles::run(a),
        Command::Gen(a) => cmd_gen::run(a),
        Command::Dumps(a) => cmd_dumps::run(a),
        Command::Dump(a) => cmd_dump::run(a),
        Command::DumpDiff(a) => cmd_dump_diff::run(a),
        Command::Lifetime(a) => cmd_lifetime::run(a),
        Command::Ages(a) => cmd_ages::run(a),
        Command::Survivors(a) => cmd_survivors::run(a),
        Command::Calls(a) => cmd_calls::run(a),
        Command::Threads(a) => cmd_threads::run(a),
        Command::Timeline(a) => cmd_timeline::run(a),
        Command::Record(a) => return finish(cmd_record::run(a), json),
        Command::HeapDump(a) => cmd_heap_dump::run(a),
        Command::Ps(a) => cmd_ps::run(a),
        Command::Watch(a) => cmd_watch::run(a),
        Command::Ui(a) => cmd_ui::run(a),
        Command::Functions(a) => cmd_functions::run(a),
        Command::Modules(a) => cmd_groups::run(a, cmd_groups::Grouping::Module),
        Command::Classes(a) => cmd_groups::run(a, cmd_groups::Grouping::Class),
        Command::Who(a) => cmd_who::run(a),
        Command::Graph(a) => cmd_graph::run(a),
        Command::Flame(a) => cmd_flame::run(a),
        Command::Diff(a) => cmd_diff::run(a),
        Command::Check(a) => return cmd_check::main(a),
        Command::Leaks(a) => return cmd_leaks::main(a),
        Command::Export(a) => cmd_export::run(a),
        Command::Collect(a) => cmd_collect::run(a),
        Command::Sessions(a) => cmd_sessions::run(a),
        Command::Cache(a) => cmd_cache::run(a),
        Command::Ctl(a) => cmd_ctl::run(a),
        Command::Join(a) => cmd_join::run(a),
        Command::LoadModel(a) => cmd_load_model::run(a),
    };
    finish(result.map(|()| ExitCode::SUCCESS), json)
}

/// The exit code of a command: its own, or 1 with the error on standard
/// error; with `--json`, as `{"error": MESSAGE}` on standard output
/// instead, where a program reading the JSON looks.
fn finish(result: anyhow::Result<ExitCode>, json: bool) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(e) if json => {
            println!("{}", serde_json::json!({ "error": message(&e) }));
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("clrprof: {}", message(&e));
            ExitCode::FAILURE
        }
    }
}

/// An error and its causes in one line, `a: b: c`, as anyhow's `{:#}`
/// prints them, but without a cause whose text the message already holds:
/// several error types print their source in their own message and return
/// it as their source too, which would say "No such file or directory
/// (os error 2)" twice.
fn message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.is_empty() {
            out = text;
        } else if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{message, Cli};
    use clap::CommandFactory;

    /// A cause already in the message is not repeated; others are.
    #[test]
    fn each_cause_once() {
        let io = || std::io::Error::from_raw_os_error(2);
        #[derive(Debug)]
        struct Wraps(std::io::Error);
        impl std::fmt::Display for Wraps {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "cannot list /x: {}", self.0)
            }
        }
        impl std::error::Error for Wraps {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let e = anyhow::Error::new(Wraps(io()));
        assert_eq!(message(&e), "cannot list /x: No such file or directory (os error 2)");
        let e = anyhow::Error::new(io()).context("cannot read /y");
        assert_eq!(message(&e), "cannot read /y: No such file or directory (os error 2)");
    }

    /// clap's own consistency checks (unique argument ids, valid defaults
    /// and conflicts), which release builds skip: two flattened options
    /// with one id once made `--thread` set the parse thread count.
    #[test]
    fn arguments_are_consistent() {
        Cli::command().debug_assert();
    }
}
