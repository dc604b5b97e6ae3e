//! The capture matrix: one program that counts its own truth
//! (`agent/testapps/truth.cs`), recorded under the combinations of modes a
//! user can ask for, each log read back through the command line and every
//! figure the mode can know compared with the program's own; the figures a
//! mode cannot know must be reported as unknown or absent, never as a
//! number.
//!
//! The dimensions: launched or attached (`record -p`); no stacks, shadow
//! stacks, shadow stacks with calls (an attached agent can have neither
//! allocations nor stacks: it is always "no stacks"); no dumps, periodic
//! dumps (`--heap-dump-every`), the program's own `DumpHeap`, `clrprof
//! heap-dump PID`; allocation logging switched off for a phase or not; the
//! log written to a file or streamed to a `clrprof collect`; CoreCLR 3.1
//! and .NET 8. All of them multiplied out are 2 x 3 x 4 x 2 x 2 x 2 = 192
//! runs (128 allowed ones); a run takes a few seconds, which CI cannot
//! afford. The bugs found so far lived where two modes meet (finalizers x
//! periodic dumps, attached x dump-diff), so [`MATRIX`] is a pairwise
//! (all-pairs) covering set: every allowed pair of values of any two
//! dimensions occurs in at least one run (13 runs; `matrix_covers_every_pair`
//! checks it). Each run checks every figure, so a pair that breaks one
//! figure fails its run.
//!
//! Needs `scripts/setup-dotnet.sh` (else SKIPPED, a failure under
//! `CI=true`) and the agent built beside `clrprof`.

mod common;

use clrprof::format::{Record, RecordReader};
use common::dotnet::{self, Dotnet, Runtime};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Launch {
    /// `clrprof record -- dotnet truth.dll`.
    Launched,
    /// Started bare, then `clrprof record -p PID`.
    Attached,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stacks {
    /// `--no-stacks` (an attached agent: nothing of allocations at all).
    None,
    /// Shadow stacks (the default).
    Shadow,
    /// Shadow stacks and `--calls`.
    Calls,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dumps {
    None,
    /// `--heap-dump-every 0.2`.
    Periodic,
    /// The program's own `ClrProfControl.DumpHeap` at its two dump points.
    Api,
    /// `clrprof heap-dump PID` at the program's two dump points.
    HeapDump,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sink {
    File,
    /// `--target ADDR --token-file F` to a `clrprof collect`.
    Collector,
}

#[derive(Clone, Copy, Debug)]
struct Run {
    launch: Launch,
    stacks: Stacks,
    dumps: Dumps,
    /// Allocation logging off for the program's middle phase.
    off: bool,
    sink: Sink,
    rt: Runtime,
}

const fn run(launch: Launch, stacks: Stacks, dumps: Dumps, off: bool, sink: Sink, rt: Runtime) -> Run {
    Run { launch, stacks, dumps, off, sink, rt }
}

use Dumps as D;
use Launch::{Attached, Launched};
use Runtime::{Core31, Net8};
use Sink::{Collector, File};
use Stacks as S;

/// The runs: a pairwise covering set of the dimensions (see the module
/// documentation), found by a greedy search and checked by
/// `matrix_covers_every_pair`. The new user's two cases are runs 11-12
/// (finalizers under periodic dumps: finalized = the program's count) and
/// 1-3 (an attached recording of a cache that only grows: `dump-diff`
/// shows none of it gone).
const MATRIX: [Run; 13] = [
    /* 0 */ run(Attached, S::None, D::None, false, Collector, Core31),
    /* 1 */ run(Attached, S::None, D::Periodic, true, File, Core31),
    /* 2 */ run(Attached, S::None, D::Api, true, Collector, Core31),
    /* 3 */ run(Attached, S::None, D::HeapDump, false, File, Net8),
    /* 4 */ run(Launched, S::None, D::HeapDump, true, File, Core31),
    /* 5 */ run(Launched, S::Shadow, D::None, true, File, Core31),
    /* 6 */ run(Launched, S::Shadow, D::Api, true, File, Net8),
    /* 7 */ run(Launched, S::Shadow, D::HeapDump, true, Collector, Net8),
    /* 8 */ run(Launched, S::Calls, D::None, true, File, Net8),
    /* 9 */ run(Launched, S::Calls, D::Api, false, File, Net8),
    /* 10 */ run(Launched, S::Calls, D::HeapDump, true, File, Core31),
    /* 11 */ run(Launched, S::Shadow, D::Periodic, false, File, Net8),
    /* 12 */ run(Launched, S::Calls, D::Periodic, false, Collector, Core31),
];

/// The marker types of truth.cs.
const MARKERS: [&str; 6] = ["TruthA", "TruthCache", "TruthTemp", "TruthHandle", "TruthOff", "TruthFin"];

/// Every allowed pair of values of two dimensions occurs in some run.
#[test]
fn matrix_covers_every_pair() {
    fn values(r: &Run) -> [String; 6] {
        [
            format!("{:?}", r.launch),
            format!("{:?}", r.stacks),
            format!("{:?}", r.dumps),
            format!("{:?}", r.off),
            format!("{:?}", r.sink),
            format!("{:?}", r.rt),
        ]
    }
    let mut all = Vec::new();
    for launch in [Launched, Attached] {
        for stacks in [S::None, S::Shadow, S::Calls] {
            if launch == Attached && stacks != S::None {
                continue; // an attached agent has no stacks
            }
            for dumps in [D::None, D::Periodic, D::Api, D::HeapDump] {
                for off in [false, true] {
                    for sink in [File, Collector] {
                        for rt in Runtime::ALL {
                            all.push(values(&run(launch, stacks, dumps, off, sink, rt)));
                        }
                    }
                }
            }
        }
    }
    let covered: Vec<[String; 6]> = MATRIX.iter().map(values).collect();
    for v in &all {
        for i in 0..6 {
            for j in i + 1..6 {
                assert!(
                    covered.iter().any(|c| c[i] == v[i] && c[j] == v[j]),
                    "no run has {} together with {}",
                    v[i],
                    v[j]
                );
            }
        }
    }
}

fn clrprof_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_clrprof"))
}

fn agent() -> Option<PathBuf> {
    dotnet::agent_beside(&clrprof_exe())
}

fn work() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("capture-matrix-{}", std::process::id()))
}

fn clrprof(dir: &Path, args: &[&str]) -> Output {
    Command::new(clrprof_exe())
        .args(args)
        .current_dir(dir)
        .env("CLRPROF_AGENT", agent().unwrap_or_default())
        .output()
        .expect("run clrprof")
}

fn json(dir: &Path, args: &[&str]) -> Value {
    let out = clrprof(dir, args);
    assert!(out.status.success(), "clrprof {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("clrprof {args:?}: not JSON: {e}"))
}

fn read_json(r: &mut impl BufRead) -> Value {
    let mut line = String::new();
    r.read_line(&mut line).expect("read the program's output");
    serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("not a JSON line from the program: {line:?}: {e}"))
}

/// A `clrprof collect` on a free port, killed when dropped.
struct Collect {
    _child: common::Killed,
    target: String,
    token: PathBuf,
    dir: PathBuf,
}

fn collector(dir: &Path) -> Collect {
    let sessions = dir.join("sessions");
    std::fs::create_dir_all(&sessions).expect("sessions dir");
    let mut child = Command::new(clrprof_exe())
        .args(["collect", "--listen", "127.0.0.1:0", "--dir"])
        .arg(&sessions)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start clrprof collect");
    let mut out = BufReader::new(child.stdout.take().expect("collector stdout"));
    let mut target = String::new();
    for _ in 0..2 {
        let mut line = String::new();
        out.read_line(&mut line).expect("collector output");
        if let Some(t) = line.trim().strip_prefix("CLRPROF_TARGET=") {
            target = t.to_string();
        }
    }
    assert!(!target.is_empty(), "the collector printed no CLRPROF_TARGET");
    Collect { _child: common::Killed(child), target, token: sessions.join("collector.token"), dir: sessions }
}

impl Collect {
    /// The stored log of process `pid`'s session, once it has ended.
    fn log_of(&self, pid: u64) -> PathBuf {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let listed = json(&self.dir, &["sessions", "--json", "--dir", self.dir.to_str().expect("UTF-8")]);
            let found = listed.as_array().and_then(|a| a.iter().find(|s| s["pid"].as_u64() == Some(pid)).cloned());
            if let Some(s) = found.filter(|s| s["state"] != "live") {
                assert_eq!(s["state"], "ended", "the session did not end cleanly: {s}");
                return self.dir.join(s["log"].as_str().expect("the session's log"));
            }
            assert!(Instant::now() < deadline, "no ended session for pid {pid}: {listed}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The program (under `record`, or bare), driven through its standard input.
struct Program {
    /// `record` (launched) or the program itself (attached).
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Program {
    fn pause(&mut self, name: &str) -> Value {
        let v = read_json(&mut self.stdout);
        assert_eq!(v["pause"], name, "the program's pause: {v}");
        v
    }

    fn go(&mut self) {
        let stdin = self.stdin.as_mut().expect("stdin");
        writeln!(stdin, "go").expect("write to the program");
        stdin.flush().expect("flush");
    }
}

/// What a run left: the program's truth and the log.
struct Recorded {
    truth: Value,
    log: PathBuf,
    dir: PathBuf,
}

fn record(dn: &Dotnet, i: usize, r: &Run) -> Recorded {
    let dir = dn.app_dir("truth", r.rt, &work().join(format!("run-{i}")));
    let host = dn.host(r.rt).to_string_lossy().into_owned();
    let collect = (r.sink == Collector).then(|| collector(&dir));
    let mut program_args = vec![host.clone(), "truth.dll".to_string()];
    if r.dumps == D::Api {
        program_args.push("--api-dump".into());
    }
    if r.off {
        program_args.push("--off".into());
    }
    let mut rec_args: Vec<String> = vec!["record".into(), "-q".into(), "-o".into(), "rec.log".into()];
    if r.dumps == D::Periodic {
        rec_args.extend(["--heap-dump-every".into(), "0.2".into()]);
    }
    if let Some(c) = &collect {
        rec_args.extend(["--target".into(), c.target.clone(), "--token-file".into(), c.token.display().to_string()]);
    }
    let spawn = |cmd: &mut Command| {
        cmd.current_dir(&dir)
            .env("CLRPROF_AGENT", agent().unwrap_or_default())
            .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start")
    };
    let mut attached_record = None;
    let mut child = match r.launch {
        Launched => {
            match r.stacks {
                S::None => rec_args.push("--no-stacks".into()),
                S::Shadow => {}
                S::Calls => rec_args.push("--calls".into()),
            }
            rec_args.push("--".into());
            rec_args.extend(program_args);
            spawn(Command::new(clrprof_exe()).args(&rec_args))
        }
        Attached => spawn(Command::new(&host).args(&program_args[1..])),
    };
    let stdin = child.stdin.take();
    let stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut p = Program { child, stdin, stdout };
    let start = p.pause("start");
    let pid = start["pid"].as_u64().expect("pid");
    if r.launch == Attached {
        rec_args[0] = "record".into();
        rec_args.splice(1..2, ["-p".to_string(), pid.to_string(), "--duration".into(), "300".into()]);
        let mut rec = Command::new(clrprof_exe())
            .args(&rec_args)
            .current_dir(&dir)
            .env("CLRPROF_AGENT", agent().unwrap_or_default())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start record -p");
        // The agent answers on its control socket once attached.
        let socket = clrprof_control::paths::control_socket(&clrprof_control::paths::temp_dir_of(pid as u32), pid as u32);
        while std::os::unix::net::UnixStream::connect(&socket).is_err() {
            assert!(rec.try_wait().expect("record -p").is_none(), "record -p ended early");
            std::thread::sleep(Duration::from_millis(50));
        }
        attached_record = Some(rec);
    }
    p.go();
    for name in ["dump1", "dump2"] {
        p.pause(name);
        match r.dumps {
            D::HeapDump => {
                let out = clrprof(&dir, &["heap-dump", &pid.to_string(), "--json", "--label", &format!("heap-dump {name}")]);
                assert!(out.status.success(), "heap-dump: {}", String::from_utf8_lossy(&out.stderr));
                let reply: Value = serde_json::from_slice(&out.stdout).expect("heap-dump --json");
                assert_eq!(reply["attached"], false, "heap-dump reused the recording's agent: {reply}");
            }
            // At least two periods inside the pause.
            D::Periodic => std::thread::sleep(Duration::from_millis(700)),
            D::None | D::Api => {}
        }
        p.go();
    }
    let truth = read_json(&mut p.stdout);
    assert_eq!(truth["truth"], true, "{truth}");
    drop(p.stdin.take());
    let out = p.child.wait_with_output().expect("wait");
    assert!(out.status.success(), "{}: {}", if r.launch == Launched { "record" } else { "the program" }, String::from_utf8_lossy(&out.stderr));
    if let Some(rec) = attached_record {
        let out = rec.wait_with_output().expect("record -p");
        assert!(out.status.success(), "record -p: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(truth["under_profiler"], true, "the program found the agent: {truth}");
    let log = match &collect {
        Some(c) => {
            assert!(!dir.join("rec.log").exists(), "a streamed recording wrote a local log too");
            assert!(!dir.join("rec.spool.log").exists(), "the collector was reachable, yet the agent spooled");
            c.log_of(pid)
        }
        None => dir.join("rec.log"),
    };
    drop(collect);
    Recorded { truth, log, dir }
}

/// A dump read from the log's own lines: where it lies relative to the
/// program's pause comments, and its marker objects.
struct NaiveDump {
    /// The pause (`dump1`, `dump2`) whose "pause"/"resume" comments
    /// enclose the dump, if any.
    window: Option<String>,
    /// How many comments precede it.
    after_comments: usize,
    markers: BTreeMap<String, u64>,
}

/// What a log holds, read naively from its lines.
struct Naive {
    dumps: Vec<NaiveDump>,
    comments: Vec<String>,
    /// Marker allocations (`!` lines) between the program's "off start"
    /// and "off end" comments, in the log's order.
    off_phase: BTreeMap<String, u64>,
    /// Dumps after the program's "truth end" comment (a periodic dump can
    /// come after the program read its GC counts).
    late_dumps: u64,
}

/// The dumps, the comments and the off phase's allocations of a log.
fn naive(log: &Path) -> Naive {
    let bytes = std::fs::read(log).expect("read the log");
    let mut reader = RecordReader::new(&bytes);
    let mut types = HashMap::new();
    let mut stack_types = HashMap::new();
    let mut off_phase = BTreeMap::new();
    let mut in_off = false;
    let mut dumps: Vec<NaiveDump> = Vec::new();
    let mut comments = Vec::new();
    let mut window: Option<String> = None;
    let mut in_gc = false;
    let mut dump_in_gc = false;
    for p in reader.by_ref() {
        match &p.record {
            Record::Type(t) => {
                types.insert(t.id.0, t.decoded_name());
            }
            Record::Comment(c) => {
                let text = String::from_utf8_lossy(c.text).into_owned();
                in_off = text == "off start" || (in_off && text != "off end");
                if let Some(w) = text.strip_prefix("pause ") {
                    window = Some(w.to_string());
                } else if text.starts_with("resume ") {
                    window = None;
                }
                comments.push(text);
            }
            Record::Stack(n) => {
                stack_types.insert(n.id.0, n.alloc.map(|a| a.0 .0));
            }
            Record::Alloc(a) if in_off => {
                let ty = stack_types.get(&a.stack.0).copied().flatten().and_then(|t| types.get(&t));
                if let Some(name) = ty.filter(|n| MARKERS.contains(&n.as_str())) {
                    *off_phase.entry(name.clone()).or_default() += 1;
                }
            }
            Record::GcBoundary(b) => {
                in_gc = b.is_start;
                dump_in_gc = false;
            }
            Record::Root(_) | Record::HeapObject(_) if in_gc && !dump_in_gc => {
                dump_in_gc = true;
                dumps.push(NaiveDump { window: window.clone(), after_comments: comments.len(), markers: BTreeMap::new() });
                if let Record::HeapObject(o) = &p.record {
                    count_marker(&types, o.type_id.0, dumps.last_mut().expect("a dump"));
                }
            }
            Record::HeapObject(o) if dump_in_gc => count_marker(&types, o.type_id.0, dumps.last_mut().expect("a dump")),
            _ => {}
        }
    }
    assert_eq!(reader.diagnostics().total(), 0, "{}: the log has warnings", log.display());
    let end = comments.iter().position(|c| c == "truth end");
    let late_dumps = dumps.iter().filter(|d| end.is_some_and(|e| d.after_comments > e)).count() as u64;
    Naive { dumps, comments, off_phase, late_dumps }
}

fn count_marker(types: &HashMap<i32, String>, t: i32, d: &mut NaiveDump) {
    if let Some(name) = types.get(&t).filter(|n| MARKERS.contains(&n.as_str())) {
        *d.markers.entry(name.clone()).or_default() += 1;
    }
}

fn count_in(rows: &Value, key: &str, name_key: &str, name: &str) -> u64 {
    rows[key].as_array().and_then(|a| a.iter().find(|r| r[name_key] == name)).map_or(0, |r| r["count"].as_u64().or(r["objects"].as_u64()).unwrap_or(0))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// Records run `i` and checks every figure.
/// The message of a failed `--json` command: `{"error": MESSAGE}` on its
/// standard output, with exit status 1.
fn json_error(out: &std::process::Output) -> String {
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not a JSON error ({e}): {}", String::from_utf8_lossy(&out.stdout)));
    v["error"].as_str().unwrap_or_default().to_string()
}

fn check(i: usize) {
    let Some(_) = agent() else { return };
    let Some(dn) = dotnet::dotnet(&work()) else { return };
    let r = MATRIX[i];
    let what = format!("run {i} {r:?}");
    let Recorded { truth, log, dir } = record(dn, i, &r);
    let log_s = log.to_str().expect("UTF-8 path");
    let q = |args: &[&str]| {
        // The log right after the command.
        let mut a = args.to_vec();
        a.insert(1, log_s);
        json(&dir, &a)
    };
    let attached = r.launch == Attached;

    // The log loads without a warning.
    let stats = q(&["stats", "--json"]);
    assert_eq!(stats["warnings"]["total"], 0, "{what}: warnings {}", stats["warnings"]);
    let summary = q(&["summary", "--json"]);

    // Comments: the program's, in its order.
    let Naive { dumps, comments, off_phase, late_dumps } = naive(&log);

    // GCs: every GC since the agent came, exactly (GC.CollectionCount at
    // the end minus at the attach point), but for periodic dumps taken
    // after the program read its counts (each a full GC); the program's
    // own induced GCs among the induced (a compacting GC.Collect is told to
    // a profiler as not induced: the runtime gives its reason as "other").
    // A launched agent came with the process: all its GCs count, those of
    // periodic dumps before `Main` read its counts too (a loaded machine
    // starts the runtime slower than the dumps' period). An attached one
    // came during the start pause, after the program's first count.
    let gens = ["gen0_collections", "gen1_collections", "gen2_collections"];
    for (g, key) in gens.iter().enumerate() {
        let before_agent = if attached { u(&truth["gc_at_start"][g]) } else { 0 };
        let expected = u(&truth["gc"][g]) - before_agent;
        let got = u(&summary[key]);
        assert!(
            got >= expected && got <= expected + late_dumps,
            "{what}: {key} {got} (program: {} at the end, {} at the start; {late_dumps} dumps after its count)",
            truth["gc"],
            truth["gc_at_start"]
        );
    }
    if r.dumps != D::Periodic {
        assert_eq!(late_dumps, 0, "{what}: dumps after the program's end");
    }
    let induced: u64 = truth["induced"].as_array().expect("induced").iter().map(u).sum();
    assert!(u(&summary["induced_collections"]) >= induced, "{what}: induced {} < the program's {induced}", summary["induced_collections"]);
    let mut at = 0;
    for c in truth["comments"].as_array().expect("comments") {
        let c = c.as_str().expect("a comment");
        at += comments[at..].iter().position(|x| x == c).unwrap_or_else(|| panic!("{what}: comment {c:?} missing or out of order in {comments:?}")) + 1;
    }
    assert_eq!(truth["comments"].as_array().map(Vec::len), Some(8), "{what}: the program wrote its comments");
    assert!(u(&summary["comments"]) >= 8, "{what}: summary comments {}", summary["comments"]);

    // Allocations per marker type, the off phase's left out.
    if attached {
        // Not known after attach: refused with the reason, never a number
        // (with --json the error is `{"error": ...}` on standard output).
        assert_eq!(stats["records"]["!"], 0, "{what}: allocations in an attached log");
        for args in [
            &["types", log_s, "--kind", "allocated", "--json", "--top", "0"][..],
            &["types", log_s, "--kind", "finalized", "--json", "--top", "0"][..],
            &["who", log_s, "TruthCache", "--exact", "--json", "--top", "0"][..],
        ] {
            let e = json_error(&clrprof(&dir, args));
            assert!(e.contains("needs allocations, and they are unknown"), "{what}: {args:?} of an attached log: {e}");
        }
        for key in ["allocated_bytes", "final_heap_bytes", "relocated_bytes", "objects_finalized", "critical_objects_finalized"] {
            assert!(summary[key].is_null(), "{what}: summary {key} of a log without allocations is {} (unknown expected)", summary[key]);
        }
    } else {
        let allocated = q(&["types", "--kind", "allocated", "--json", "--top", "0"]);
        let finalized = q(&["types", "--kind", "finalized", "--json", "--top", "0"]);
        for name in MARKERS {
            let off_n = if r.off { truth["allocated_off_phase"][name].as_u64().unwrap_or(0) } else { 0 };
            let expected = u(&truth["allocated"][name]) - off_n;
            assert_eq!(count_in(&allocated, "types", "type", name), expected, "{what}: allocated {name}");
            let in_phase = if r.off { 0 } else { truth["allocated_off_phase"][name].as_u64().unwrap_or(0) };
            // Read from the log's order: `--between-comments` works in
            // whole ticks (milliseconds) and takes what the program
            // allocated after "off end" in the same millisecond too.
            assert_eq!(off_phase.get(name).copied().unwrap_or(0), in_phase, "{what}: {name} allocated in the off phase");
        }
        assert_eq!(truth["allocations_while_off"], !r.off, "{what}: the agent's switch as the program saw it");
        // Finalized: each object once, as many as the program's finalizer ran.
        assert_eq!(count_in(&finalized, "types", "type", "TruthFin"), u(&truth["finalized"]["TruthFin"]), "{what}: finalized TruthFin");
        assert!(summary["objects_finalized"].as_u64().is_some_and(|n| n >= u(&truth["finalized"]["TruthFin"])), "{what}: summary {}", summary["objects_finalized"]);
        assert!(summary["allocated_bytes"].as_u64().is_some_and(|b| b > 0), "{what}: {}", summary["allocated_bytes"]);
        // Stacks: each marker under its allocating method, or none at all.
        for (ty, method) in [("TruthCache", "P::Grow"), ("TruthFin", "P::MakeFin"), ("TruthTemp", "P::MakeTemp")] {
            let who = q(&["who", ty, "--exact", "--json", "--top", "0"]);
            let f = who["functions"].as_array().and_then(|a| a.iter().find(|f| f["name"] == method)).cloned();
            let expected = u(&truth["allocated"][ty]);
            if r.stacks == S::None {
                assert!(f.is_none(), "{what}: {ty} has a stack without stacks: {who}");
            } else {
                let f = f.unwrap_or_else(|| panic!("{what}: {ty} not allocated in {method}: {who}"));
                assert_eq!(f["exclusive_count"].as_u64(), Some(expected), "{what}: {ty} in {method}");
                let main = who["functions"].as_array().and_then(|a| a.iter().find(|f| f["name"] == "P::Main")).cloned().unwrap_or_default();
                assert_eq!(main["inclusive_count"].as_u64(), Some(expected), "{what}: {ty} under P::Main");
            }
        }
    }
    assert!(truth["finalized"]["TruthFin"] == 400, "{what}: the program's finalizers: {}", truth["finalized"]);

    // Calls: counted with --calls, else the tool says the log has none.
    let calls = clrprof(&dir, &["calls", log_s, "--json", "--top", "0"]);
    if r.stacks == S::Calls {
        assert!(calls.status.success(), "{what}: calls: {}", String::from_utf8_lossy(&calls.stderr));
        let calls: Value = serde_json::from_slice(&calls.stdout).expect("calls --json");
        for (method, n) in truth["calls"].as_object().expect("calls") {
            let row = calls["functions"].as_array().and_then(|a| a.iter().find(|f| f["name"] == method.as_str())).cloned().unwrap_or_default();
            assert_eq!(row["exclusive"].as_u64(), n.as_u64(), "{what}: calls of {method}: {row}");
        }
    } else {
        assert!(!calls.status.success(), "{what}: calls of a log without call logging");
        let e = json_error(&calls);
        assert!(e.contains("the log has no calls"), "{what}: {e}");
    }

    // Handles: the program's made and freed among all; by stack exactly.
    let (made, freed) = (u(&truth["handles"]["created"]), u(&truth["handles"]["freed"]));
    assert!(u(&summary["handles_created"]) >= made && u(&summary["handles_destroyed"]) >= freed, "{what}: handles {summary}");
    if !attached && r.stacks != S::None {
        let handles = q(&["handles", "--json", "--top", "0"]);
        let group = handles["groups"]
            .as_array()
            .and_then(|a| a.iter().find(|g| g["frames"].as_array().is_some_and(|f| f.iter().any(|f| f == "P::MakeHandles"))))
            .cloned()
            .unwrap_or_else(|| panic!("{what}: no handles made in P::MakeHandles: {handles}"));
        assert_eq!((u(&group["created"]), u(&group["destroyed"])), (made, freed), "{what}: handles of P::MakeHandles");
        // The whole call site, not only a frame of it: the program's own
        // frames of the creating stack are exactly P::MakeHandles in
        // P::Main (a stale or renumbered stack id shows another path).
        let program: Vec<&str> =
            group["frames"].as_array().map(|f| f.iter().filter_map(Value::as_str).filter(|f| f.starts_with("P::")).collect()).unwrap_or_default();
        assert_eq!(program, ["P::MakeHandles", "P::Main"], "{what}: the creating stack of P::MakeHandles' handles: {group}");
    }

    // Dumps: as many as asked; the ones inside a pause hold exactly what
    // the program held then, in the tool's figures and in the log's lines.
    let listed = q(&["dumps", "--json"])["dumps"].as_array().cloned().unwrap_or_default();
    assert_eq!(listed.len(), dumps.len(), "{what}: dumps listed by the tool and in the log");
    match r.dumps {
        D::None => assert_eq!(dumps.len(), 0, "{what}: dumps"),
        D::Api | D::HeapDump => {
            let windows: Vec<Option<&str>> = dumps.iter().map(|d| d.window.as_deref()).collect();
            assert_eq!(windows, [Some("dump1"), Some("dump2")], "{what}: one dump at each dump point");
        }
        D::Periodic => {
            for w in ["dump1", "dump2"] {
                assert!(dumps.iter().any(|d| d.window.as_deref() == Some(w)), "{what}: no periodic dump during pause {w}");
            }
            let text = std::fs::read_to_string(&log).expect("the log");
            assert!(text.contains("\nz periodic heap dump 0\n"), "{what}: periodic labels, numbered as `clrprof dumps` numbers the dumps");
        }
    }
    if r.dumps == D::Api {
        assert_eq!(truth["api_dumps"], serde_json::json!([0, 1]), "{what}: DumpHeap's indexes");
    }
    let mut tool_counts = Vec::new();
    for (n, d) in dumps.iter().enumerate() {
        let dump = q(&["dump", &n.to_string(), "--json", "--top", "0"]);
        let counts: BTreeMap<String, u64> =
            MARKERS.iter().map(|m| (m.to_string(), count_in(&dump, "types", "name", m))).filter(|(_, c)| *c > 0).collect();
        assert_eq!(counts, d.markers, "{what}: dump {n}: the tool's marker counts and the log's o lines");
        if let Some(w) = &d.window {
            let expected: BTreeMap<String, u64> =
                truth["live_at"][w].as_object().expect("live_at").iter().map(|(k, v)| (k.clone(), u(v))).filter(|(_, c)| *c > 0).collect();
            assert_eq!(counts, expected, "{what}: dump {n} (at pause {w}) against the program's live objects");
        }
        tool_counts.push(counts);
    }
    // dump-diff from each dump to the next: the cache only grows, so none
    // of it is gone; between two pauses every marker type's gone and new
    // objects are what the program's counts say.
    for n in 1..dumps.len() {
        let diff = q(&["dump-diff", &(n - 1).to_string(), &n.to_string(), "--json", "--top", "0"]);
        let row = |name: &str| diff["types"].as_array().and_then(|a| a.iter().find(|t| t["name"] == name)).cloned().unwrap_or_default();
        let cache = row("TruthCache");
        assert_eq!(cache["gone_objects"].as_u64().unwrap_or(0), 0, "{what}: dump-diff {} {n}: the cache only grows: {cache}", n - 1);
        if dumps[n - 1].window.is_some() && dumps[n].window.is_some() {
            for m in MARKERS {
                let (a, b) = (tool_counts[n - 1].get(m).copied().unwrap_or(0), tool_counts[n].get(m).copied().unwrap_or(0));
                let t = row(m);
                let (gone, new) = (t["gone_objects"].as_u64().unwrap_or(0), t["new_objects"].as_u64().unwrap_or(0));
                assert_eq!((gone, new), (a.saturating_sub(b), b.saturating_sub(a)), "{what}: dump-diff {} {n}: {m} gone and new: {t}", n - 1);
            }
        }
    }
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn run_00_attached_collector_core31() {
    check(0);
}
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn run_01_attached_periodic_off_core31() {
    check(1);
}
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn run_02_attached_api_dumps_off_collector_core31() {
    check(2);
}
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn run_03_attached_heap_dump_net8() {
    check(3);
}
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn run_04_launched_no_stacks_heap_dump_off_core31() {
    check(4);
}
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn run_05_launched_shadow_off_core31() {
    check(5);
}
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn run_06_launched_shadow_api_dumps_off_net8() {
    check(6);
}
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn run_07_launched_shadow_heap_dump_off_collector_net8() {
    check(7);
}
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn run_08_launched_calls_off_net8() {
    check(8);
}
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn run_09_launched_calls_api_dumps_net8() {
    check(9);
}
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn run_10_launched_calls_heap_dump_off_core31() {
    check(10);
}
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn run_11_launched_shadow_periodic_net8() {
    check(11);
}
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn run_12_launched_calls_periodic_collector_core31() {
    check(12);
}
