//! `clrprof watch`: the runtime's counters of running .NET processes,
//! live, agent-free (an EventPipe session of `System.Runtime`'s
//! `EventCounters` per process), and rules that act on them.
//!
//! ```text
//!  per process: a thread ── session{System.Runtime, EventCounterIntervalSec=N} ──► samples ─┐
//!  main: samples ──► the view (a table on a terminal, JSON lines with --json)                │
//!               └──► each rule on its counter: holds? limits allow? ──► a thread runs its ◄──┘
//!                    actions into OUT/PID/ (dump, trace, run), then writes fired-N.json
//! ```

use crate::watch_actions::{self, Firing, Target};
use crate::watch_rules::{self, Rule, State};
use anyhow::{bail, Context, Result};
use clrprof_files::PrivateDir;
use clrprof_trace::counters::{self, Sample, Unit};
use clrprof_trace::listen::Listener;
use clrprof_trace::Stop;
use std::collections::{BTreeMap, HashSet};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Arguments of `clrprof watch`.
#[derive(clap::Args)]
#[command(after_help = "Rules: TRIGGER [limit N per DURATION] [cooldown DURATION] do ACTION[, ACTION...]\n\
  TRIGGER: COUNTER > AMOUNT (or >=, <, <=), or COUNTER grows AMOUNT in DURATION\n\
  ACTION: dump (a heap dump over EventPipe), trace DURATION (sampled allocations), run COMMAND (sh -c, the rest of the rule)\n\
  AMOUNT: 2GB, 200MB, 512KiB, 90 (KB, MB, GB are 1000-based, as the runtime's MB); DURATION: 500ms, 10s, 10m, 1h\n\
  Defaults: limit 5 per 1h, cooldown 1m. Example: --rule 'gc-heap-size grows 200MB in 10m limit 2 per 1h do dump, trace 10s'\n\
Counters (System.Runtime): gc-heap-size, gen-0-size, gen-1-size, gen-2-size, loh-size, poh-size, alloc-rate, \
gen-0-gc-count, gen-1-gc-count, gen-2-gc-count, time-in-gc, working-set, gc-committed, gc-fragmentation, cpu-usage, ... \
Sizes are in bytes (the runtime's MB are 1,000,000 bytes); counts and alloc-rate are per interval.")]
pub struct Args {
    /// Watch this process (repeat for more); without -p and without
    /// --diagnostic-port, every .NET process you may see (every one as root).
    #[arg(short, long = "pid", value_name = "PID")]
    pids: Vec<u32>,
    /// Listen on a diagnostics port at PATH (a socket in a folder shared
    /// with the application's container, which runs with
    /// DOTNET_DiagnosticPorts=PATH) and watch every runtime that connects.
    #[arg(long, value_name = "PATH", conflicts_with = "pids")]
    diagnostic_port: Option<PathBuf>,
    /// Seconds between two samples of the counters.
    #[arg(long, value_name = "SECONDS", default_value_t = 1)]
    interval: u32,
    /// A rule (repeat for more): see below.
    #[arg(long = "rule", value_name = "RULE")]
    rules: Vec<String>,
    /// A file of rules, one a line (`#` comments).
    #[arg(long = "rules", value_name = "FILE")]
    rules_file: Option<PathBuf>,
    /// The folder the actions write to, a folder per process inside
    /// (made 0700; an existing one must be yours and closed to others).
    #[arg(short, long, value_name = "DIR", default_value = "clrprof-watch")]
    output: PathBuf,
    /// Stop after this many seconds (default: Ctrl-C, or when every
    /// process given with -p has ended).
    #[arg(long, value_name = "SECONDS")]
    duration: Option<f64>,
    /// The most bytes one action's trace or dump writes (K, M, G, T; 0 no cap).
    #[arg(long, value_name = "SIZE", value_parser = crate::interrupt::parse_bytes, default_value = "4G")]
    max_bytes: u64,
    /// Send the actions' dumps and traces to `clrprof collect` at ADDR
    /// (with --token-file) instead of the folder; the records of why each
    /// fired stay in the folder.
    #[arg(long, value_name = "ADDR", requires = "token_file")]
    target: Option<String>,
    /// The collector's token file (what `clrprof collect` printed or wrote).
    #[arg(long, value_name = "FILE", requires = "target")]
    token_file: Option<PathBuf>,
    /// One JSON line per sample (and per firing) instead of the table.
    /// An error is printed as `{"error": MESSAGE}` on standard output (exit status 1).
    #[arg(long)]
    json: bool,
}

/// What the watcher threads say.
enum Msg {
    Sample(usize, Sample),
    Ended(usize, Option<String>),
}

/// A process watched.
struct Watched {
    target: Target,
    name: String,
    latest: BTreeMap<String, Sample>,
    states: Vec<State>,
    busy: Vec<Arc<AtomicBool>>,
    fired: Vec<u64>,
    firings: u64,
    samples: u64,
    ended: Option<String>,
    dir: Option<Arc<PrivateDir>>,
}

/// The counters shown in the table, in order, with their titles.
const SHOWN: &[(&str, &str)] = &[
    ("gc-heap-size", "GC heap size"),
    ("gen-0-size", "Gen 0 size"),
    ("gen-1-size", "Gen 1 size"),
    ("gen-2-size", "Gen 2 size"),
    ("loh-size", "LOH size"),
    ("poh-size", "POH size"),
    ("alloc-rate", "Allocation rate (per interval)"),
    ("gen-0-gc-count", "Gen 0 GCs (per interval)"),
    ("gen-1-gc-count", "Gen 1 GCs (per interval)"),
    ("gen-2-gc-count", "Gen 2 GCs (per interval)"),
    ("time-in-gc", "Time in GC since last GC (%)"),
    ("gc-fragmentation", "GC fragmentation (%)"),
    ("gc-committed", "GC committed bytes"),
    ("working-set", "Working set"),
    ("cpu-usage", "CPU usage (%)"),
];

fn shown_value(s: &Sample) -> String {
    match s.unit {
        Unit::Bytes if s.value >= 1e6 => format!("{:.1} MB", s.value / 1e6),
        Unit::Bytes => format!("{:.0} B", s.value),
        Unit::Percent => format!("{:.1}", s.value),
        Unit::Count => format!("{}", s.value),
    }
}

fn unit_word(u: Unit) -> &'static str {
    match u {
        Unit::Bytes => "bytes",
        Unit::Percent => "percent",
        Unit::Count => "count",
    }
}

/// Starts the thread that reads the counters of `target`.
fn follow(key: usize, target: Target, interval: u32, stop: Arc<AtomicBool>, tx: Sender<Msg>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        struct Sink {
            counters: counters::Counters,
            key: usize,
            tx: Sender<Msg>,
        }
        impl Write for Sink {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                for s in self.counters.feed(buf) {
                    let _ = self.tx.send(Msg::Sample(self.key, s));
                }
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let ended = match target.session(&[counters::provider(interval)], false, None) {
            Err(e) => Some(e.to_string()),
            Ok(session) => {
                let mut sink = Sink { counters: counters::Counters::new(), key, tx: tx.clone() };
                let stop = Stop { flag: stop, max_bytes: None, ..Stop::default() };
                match session.write_to(&mut sink, &stop, |_| {}) {
                    Err(e) => Some(e.to_string()),
                    Ok(_) => sink.counters.broken().map(|b| format!("its counters could not be read: {b}")),
                }
            }
        };
        let _ = tx.send(Msg::Ended(key, ended));
    })
}

fn command_line(pid: u64) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| c.split(|&b| b == 0).filter(|a| !a.is_empty()).map(String::from_utf8_lossy).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let mut rules: Vec<Rule> = Vec::new();
    for r in &args.rules {
        rules.push(watch_rules::parse(r).map_err(anyhow::Error::msg)?);
    }
    if let Some(f) = &args.rules_file {
        let text = std::fs::read_to_string(f).with_context(|| format!("cannot read the rules file {}", f.display()))?;
        rules.extend(watch_rules::parse_file(&text, &f.display().to_string()).map_err(anyhow::Error::msg)?);
    }
    let out = if rules.is_empty() {
        None
    } else {
        Some(Arc::new(
            PrivateDir::create_or_check(&args.output).with_context(|| format!("cannot use the folder {}", args.output.display()))?,
        ))
    };
    let collector = match (&args.target, &args.token_file) {
        (Some(target), Some(token_file)) => {
            // The collector must take the token before anything starts.
            let token = clrprof_collect::token_file::read(token_file)?;
            let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
            let tls = clrprof_stream::Tls::from_settings(env("CLRPROF_TLS_FINGERPRINT").as_deref(), env("CLRPROF_TLS_CA").as_deref());
            if let clrprof_stream::Tls::Invalid(why) = &tls {
                bail!("{why}");
            }
            crate::cmd_record::check_collector(target, &tls, &token, token_file)?;
            Some(watch_actions::Collector { target: target.clone(), token, tls })
        }
        _ => None,
    };
    let listener = match &args.diagnostic_port {
        Some(p) => Some(Arc::new(Listener::bind(p).map_err(|e| anyhow::anyhow!("{e}"))?)),
        None => None,
    };
    for pid in &args.pids {
        clrprof_control::process::attachable(*pid).map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let done = Arc::new(AtomicBool::new(false));
    let interrupt = crate::interrupt::stop_flag(done.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = channel::<Msg>();
    let started = Instant::now();
    let tty = std::io::stdout().is_terminal() && !args.json;
    let mut watched: Vec<Watched> = Vec::new();
    let mut threads = Vec::new();
    let mut actions: Vec<JoinHandle<()>> = Vec::new();
    let mut seen_pids: HashSet<u64> = HashSet::new();
    let mut seen_runtimes = Vec::new();
    let mut last_scan: Option<Instant> = None;
    let mut last_draw = Instant::now();
    let interval = Duration::from_secs(u64::from(args.interval.max(1)));
    let add = |target: Target, watched: &mut Vec<Watched>, threads: &mut Vec<JoinHandle<()>>| {
        let key = watched.len();
        let pid = target.pid();
        let name = match &target {
            Target::Pid(_) => command_line(pid),
            Target::Port(..) => format!("connected to {}", args.diagnostic_port.as_deref().unwrap_or(std::path::Path::new("?")).display()),
        };
        if !args.json {
            eprintln!("clrprof watch: following process {pid} ({name})");
        }
        watched.push(Watched {
            target: target.clone(),
            name,
            latest: BTreeMap::new(),
            states: rules.iter().map(|_| State::default()).collect(),
            busy: rules.iter().map(|_| Arc::new(AtomicBool::new(false))).collect(),
            fired: vec![0; rules.len()],
            firings: 0,
            samples: 0,
            ended: None,
            dir: None,
        });
        threads.push(follow(key, target, args.interval, stop.clone(), tx.clone()));
    };
    for pid in &args.pids {
        seen_pids.insert(u64::from(*pid));
        add(Target::Pid(*pid), &mut watched, &mut threads);
    }
    loop {
        if interrupt.load(Ordering::SeqCst) || args.duration.is_some_and(|d| started.elapsed().as_secs_f64() >= d) {
            break;
        }
        // New processes: every .NET process (rescanned), or runtimes
        // that connected to the port.
        if let Some(l) = &listener {
            while let Some(r) = l.next_runtime(&seen_runtimes, Duration::ZERO) {
                seen_runtimes.push(r.clone());
                add(Target::Port(l.clone(), r), &mut watched, &mut threads);
            }
        } else if args.pids.is_empty() && last_scan.map_or(true, |t| t.elapsed() >= Duration::from_secs(5)) {
            last_scan = Some(Instant::now());
            for (p, _) in clrprof_control::process::dotnet_processes() {
                if seen_pids.insert(u64::from(p.pid)) {
                    add(Target::Pid(p.pid), &mut watched, &mut threads);
                }
            }
        }
        if !args.pids.is_empty() && watched.iter().all(|w| w.ended.is_some()) {
            break;
        }
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(Msg::Ended(key, why)) => {
                if let Some(w) = watched.get_mut(key) {
                    let said = why.unwrap_or_else(|| "ended".into());
                    if !args.json {
                        eprintln!("clrprof watch: process {}: {said}", w.target.pid());
                    } else {
                        println!("{}", serde_json::json!({ "pid": w.target.pid(), "ended": said }));
                    }
                    w.ended = Some(said);
                }
            }
            Ok(Msg::Sample(key, s)) => {
                let now = started.elapsed().as_secs_f64();
                let Some(w) = watched.get_mut(key) else { continue };
                w.samples += 1;
                if args.json {
                    println!(
                        "{}",
                        serde_json::json!({ "t": (now * 1000.0).round() / 1000.0, "pid": w.target.pid(), "counter": s.name, "value": s.value, "unit": unit_word(s.unit), "per_interval": s.sum })
                    );
                }
                for (i, rule) in rules.iter().enumerate() {
                    if rule.trigger.counter() != s.name {
                        continue;
                    }
                    let Some(why) = watch_rules::holds(rule, &mut w.states[i], now, s.value) else { continue };
                    if w.busy[i].load(Ordering::SeqCst) {
                        w.states[i].held_back += 1;
                        continue;
                    }
                    if !watch_rules::may_fire(rule, &mut w.states[i], now) {
                        continue;
                    }
                    let Some(out) = &out else { continue };
                    let dir = match &w.dir {
                        Some(d) => d.clone(),
                        None => match out.subdir(&w.target.pid().to_string()) {
                            Ok(d) => {
                                let d = Arc::new(d);
                                w.dir = Some(d.clone());
                                d
                            }
                            Err(e) => {
                                eprintln!("clrprof watch: cannot make the folder of process {}: {e}", w.target.pid());
                                continue;
                            }
                        },
                    };
                    w.firings += 1;
                    w.fired[i] += 1;
                    let firing = Firing { n: w.firings, rule_no: i + 1, rule: rule.clone(), why, at: now };
                    if !args.json {
                        eprintln!(
                            "clrprof watch: process {}: rule {} fired ({}): {}; writing into {}",
                            w.target.pid(),
                            i + 1,
                            firing.why.said,
                            rule.actions.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", "),
                            dir.path().display()
                        );
                    }
                    let busy = w.busy[i].clone();
                    busy.store(true, Ordering::SeqCst);
                    let (target, interrupt, max_bytes, json) = (w.target.clone(), interrupt.clone(), args.max_bytes, args.json);
                    let collector = collector.clone();
                    actions.push(std::thread::spawn(move || {
                        let record = watch_actions::run(&target, &dir, &firing, &interrupt, max_bytes, collector.as_ref());
                        if json {
                            println!("{}", serde_json::json!({ "fired": record }));
                        } else {
                            let failed = record["actions"].as_array().map_or(0, |a| a.iter().filter(|x| x["ok"] != true).count());
                            eprintln!(
                                "clrprof watch: process {}: firing {} done{}; its record is {}",
                                target.pid(),
                                firing.n,
                                if failed > 0 { format!(", {failed} action(s) FAILED") } else { String::new() },
                                dir.shown(&format!("fired-{}.json", firing.n)).display()
                            );
                        }
                        busy.store(false, Ordering::SeqCst);
                    }));
                }
                w.latest.insert(s.name.clone(), s);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if !args.json && last_draw.elapsed() >= interval {
            last_draw = Instant::now();
            draw(&watched, tty, started.elapsed().as_secs_f64());
        }
    }
    stop.store(true, Ordering::SeqCst);
    for t in threads {
        let _ = t.join();
    }
    for a in actions {
        let _ = a.join();
    }
    done.store(true, Ordering::SeqCst);
    if !args.json {
        for w in &watched {
            for (i, rule) in rules.iter().enumerate() {
                eprintln!(
                    "clrprof watch: process {}: rule {} (`{}`) fired {} time(s), held back {} time(s) by its limits",
                    w.target.pid(),
                    i + 1,
                    rule.text,
                    w.fired[i],
                    w.states[i].held_back
                );
            }
        }
    }
    for w in &watched {
        leak_verdict(w, args.json);
    }
    // Every process named with -p failed before its first sample: that
    // is an error (the reasons were said as they came).
    if !args.pids.is_empty() && watched.iter().all(|w| w.samples == 0 && w.ended.as_deref().is_some_and(|e| e != "ended")) {
        let first = watched.first().and_then(|w| w.ended.clone()).unwrap_or_default();
        bail!("no counters from {}: {first}", if watched.len() == 1 { "the process" } else { "any of the processes" });
    }
    if watched.is_empty() && args.diagnostic_port.is_none() && args.pids.is_empty() {
        bail!("no .NET process that you may watch was found (run as root to watch every user's)");
    }
    Ok(())
}

/// The `leaks` verdict over the heap dumps a process's rules took in its
/// folder, when there are three or more (see `clrprof leaks`).
fn leak_verdict(w: &Watched, json: bool) {
    let Some(dir) = &w.dir else { return };
    let Ok(entries) = std::fs::read_dir(dir.path()) else { return };
    // fired-N-dump.nettrace, by N.
    let mut dumps: Vec<(u64, std::path::PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let n = name.strip_prefix("fired-")?.strip_suffix("-dump.nettrace")?.parse().ok()?;
            Some((n, e.path()))
        })
        .collect();
    dumps.sort();
    let pid = w.target.pid();
    if dumps.len() < 3 {
        if !dumps.is_empty() && !json {
            eprintln!("clrprof watch: process {pid}: {} heap dump(s); `clrprof leaks` needs three or more for a verdict", dumps.len());
        }
        return;
    }
    let paths: Vec<std::path::PathBuf> = dumps.into_iter().map(|(_, p)| p).collect();
    let rule = clrprof::query::dumps::LeakRule::default();
    match crate::cmd_leaks::report_for(&paths, None, rule, Default::default(), true) {
        Ok((report, labels)) if json => {
            println!("{}", serde_json::json!({ "leaks": { "pid": pid, "files": labels, "report": report } }));
        }
        Ok((report, labels)) => {
            eprintln!("clrprof watch: process {pid}: leaks over the {} heap dumps its rules took:", labels.len());
            crate::cmd_leaks::print(&report, &labels, None);
        }
        Err(e) => eprintln!("clrprof watch: process {pid}: no leak verdict: {}", crate::message(&e)),
    }
}

/// The table: a block per process, the counters in `dotnet-counters`'
/// order.
fn draw(watched: &[Watched], tty: bool, now: f64) {
    let mut s = String::new();
    if tty {
        // Home and clear: the table refreshes in place.
        s.push_str("\x1b[H\x1b[2J");
        s.push_str("Press Ctrl-C to stop\n");
    }
    s.push_str(&format!("[System.Runtime] at {now:.0} s\n"));
    for w in watched {
        let state = w.ended.as_deref().map(|e| format!(" ({e})")).unwrap_or_default();
        s.push_str(&format!("process {} {}{}\n", w.target.pid(), w.name, state));
        for (name, title) in SHOWN {
            if let Some(v) = w.latest.get(*name) {
                s.push_str(&format!("    {:<40}{:>16}\n", title, shown_value(v)));
            }
        }
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(s.as_bytes());
    let _ = out.flush();
}
