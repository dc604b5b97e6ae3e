//! `clrprof record -p PID`: attach the agent to a running .NET process and
//! record its GCs, moves, survivals, finalization, handles and heap dumps
//! (no allocations: the runtime allows those only from start-up) until
//! `--duration` ends, the process ends, or Ctrl-C; then the agent closes
//! the log and stays loaded, quiet, for later heap dumps.

use anyhow::{bail, Result};
use clrprof_control::protocol::Request;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Runs `record -p PID`.
pub fn run(pid: u32, args: &crate::cmd_record::Args) -> Result<ExitCode> {
    if let Some(mut c) = crate::live::existing_agent(pid)? {
        let status = c.request(&Request::Status, Duration::from_secs(10))?.status;
        match status.and_then(|s| s.log) {
            Some(log) => bail!(
                "process {pid} already has the clrprof agent, recording into {}; take dumps with `clrprof heap-dump {pid}`",
                log.display()
            ),
            None => bail!(
                "process {pid} already has the clrprof agent, loaded for heap dumps only; it cannot start a recording \
                 (a profiler is loaded once per process): take dumps with `clrprof heap-dump {pid}`"
            ),
        }
    }
    let output = match &args.output {
        Some(p) => p.clone(),
        None => PathBuf::from(format!("pid{pid}_{}.log", crate::cmd_record::local_timestamp())),
    };
    let output = crate::cmd_record::absolute(&output)?;
    if output.symlink_metadata().is_ok() && !args.force {
        bail!("{} exists; clrprof record never overwrites a log (--force allows it, or pick another --output)", output.display());
    }
    let mut settings = vec![("CLRPROF_OUTPUT", output.display().to_string())];
    if args.force {
        settings.push(("CLRPROF_FORCE", "1".to_string()));
    }
    if let Some(s) = args.heap_dump_every {
        settings.push(("CLRPROF_HEAP_DUMP_EVERY", s.to_string()));
    }
    let streaming = match (&args.target, &args.token_file) {
        (Some(target), Some(token_file)) => {
            let token = clrprof_collect::token_file::read(token_file)?;
            let (tls, tls_settings) = args.collector_tls()?;
            crate::cmd_record::check_collector(target, &tls, &token, token_file)?;
            settings.extend(tls_settings);
            settings.push(("CLRPROF_TARGET", target.clone()));
            settings.push(("CLRPROF_TOKEN", token.to_hex()));
            settings.push(("CLRPROF_SPOOL", output.with_extension("spool.log").display().to_string()));
            Some(target.clone())
        }
        _ => None,
    };
    let mut client = crate::live::attach(pid, args.agent.as_deref(), &settings)?;
    // Safety: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    if !args.quiet {
        eprintln!(
            "clrprof record: attached to process {pid}; recording GCs and heap dumps {} {}",
            match &streaming {
                Some(t) => format!("to the collector at {t}"),
                None => format!("into {}", output.display()),
            },
            match args.duration {
                Some(d) => format!("for {d} s"),
                None => "until it ends (Ctrl-C stops)".into(),
            }
        );
    }
    let start = Instant::now();
    let limit = args.duration.map(Duration::from_secs_f64);
    let mut ended = false;
    loop {
        if INTERRUPTED.load(Ordering::SeqCst) || limit.is_some_and(|l| start.elapsed() >= l) {
            break;
        }
        if std::fs::metadata(format!("/proc/{pid}")).is_err() {
            ended = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if !ended {
        client.request(&Request::Stop, Duration::from_secs(60))?;
    }
    if let (Some(t), false) = (&streaming, args.quiet) {
        eprintln!(
            "clrprof record: {}; streamed the log to {t} (to the spool {} if it could not be reached); {}",
            if ended { format!("process {pid} ended") } else { "stopped".to_string() },
            output.with_extension("spool.log").display(),
            crate::cmd_record::sessions_hint(args.token_file.as_deref())
        );
    } else if !args.quiet {
        let bytes = std::fs::metadata(&output).map(|m| m.len()).unwrap_or(0);
        eprintln!(
            "clrprof record: {}; wrote {} ({bytes} bytes); try `clrprof dumps {}`",
            if ended { format!("process {pid} ended") } else { "stopped".to_string() },
            output.display(),
            output.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
