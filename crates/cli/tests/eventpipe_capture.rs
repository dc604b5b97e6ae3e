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
fn sampled_attach_on_net8() {
    sampled_attach(Runtime::Net8);
}

#[test]
fn sampled_attach_on_core31() {
    sampled_attach(Runtime::Core31);
}

/// `record --sampled -- dotnet sampled.dll`: the program starts suspended
/// and runs once the session does; its GC counts are its whole life's.
#[test]
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

/// `heap-dump PID --eventpipe` of the graph program: exact counts, root
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
    let d = ok_json(&dir, &["heap-dump", &pid, "--eventpipe", "-o", "ep.nettrace"]);
    assert_eq!(d["eventpipe"], true);
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
        .args(["heap-dump", &pid, "-o", "agent.log", "--json"])
        .current_dir(&dir)
        .env("CLRPROF_AGENT", &agent)
        .output()
        .expect("run heap-dump");
    assert!(agent_dump.status.success(), "{rt:?}: {}", String::from_utf8_lossy(&agent_dump.stderr));
    let ours = retained_of(&ok_json(&dir, &["dump", ep, "0", "--retained", "--top", "0"]), &["Dictionary", "Marker"]);
    let agents = retained_of(&ok_json(&dir, &["dump", "agent.log", "0", "--retained", "--top", "0"]), &["Dictionary", "Marker"]);
    assert_eq!(ours, agents, "{rt:?}: the cache's retained bytes over EventPipe and from the agent");
    assert!(ours >= N * K * 24, "{rt:?}: {ours}");
    drop(p);
}

#[test]
fn eventpipe_dump_on_net8() {
    eventpipe_dump(Runtime::Net8);
}

#[test]
fn eventpipe_dump_on_core31() {
    eventpipe_dump(Runtime::Core31);
}

