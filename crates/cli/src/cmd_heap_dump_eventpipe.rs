//! `clrprof heap-dump PID` of a process without the agent, or with
//! `--eventpipe`: a heap dump without the agent. An
//! EventPipe session asks the runtime for a GC with a walk of the heap
//! (the keywords `dotnet-gcdump` uses); the trace is written as a
//! `.nettrace` until that GC ends, then the session is stopped. Every dump
//! view opens the file; events the runtime dropped (its sequence numbers
//! say so) are reported as an incomplete dump, never passed over.

use anyhow::{bail, Result};
use clrprof_trace::listen::Listener;
use clrprof_trace::{presets, Session, Stop};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Which process is dumped.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    /// A process by its id.
    Pid(u32),
    /// The first runtime that connects to a diagnostics port clrprof
    /// listens on (`--diagnostic-port`).
    Port(&'a Path),
}

/// Runs the command: the dump ends at the heap walk's end, at `timeout`
/// seconds, or at Ctrl-C/SIGTERM, and at most [`clrprof_trace::GRACE`]
/// later whatever the process sends; at most `max_bytes` (0: no cap) are
/// written.
pub fn run(source: Source<'_>, output: Option<&Path>, force: bool, timeout: u64, max_bytes: u64, json: bool) -> Result<()> {
    // A port is listened on first: the runtime that connects names the
    // process (and the file's default name).
    let listener = match source {
        Source::Port(path) => Some(Listener::bind(path).map_err(|e| anyhow::anyhow!("{e}"))?),
        Source::Pid(_) => None,
    };
    let (pid, runtime) = match (&listener, source) {
        (Some(l), _) => {
            eprintln!("clrprof heap-dump: listening on {}; waiting up to {timeout} s for a runtime to connect", l.path().display());
            let Some(r) = l.next_runtime(&[], Duration::from_secs(timeout.max(1))) else {
                bail!(
                    "no runtime connected to {} within {timeout} s (is DOTNET_DiagnosticPorts={} set in the application's environment?)",
                    l.path().display(),
                    l.path().display()
                )
            };
            (r.host_pid.unwrap_or(u32::try_from(r.named_pid).unwrap_or(0)), Some(r))
        }
        (None, Source::Pid(pid)) => (pid, None),
        (None, Source::Port(_)) => bail!("no port"),
    };
    let explicit = output.is_some();
    let output = match output {
        Some(o) => crate::cmd_record::absolute(o)?,
        None => crate::cmd_record::absolute(&PathBuf::from(format!("heapdump_{pid}_{}.nettrace", crate::cmd_record::local_timestamp())))?,
    };
    if output.is_dir() {
        bail!("cannot write {}: it is a directory", output.display());
    }
    // An explicit name is replaced only with --force; the default name
    // takes `_2`, `_3`, ... when something (perhaps a planted link) is
    // there. Never through a link.
    let (file, output) = if force || output.symlink_metadata().is_err() {
        (clrprof_files::create(&output, force).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", output.display()))?, output)
    } else if explicit {
        bail!("{} exists; clrprof heap-dump never replaces a file (--force replaces it, or pick another --output)", output.display());
    } else {
        clrprof_files::create_numbered(&output).map_err(|e| anyhow::anyhow!("cannot create a file beside {}: {e}", output.display()))?
    };
    let session = match (&listener, &runtime) {
        (Some(l), Some(r)) => l.session(r, &presets::heap_snapshot(), true),
        _ => Session::start(pid, &presets::heap_snapshot()),
    }
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let done = Arc::new(AtomicBool::new(false));
    let stop = Stop {
        flag: crate::interrupt::stop_flag(done.clone()),
        after: Some(Duration::from_secs(timeout.max(1))),
        after_heap_walk: true,
        max_bytes: (max_bytes > 0).then_some(max_bytes),
        ..Stop::default()
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let written = session.write_to(&mut out, &stop, |_| {});
    done.store(true, Ordering::SeqCst);
    let written = written.map_err(|e| anyhow::anyhow!("{e}"))?;
    drop(out);
    if let Some(cut) = written.cut {
        bail!(
            "{cut}: the dump in {} is INCOMPLETE ({} bytes kept, without its end mark; every reader reports it as truncated)",
            output.display(),
            written.bytes
        );
    }
    if !written.heap_walk_done && stop.flag.load(Ordering::SeqCst) {
        bail!(
            "interrupted before process {pid} finished its heap walk ({} bytes of trace kept in {}, without the whole heap)",
            written.bytes,
            output.display()
        );
    }
    if !written.heap_walk_done {
        bail!(
            "process {pid} did not finish a heap walk within {timeout} s ({} bytes of trace written to {}): the runtime may not support heap snapshots over EventPipe",
            written.bytes,
            output.display()
        );
    }
    let model = clrprof::model::load_path(&output, &Default::default()).map_err(|e| anyhow::anyhow!("{e}"))?;
    let dumps = model.heap_dumps();
    let Some(dump) = dumps.dumps().last() else { bail!("the trace in {} holds no heap dump", output.display()) };
    let (objects, bytes) = dumps.objects(dump).fold((0u64, 0u64), |(n, b), o| (n + 1, b + u64::from(o.size)));
    let roots = dumps.roots(dump).len();
    let lost = model.imported().map_or(0, |f| f.lost_events);
    // Whole only when no event was lost and the walk's batches all joined.
    let gaps = model.imported().map_or(0, |f| f.heap_walk_missing_objects + f.heap_walk_missing_references + f.heap_walk_missing_roots);
    let complete = lost == 0 && gaps == 0;
    if json {
        let v = serde_json::json!({
            "pid": pid, "attached": false, "eventpipe": true,
            "dump": { "log": output, "index": dumps.dumps().len() - 1, "objects": objects, "bytes": bytes, "roots": roots,
                      "millis": (written.seconds * 1000.0).round() as u64, "lost_events": lost, "complete": complete },
        });
        println!("{}", serde_json::to_string(&v)?);
    } else {
        println!(
            "heap dump of process {pid} over EventPipe (no agent): {objects} objects, {bytes} bytes, {roots} roots, {} ms; written to {}{}",
            (written.seconds * 1000.0).round(),
            output.display(),
            if !complete {
                format!("; INCOMPLETE: the runtime dropped {lost} events; the graph lacks {gaps} objects, references and roots")
            } else {
                String::new()
            }
        );
        println!("try `clrprof dump {} 0 --retained`", output.display());
    }
    Ok(())
}
