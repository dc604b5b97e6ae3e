//! Capture over EventPipe, no agent: `record --sampled -p PID` on a
//! running program, `record --sampled -- CMD` from a program's first
//! allocation, and `heap-dump PID --eventpipe`, on the runtimes the tests
//! install, checked against what the programs count of themselves
//! (`agent/testapps/sampled.cs`, `agent/testapps/heapgraph.cs`) and against
//! the agent's dump of the same heap.
//!
//! Needs `scripts/setup-dotnet.sh`: without it the tests print SKIPPED, and
//! fail under `CI=true`.

mod common;

use common::dotnet::{self, Dotnet, Runtime};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};

fn dotnet_env() -> Option<&'static Dotnet> {
    dotnet::dotnet(&Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("eventpipe-capture-{}", std::process::id())))
}

fn clrprof(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_clrprof")).args(args).current_dir(dir).output().expect("run clrprof")
}

fn ok_json(dir: &Path, args: &[&str]) -> Value {
    // heap-dump has no -q (it prints nothing but its answer).
    let quiet: &[&str] = if args[0] == "heap-dump" { &["--json"] } else { &["--json", "-q"] };
    let out = clrprof(dir, &[args, quiet].concat());
    assert!(out.status.success(), "clrprof {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("clrprof {args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// A program driven through its standard input.
struct Program {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    pid: u32,
}

impl Program {
    fn start(dn: &Dotnet, rt: Runtime, dir: &Path, app: &str, args: &[&str]) -> Program {
        let mut child = Command::new(dn.host(rt))
            .arg(format!("{app}.dll"))
            .args(args)
            .current_dir(dir)
            .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the program");
        let stdin = child.stdin.take().expect("stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let ready = read_json(&mut stdout);
        assert_eq!(ready["ready"], true, "{rt:?}: {ready}");
        let pid = child.id();
        Program { child, stdin, stdout, pid }
    }

    fn send(&mut self, line: &str) -> Value {
        self.say(line);
        read_json(&mut self.stdout)
    }

    fn say(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").expect("write to the program");
        self.stdin.flush().expect("flush");
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_json(r: &mut impl BufRead) -> Value {
    let mut line = String::new();
    r.read_line(&mut line).expect("read the program's output");
    serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("not a JSON line from the program: {line:?}: {e}"))
}

/// The trace against the program's truth: each marker type with at least
/// 2% of the bytes within 15%, the GC counts exact, the markers' stacks in
/// the program's own Main.
fn check_sampled(rt: Runtime, dir: &Path, trace: &Path, truth: &Value) {
    let t = trace.to_str().expect("UTF-8 path");
    let s = ok_json(dir, &["summary", t]);
    for (k, key) in ["gen0_collections", "gen1_collections", "gen2_collections"].iter().enumerate() {
        assert_eq!(s[key], truth["gc"][k], "{rt:?} {t}: {key}");
    }
    assert_eq!(s["estimates"]["method"], "GC/AllocationTick", "{s}");
    let types = ok_json(dir, &["types", t]);
    let allocated = s["allocated_bytes"].as_f64().expect("allocated");
    for (name, m) in truth["markers"].as_object().expect("markers") {
        let want = m["bytes"].as_f64().expect("bytes");
        if want < 0.02 * allocated {
            continue;
        }
        let got = types["types"].as_array().and_then(|v| v.iter().find(|r| r["type"] == name.as_str())).and_then(|r| r["bytes"].as_f64());
        let got = got.unwrap_or_else(|| panic!("{rt:?} {t}: no {name}: {types}"));
        eprintln!("{rt:?} {t} {name}: estimated {got}, allocated {want} ({:+.2}%)", (got - want) / want * 100.0);
        assert!((got - want).abs() <= 0.15 * want, "{rt:?} {t} {name}: estimated {got}, allocated {want}");
    }
    let who = ok_json(dir, &["who", t, "MarkerA"]).to_string();
    assert!(who.contains("P::Main"), "{rt:?} {t}: the markers' stacks name the program's Main: {who}");
}

/// `record --sampled -p PID` started while the program waits, stopped with
/// Ctrl-C (SIGINT) before it ends: the rundown names the methods compiled
/// before the session.
fn sampled_attach(rt: Runtime) {
    let Some(dn) = dotnet_env() else { return };
    let dir = dn.app_dir("sampled", rt, &dn.work.join(format!("attach-{}", rt.tag())));
    let mut p = Program::start(dn, rt, &dir, "sampled", &["1", "pause"]);
    let trace = dir.join("attached.nettrace");
    let mut record = Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .args(["record", "--sampled", "-p", &p.pid.to_string(), "-o"])
        .arg(&trace)
        .current_dir(&dir)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start record --sampled -p");
    // The session runs once it says so.
    let mut err = BufReader::new(record.stderr.take().expect("stderr"));
    let mut line = String::new();
    err.read_line(&mut line).expect("read record's first line");
    assert!(line.contains("EventPipe session with process"), "{rt:?}: {line}");
    let truth = p.send("go");
    // Ctrl-C: the session stops with its rundown while the program waits.
    // Safety: a signal to a child of this test.
    unsafe { libc::kill(record.id() as i32, libc::SIGINT) };
    let status = record.wait().expect("wait for record");
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut err, &mut rest);
    assert!(status.success(), "{rt:?}: record --sampled -p: {status}: {rest}");
    assert!(rest.contains("stopped"), "{rt:?}: {rest}");
    p.say("end");
    check_sampled(rt, &dir, &trace, &truth);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn sampled_attach_on_net8() {
    sampled_attach(Runtime::Net8);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn sampled_attach_on_core31() {
    sampled_attach(Runtime::Core31);
}

/// `record --sampled -- dotnet sampled.dll`: the program starts suspended
/// and runs once the session does; its GC counts are its whole life's.
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn sampled_launch_on_net8() {
    let Some(dn) = dotnet_env() else { return };
    let rt = Runtime::Net8;
    let dir = dn.app_dir("sampled", rt, &dn.work.join("launch-net8"));
    let trace = dir.join("launched.nettrace");
    let out = Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .args(["record", "--sampled", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(dn.host(rt))
        .arg("sampled.dll")
        .current_dir(&dir)
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .output()
        .expect("run record --sampled");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let truth = dotnet::json_line(&out.stdout).expect("the program's truth on record's standard output");
    check_sampled(rt, &dir, &trace, &truth);
    // CoreCLR 3.1 does not know DOTNET_DiagnosticPorts: said, not hung.
    let dir31 = dn.app_dir("sampled", Runtime::Core31, &dn.work.join("launch-core31"));
    let out = Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .args(["record", "--sampled", "-o", "x.nettrace", "--"])
        .arg(dn.host(Runtime::Core31))
        .arg("sampled.dll")
        .current_dir(&dir31)
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .output()
        .expect("run record --sampled");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(".NET 5 or later"), "{err}");
}

const N: u64 = 200;
const K: u64 = 5;
const M: u64 = 300;
const F: u64 = 40;

/// Objects of the type named exactly `name` in a dump.
fn objects_of(dump: &Value, name: &str) -> u64 {
    dump["types"].as_array().and_then(|v| v.iter().find(|r| r["name"] == name)).and_then(|r| r["objects"].as_u64()).unwrap_or(0)
}

/// The retained bytes of the one object whose type name contains every
/// part.
fn retained_of(retained: &Value, parts: &[&str]) -> u64 {
    let rows = retained["top_objects"].as_array().expect("top objects");
    let row = rows
        .iter()
        .find(|r| r["name"].as_str().is_some_and(|n| parts.iter().all(|p| n.contains(p))))
        .unwrap_or_else(|| panic!("no object of {parts:?} among {}", rows.len()));
    row["retained"].as_u64().expect("retained")
}

/// Whether the capture agent is mapped into process `pid`.
fn agent_loaded(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/maps")).is_ok_and(|m| m.contains("libclrprof_agent"))
}

/// `heap-dump PID` (EventPipe, the default without the agent) of the graph program: exact counts, root
/// kinds, paths through the cache, and the cache's retained size equal to
/// the agent's dump of the same heap taken right after.
fn eventpipe_dump(rt: Runtime) {
    let Some(dn) = dotnet_env() else { return };
    let Some(agent) = dotnet::agent_beside(Path::new(env!("CARGO_BIN_EXE_clrprof"))) else { return };
    let dir = dn.app_dir("heapgraph", rt, &dn.work.join(format!("eventpipe-dump-{}", rt.tag())));
    let args = [N, K, M, F].map(|v| v.to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let p = Program::start(dn, rt, &dir, "heapgraph", &args);
    let pid = p.pid.to_string();
    // A process without the agent is dumped over EventPipe by default, and
    // no profiler is loaded into it.
    let d = ok_json(&dir, &["heap-dump", &pid, "-o", "ep.nettrace"]);
    assert_eq!(d["eventpipe"], true, "{rt:?}: {d}");
    assert_eq!(d["attached"], false, "{rt:?}: {d}");
    assert!(!agent_loaded(p.pid), "{rt:?}: the default heap-dump loaded the agent");
    assert_eq!(d["dump"]["complete"], true, "{rt:?}: {d}");
    assert_eq!(d["dump"]["lost_events"], 0, "{rt:?}: {d}");
    let ep = dir.join("ep.nettrace");
    let ep = ep.to_str().expect("UTF-8");
    let dump = ok_json(&dir, &["dump", ep, "0", "--top", "0"]);
    assert_eq!(objects_of(&dump, "Marker"), N * K, "{rt:?}: Marker objects");
    assert_eq!(objects_of(&dump, "Node"), M, "{rt:?}: Node objects");
    assert_eq!(objects_of(&dump, "FinObj"), F, "{rt:?}: FinObj objects");
    assert_eq!(objects_of(&dump, "System.Collections.Generic.List`1[Marker]"), N, "{rt:?}: lists");
    // Root kinds: the list's head on Main's stack, the pinned array and the
    // statics behind handles, the finalizable objects on the queue.
    let listed = ok_json(&dir, &["dumps", ep]);
    let kinds = &listed["dumps"][0]["root_kinds"];
    for kind in ["stack", "handle", "finalizer"] {
        assert!(kinds[kind].as_u64().unwrap_or(0) > 0, "{rt:?}: {kind} roots: {kinds}");
    }
    let flags = &listed["dumps"][0]["root_flags"];
    assert!(flags["pinning"].as_u64().unwrap_or(0) > 0, "{rt:?}: pinning roots: {flags}");
    // Every marker is reached through the cache.
    let max = (N * K).to_string();
    let paths = ok_json(&dir, &["dump", ep, "0", "--path-to", "Marker", "--max", &max]);
    let paths = paths["paths"].as_array().expect("paths");
    assert_eq!(paths.len() as u64, N * K, "{rt:?}: one path per marker");
    for path in paths {
        let names: Vec<&str> = path["steps"].as_array().expect("steps").iter().filter_map(|s| s["name"].as_str()).collect();
        assert!(names.iter().any(|n| n.contains("Dictionary") && n.contains("Marker")), "{rt:?}: {names:?}");
    }
    // The agent's dump of the same heap: the cache retains the same bytes.
    let agent_dump = Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .args(["heap-dump", &pid, "--attach", "-o", "agent.log", "--json"])
        .current_dir(&dir)
        .env("CLRPROF_AGENT", &agent)
        .output()
        .expect("run heap-dump");
    assert!(agent_dump.status.success(), "{rt:?}: {}", String::from_utf8_lossy(&agent_dump.stderr));
    let ours = retained_of(&ok_json(&dir, &["dump", ep, "0", "--retained", "--top", "0"]), &["Dictionary", "Marker"]);
    let agents = retained_of(&ok_json(&dir, &["dump", "agent.log", "0", "--retained", "--top", "0"]), &["Dictionary", "Marker"]);
    assert_eq!(ours, agents, "{rt:?}: the cache's retained bytes over EventPipe and from the agent");
    assert!(ours >= N * K * 24, "{rt:?}: {ours}");
    // With the agent loaded, heap-dump uses it; --eventpipe still goes
    // around it.
    assert!(agent_loaded(p.pid), "{rt:?}: --attach loaded the agent");
    let again = ok_json(&dir, &["heap-dump", &pid, "-o", "agent2.log"]);
    assert_eq!((again["attached"].as_bool(), again["eventpipe"].as_bool()), (Some(false), Some(false)), "{rt:?}: {again}");
    let forced = ok_json(&dir, &["heap-dump", &pid, "--eventpipe", "-o", "ep2.nettrace"]);
    assert_eq!(forced["eventpipe"], true, "{rt:?}: {forced}");
    assert_eq!(forced["dump"]["complete"], true, "{rt:?}: {forced}");
    drop(p);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn eventpipe_dump_on_net8() {
    eventpipe_dump(Runtime::Net8);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn eventpipe_dump_on_core31() {
    eventpipe_dump(Runtime::Core31);
}


/// A `clrprof collect` in `dir`, SIGKILLed when dropped.
struct Collector {
    child: Child,
    target: String,
}

impl Collector {
    fn start(dir: &Path, listen: &str) -> Collector {
        std::fs::create_dir_all(dir).expect("collector dir");
        let mut child = Command::new(env!("CARGO_BIN_EXE_clrprof"))
            .args(["collect", "--listen", listen, "--dir"])
            .arg(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start clrprof collect");
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut target = String::new();
        for _ in 0..2 {
            let mut line = String::new();
            out.read_line(&mut line).expect("the collector's first lines");
            if let Some(t) = line.trim().strip_prefix("CLRPROF_TARGET=") {
                target = t.to_string();
            }
        }
        assert!(!target.is_empty(), "the collector printed its address");
        Collector { child, target }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The sessions of the collector in `dir`.
fn sessions(dir: &Path) -> Vec<Value> {
    let out = clrprof(dir, &["sessions", "--json", "--dir", dir.to_str().expect("UTF-8")]);
    serde_json::from_slice::<Value>(&out.stdout).ok().and_then(|v| v.as_array().cloned()).unwrap_or_default()
}

/// Waits (up to a minute) until `f` gives something.
fn eventually<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = std::time::Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(60), "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// `record --sampled --target TARGET [EXTRA] -- dotnet sampled.dll 1
/// pause` from `dir`, streaming to the collector in `cdir`, once the
/// program is ready and its session live: the process, its standard input
/// and output, and the session's name.
fn streamed(dn: &Dotnet, dir: &Path, cdir: &Path, target: &str, extra: &[&str]) -> (Child, ChildStdin, BufReader<ChildStdout>, String) {
    let mut record = Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .args(["record", "--sampled", "--target", target, "--token-file"])
        .arg(cdir.join("collector.token"))
        .args(extra)
        .arg("--")
        .arg(dn.host(Runtime::Net8))
        .args(["sampled.dll", "1", "pause"])
        .current_dir(dir)
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start record --sampled --target");
    let stdin = record.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(record.stdout.take().expect("stdout"));
    assert_eq!(read_json(&mut stdout)["ready"], true);
    let live = eventually("the live session", || sessions(cdir).into_iter().find(|s| s["state"] == "live"));
    assert!(live["log"].as_str().is_some_and(|l| l.ends_with(".nettrace")), "{live}");
    let name = live["session"].as_str().expect("name").to_string();
    (record, stdin, stdout, name)
}

/// `record --sampled --target -- dotnet sampled.dll`: the trace streams
/// into a real collector with its token. The collector is killed while
/// the program allocates (the trace goes on in the spool) and started
/// again on the same address: the client catches it up from the spool,
/// and the session ends whole, its stored trace the program's truth with
/// nothing lost, the spool the trace's tail byte for byte.
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn sampled_session_streams_to_a_collector_killed_and_restarted() {
    let Some(dn) = dotnet_env() else { return };
    let rt = Runtime::Net8;
    let dir = dn.app_dir("sampled", rt, &dn.work.join("streamed-net8"));
    let cdir = dir.join("collector");
    let _ = std::fs::remove_dir_all(&cdir);
    let collector = Collector::start(&cdir, "127.0.0.1:0");
    let target = collector.target.clone();
    let (mut record, mut stdin, mut stdout, name) = streamed(dn, &dir, &cdir, &target, &["-o", "streamed.nettrace"]);
    let mut stderr = record.stderr.take().expect("stderr");
    // The collector goes away; the program allocates meanwhile.
    drop(collector);
    writeln!(stdin, "go").expect("go");
    stdin.flush().expect("flush");
    let truth = read_json(&mut stdout);
    // Back on the same address: the spool is sent to it.
    let again = Collector::start(&cdir, &target);
    eventually("the session live again", || sessions(&cdir).into_iter().find(|s| s["session"] == name.as_str() && s["state"] == "live"));
    writeln!(stdin, "end").expect("end");
    stdin.flush().expect("flush");
    let status = record.wait().expect("wait for record");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut err).expect("record's stderr");
    assert!(status.success(), "{err}");
    assert!(err.contains("caught up from the spool"), "{err}");
    assert!(!dir.join("streamed.nettrace").exists(), "streamed, not written here");
    let rec = eventually("the session ended", || sessions(&cdir).into_iter().find(|s| s["session"] == name.as_str() && s["state"] != "live"));
    assert_eq!(rec["state"], "ended", "{rec}");
    assert!(rec["spool"].is_null(), "a whole trace names no spool: {rec}");
    let stored = cdir.join(rec["log"].as_str().expect("log"));
    let bytes = std::fs::read(&stored).expect("the stored trace");
    assert_eq!(rec["bytes"].as_u64(), Some(bytes.len() as u64), "{rec}");
    // Nothing lost: the trace reads to its end without a warning, and
    // gives the program's own figures.
    let out = clrprof(&dir, &["stats", stored.to_str().expect("UTF-8")]);
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !warnings.contains("warning"), "{warnings}");
    check_sampled(rt, &dir, &stored, &truth);
    // The spool is the trace from the break on, byte for byte.
    let spool = err.split("caught up from the spool ").nth(1).and_then(|r| r.split_whitespace().next()).expect("the spool named");
    let from: usize = err.split("away from byte ").nth(1).and_then(|r| r.split_whitespace().next()).and_then(|n| n.parse().ok()).expect("from");
    assert_eq!(std::fs::read(spool).expect("the spool"), &bytes[from..], "the spool is the trace's tail");
    assert!(from > 0 && from < bytes.len(), "the break was in the middle: {from} of {}", bytes.len());
    drop(again);
}

/// `clrprof ui --collector DIR` shows a sampled session live: opened while
/// the program runs, its figures (marked as estimates) follow the trace
/// as it arrives, and once the session ends they are the CLI's on the
/// stored trace.
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn sampled_session_live_in_the_ui() {
    let Some(dn) = dotnet_env() else { return };
    let rt = Runtime::Net8;
    let dir = dn.app_dir("sampled", rt, &dn.work.join("ui-live-net8"));
    let cdir = dir.join("collector");
    let _ = std::fs::remove_dir_all(&cdir);
    let collector = Collector::start(&cdir, "127.0.0.1:0");
    let (_ui, base, token) = common::start_ui(&["--collector", cdir.to_str().expect("UTF-8")]);
    let (mut record, mut stdin, mut stdout, name) = streamed(dn, &dir, &cdir, &collector.target, &["-q"]);
    let (code, listed) = common::http(&base, &token, "GET", "/api/sessions");
    assert_eq!(code, 200, "{listed}");
    assert!(listed["sessions"].as_array().is_some_and(|v| v.iter().any(|s| s["record"]["session"] == name.as_str() || s["session"] == name.as_str())), "{listed}");
    let (code, opened) = common::http(&base, &token, "POST", &format!("/api/session/{name}/open"));
    assert_eq!(code, 200, "{opened}");
    let id = opened["log"].as_u64().expect("the session's log id");
    writeln!(stdin, "go").expect("go");
    stdin.flush().expect("flush");
    let truth = read_json(&mut stdout);
    // While the program waits (the session still live), the page's model
    // catches up with the trace: the program's GCs, estimates said.
    let status = |want_live: bool| {
        let (_, logs) = common::http(&base, &token, "GET", "/api/logs");
        logs.as_array().and_then(|v| v.iter().find(|l| l["id"] == id).cloned()).filter(|l| l["state"] == "ready" && l["session"]["live"] == want_live)
    };
    let seen = eventually("the live session's GCs in the UI", || {
        let l = status(true)?;
        let (_, s) = common::http(&base, &token, "GET", &format!("/api/log/{id}/summary"));
        (s["gen0_collections"] == truth["gc"][0]).then_some((l, s))
    });
    assert_eq!(seen.0["estimates"]["method"], "GC/AllocationTick", "{}", seen.0);
    assert!(seen.0["name"].as_str().is_some_and(|n| n.ends_with(".nettrace")), "{}", seen.0);
    writeln!(stdin, "end").expect("end");
    stdin.flush().expect("flush");
    assert!(record.wait().expect("wait").success());
    // Ended: the page's figures are the CLI's on the stored trace.
    let rec = eventually("the session ended", || sessions(&cdir).into_iter().find(|s| s["session"] == name.as_str() && s["state"] == "ended"));
    let stored = cdir.join(rec["log"].as_str().expect("log"));
    eventually("the UI's model of the ended session", || status(false));
    let cli = ok_json(&dir, &["summary", stored.to_str().expect("UTF-8")]);
    let (_, ui_summary) = common::http(&base, &token, "GET", &format!("/api/log/{id}/summary"));
    for key in ["allocated_bytes", "gen0_collections", "gen1_collections", "gen2_collections", "final_heap_bytes"] {
        assert_eq!(ui_summary[key], cli[key], "{key}: UI {ui_summary} CLI {cli}");
    }
    drop(collector);
}
