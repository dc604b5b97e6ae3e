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
use clrprof_trace::{launch, presets, Session, Stop};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

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
                let spool = spool.clone().unwrap_or_else(|| std::env::temp_dir().join(format!("clrprof_sampled_{pid}.spool.nettrace")));
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
    let flag = Arc::new(AtomicBool::new(false));
    let stop = Stop { flag: flag.clone(), after: args.duration.map(Duration::from_secs_f64), after_heap_walk: false };
    // Safety: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let watcher = {
        let flag = flag.clone();
        std::thread::spawn(move || {
            while !flag.load(Ordering::SeqCst) {
                if INTERRUPTED.load(Ordering::SeqCst) {
                    flag.store(true, Ordering::SeqCst);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
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
            let launched = launch::launch(&mut cmd, &presets::sampled_allocations(false), &dir);
            let _ = std::fs::remove_dir_all(&dir);
            let launch::Launched { mut child, session } = launched.map_err(|e| anyhow::anyhow!("{e}"))?;
            let pid = child.id();
            said(&format!("started process {pid} under an EventPipe session; writing {}", dest.shown()));
            // The stream ends when the program ends (or on Ctrl-C, with
            // the rundown, while it runs on).
            let w = session.write_to(&mut dest.writer(pid), &stop, |_| {}).map_err(|e| anyhow::anyhow!("{e}"))?;
            let status = child.wait().context("cannot wait for the program")?;
            (w, Some(status), pid)
        }
    };
    flag.store(true, Ordering::SeqCst);
    let _ = watcher.join();
    let (written, status, pid) = result;
    let how = if written.stopped { "" } else { " without the rundown: methods compiled before the session may be unnamed" };
    match dest {
        Dest::File { mut out, path } => {
            out.flush().with_context(|| format!("cannot write {}", path.display()))?;
            said(&format!(
                "{}; wrote {} ({} bytes, {} GCs){how}; try `clrprof types {}`",
                if written.stopped { "stopped" } else { "the process ended" },
                path.display(),
                written.bytes,
                written.gcs,
                path.display()
            ));
        }
        Dest::Collector { target, client, .. } => {
            let Some(client) = client else { bail!("process {pid} sent no trace: nothing was streamed to {target}") };
            let outcome = client.finish();
            let session = outcome.session.as_deref().map(|s| format!(" as session {s}")).unwrap_or_default();
            let ending = if written.stopped { "stopped" } else { "the process ended" };
            match &outcome.spool {
                None => said(&format!(
                    "{ending}; streamed the trace ({} bytes, {} GCs) to {target}{session}{how}; {}",
                    written.bytes,
                    written.gcs,
                    crate::cmd_record::sessions_hint(args.token_file.as_deref())
                )),
                Some((spool, from)) if outcome.caught_up => said(&format!(
                    "{ending}; streamed the trace ({} bytes, {} GCs) to {target}{session}: the collector was away from byte {from} on and was caught up from the spool {} (the stored trace is whole){how}",
                    written.bytes,
                    written.gcs,
                    spool.display()
                )),
                Some((spool, from)) => eprintln!(
                    "clrprof record: {ending}; streamed the trace to {target}{session} until byte {from}, then to the spool {} ({} bytes in all); `clrprof join` puts the collector's part and the spool together",
                    spool.display(),
                    written.bytes
                ),
            }
            if outcome.lost > 0 {
                bail!("{} bytes of the trace could be neither streamed nor spooled: the trace is incomplete", outcome.lost);
            }
        }
    }
    Ok(match status {
        Some(s) => ExitCode::from(s.code().map_or(1, |c| c.clamp(0, 255) as u8)),
        None => ExitCode::SUCCESS,
    })
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
        (None, None) => PathBuf::from(crate::cmd_record::default_name(&args.command, &stamp).replace("_%p_", "_").replace(".log", ".nettrace")),
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
