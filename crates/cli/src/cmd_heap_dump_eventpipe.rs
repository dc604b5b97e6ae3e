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

/// What `heap-dump` was asked for.
pub struct Options<'a> {
    /// The file (default `heapdump_PID_<time>.nettrace`).
    pub output: Option<&'a Path>,
    /// Replace a file at `output`.
    pub force: bool,
    /// Seconds the heap walk has.
    pub timeout: u64,
    /// The most bytes written (0: no cap).
    pub max_bytes: u64,
    /// The runtime's buffers for the session, MB (default: from the
    /// process's resident memory, [`crate::dump_cost::buffer_mb`]).
    pub buffer_mb: Option<u32>,
    /// JSON output.
    pub json: bool,
}

/// Runs the command: the dump ends at the heap walk's end, at `timeout`
/// seconds, or at Ctrl-C/SIGTERM, and at most [`clrprof_trace::GRACE`]
/// later whatever the process sends; at most `max_bytes` (0: no cap) are
/// written.
pub fn run(source: Source<'_>, o: &Options<'_>) -> Result<()> {
    let Options { output, force, timeout, max_bytes, json, .. } = *o;
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
    let buffer_mb = o.buffer_mb.unwrap_or_else(|| crate::dump_cost::buffer_mb(pid));
    let session = match (&listener, &runtime) {
        (Some(l), Some(r)) => l.session_buffered(r, &presets::heap_snapshot(), true, buffer_mb),
        _ => Session::start_buffered(pid, &presets::heap_snapshot(), true, buffer_mb),
    }
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let done = Arc::new(AtomicBool::new(false));
    let stop = Stop {
        flag: crate::interrupt::stop_flag(done.clone()),
        after: Some(Duration::from_secs(timeout.max(1))),
        after_heap_walk: true,
        walk_silence: Some(WALK_SILENCE),
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
    if !written.heap_walk_done && !written.walk_went_silent {
        bail!(
            "process {pid} did not finish a heap walk within {timeout} s ({} bytes of trace written to {}): the runtime may not support heap snapshots over EventPipe",
            written.bytes,
            output.display()
        );
    }
    // The figures in one streaming pass: memory independent of the
    // number of objects (the model would hold every one).
    let walk = summarize(&output)?;
    if walk.node_batches == 0 {
        bail!("the trace in {} holds no heap dump", output.display());
    }
    let (objects, bytes, roots, lost) = (walk.objects, walk.bytes, walk.roots, walk.lost_events);
    let gaps = walk.missing_objects + walk.missing_references + walk.missing_roots;
    // Whole only when no event was lost and no batch of the walk is missing.
    let complete = walk.is_complete();
    // What a whole dump would have needed: the runtime held nearly the
    // whole trace (see the guide's "What a dump costs the process"), so
    // the trace with the events lost at the same average size, half more
    // for the runtime's partly filled per-thread buffers and their spread
    // (a quarter more was seen short by 126 events on a loaded machine,
    // where the process holds more of the walk before it is read), rounded
    // up to 64 MB.
    let needed_mb = (lost > 0).then(|| {
        let whole = written.bytes as f64 * (walk.events + lost) as f64 / walk.events.max(1) as f64;
        let mb = (whole * 1.5 / f64::from(1u32 << 20) + 16.0) / 64.0;
        (mb.ceil() as u64 * 64).max(u64::from(buffer_mb) * 2)
    });
    if json {
        let v = serde_json::json!({
            "pid": pid, "attached": false, "eventpipe": true,
            "dump": { "log": output, "index": 0, "objects": objects, "bytes": bytes, "roots": roots,
                      "millis": (written.seconds * 1000.0).round() as u64, "lost_events": lost, "complete": complete,
                      "buffer_mb": buffer_mb, "buffer_mb_needed": needed_mb,
                      "types": walk.types.iter().map(|t| serde_json::json!({ "name": t.name, "objects": t.objects, "bytes": t.bytes })).collect::<Vec<_>>() },
        });
        println!("{}", serde_json::to_string(&v)?);
    } else {
        println!(
            "heap dump of process {pid} over EventPipe (no agent): {objects} objects, {bytes} bytes, {roots} roots, {} ms; written to {}{}",
            (written.seconds * 1000.0).round(),
            output.display(),
            if !complete {
                format!(
                    "; INCOMPLETE: the runtime dropped {lost} events; the graph lacks at least {gaps} objects, references and roots{}",
                    needed_mb.map_or(String::new(), |mb| format!(
                        " (the walk outran the session's {buffer_mb} MB buffer in the process; `--buffer-mb {mb}` would hold it, at the cost of up to {mb} MB more in the process)"
                    ))
                )
            } else {
                String::new()
            }
        );
        for t in &walk.types {
            println!("  {:>12} bytes {:>10} objects  {}", t.bytes, t.objects, t.name);
        }
        println!("try `clrprof dump {} 0 --retained`", output.display());
    }
    Ok(())
}

/// How long a heap walk's stream may be silent before its end is taken
/// for lost (the runtime's buffer filled and dropped it): the walk is
/// written while the process is suspended, so a runtime still walking
/// sends more well within this.
pub(crate) const WALK_SILENCE: Duration = Duration::from_secs(5);

/// The types `heap-dump` prints.
const TOP_TYPES: usize = 5;

/// The dump's figures, read from its file in one pass over a map whose
/// pages are given back behind the reader.
pub(crate) fn summarize(path: &Path) -> Result<clrprof::import::nettrace::WalkSummary> {
    let file = std::fs::File::open(path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    // Safety: a read-only map of the file this command has just written
    // and closed; nothing writes it while it is read (a truncation by
    // someone else could fault, the documented limit of a map).
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| anyhow::anyhow!("cannot map {}: {e}", path.display()))?;
    let _ = map.advise(memmap2::Advice::Sequential);
    let mut released = 0usize;
    let mut give_back = |at: u64| {
        let end = usize::try_from(at).unwrap_or(0).saturating_sub(4 << 20) & !0xFFF;
        if end > released && end <= map.len() {
            // Safety: MADV_DONTNEED on a read-only shared map of a file
            // only drops page-table entries of [released, end); a later
            // read faults the same bytes in again from the file.
            unsafe {
                let _ = map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, released, end - released);
            }
            released = end;
        }
    };
    clrprof::import::nettrace::walk_summary(&map, TOP_TYPES, &mut give_back).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}
