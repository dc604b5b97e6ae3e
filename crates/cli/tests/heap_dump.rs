//! Heap dumps of real .NET programs (agent/testapps/heapgraph.cs and
//! apiuse.cs) on CoreCLR 3.1 and .NET 8: started under the agent, and
//! started bare then attached (`clrprof heap-dump PID`, `clrprof record
//! -p PID`). The program builds a known object graph; the checks read the
//! dumps twice: naively, from the log's own `o`/`e` lines (counts per
//! type, reachability), and through the tool's queries (`dumps`, `dump
//! --path-to`, `dump --retained`, `dump-diff`), which must agree.
//!
//! Needs `scripts/setup-dotnet.sh` (else SKIPPED, or a failure under
//! `CI=true`) and the agent built next to `clrprof` (`cargo test
//! --release` at the workspace root builds both).

mod common;

use clrprof::format::{Record, RecordReader};
use common::dotnet::{self, Dotnet, Runtime};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Output, Stdio};

/// The cache's entries, markers per entry, list nodes, finalizable objects.
const N: u64 = 200;
const K: u64 = 5;
const M: u64 = 300;
const F: u64 = 40;

fn clrprof_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_clrprof"))
}

fn agent() -> Option<PathBuf> {
    dotnet::agent_beside(&clrprof_exe())
}

fn work() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("heap-dump-tests-{}", std::process::id()))
}

fn setup() -> Option<(&'static Dotnet, PathBuf)> {
    let a = agent()?;
    Some((dotnet::dotnet(&work())?, a))
}

fn clrprof(dir: &Path, args: &[&str]) -> Output {
    Command::new(clrprof_exe())
        .args(args)
        .current_dir(dir)
        .env("CLRPROF_AGENT", agent().unwrap_or_default())
        .output()
        .expect("run clrprof")
}

fn ok_json(dir: &Path, args: &[&str]) -> Value {
    let out = clrprof(dir, args);
    assert!(out.status.success(), "clrprof {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("clrprof {args:?}: not JSON: {e}"))
}

/// A running heapgraph program, driven through its standard input.
struct Program {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    pid: u32,
    ready: Value,
}

impl Program {
    fn start(dn: &Dotnet, rt: Runtime, dir: &Path, args: &[&str], env: &[(&str, String)]) -> Program {
        let mut cmd = Command::new(dn.host(rt));
        cmd.arg("heapgraph.dll")
            .args(args)
            .current_dir(dir)
            .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start heapgraph");
        let stdin = child.stdin.take().expect("stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let ready = read_json(&mut stdout);
        assert_eq!(ready["ready"], true, "{rt:?}: {ready}");
        let pid = ready["pid"].as_u64().expect("pid") as u32;
        assert_eq!(pid, child.id());
        Program { child, stdin, stdout, pid, ready }
    }

    fn send(&mut self, line: &str) -> Value {
        writeln!(self.stdin, "{line}").expect("write to the program");
        self.stdin.flush().expect("flush");
        read_json(&mut self.stdout)
    }

    fn finish(mut self) -> (Value, ExitStatus) {
        writeln!(self.stdin, "exit").expect("write to the program");
        drop(self.stdin);
        let done = read_json(&mut self.stdout);
        (done, self.child.wait().expect("wait for the program"))
    }
}

fn read_json(r: &mut impl BufRead) -> Value {
    let mut line = String::new();
    r.read_line(&mut line).expect("read the program's output");
    serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("not a JSON line from the program: {line:?}: {e}"))
}

fn app_dir(dn: &Dotnet, app: &str, rt: Runtime, name: &str) -> PathBuf {
    dn.app_dir(app, rt, &work().join(format!("{name}-{}", rt.tag())))
}

fn profiler_env(agent: &Path, log: &Path, extra: &[(&str, &str)]) -> Vec<(&'static str, String)> {
    let mut v = vec![
        ("CORECLR_ENABLE_PROFILING", "1".to_string()),
        ("CORECLR_PROFILER", "{BC620A3A-B286-4C9C-8138-256EE44F802D}".to_string()),
        ("CORECLR_PROFILER_PATH", agent.display().to_string()),
        ("CLRPROF_OUTPUT", log.display().to_string()),
    ];
    for (k, val) in extra {
        v.push((Box::leak(k.to_string().into_boxed_str()), val.to_string()));
    }
    v
}

/// One dump read naively from the log: objects (type, size, references)
/// and roots (address, kind, flags).
#[derive(Default)]
struct NaiveDump {
    objects: HashMap<u64, (i32, u64, Vec<u64>)>,
    roots: Vec<(u64, i32, i32)>,
}

/// Type names and the dumps of a log, in order (a dump = the `e`/`o`
/// lines of one GC).
fn naive_dumps(log: &Path) -> (HashMap<i32, String>, Vec<NaiveDump>) {
    let bytes = std::fs::read(log).expect("read the log");
    // Record by record: the stress logs are gigabytes, and holding all
    // their records at once took more memory than the machine has.
    let mut reader = RecordReader::new(&bytes);
    let mut types = HashMap::new();
    let mut dumps = Vec::new();
    let mut current: Option<NaiveDump> = None;
    for p in reader.by_ref() {
        match &p.record {
            Record::Type(t) => {
                types.insert(t.id.0, t.decoded_name());
            }
            Record::GcBoundary(b) => {
                if let Some(d) = current.take() {
                    if !d.roots.is_empty() || !d.objects.is_empty() {
                        dumps.push(d);
                    }
                }
                if b.is_start {
                    current = Some(NaiveDump::default());
                }
            }
            Record::Root(e) => {
                if let Some(d) = current.as_mut() {
                    d.roots.push((e.address.0, e.kind, e.flags));
                }
            }
            Record::HeapObject(o) => {
                let d = current.as_mut().expect("an o line outside a GC");
                assert!(types.contains_key(&o.type_id.0), "o line with type {} not defined before", o.type_id.0);
                d.objects.insert(o.address.0, (o.type_id.0, o.size as u64, o.refs.iter().map(|a| a.0).collect()));
            }
            _ => {}
        }
    }
    assert_eq!(reader.diagnostics().total(), 0, "{}: the log has warnings", log.display());
    (types, dumps)
}

impl NaiveDump {
    fn count(&self, types: &HashMap<i32, String>, name: &str) -> u64 {
        self.objects.values().filter(|o| types.get(&o.0).map(String::as_str) == Some(name)).count() as u64
    }

    fn find(&self, types: &HashMap<i32, String>, name: &str) -> Vec<u64> {
        self.objects.iter().filter(|(_, o)| types.get(&o.0).map(String::as_str) == Some(name)).map(|(&a, _)| a).collect()
    }

    /// Objects reachable from the strong roots, never entering `without`.
    fn reachable(&self, without: Option<u64>) -> HashSet<u64> {
        let mut seen = HashSet::new();
        let mut stack: Vec<u64> = self.roots.iter().filter(|r| r.2 & 2 == 0).map(|r| r.0).collect();
        while let Some(a) = stack.pop() {
            if Some(a) == without || !self.objects.contains_key(&a) || !seen.insert(a) {
                continue;
            }
            stack.extend(self.objects[&a].2.iter().copied());
        }
        seen
    }

    /// The bytes only `object` keeps alive (naively: what becomes
    /// unreachable without it).
    fn retained(&self, object: u64) -> u64 {
        let all = self.reachable(None);
        let without = self.reachable(Some(object));
        all.difference(&without).map(|a| self.objects[a].1).sum()
    }
}

const CACHE: &str = "System.Collections.Generic.Dictionary<System.Int32,System.Collections.Generic.List<Marker>>";
const LIST: &str = "System.Collections.Generic.List<Marker>";

/// The checks on dump `index` of `log`, taken with the graph intact.
fn check_graph(rt: Runtime, dir: &Path, log: &Path, index: usize) {
    let what = format!("{rt:?} {}", log.display());
    let (types, dumps) = naive_dumps(log);
    let d = &dumps[index];
    assert_eq!(d.count(&types, "Marker"), N * K, "{what}: Marker objects");
    assert_eq!(d.count(&types, LIST), N, "{what}: lists");
    assert_eq!(d.count(&types, "Node"), M, "{what}: Node objects");
    assert_eq!(d.count(&types, "FinObj"), F, "{what}: FinObj objects");
    assert_eq!(d.count(&types, CACHE), 1, "{what}: the cache");
    // Finalizable objects wait in the finalization queue (one is being
    // finalized: its finalizer blocks).
    let fin: HashSet<u64> = d.find(&types, "FinObj").into_iter().collect();
    let queued = d.roots.iter().filter(|r| r.1 == 2 && fin.contains(&r.0)).count() as u64;
    assert!(queued >= F - 1, "{what}: {queued} FinObj objects rooted by the finalizer queue");
    // The pinned array: a pinning handle root.
    let pinned: Vec<u64> =
        d.objects.iter().filter(|(_, o)| types.get(&o.0).map(String::as_str) == Some("System.Byte []") && o.1 >= 4099).map(|(&a, _)| a).collect();
    assert!(
        d.roots.iter().any(|r| r.1 == 3 && r.2 & 1 != 0 && pinned.contains(&r.0)),
        "{what}: the byte[4099] is held by a pinning handle"
    );

    let log_s = log.to_str().expect("UTF-8 path");
    let stats = ok_json(dir, &["stats", "--json", log_s]);
    assert_eq!(stats["warnings"]["total"], 0, "{what}: warnings {}", stats["warnings"]);
    let listed = ok_json(dir, &["dumps", "--json", log_s])["dumps"].clone();
    assert_eq!(listed[index]["objects"].as_u64(), Some(d.objects.len() as u64), "{what}: objects in `dumps`");

    // Every marker's shortest path from a root runs through the cache and
    // starts at the static field that holds it, named by the agent
    // (`P.Cache`), or at a handle, or at the array of statics a handle
    // holds (a thread may hold it too, and its root can be the one found
    // first).
    let held_by_handle: HashSet<u64> = d.roots.iter().filter(|r| r.1 == 3).map(|r| r.0).collect();
    let idx = index.to_string();
    let max = (N * K).to_string();
    let paths = ok_json(dir, &["dump", log_s, &idx, "--path-to", "Marker", "--max", &max, "--json"]);
    let paths = paths["paths"].as_array().expect("paths");
    assert_eq!(paths.len() as u64, N * K, "{what}: one path per marker");
    for p in paths {
        let steps: Vec<&str> = p["steps"].as_array().expect("steps").iter().filter_map(|s| s["name"].as_str()).collect();
        assert!(steps.contains(&CACHE) && steps.contains(&LIST), "{what}: a marker's path misses the cache: {steps:?}");
        assert_eq!(steps.last(), Some(&"Marker"), "{what}: {steps:?}");
        let start = p["steps"][0]["address"].as_u64().unwrap_or(0);
        assert!(
            p["root"]["static_field"] == "P.Cache" || p["root"]["kind"] == "handle" || held_by_handle.contains(&start),
            "{what}: the cache's root: {} (path {steps:?})",
            p["root"]
        );
    }
    // Every list node's path starts at a stack root in Main.
    let paths = ok_json(dir, &["dump", log_s, &idx, "--path-to", "Node", "--max", "1", "--json"]);
    let root = &paths["paths"][0]["root"];
    assert_eq!(root["kind"], "stack", "{what}: the list's root: {root}");
    assert_eq!(root["function"]["name"].as_str().or(root["function"].as_str()).map(|s| s.contains("Main")), Some(true), "{what}: {root}");

    // The cache's retained size: the project's dominator tree against a
    // naive reachability count over the dump's own lines.
    let cache = d.find(&types, CACHE)[0];
    let naive = d.retained(cache);
    assert!(naive >= N * K * 24, "{what}: the cache retains its markers ({naive} bytes)");
    let retained = ok_json(dir, &["dump", log_s, &idx, "--retained", "--top", "0", "--json"]);
    let row = retained["top_objects"]
        .as_array()
        .and_then(|a| a.iter().find(|o| o["address"].as_u64() == Some(cache)))
        .unwrap_or_else(|| panic!("{what}: the cache is not among the objects by retained bytes"));
    assert_eq!(row["retained"].as_u64(), Some(naive), "{what}: the cache's retained bytes");
}

/// After `drop`: the second dump has exactly N/2 lists and N*K/2 markers
/// fewer, in `dump-diff` and in the naive counts.
fn check_drop(rt: Runtime, dir: &Path, log: &Path, a: usize, b: usize) {
    let what = format!("{rt:?} {}", log.display());
    let (types, dumps) = naive_dumps(log);
    assert_eq!(dumps[b].count(&types, "Marker"), N * K / 2, "{what}: markers after the drop");
    let diff = ok_json(dir, &["dump-diff", log.to_str().expect("UTF-8"), &a.to_string(), &b.to_string(), "--top", "0", "--json"]);
    let row = |name: &str| {
        diff["types"].as_array().and_then(|t| t.iter().find(|r| r["name"] == name)).cloned().unwrap_or_else(|| panic!("{what}: {name} not in dump-diff"))
    };
    let fewer = |r: &Value| r["objects_a"].as_i64().unwrap_or(0) - r["objects_b"].as_i64().unwrap_or(0);
    assert_eq!(fewer(&row("Marker")), (N * K / 2) as i64, "{what}: dump-diff Marker");
    assert_eq!(fewer(&row(LIST)), (N / 2) as i64, "{what}: dump-diff lists");
    assert_eq!(fewer(&row("Node")), 0, "{what}: dump-diff Node");
}

fn heap_dump(dir: &Path, pid: u32, extra: &[&str]) -> Value {
    let pid = pid.to_string();
    let mut args = vec!["heap-dump", &pid, "--json"];
    args.extend_from_slice(extra);
    ok_json(dir, &args)
}

fn graph_args() -> Vec<String> {
    [N, K, M, F].iter().map(u64::to_string).collect()
}

/// Started under the agent: dumps through the control socket into the
/// agent's log, a dump into a file of its own, then the drop.
fn under_agent(rt: Runtime) {
    let Some((dn, agent)) = setup() else { return };
    let dir = app_dir(dn, "heapgraph", rt, "under-agent");
    let log = dir.join("graph.log");
    let args = graph_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut p = Program::start(dn, rt, &dir, &args, &profiler_env(&agent, &log, &[]));
    let first = heap_dump(&dir, p.pid, &["--label", "first dump"]);
    assert_eq!(first["attached"], false, "{rt:?}: the agent was there: {first}");
    assert_eq!(first["dump"]["index"], 0);
    assert_eq!(first["dump"]["log"].as_str(), Some(log.to_str().expect("UTF-8")));
    // The control socket itself: bad requests and refused switches get
    // error replies, and the connection stays usable.
    let socket = clrprof_control::paths::control_socket(&clrprof_control::paths::temp_dir_of(p.pid), p.pid);
    let mut conn = std::os::unix::net::UnixStream::connect(&socket).expect("the control socket");
    let mut replies = BufReader::new(conn.try_clone().expect("clone"));
    let mut ask = |line: &str| {
        writeln!(conn, "{line}").expect("write a request");
        let mut reply = String::new();
        replies.read_line(&mut reply).expect("read a reply");
        reply.trim_end().to_string()
    };
    let bad = ask("dump now");
    assert!(bad.starts_with("error\tmessage=unknown request \"dump now\""), "{bad}");
    let calls = ask("calls\ton=1");
    assert!(calls.starts_with("error\t") && calls.contains("not enabled at start"), "{calls}");
    assert_eq!(ask("allocations\ton=0"), "ok\tprevious=1");
    assert_eq!(ask("allocations\ton=1"), "ok\tprevious=0");
    let status = ask("status");
    assert!(status.starts_with(&format!("ok\tpid={}\tlog=", p.pid)) && status.contains("\tdumps=1\t"), "{status}");
    // Closed before the next client.
    drop(replies);
    drop(conn);
    let alone = heap_dump(&dir, p.pid, &["-o", "alone.log"]);
    assert_eq!(alone["dump"]["log"].as_str().map(PathBuf::from), Some(dir.join("alone.log")));
    assert_eq!(p.send("drop")["dropped"].as_u64(), Some(N / 2));
    let second = heap_dump(&dir, p.pid, &["--label", "second dump"]);
    assert_eq!(second["dump"]["index"], 1);
    let (done, status) = p.finish();
    assert_eq!(status.code(), Some(3), "{rt:?}: the program's exit code");
    assert_eq!(done["nodes"].as_u64(), Some(M), "{rt:?}: {done}");

    check_graph(rt, &dir, &log, 0);
    check_graph(rt, &dir, &dir.join("alone.log"), 0);
    check_drop(rt, &dir, &log, 0, 1);
    // The labels are comments just before their dumps.
    let text = std::fs::read_to_string(&log).expect("read the log");
    let z = text.find("z first dump\n").expect("the first label");
    let e = text.find("\ne ").expect("a root line");
    assert!(z < e, "{rt:?}: the label precedes the dump");
    // Allocations were logged too: the dumped objects match them (.NET 8
    // also has a few objects the runtime made without an allocation event).
    let dumps = ok_json(&dir, &["dumps", "--json", log.to_str().expect("UTF-8")])["dumps"].clone();
    // The agent's replies count what the log's readers count (a null root
    // is written but not counted).
    for (reply, d) in [(&first, &dumps[0]), (&second, &dumps[1])] {
        for k in ["objects", "bytes", "roots"] {
            assert_eq!(reply["dump"][k], d[k], "{rt:?}: {k} in the reply and in the log");
        }
    }
    let matched = dumps[0]["matched_objects"].as_u64().unwrap_or(0);
    let objects = dumps[0]["objects"].as_u64().unwrap_or(0);
    assert!(matched >= N * K + 2 * N + M + F && matched <= objects, "{rt:?}: {matched} of {objects} dumped objects match an allocation");
    if rt == Runtime::Core31 {
        assert_eq!(matched, objects, "{rt:?}: every dumped object matches an allocation");
    }
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn dumps_under_the_agent_on_core31() {
    under_agent(Runtime::Core31);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn dumps_under_the_agent_on_net8() {
    under_agent(Runtime::Net8);
}

/// Started bare: `record -p` attaches and records, `heap-dump` reuses the
/// agent (into the recording), then the drop; the log loads alone.
fn attached(rt: Runtime) {
    let Some((dn, _)) = setup() else { return };
    let dir = app_dir(dn, "heapgraph", rt, "attached");
    let args = graph_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut p = Program::start(dn, rt, &dir, &args, &[]);
    let pid = p.pid.to_string();
    let mut record = Command::new(clrprof_exe())
        .args(["record", "-p", &pid, "-o", "rec.log", "--duration", "120"])
        .current_dir(&dir)
        .env("CLRPROF_AGENT", agent().unwrap_or_default())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start record -p");
    // Wait until the recording's agent answers on its control socket (a
    // heap-dump before that would attach an agent of its own).
    let socket = clrprof_control::paths::control_socket(&clrprof_control::paths::temp_dir_of(p.pid), p.pid);
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(record.try_wait().expect("record").is_none(), "{rt:?}: record -p ended early");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let first = heap_dump(&dir, p.pid, &["--label", "first dump"]);
    assert_eq!(first["attached"], false, "{rt:?}: heap-dump reused the recording's agent: {first}");
    assert_eq!(first["dump"]["log"].as_str().map(PathBuf::from), Some(dir.join("rec.log")));
    // A second attach is refused with a clear message.
    let again = clrprof(&dir, &["record", "-p", &pid, "-o", "other.log"]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already has the clrprof agent"), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(p.send("drop")["dropped"].as_u64(), Some(N / 2));
    heap_dump(&dir, p.pid, &["--label", "second dump"]);
    let (done, status) = p.finish();
    assert_eq!(status.code(), Some(3), "{rt:?}: the program's exit code");
    assert_eq!(done["nodes"].as_u64(), Some(M));
    let rec = record.wait_with_output().expect("record -p");
    assert!(rec.status.success(), "{rt:?}: record -p: {}", String::from_utf8_lossy(&rec.stderr));
    let log = dir.join("rec.log");
    check_graph(rt, &dir, &log, 0);
    check_drop(rt, &dir, &log, 0, 1);
    // No allocations after attach.
    let stats = ok_json(&dir, &["stats", "--json", log.to_str().expect("UTF-8")]);
    assert_eq!(stats["records"]["!"].as_u64().unwrap_or(0), 0, "{rt:?}: allocations in an attached recording: {}", stats["records"]);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn dumps_attached_on_core31() {
    attached(Runtime::Core31);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn dumps_attached_on_net8() {
    attached(Runtime::Net8);
}

/// Started bare: `record -p --target` attaches and streams the recording
/// to a `clrprof collect`; `heap-dump` reuses the agent, so its dumps go
/// into the stream; the collector's stored session holds the same graph as
/// a local recording does, and ends when the recording stops.
fn attached_streaming(rt: Runtime) {
    let Some((dn, _)) = setup() else { return };
    let dir = app_dir(dn, "heapgraph", rt, "attached-streaming");
    let sessions = dir.join("sessions");
    std::fs::create_dir_all(&sessions).expect("sessions dir");
    let mut collector = Command::new(clrprof_exe())
        .args(["collect", "--listen", "127.0.0.1:0", "--dir"])
        .arg(&sessions)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start clrprof collect");
    let mut out = BufReader::new(collector.stdout.take().expect("collector stdout"));
    let mut target = String::new();
    for _ in 0..2 {
        let mut line = String::new();
        out.read_line(&mut line).expect("collector output");
        if let Some(t) = line.trim().strip_prefix("CLRPROF_TARGET=") {
            target = t.to_string();
        }
    }
    assert!(!target.is_empty(), "{rt:?}: the collector printed no CLRPROF_TARGET");
    let token_file = sessions.join("collector.token");
    let args = graph_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut p = Program::start(dn, rt, &dir, &args, &[]);
    let (pid, pid_n) = (p.pid.to_string(), p.pid);
    let mut record = Command::new(clrprof_exe())
        .args(["record", "-p", &pid, "-o", "rec.log", "--duration", "120", "--target", &target, "--token-file"])
        .arg(&token_file)
        .current_dir(&dir)
        .env("CLRPROF_AGENT", agent().unwrap_or_default())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start record -p --target");
    let socket = clrprof_control::paths::control_socket(&clrprof_control::paths::temp_dir_of(p.pid), p.pid);
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(record.try_wait().expect("record").is_none(), "{rt:?}: record -p --target ended early");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let first = heap_dump(&dir, p.pid, &["--label", "streamed dump"]);
    assert_eq!(first["attached"], false, "{rt:?}: heap-dump reused the recording's agent: {first}");
    assert_eq!(p.send("drop")["dropped"].as_u64(), Some(N / 2));
    heap_dump(&dir, p.pid, &["--label", "second streamed dump"]);
    let (_, status) = p.finish();
    assert_eq!(status.code(), Some(3), "{rt:?}: the program's exit code");
    let rec = record.wait_with_output().expect("record -p --target");
    let err = String::from_utf8_lossy(&rec.stderr).into_owned();
    assert!(rec.status.success(), "{rt:?}: record -p --target: {err}");
    assert!(err.contains(&format!("streamed the log to {target}")), "{rt:?}: {err}");
    assert!(!dir.join("rec.log").exists(), "{rt:?}: a streamed recording wrote a local log too");
    assert!(!dir.join("rec.spool.log").exists(), "{rt:?}: the collector was reachable, yet the agent spooled");
    // The session: listed for this process, ended, and its log holds both dumps.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let session = loop {
        let listed = ok_json(&dir, &["sessions", "--json", "--dir", sessions.to_str().expect("UTF-8")]);
        let found = listed.as_array().and_then(|a| a.iter().find(|s| s["pid"].as_u64() == Some(pid_n as u64)).cloned());
        if let Some(s) = found.filter(|s| s["state"] != "live") {
            assert_eq!(s["state"], "ended", "{rt:?}: the session did not end cleanly: {s}");
            break s;
        }
        assert!(std::time::Instant::now() < deadline, "{rt:?}: no ended session for pid {pid}: {listed}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let log = sessions.join(session["log"].as_str().expect("the session's log"));
    check_graph(rt, &dir, &log, 0);
    check_drop(rt, &dir, &log, 0, 1);
    let text = std::fs::read_to_string(&log).expect("the stored log");
    assert!(text.contains("\nz streamed dump\n") && text.contains("\nz second streamed dump\n"), "{rt:?}: the dumps' labels");
    let _ = collector.kill();
    let _ = collector.wait();
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn dumps_attached_streaming_on_core31() {
    attached_streaming(Runtime::Core31);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn dumps_attached_streaming_on_net8() {
    attached_streaming(Runtime::Net8);
}

/// Started bare: `heap-dump` attaches an agent without a log and writes a
/// file that loads alone; a second `heap-dump` reuses it; `record -p`
/// then says why it cannot.
fn bare(rt: Runtime) {
    let Some((dn, _)) = setup() else { return };
    let dir = app_dir(dn, "heapgraph", rt, "bare");
    let args = graph_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let p = Program::start(dn, rt, &dir, &args, &[]);
    let one = heap_dump(&dir, p.pid, &["-o", "one.log", "--label", "bare"]);
    assert_eq!(one["attached"], true, "{rt:?}: {one}");
    let two = heap_dump(&dir, p.pid, &[]);
    assert_eq!(two["attached"], false, "{rt:?}: the second dump reuses the agent: {two}");
    let default = two["dump"]["log"].as_str().map(PathBuf::from).expect("a log");
    assert!(default.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&format!("heapdump_{}_", p.pid))), "{}", default.display());
    let pid = p.pid.to_string();
    let rec = clrprof(&dir, &["record", "-p", &pid]);
    assert!(String::from_utf8_lossy(&rec.stderr).contains("loaded for heap dumps only"), "{}", String::from_utf8_lossy(&rec.stderr));
    let (_, status) = p.finish();
    assert_eq!(status.code(), Some(3));
    check_graph(rt, &dir, &dir.join("one.log"), 0);
    check_graph(rt, &dir, &default, 0);
    assert!(std::fs::read_to_string(dir.join("one.log")).expect("log").contains("\nz bare\n"));
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn dumps_bare_processes_on_core31() {
    bare(Runtime::Core31);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn dumps_bare_processes_on_net8() {
    bare(Runtime::Net8);
}

/// Dumps while 8 threads allocate and another throws and catches without
/// pause, under server GC: no crash, no deadlock, the program's output and
/// exit code as without the agent, exact marker counts.
fn stress(rt: Runtime) {
    let Some((dn, agent)) = setup() else { return };
    let dir = app_dir(dn, "heapgraph", rt, "stress");
    let log = dir.join("stress.log");
    let mut args = graph_args();
    args.extend(["8".to_string(), "1".to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = match rt {
        Runtime::Core31 => "COMPlus_gcServer",
        Runtime::Net8 => "DOTNET_gcServer",
    };
    let bare = Program::start(dn, rt, &dir, &args, &[(server, "1".to_string())]);
    assert_eq!(bare.ready["server_gc"], true, "{rt:?}: server GC");
    let (bare_done, bare_status) = bare.finish();
    let p = Program::start(dn, rt, &dir, &args, &profiler_env(&agent, &log, &[(server, "1"), ("CLRPROF_STACKS", "none")]));
    assert_eq!(p.ready["server_gc"], true);
    for i in 0..3 {
        let d = heap_dump(&dir, p.pid, &["--label", &format!("stress {i}")]);
        assert_eq!(d["dump"]["index"].as_u64(), Some(i), "{rt:?}: {d}");
    }
    let (done, status) = p.finish();
    assert_eq!(status.code(), bare_status.code(), "{rt:?}: exit code");
    assert_eq!(status.code(), Some(3));
    assert_eq!(done, bare_done, "{rt:?}: the program's last line");
    assert_eq!(done["churned"], true);
    assert_eq!(done["thrown"], true);
    let (types, dumps) = naive_dumps(&log);
    assert_eq!(dumps.len(), 3);
    for d in &dumps {
        assert_eq!(d.count(&types, "Marker"), N * K, "{rt:?}: markers in every dump");
        assert_eq!(d.count(&types, "Node"), M);
    }
    // The log is gigabytes; it is kept only when an assertion above fails.
    std::fs::remove_file(&log).expect("remove the stress log");
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn dumps_under_load_on_core31() {
    stress(Runtime::Core31);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn dumps_under_load_on_net8() {
    stress(Runtime::Net8);
}

/// The in-process API: comments where the program put them, DumpHeap,
/// allocation logging off for one phase; and a no-op without the agent.
fn api(rt: Runtime) {
    let Some((dn, _)) = setup() else { return };
    let dir = app_dir(dn, "apiuse", rt, "api");
    let host = dn.host(rt).to_string_lossy().into_owned();
    let bare = Command::new(&host).arg("apiuse.dll").current_dir(&dir).env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1").output().expect("run");
    assert!(bare.status.success());
    let bare = dotnet::json_line(&bare.stdout).expect("JSON");
    assert_eq!(bare["under_profiler"], false, "{rt:?}: {bare}");
    assert_eq!(bare["dumps"], serde_json::json!([-1, -1]));

    let out = Command::new(clrprof_exe())
        .args(["record", "-q", "-o", "api.log", "--", &host, "apiuse.dll"])
        .current_dir(&dir)
        .env("CLRPROF_AGENT", agent().unwrap_or_default())
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .output()
        .expect("record");
    assert!(out.status.success(), "{rt:?}: {}", String::from_utf8_lossy(&out.stderr));
    let program = dotnet::json_line(&out.stdout).expect("JSON");
    assert_eq!(program["under_profiler"], true, "{rt:?}: {program}");
    assert_eq!(program["allocations_while_off"], false);
    assert_eq!(program["dumps"], serde_json::json!([0, 1]));
    let log = dir.join("api.log");
    let log_s = log.to_str().expect("UTF-8");
    let count = |rows: &Value, name: &str| {
        rows["types"].as_array().and_then(|a| a.iter().find(|r| r["type"] == name)).map_or(0, |r| r["count"].as_u64().unwrap_or(0))
    };
    let phase = ok_json(&dir, &["types", "--kind", "allocated", "--json", "--top", "0", "--between-comments", "phase A start", "phase A end", log_s]);
    assert_eq!(count(&phase, "ApiA"), 1000, "{rt:?}: ApiA inside the marked phase");
    assert_eq!(count(&phase, "ApiB") + count(&phase, "ApiOff"), 0, "{rt:?}: only the marked phase");
    let all = ok_json(&dir, &["types", "--kind", "allocated", "--json", "--top", "0", log_s]);
    assert_eq!((count(&all, "ApiA"), count(&all, "ApiOff"), count(&all, "ApiB")), (1000, 0, 300), "{rt:?}: logging off for ApiOff only");
    let off = ok_json(&dir, &["types", "--kind", "allocated", "--json", "--top", "0", "--between-comments", "logging off", "logging on", log_s]);
    assert_eq!(count(&off, "ApiOff") + count(&off, "ApiA"), 0, "{rt:?}: nothing of the program's logged while off: {off}");
    let dumps = ok_json(&dir, &["dumps", "--json", log_s])["dumps"].clone();
    assert_eq!(dumps.as_array().map(Vec::len), Some(2), "{rt:?}: two dumps");
    let (types, naive) = naive_dumps(&log);
    assert_eq!(naive[0].count(&types, "ApiA"), 1000);
    assert_eq!(naive[0].count(&types, "ApiOff"), 700, "{rt:?}: the dump sees objects whose allocation was not logged");
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn in_process_api_on_core31() {
    api(Runtime::Core31);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn in_process_api_on_net8() {
    api(Runtime::Net8);
}

/// `record --heap-dump-every`: periodic dumps, labelled.
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn periodic_dumps() {
    let Some((dn, _)) = setup() else { return };
    let rt = Runtime::Net8;
    let dir = app_dir(dn, "heapgraph", rt, "periodic");
    let host = dn.host(rt).to_string_lossy().into_owned();
    let mut child = Command::new(clrprof_exe())
        .args(["record", "-q", "-o", "p.log", "--heap-dump-every", "0.3", "--", &host, "heapgraph.dll", "10", "2", "5", "3"])
        .current_dir(&dir)
        .env("CLRPROF_AGENT", agent().unwrap_or_default())
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("record");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    assert_eq!(read_json(&mut stdout)["ready"], true);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "exit").expect("exit");
    drop(stdin);
    assert_eq!(child.wait().expect("wait").code(), Some(3));
    let log = dir.join("p.log");
    let dumps = ok_json(&dir, &["dumps", "--json", log.to_str().expect("UTF-8")])["dumps"].clone();
    let n = dumps.as_array().map_or(0, Vec::len);
    assert!(n >= 2, "periodic dumps: {n}");
    let text = std::fs::read_to_string(&log).expect("log");
    // Each label carries the dump's number as `clrprof dumps` and `clrprof
    // dump LOG N` count it (from 0).
    for i in 0..n {
        assert!(text.contains(&format!("\nz periodic heap dump {i}\n")), "no label for dump {i}");
    }
}

/// What `heap-dump` says when it cannot: no such process, not a .NET
/// process, no agent library.
/// A program started under the agent removes the control sockets that
/// killed processes left in its temporary directory, and nothing else.
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn stale_sockets_removed() {
    let Some((dn, agent)) = setup() else { return };
    let rt = Runtime::Net8;
    let dir = app_dir(dn, "heapgraph", rt, "stale");
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).expect("a temporary directory");
    let mut ended = Command::new("true").spawn().expect("run true");
    let dead = ended.id();
    ended.wait().expect("wait for true");
    let bind = |p: PathBuf| {
        drop(std::os::unix::net::UnixListener::bind(&p).expect("bind a socket"));
        p
    };
    let stale = bind(clrprof_control::paths::control_socket(&tmp, dead));
    let unrelated = bind(tmp.join("other.sock"));
    let args = graph_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let tmp_s = tmp.to_str().expect("UTF-8 path");
    let p = Program::start(dn, rt, &dir, &args, &profiler_env(&agent, &dir.join("stale.log"), &[("TMPDIR", tmp_s)]));
    let mine = clrprof_control::paths::control_socket(&tmp, p.pid);
    let start = std::time::Instant::now();
    while (stale.exists() || !mine.exists()) && start.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(mine.exists(), "the program's own socket in its TMPDIR");
    assert!(!stale.exists(), "the socket of an ended process is removed");
    assert!(unrelated.exists(), "other files are left alone");
    // Clients find the socket through the process's TMPDIR.
    let status = heap_dump(&dir, p.pid, &["-o", "stale-dump.log"]);
    assert_eq!(status["attached"], false, "{status}");
    let (_, code) = p.finish();
    assert_eq!(code.code(), Some(3));
    assert!(!mine.exists(), "the agent removes its socket when the program ends");
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn clear_errors() {
    let dir = work();
    std::fs::create_dir_all(&dir).expect("work dir");
    let err = |args: &[&str]| {
        let out = Command::new(clrprof_exe()).args(args).current_dir(&dir).env("CLRPROF_AGENT", "/nonexistent/libclrprof_agent.so").output().expect("run");
        assert!(!out.status.success(), "{args:?} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(err(&["heap-dump", "999999999"]).contains("no process with id 999999999"));
    let mut sleeper = Command::new("sleep").arg("30").spawn().expect("sleep");
    let pid = sleeper.id().to_string();
    let e = err(&["heap-dump", &pid]);
    assert!(e.contains("is not a .NET (CoreCLR) process"), "{e}");
    let e = err(&["record", "-p", &pid]);
    assert!(e.contains("is not a .NET (CoreCLR) process"), "{e}");
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let Some((dn, _)) = setup() else { return };
    let dir = app_dir(dn, "heapgraph", Runtime::Net8, "errors");
    let p = Program::start(dn, Runtime::Net8, &dir, &["2", "2", "2", "2"], &[]);
    let pid = p.pid.to_string();
    let e = err(&["heap-dump", &pid, "--attach"]);
    assert!(e.contains("the capture agent is not at /nonexistent/libclrprof_agent.so"), "{e}");
    let (_, status) = p.finish();
    assert_eq!(status.code(), Some(3));
}

/// The reply a runtime gives to `AttachProfiler` when it worked: what a
/// fake diagnostics socket answers, to look like the real one.
fn fake_attach_ok() -> Vec<u8> {
    let mut r = b"DOTNET_IPC_V1\0".to_vec();
    r.extend_from_slice(&24u16.to_le_bytes());
    r.extend_from_slice(&[0xFF, 0x00, 0, 0]);
    r.extend_from_slice(&0i32.to_le_bytes());
    r
}

/// What a fake agent answers: a heap dump that never happened.
const FAKE_DUMP: &[u8] = b"{\"ok\":true,\"dump\":{\"index\":0,\"log\":\"/nowhere.log\",\"objects\":1,\"roots\":1,\"bytes\":1,\"millis\":1}}\n";

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Sockets another local user plants in the process's temporary folder
/// (`/tmp` for most processes; here a folder of mode 1777 like it) are
/// refused, and nothing reaches them: not the collector's token that
/// `record -p --target` puts in the attach request, not a request. A
/// diagnostics socket planted beside the real one is passed over, and a
/// socket of the right owner answered by another process is refused too.
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn planted_sockets_are_refused() {
    let Some((dn, _)) = setup() else { return };
    let Some(other) = common::other_user::get("planting sockets in a process's temporary folder") else { return };
    let rt = Runtime::Net8;
    let dir = app_dir(dn, "heapgraph", rt, "planted");
    let shared = common::other_user::shared_dir("planted");
    let shared_s = shared.to_str().expect("UTF-8").to_string();
    let token_file = dir.join("collector.token");
    let token = "ab".repeat(32);
    std::fs::write(&token_file, format!("{token}\n")).expect("a token file");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let args = graph_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    // A process without a diagnostics socket of its own: only the planted
    // one is there.
    let a = Program::start(dn, rt, &dir, &args, &[("TMPDIR", shared_s.clone()), ("DOTNET_EnableDiagnostics", "0".into())]);
    let fake_diag = common::other_user::FakeServer::start(other, &shared.join(format!("dotnet-diagnostic-{}-1-socket", a.pid)), &fake_attach_ok());
    let pid = a.pid.to_string();
    let rec = clrprof(&dir, &["record", "-p", &pid, "-o", "a.log", "--target", "127.0.0.1:9", "--token-file", token_file.to_str().expect("UTF-8")]);
    assert!(!rec.status.success(), "record -p trusted a planted diagnostics socket");
    let e = stderr_of(&rec);
    assert!(e.contains("refused") && e.contains(&format!("belongs to user {}", other.uid)), "{e}");
    let dump = clrprof(&dir, &["heap-dump", &pid]);
    assert!(!dump.status.success());
    assert!(stderr_of(&dump).contains("refused"), "{}", stderr_of(&dump));
    assert!(fake_diag.received().is_empty(), "bytes reached the planted socket: {:?}", String::from_utf8_lossy(&fake_diag.received()));
    // A socket of the process's own user, but answered by another process
    // (this test): refused after connecting, before anything is written.
    let ours = shared.join(format!("dotnet-diagnostic-{}-2-socket", a.pid));
    let listener = std::os::unix::net::UnixListener::bind(&ours).expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let rec = clrprof(&dir, &["record", "-p", &pid, "-o", "a.log", "--target", "127.0.0.1:9", "--token-file", token_file.to_str().expect("UTF-8")]);
    let e = stderr_of(&rec);
    assert!(!rec.status.success() && e.contains(&format!("not by process {}", a.pid)), "{e}");
    let (mut conn, _) = listener.accept().expect("clrprof connected to check the peer");
    conn.set_nonblocking(false).expect("blocking");
    conn.set_read_timeout(Some(std::time::Duration::from_secs(5))).expect("timeout");
    let mut got = Vec::new();
    std::io::Read::read_to_end(&mut conn, &mut got).expect("read until clrprof closed");
    assert!(got.is_empty(), "clrprof wrote {} bytes to a socket whose peer failed the check", got.len());
    drop((listener, conn));
    let _ = std::fs::remove_file(&ours);
    assert!(!dir.join("a.log").exists());
    let (_, status) = a.finish();
    assert_eq!(status.code(), Some(3));
    drop(fake_diag);

    // A process with its real diagnostics socket, and planted beside it a
    // newer fake diagnostics socket and a fake agent control socket.
    let mut b = Program::start(dn, rt, &dir, &args, &[("TMPDIR", shared_s.clone())]);
    let fake_diag = common::other_user::FakeServer::start(other, &shared.join(format!("dotnet-diagnostic-{}-99999-socket", b.pid)), &fake_attach_ok());
    let agent_socket = clrprof_control::paths::control_socket(&shared, b.pid);
    let fake_agent = common::other_user::FakeServer::start(other, &agent_socket, FAKE_DUMP);
    let pid = b.pid.to_string();
    let dump = clrprof(&dir, &["heap-dump", &pid, "-o", "b.log"]);
    assert!(!dump.status.success(), "heap-dump believed a planted agent socket: {}", String::from_utf8_lossy(&dump.stdout));
    assert!(stderr_of(&dump).contains(&format!("refused {}", agent_socket.display())), "{}", stderr_of(&dump));
    let rec = clrprof(&dir, &["record", "-p", &pid, "-o", "b-rec.log", "--target", "127.0.0.1:9", "--token-file", token_file.to_str().expect("UTF-8")]);
    assert!(!rec.status.success());
    assert!(stderr_of(&rec).contains("refused"), "{}", stderr_of(&rec));
    assert!(fake_agent.received().is_empty(), "bytes reached the planted agent socket: {:?}", String::from_utf8_lossy(&fake_agent.received()));
    // The planted agent socket gone (its owner's server stopped, the file
    // removed), heap-dump attaches through the real diagnostics socket and
    // passes over the planted one. Its default output name, which anyone
    // can guess, has links planted under it for the next seconds: the dump
    // goes to a free name beside them and the links' target is unchanged.
    drop(fake_agent);
    let _ = std::fs::remove_file(&agent_socket);
    let victim = shared.join("victim.txt");
    std::fs::write(&victim, "keep\n").expect("victim");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("time").as_secs();
    for s in now..now + 20 {
        let stamp = Command::new("date").arg("+%Y%m%d_%H%M%S").arg("-d").arg(format!("@{s}")).output().expect("date");
        let name = format!("heapdump_{}_{}.log", b.pid, String::from_utf8_lossy(&stamp.stdout).trim());
        let planted = other
            .command("ln")
            .args(["-s", victim.to_str().expect("UTF-8"), shared.join(name).to_str().expect("UTF-8")])
            .status()
            .expect("ln -s as the other user");
        assert!(planted.success());
    }
    let status = heap_dump(&shared, b.pid, &["--attach"]);
    assert_eq!(status["attached"], true, "{status}");
    let log = PathBuf::from(status["dump"]["log"].as_str().expect("the dump's file"));
    assert!(log.file_name().is_some_and(|n| n.to_string_lossy().ends_with("_2.log")), "{}", log.display());
    assert!(log.symlink_metadata().expect("the dump").file_type().is_file());
    assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "keep\n");
    assert!(fake_diag.received().is_empty(), "bytes reached the planted diagnostics socket");
    assert_eq!(b.send("drop")["dropped"].as_u64(), Some(N / 2));
    let (_, status) = b.finish();
    assert_eq!(status.code(), Some(3));
    check_graph(rt, &shared, &log, 0);
    let _ = std::fs::remove_dir_all(&shared);
}

/// `heap-dump -o` never writes through a link and never replaces a file
/// without `--force`; with it a link is replaced, not followed; the
/// recording's own log is never a target.
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn dump_outputs_never_go_through_links() {
    let Some((dn, agent)) = setup() else { return };
    let rt = Runtime::Net8;
    let dir = app_dir(dn, "heapgraph", rt, "links");
    let args = graph_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let own = dir.join("own.log");
    let _ = std::fs::remove_file(&own);
    let p = Program::start(dn, rt, &dir, &args, &profiler_env(&agent, &own, &[]));
    let pid = p.pid.to_string();
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, "keep\n").expect("victim");
    let link = dir.join("link.log");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&victim, &link).expect("link");
    let out = clrprof(&dir, &["heap-dump", &pid, "-o", "link.log"]);
    assert!(!out.status.success());
    assert!(stderr_of(&out).contains("exists"), "{}", stderr_of(&out));
    assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "keep\n");
    let d = heap_dump(&dir, p.pid, &["-o", "link.log", "--force"]);
    assert_eq!(PathBuf::from(d["dump"]["log"].as_str().expect("log")), link);
    assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "keep\n");
    assert!(link.symlink_metadata().expect("dump").file_type().is_file());
    check_graph(rt, &dir, &link, 0);
    // The recording's own log, by name or through a link: refused even
    // with --force, and the log goes on.
    let before = std::fs::metadata(&own).expect("own log").len();
    let to_own = dir.join("to-own.log");
    let _ = std::fs::remove_file(&to_own);
    std::os::unix::fs::symlink(&own, &to_own).expect("link");
    for target in ["own.log", "to-own.log"] {
        let out = clrprof(&dir, &["heap-dump", &pid, "-o", target, "--force"]);
        assert!(!out.status.success(), "{target}");
        assert!(stderr_of(&out).contains("is the log the agent in this process is writing"), "{}", stderr_of(&out));
    }
    assert!(std::fs::metadata(&own).expect("own log").len() >= before);
    let (_, status) = p.finish();
    assert_eq!(status.code(), Some(3));
    let stats = ok_json(&dir, &["stats", "--json", own.to_str().expect("UTF-8")]);
    assert!(stats["records"]["!"].as_u64().unwrap_or(0) > 0, "the recording is whole: {}", stats["records"]);
}
