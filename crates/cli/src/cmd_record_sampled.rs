//! `clrprof record --sampled`: an EventPipe session instead of the agent
//! (no profiler, no restart, production overhead): sampled allocations
//! (`GC/AllocationTick`) with their stacks, every GC with its ranges and
//! survivors, and the method events that name the frames, written as a
//! `.nettrace` that every command opens. With `-p PID` the process is
//! already running; with a command the program is started suspended and
//! resumed once the session runs, so the trace holds its first
//! allocation.

use anyhow::{bail, Context, Result};
use clrprof_trace::{launch, presets, Session, Stop};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Runs `record --sampled`.
pub fn run(args: &crate::cmd_record::Args) -> Result<ExitCode> {
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
    // Created before the session starts: a refused file leaves the
    // process untouched. Never through a link; never over a file without
    // --force.
    let file = clrprof_files::create(&output, args.force).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            anyhow::anyhow!("{} exists; clrprof record never overwrites a trace (--force allows it, or pick another --output)", output.display())
        } else {
            anyhow::anyhow!("cannot create {}: {e}", output.display())
        }
    })?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
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
                output.display(),
                match args.duration {
                    Some(d) => format!("for {d} s"),
                    None => "until it ends (Ctrl-C stops)".into(),
                }
            ));
            let w = session.write_to(&mut out, &stop, |_| {}).map_err(|e| anyhow::anyhow!("{e}"))?;
            (w, None)
        }
        None => {
            let dir = clrprof_files::private_temp_dir("clrprof-port").context("cannot make a private folder for the diagnostics port")?;
            let mut cmd = Command::new(&args.command[0]);
            cmd.args(&args.command[1..]);
            let launched = launch::launch(&mut cmd, &presets::sampled_allocations(false), &dir);
            let _ = std::fs::remove_dir_all(&dir);
            let launch::Launched { mut child, session } = launched.map_err(|e| anyhow::anyhow!("{e}"))?;
            said(&format!("started process {} under an EventPipe session; writing {}", child.id(), output.display()));
            // The stream ends when the program ends (or on Ctrl-C, with
            // the rundown, while it runs on).
            let w = session.write_to(&mut out, &stop, |_| {}).map_err(|e| anyhow::anyhow!("{e}"))?;
            let status = child.wait().context("cannot wait for the program")?;
            (w, Some(status))
        }
    };
    flag.store(true, Ordering::SeqCst);
    let _ = watcher.join();
    let (written, status) = result;
    said(&format!(
        "{}; wrote {} ({} bytes, {} GCs){}; try `clrprof types {}`",
        if written.stopped { "stopped" } else { "the process ended" },
        output.display(),
        written.bytes,
        written.gcs,
        if written.stopped { "" } else { " without the rundown: methods compiled before the session may be unnamed" },
        shown(&output)
    ));
    Ok(match status {
        Some(s) => ExitCode::from(s.code().map_or(1, |c| c.clamp(0, 255) as u8)),
        None => ExitCode::SUCCESS,
    })
}

fn shown(p: &Path) -> String {
    p.display().to_string()
}
