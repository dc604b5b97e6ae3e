//! What a `clrprof watch` rule does when it fires: a heap dump over
//! EventPipe, a sampled trace, a command; each into the process's own
//! folder (a [`PrivateDir`]: files created exclusively, never through a
//! link), or the captures to `clrprof collect` (`--target`), with a record
//! of why it fired (`fired-N.json`, always in the folder).

use crate::watch_rules::{Action, Rule, Why};
use clrprof_files::PrivateDir;
use clrprof_trace::listen::{Listener, Runtime};
use clrprof_trace::{presets, Provider, Session, Stop};
use serde_json::json;
use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// A process watched: by its id, or a runtime that connected to clrprof's
/// diagnostics port.
#[derive(Clone)]
pub enum Target {
    /// A process found by its id (its socket found through its
    /// namespaces).
    Pid(u32),
    /// A runtime connected to `--diagnostic-port`.
    Port(Arc<Listener>, Runtime),
}

impl Target {
    /// A new session with the process, with the runtime's buffers capped
    /// at `buffer_mb` MB (default: the sessions' usual size).
    pub fn session(&self, providers: &[Provider], rundown: bool, buffer_mb: Option<u32>) -> Result<Session, clrprof_trace::Error> {
        let mb = buffer_mb.unwrap_or(clrprof_trace::BUFFER_MB);
        match self {
            Target::Pid(pid) => Session::start_buffered(*pid, providers, rundown, mb),
            Target::Port(l, r) => l.session_buffered(r, providers, rundown, mb),
        }
    }

    /// The process id shown: its id here, else the one its runtime names.
    pub fn pid(&self) -> u64 {
        match self {
            Target::Pid(pid) => u64::from(*pid),
            Target::Port(_, r) => r.host_pid.map_or(r.named_pid, u64::from),
        }
    }
}

/// Where captures go instead of the process's folder: `clrprof collect`.
#[derive(Clone)]
pub struct Collector {
    /// Its address.
    pub target: String,
    /// The token.
    pub token: clrprof_wire::Token,
    /// How the collector is verified (`CLRPROF_TLS_FINGERPRINT` or
    /// `CLRPROF_TLS_CA`; plain TCP without either).
    pub tls: clrprof_stream::Tls,
}

/// One firing of a rule for a process.
pub struct Firing {
    /// Its number for this process (1, 2, ...): its files' prefix.
    pub n: u64,
    /// The rule's number (1-based) and the rule.
    pub rule_no: usize,
    /// The rule.
    pub rule: Rule,
    /// Why it fired.
    pub why: Why,
    /// Seconds since the watch began.
    pub at: f64,
}

/// Runs the firing's actions one after the other into `dir`, then writes
/// its record; returns the record. `interrupt` (Ctrl-C) stops a capture in
/// progress.
pub fn run(
    target: &Target,
    dir: &PrivateDir,
    f: &Firing,
    interrupt: &Arc<AtomicBool>,
    max_bytes: u64,
    collector: Option<&Collector>,
) -> serde_json::Value {
    let mut done = Vec::new();
    for action in &f.rule.actions {
        let outcome = match action {
            Action::Dump => match room_for_dump(target) {
                Err(why) => {
                    eprintln!("clrprof watch: process {}: firing {}: dump SKIPPED: {why}", target.pid(), f.n);
                    done.push(json!({ "action": action.to_string(), "file": null, "ok": false, "skipped": true, "error": why }));
                    continue;
                }
                Ok(buffer_mb) => {
                    let name = format!("fired-{}-dump.nettrace", f.n);
                    capture(target, dir, &name, &presets::heap_snapshot(), Some(buffer_mb), None, interrupt, max_bytes, collector)
                }
            },
            Action::Trace(d) => {
                let name = format!("fired-{}-trace.nettrace", f.n);
                capture(target, dir, &name, &presets::sampled_allocations(false), None, Some(*d), interrupt, max_bytes, collector)
            }
            Action::Run(cmd) => command(target, dir, f, cmd),
        };
        let (file, result) = match outcome {
            Ok((file, said)) => (file, json!({ "ok": true, "said": said })),
            Err((file, e)) => (file, json!({ "ok": false, "error": e })),
        };
        let mut v = json!({ "action": action.to_string(), "file": file.map(|n| dir.shown(&n)) });
        if let (Some(o), Some(r)) = (v.as_object_mut(), result.as_object()) {
            o.extend(r.clone());
        }
        done.push(v);
    }
    let record = json!({
        "pid": target.pid(),
        "firing": f.n,
        "rule": f.rule.text,
        "rule_index": f.rule_no,
        "counter": f.rule.trigger.counter(),
        "value": f.why.value,
        "window_low": f.why.low,
        "why": f.why.said,
        "seconds_into_watch": f.at,
        "fired_at_unix": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0),
        "actions": done,
    });
    let text = serde_json::to_string_pretty(&record).unwrap_or_default();
    if let Err(e) = dir.write_whole(&format!("fired-{}.json", f.n), text.as_bytes(), false) {
        eprintln!("clrprof watch: cannot write the record {}: {e}", dir.shown(&format!("fired-{}.json", f.n)).display());
    }
    record
}

/// The session's buffer cap for a dump of the target, MB; an error saying
/// why when the memory limit of the process's cgroup leaves less room than
/// the dump may add to it ([`crate::dump_cost`]).
fn room_for_dump(target: &Target) -> Result<u32, String> {
    let Target::Pid(pid) = target else {
        // A runtime connected to our port: its cgroup is not ours to read.
        return Ok(crate::dump_cost::buffer_mb_for(0));
    };
    let rss = crate::dump_cost::resident_bytes(*pid).unwrap_or(0);
    let need = crate::dump_cost::expected_bytes(rss);
    if let Some(h) = crate::dump_cost::headroom(*pid) {
        if h.left() < need {
            return Err(format!(
                "the memory limit of its cgroup {} leaves {} MB ({} MB used of {} MB), and a dump may add up to {} MB to the process",
                h.cgroup.display(),
                h.left() >> 20,
                h.usage >> 20,
                h.limit >> 20,
                need >> 20
            ));
        }
    }
    Ok(crate::dump_cost::buffer_mb_for(rss))
}

type Outcome = Result<(Option<String>, String), (Option<String>, String)>;

/// A session into `name` in `dir`, or to the collector: a heap dump
/// (until its walk ends) or a trace of `duration`.
#[allow(clippy::too_many_arguments)]
fn capture(
    target: &Target,
    dir: &PrivateDir,
    name: &str,
    providers: &[Provider],
    buffer_mb: Option<u32>,
    duration: Option<Duration>,
    interrupt: &Arc<AtomicBool>,
    max_bytes: u64,
    collector: Option<&Collector>,
) -> Outcome {
    let heap = duration.is_none();
    let stop = Stop {
        flag: interrupt.clone(),
        // A dump has 10 minutes for its heap walk.
        after: Some(duration.unwrap_or(Duration::from_secs(600))),
        after_heap_walk: heap,
        walk_silence: heap.then_some(crate::cmd_heap_dump_eventpipe::WALK_SILENCE),
        max_bytes: (max_bytes > 0).then_some(max_bytes),
        ..Stop::default()
    };
    let check = |w: &clrprof_trace::Written, file: Option<String>, said: String| -> Outcome {
        if let Some(cut) = w.cut {
            return Err((file, format!("{cut}: INCOMPLETE, {} bytes kept", w.bytes)));
        }
        if heap && !w.heap_walk_done && !w.walk_went_silent {
            return Err((file, format!("the heap walk did not end ({} bytes kept)", w.bytes)));
        }
        Ok((file, said))
    };
    if let Some(c) = collector {
        let pid = u32::try_from(target.pid()).unwrap_or(0);
        let session = target.session(providers, true, buffer_mb).map_err(|e| (None, e.to_string()))?;
        // The spool, if the collector is away, in the user's private folder.
        let spool = clrprof_stream::Spool::Private(format!("clrprof_watch_{pid}_{}", name.replace(".nettrace", ".spool.nettrace")));
        let mut to = crate::sampled_stream::ToCollector::start(&c.target, c.tls.clone(), c.token.clone(), spool, pid);
        let w = session.write_to(&mut to, &stop, |_| {}).map_err(|e| (None, e.to_string()))?;
        let outcome = to.finish();
        let (report, kept) = crate::cmd_record_sampled::stream_report(&outcome, w.bytes, &c.target);
        if kept == crate::cmd_record_sampled::Kept::Incomplete {
            return Err((None, report));
        }
        return check(&w, None, report);
    }
    let file = dir.create_file(name).map_err(|e| (None, format!("cannot create {}: {e}", dir.shown(name).display())))?;
    let named = Some(name.to_string());
    let session = target.session(providers, true, buffer_mb).map_err(|e| (named.clone(), e.to_string()))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let w = session.write_to(&mut out, &stop, |_| {}).map_err(|e| (named.clone(), e.to_string()))?;
    out.flush().map_err(|e| (named.clone(), format!("cannot write {}: {e}", dir.shown(name).display())))?;
    let mut said = format!("{} bytes in {:.1} s", w.bytes, w.seconds);
    if heap && w.cut.is_none() && (w.heap_walk_done || w.walk_went_silent) {
        // A walk that outran the session's buffer is kept, and said to be
        // incomplete (`leaks` then cannot tell from it).
        match crate::cmd_heap_dump_eventpipe::summarize(&dir.path().join(name)) {
            Ok(walk) if !walk.is_complete() => {
                said = format!(
                    "{said}; INCOMPLETE: the runtime dropped {} events of the heap walk (the session's buffer in the process was {} MB)",
                    walk.lost_events,
                    buffer_mb.unwrap_or(0)
                );
                eprintln!("clrprof watch: process {}: {}: {said}", target.pid(), dir.shown(name).display());
            }
            Ok(walk) => said = format!("{said}; {} objects, {} bytes, complete", walk.objects, walk.bytes),
            Err(e) => return Err((named, format!("the dump cannot be read back: {e}"))),
        }
    }
    check(&w, named, said)
}

/// `sh -c COMMAND` with the firing in its environment, its output into
/// `fired-N-run.out`.
fn command(target: &Target, dir: &PrivateDir, f: &Firing, cmd: &str) -> Outcome {
    let name = format!("fired-{}-run.out", f.n);
    let out = dir.create_file(&name).map_err(|e| (None, format!("cannot create {}: {e}", dir.shown(&name).display())))?;
    let err = out.try_clone().map_err(|e| (Some(name.clone()), e.to_string()))?;
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .env("CLRPROF_PID", target.pid().to_string())
        .env("CLRPROF_RULE", &f.rule.text)
        .env("CLRPROF_COUNTER", f.rule.trigger.counter())
        .env("CLRPROF_VALUE", f.why.value.to_string())
        .env("CLRPROF_FIRING", f.n.to_string())
        .env("CLRPROF_DIR", dir.path())
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(|e| (Some(name.clone()), format!("cannot run sh: {e}")))?;
    if status.success() {
        Ok((Some(name), "exit status 0".into()))
    } else {
        Err((Some(name), format!("the command ended with {status}")))
    }
}
