//! `clrprof record --sampled`: an EventPipe session instead of the agent
//! (no profiler, no restart, production overhead): sampled allocations
//! (`GC/AllocationTick`) with their stacks, every GC with its ranges and
//! survivors, and the method events that name the frames, written as a
//! `.nettrace` that every command opens. With `-p PID` the process is
//! already running; with a command the program is started suspended and
//! resumed once the session runs, so the trace holds its first
//! allocation. With `--target` the trace goes to `clrprof collect`
//! instead, as it arrives ([`crate::sampled_stream`]).

use crate::sampled_stream::ToCollector;
use anyhow::{bail, Context, Result};
use clrprof_agent::config::Spool;
use clrprof_trace::{launch, presets, Session, Stop};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Where the trace goes: a file, or a collector (through the streaming
/// client, which starts once the process id is known).
enum Dest {
    File { out: std::io::BufWriter<std::fs::File>, path: PathBuf },
    Collector { target: String, token: clrprof_wire::Token, spool: Option<PathBuf>, client: Option<Box<ToCollector>> },
}

impl Dest {
    /// The writer for process `pid`'s trace.
    fn writer(&mut self, pid: u32) -> &mut dyn Write {
        match self {
            Dest::File { out, .. } => out,
            Dest::Collector { target, token, spool, client } => {
                // Beside -o when given, else in the user's private folder
                // ($TMPDIR/clrprof-<uid>), where no one else can plant the name.
                let spool = spool.clone().map(Spool::At).unwrap_or_else(|| Spool::Private(format!("clrprof_sampled_{pid}.spool.nettrace")));
                client.get_or_insert_with(|| Box::new(ToCollector::start(target, token.clone(), spool, pid))).as_mut()
            }
        }
    }

    /// Where it went, in words.
    fn shown(&self) -> String {
        match self {
            Dest::File { path, .. } => path.display().to_string(),
            Dest::Collector { target, .. } => format!("the collector at {target}"),
        }
    }
}

/// Runs `record --sampled`.
pub fn run(args: &crate::cmd_record::Args) -> Result<ExitCode> {
    if args.pid.is_none() {
        // CoreCLR 3.x would run the program to its end outside the session.
        crate::cmd_record::refuse_before_start(&args.command)?;
    }
    let mut dest = match (&args.target, &args.token_file) {
        (Some(target), Some(token_file)) => {
            // The collector must take the token before anything starts.
            let token = clrprof_collect::token_file::read(token_file)?;
            crate::cmd_record::check_collector(target, &token, token_file)?;
            let spool = args.output.as_deref().map(crate::cmd_record::absolute).transpose()?.map(|o| o.with_extension("spool.nettrace"));
            Dest::Collector { target: target.clone(), token, spool, client: None }
        }
        _ => {
            let (out, path) = trace_file(args)?;
            Dest::File { out, path }
        }
    };
    let done = Arc::new(AtomicBool::new(false));
    let flag = crate::interrupt::stop_flag(done.clone());
    let stop = Stop {
        flag,
        after: args.duration.map(Duration::from_secs_f64),
        max_bytes: (args.max_bytes > 0).then_some(args.max_bytes),
        ..Stop::default()
    };
    let said = |what: &str| {
        if !args.quiet {
            eprintln!("clrprof record: {what}");
        }
    };
    let result = match args.pid {
        Some(pid) => {
            let session = Session::start(pid, &presets::sampled_allocations(false)).map_err(|e| anyhow::anyhow!("{e}"))?;
            said(&format!(
                "EventPipe session with process {pid}: sampled allocations, GCs and stacks into {} {}",
                dest.shown(),
                match args.duration {
                    Some(d) => format!("for {d} s"),
                    None => "until it ends (Ctrl-C stops)".into(),
                }
            ));
            let w = session.write_to(&mut dest.writer(pid), &stop, |_| {}).map_err(|e| anyhow::anyhow!("{e}"))?;
            (w, None, pid)
        }
        None => {
            let dir = clrprof_files::private_temp_dir("clrprof-port").context("cannot make a private folder for the diagnostics port")?;
            let mut cmd = Command::new(&args.command[0]);
            cmd.args(&args.command[1..]);
            let launch::Launched { pid, session, port } = match launch::launch(&mut cmd, &presets::sampled_allocations(false), &dir) {
                Ok(l) => l,
                Err(e) => {
                    let _ = std::fs::remove_dir_all(&dir);
                    bail!("{e}");
                }
            };
            said(&format!("started process {pid} under an EventPipe session; writing {}", dest.shown()));
            // The stream ends when the program ends (or on Ctrl-C, with
            // the rundown, while it runs on).
            let w = session.write_to(&mut dest.writer(pid), &stop, |_| {}).map_err(|e| anyhow::anyhow!("{e}"))?;
            let status = port.tree().wait_root();
            // Every process the program started has the port's address:
            // it is served until the last of them has ended.
            if !port.tree().is_empty() {
                said(&format!(
                    "process {pid} ended; processes it started still run, and the diagnostics port {} is served for them until they end (a further Ctrl-C stops waiting)",
                    port.dir().display()
                ));
            }
            let signals = crate::interrupt::count();
            let folder = port.dir().to_path_buf();
            if !port.close(&|| crate::interrupt::count() > signals) {
                eprintln!(
                    "clrprof record: stopped waiting for the processes process {pid} started; the folder {} is left in place (only you can enter it) so that no one else can take its name while they run: remove it once they have ended",
                    folder.display()
                );
            }
            (w, status, pid)
        }
    };
    done.store(true, Ordering::SeqCst);
    let (written, status, pid) = result;
    let how = if written.stopped { "" } else { " without the rundown: methods compiled before the session may be unnamed" };
    let shown = dest.shown();
    match dest {
        Dest::File { mut out, path } => {
            out.flush().with_context(|| format!("cannot write {}", path.display()))?;
            said(&format!(
                "{}; wrote {} ({} bytes, {} GCs){how}; try `clrprof types {}`",
                if written.cut.is_some() {
                    "cut off"
                } else if written.stopped {
                    "stopped"
                } else {
                    "the process ended"
                },
                path.display(),
                written.bytes,
                written.gcs,
                path.display()
            ));
        }
        Dest::Collector { target, client, .. } => {
            let Some(client) = client else { bail!("process {pid} sent no trace: nothing was streamed to {target}") };
            let outcome = client.finish();
            let (report, kept) = stream_report(&outcome, written.bytes, &target);
            if kept == Kept::Incomplete {
                bail!("{report}{how}");
            }
            let whole = kept == Kept::Whole;
            let text = format!(
                "{} ({} GCs in the trace); {report}{how}{}",
                if written.stopped { "stopped" } else { "the process ended" },
                written.gcs,
                if whole { format!("; {}", crate::cmd_record::sessions_hint(args.token_file.as_deref())) } else { String::new() }
            );
            if whole {
                said(&text);
            } else {
                // Not whole at the collector: said even with --quiet.
                eprintln!("clrprof record: {text}");
            }
        }
    }
    if let Some(cut) = written.cut {
        bail!(
            "{cut}: the trace in {shown} is INCOMPLETE ({} bytes kept, without its end mark; every reader reports it as truncated)",
            written.bytes
        );
    }
    Ok(match status {
        Some(s) => ExitCode::from(s.code().map_or(1, |c| c.clamp(0, 255) as u8)),
        None => ExitCode::SUCCESS,
    })
}

/// Where a streamed trace ended up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kept {
    /// All of it at the collector.
    Whole,
    /// The collector's part and the spool: all of it, in two pieces.
    Split,
    /// Some bytes are in neither.
    Incomplete,
}

/// What became of a streamed trace of `total` bytes, in numbers that add
/// up: bytes the collector confirmed, bytes in the spool, bytes lost.
/// Never claims a stream that did not happen.
pub(crate) fn stream_report(o: &clrprof_agent::stream::Outcome, total: u64, target: &str) -> (String, Kept) {
    let session = o.session.as_deref().map(|s| format!(" as session {s}")).unwrap_or_default();
    let streamed = o.streamed.min(total);
    match &o.spool {
        None if o.lost == 0 && streamed == total => (format!("streamed the whole trace ({total} bytes) to {target}{session}"), Kept::Whole),
        Some((spool, from)) if o.caught_up && o.lost == 0 => (format!(
            "streamed the whole trace ({total} bytes) to {target}{session}: the collector was away from byte {from} on and was caught up from the spool {} (the stored trace is whole)",
            spool.display()
        ), Kept::Whole),
        Some((spool, from)) if o.lost == 0 => (format!(
            "streamed bytes 0 to {from} of the trace to {target}{session}, then the remaining {} bytes to the spool {} ({total} bytes in all, nothing lost); `clrprof join` puts the collector's part and the spool together",
            total.saturating_sub(*from),
            spool.display()
        ), Kept::Split),
        spool => {
            let spooled = total.saturating_sub(streamed).saturating_sub(o.lost);
            let where_ = match (spool, &o.spool_error) {
                (Some((p, _)), _) => format!("{spooled} bytes went to the spool {}", p.display()),
                (None, Some(e)) => format!("nothing was spooled ({e})"),
                (None, None) => "nothing was spooled".to_string(),
            };
            (format!(
                "the trace is incomplete: of its {total} bytes, the collector at {target} confirmed {streamed}{session}, {where_}, and {} bytes could be neither streamed nor spooled",
                total.saturating_sub(streamed).saturating_sub(spooled)
            ), Kept::Incomplete)
        }
    }
}

/// The trace's file (`-o`, or a name from the program or the process id
/// and the time), created before the session starts, so that a refused
/// file leaves the process untouched: never through a link, never over a
/// file without --force.
fn trace_file(args: &crate::cmd_record::Args) -> Result<(std::io::BufWriter<std::fs::File>, PathBuf)> {
    let stamp = crate::cmd_record::local_timestamp();
    let output = match (&args.output, args.pid) {
        (Some(p), _) => p.clone(),
        (None, Some(pid)) => PathBuf::from(format!("pid{pid}_{stamp}.nettrace")),
        (None, None) => {
            PathBuf::from(crate::cmd_record::default_name(&args.command, &stamp).replace("_%p_", "_").replace(".log", ".nettrace"))
        }
    };
    let output = crate::cmd_record::absolute(&output)?;
    if output.is_dir() {
        bail!("cannot write {}: it is a directory", output.display());
    }
    let file = clrprof_files::create(&output, args.force).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            anyhow::anyhow!("{} exists; clrprof record never overwrites a trace (--force allows it, or pick another --output)", output.display())
        } else {
            anyhow::anyhow!("cannot create {}: {e}", output.display())
        }
    })?;
    Ok((std::io::BufWriter::with_capacity(1 << 20, file), output))
}
