//! `clrprof watch` and `clrprof ps` on real .NET programs, and processes
//! in other namespaces (a container made here with `unshare`: new PID and
//! mount namespaces, a private `/tmp`): `heap-dump`, `watch` and `ps` by
//! the host's process id, the sidecar port (`--diagnostic-port`) through a
//! shared folder, and the trust checks across namespaces.
//!
//! Programs: `agent/testapps/grower.cs` (keeps Chunk objects on command)
//! and `agent/testapps/heapgraph.cs` (a known object graph). Needs
//! `scripts/setup-dotnet.sh` (else SKIPPED, or a failure under `CI=true`),
//! and root with `unshare` for the container tests.

mod common;

use common::dotnet::{self, Dotnet, Runtime};
use common::other_user;
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// heapgraph's cache entries, markers per entry, list nodes, finalizable objects.
const N: u64 = 200;
const K: u64 = 5;
const M: u64 = 300;
const F: u64 = 40;

fn dotnet_env() -> Option<&'static Dotnet> {
    dotnet::dotnet(&Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("watch-{}", std::process::id())))
}

fn clrprof(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_clrprof")).args(args).current_dir(dir).output().expect("run clrprof")
}

fn ok_json(dir: &Path, args: &[&str]) -> Value {
    let out = clrprof(dir, args);
    assert!(out.status.success(), "clrprof {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("clrprof {args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// Whether containers can be made here (root, `unshare`); `false` after
/// saying why, or a panic under `CI=true`.
fn can_contain() -> bool {
    // Safety: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let unshare = Command::new("unshare").arg("--version").output().is_ok_and(|o| o.status.success());
    if root && unshare {
        return true;
    }
    let why = if root { "unshare is not installed" } else { "making namespaces needs root" };
    assert!(!dotnet::in_ci(), "CI=true and the container tests cannot run: {why}");
    eprintln!("SKIPPED: {why}");
    false
}

/// How a program's `/tmp` is made inside its container.
enum Tmp {
    /// The host's (no mount namespace of its own).
    Host,
    /// A new tmpfs: private to the container.
    Private,
    /// A host folder bound at `/tmp`: private to the container, but a
    /// test can plant things in it.
    Bound(PathBuf),
}

/// A program driven through its standard input, perhaps in a container.
struct Program {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// Its process id here.
    pid: u32,
    /// What it said first.
    ready: Value,
}

impl Program {
    /// `app.dll` with `args`, in new PID and mount namespaces unless `tmp`
    /// is [`Tmp::Host`].
    fn start(dn: &Dotnet, rt: Runtime, dir: &Path, app: &str, args: &[&str], tmp: Tmp, env: &[(&str, String)]) -> Program {
        let host = dn.host(rt).to_str().expect("UTF-8").to_string();
        let mut cmd = match &tmp {
            Tmp::Host => {
                let mut c = Command::new(&host);
                c.arg(format!("{app}.dll")).args(args);
                c
            }
            Tmp::Private | Tmp::Bound(_) => {
                let mount = match &tmp {
                    Tmp::Bound(d) => format!("mount --bind {} /tmp", d.display()),
                    _ => "mount -t tmpfs tmpfs /tmp".to_string(),
                };
                let mut c = Command::new("unshare");
                c.args(["--mount", "--pid", "--fork", "--mount-proc", "sh", "-c", &format!("{mount} && exec \"$0\" \"$@\""), &host])
                    .arg(format!("{app}.dll"))
                    .args(args);
                c
            }
        };
        cmd.current_dir(dir).env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1").stdin(Stdio::piped()).stdout(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start the program");
        let stdin = child.stdin.take().expect("stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let ready = read_json(&mut stdout);
        assert_eq!(ready["ready"], true, "{rt:?}: {ready}");
        let pid = match tmp {
            Tmp::Host => child.id(),
            // unshare's child: the program, process 1 inside.
            _ => {
                let u = child.id();
                let kids = std::fs::read_to_string(format!("/proc/{u}/task/{u}/children")).expect("unshare's children");
                kids.split_whitespace().next().and_then(|k| k.parse().ok()).expect("the program under unshare")
            }
        };
        Program { child, stdin, stdout, pid, ready }
    }

    fn send(&mut self, line: &str) -> Value {
        writeln!(self.stdin, "{line}").expect("write to the program");
        self.stdin.flush().expect("flush");
        read_json(&mut self.stdout)
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "exit");
        let _ = self.stdin.flush();
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_json(r: &mut impl BufRead) -> Value {
    let mut line = String::new();
    r.read_line(&mut line).expect("read the program's output");
    serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("not a JSON line from the program: {line:?}: {e}"))
}

/// Objects of the type named exactly `name` in a dump.
fn objects_of(dump: &Value, name: &str) -> u64 {
    dump["types"].as_array().and_then(|v| v.iter().find(|r| r["name"] == name)).and_then(|r| r["objects"].as_u64()).unwrap_or(0)
}

/// The records `fired-N.json` in a process's folder, by N.
fn records(dir: &Path) -> Vec<Value> {
    let mut v: Vec<(u64, Value)> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let n: u64 = name.strip_prefix("fired-")?.strip_suffix(".json")?.parse().ok()?;
                    let text = std::fs::read_to_string(e.path()).ok()?;
                    Some((n, serde_json::from_str(&text).expect("a JSON record")))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort_by_key(|(n, _)| *n);
    v.into_iter().map(|(_, r)| r).collect()
}

/// A program whose heap grows past a threshold: each rule fires exactly
/// as often as its limits allow, its dumps and traces open, and its
/// record says why.
fn rules_fire_within_limits(rt: Runtime) {
    let Some(dn) = dotnet_env() else { return };
    let dir = dn.app_dir("grower", rt, &dn.work.join(format!("rules-{}", rt.tag())));
    let mut p = Program::start(dn, rt, &dir, "grower", &[], Tmp::Host, &[]);
    // 1,500 chunks of 10,000 bytes: 15 MB kept, over about 15 s.
    writeln!(p.stdin, "grow 1500 10").expect("write");
    p.stdin.flush().expect("flush");
    std::fs::write(
        dir.join("rules.txt"),
        "# grows 3 MB within a minute: once\ngc-heap-size grows 3MB in 1m limit 1 per 1h do run echo grew $CLRPROF_VALUE\n",
    )
    .expect("rules file");
    let pid = p.pid.to_string();
    let out = clrprof(
        &dir,
        &[
            "watch",
            "-p",
            &pid,
            "--json",
            "--duration",
            "25",
            "-o",
            "out",
            "--rule",
            "gc-heap-size > 5MB limit 2 per 1h cooldown 2s do dump, trace 1s",
            "--rule",
            "gen-0-gc-count >= 0 limit 1 per 1h cooldown 0s do run echo fired $CLRPROF_COUNTER",
            "--rule",
            "working-set < 1KB do dump",
            "--rules",
            "rules.txt",
        ],
    );
    assert!(out.status.success(), "{rt:?}: {}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    let heap: Vec<f64> = lines.iter().filter(|l| l["counter"] == "gc-heap-size").filter_map(|l| l["value"].as_f64()).collect();
    assert!(heap.len() >= 5, "{rt:?}: {} heap samples", heap.len());
    assert!(heap.iter().all(|v| *v > 0.0) && lines.iter().any(|l| l["counter"] == "gen-0-gc-count"), "{rt:?}");
    let fired: Vec<&Value> = lines.iter().filter_map(|l| l.get("fired")).collect();
    let recs = records(&dir.join("out").join(&pid));
    assert_eq!(recs.len(), fired.len(), "{rt:?}: a record for each firing said");
    let of = |rule: u64| recs.iter().filter(|r| r["rule_index"] == rule).collect::<Vec<_>>();
    // Rule 1: exactly its limit of 2, the second at least the cooldown
    // after the first, each with a dump and a trace that open.
    let one = of(1);
    assert_eq!(one.len(), 2, "{rt:?}: rule 1 fired {} times: {recs:?}", one.len());
    let at: Vec<f64> = one.iter().map(|r| r["seconds_into_watch"].as_f64().expect("time")).collect();
    assert!(at[1] - at[0] >= 2.0, "{rt:?}: the cooldown: {at:?}");
    let mut chunks = Vec::new();
    for r in &one {
        assert!(r["value"].as_f64().expect("value") > 5e6, "{rt:?}: {r}");
        assert!(r["why"].as_str().expect("why").starts_with("gc-heap-size "), "{rt:?}: {r}");
        let acts = r["actions"].as_array().expect("actions");
        assert_eq!(acts.len(), 2);
        assert!(acts.iter().all(|a| a["ok"] == true), "{rt:?}: {r}");
        let dump = acts[0]["file"].as_str().expect("dump file");
        let trace = acts[1]["file"].as_str().expect("trace file");
        // The record says whether the dump's heap walk is whole.
        assert!(acts[0]["said"].as_str().is_some_and(|s| s.ends_with(", complete")), "{rt:?}: {}", acts[0]);
        let listed = ok_json(&dir, &["dumps", dump, "--json"]);
        assert_eq!(listed["dumps"].as_array().map(Vec::len), Some(1), "{rt:?}: {listed}");
        let d = ok_json(&dir, &["dump", dump, "0", "--top", "0", "--json"]);
        chunks.push(objects_of(&d, "Chunk"));
        let s = ok_json(&dir, &["summary", trace, "--json", "-q"]);
        assert!(s["allocated_bytes"].as_f64().unwrap_or(0.0) > 0.0, "{rt:?}: {s}");
    }
    let total = p.send("count")["chunks"].as_u64().expect("count");
    assert!(chunks[0] >= 1 && chunks[0] <= chunks[1] && chunks[1] <= total, "{rt:?}: {chunks:?} of {total}");
    // Rule 2 once (its limit), rule 3 never, the file's rule once.
    assert_eq!(of(2).len(), 1, "{rt:?}: {recs:?}");
    assert_eq!(of(3).len(), 0, "{rt:?}: {recs:?}");
    assert_eq!(of(4).len(), 1, "{rt:?}: {recs:?}");
    let run = of(2)[0]["actions"][0]["file"].as_str().expect("run output").to_string();
    assert_eq!(std::fs::read_to_string(dir.join(run)).expect("run output"), "fired gen-0-gc-count\n");
    let grew = of(4)[0];
    assert!(grew["value"].as_f64().expect("value") - grew["window_low"].as_f64().expect("low") >= 3e6, "{rt:?}: {grew}");
    // The UI charts the same series: `ui --watch` over the JSON lines.
    let series = dir.join("watch.jsonl");
    std::fs::write(&series, &out.stdout).expect("the JSON lines");
    let (_ui, base, token) = common::start_ui(&["--watch", series.to_str().expect("UTF-8")]);
    let (status, w) = common::http(&base, &token, "GET", "/api/watch");
    assert_eq!(status, 200, "{w}");
    let heap_series = w["series"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["counter"] == "gc-heap-size" && s["pid"] == p.pid))
        .expect("the heap series");
    let points: Vec<f64> = heap_series["points"].as_array().expect("points").iter().filter_map(|pt| pt[1].as_f64()).collect();
    assert_eq!(points, heap, "{rt:?}: the UI's series is the CLI's");
    assert_eq!(w["fired"].as_array().map(Vec::len), Some(recs.len()), "{rt:?}: {w}");
    // The folders are private.
    use std::os::unix::fs::PermissionsExt;
    for d in [dir.join("out"), dir.join("out").join(&pid)] {
        assert_eq!(std::fs::metadata(&d).expect("folder").permissions().mode() & 0o777, 0o700, "{}", d.display());
    }
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn rules_fire_within_limits_on_net8() {
    rules_fire_within_limits(Runtime::Net8);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn rules_fire_within_limits_on_core31() {
    rules_fire_within_limits(Runtime::Core31);
}

/// `ps` lists running programs with their runtime's version, and one in a
/// container with its id inside and its PID namespace.
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn ps_lists_running_programs() {
    let Some(dn) = dotnet_env() else { return };
    let dir8 = dn.app_dir("grower", Runtime::Net8, &dn.work.join("ps-net8"));
    let dir31 = dn.app_dir("grower", Runtime::Core31, &dn.work.join("ps-core31"));
    let a = Program::start(dn, Runtime::Net8, &dir8, "grower", &[], Tmp::Host, &[]);
    let b = Program::start(dn, Runtime::Core31, &dir31, "grower", &[], Tmp::Host, &[]);
    let c = can_contain().then(|| Program::start(dn, Runtime::Net8, &dir8, "grower", &[], Tmp::Private, &[]));
    let out = clrprof(&dir8, &["ps", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<Value> = String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("JSON")).collect();
    let row = |pid: u32| rows.iter().find(|r| r["pid"] == pid).unwrap_or_else(|| panic!("process {pid} not listed: {rows:?}"));
    assert!(row(a.pid)["runtime"].as_str().is_some_and(|v| v.starts_with("8.")), "{}", row(a.pid));
    assert!(row(b.pid)["runtime"].as_str().is_some_and(|v| v.starts_with("3.1")), "{}", row(b.pid));
    for (p, r) in [(&a, row(a.pid)), (&b, row(b.pid))] {
        assert!(r["command"].as_str().is_some_and(|c| c.ends_with("grower.dll")), "{r}");
        assert_eq!(r["ns_pid"], p.pid, "{r}");
        assert!(r["container"].is_null() && r["profiler"].is_null(), "{r}");
    }
    if let Some(c) = &c {
        let r = row(c.pid);
        assert_eq!(r["ns_pid"], 1, "{r}");
        assert_eq!(c.ready["pid"], 1, "the program's own id inside");
        assert!(r["container"].as_str().is_some_and(|s| s.starts_with("pidns:")), "{r}");
    }
    // The table says the same.
    let table = String::from_utf8_lossy(&clrprof(&dir8, &["ps"]).stdout).into_owned();
    assert!(table.lines().any(|l| l.trim_start().starts_with(&a.pid.to_string()) && l.contains("8.0")), "{table}");
}

/// A program in a container with a private `/tmp`: `heap-dump` by its
/// host process id finds its socket through `/proc/PID/root` and its id
/// inside, and the dump is exact against the program's own counts;
/// `watch` reads its counters the same way.
fn container_heap_dump(rt: Runtime) {
    let Some(dn) = dotnet_env() else { return };
    if !can_contain() {
        return;
    }
    let dir = dn.app_dir("heapgraph", rt, &dn.work.join(format!("container-{}", rt.tag())));
    let args = [N, K, M, F].map(|v| v.to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let p = Program::start(dn, rt, &dir, "heapgraph", &args, Tmp::Private, &[]);
    assert_eq!(p.ready["pid"], 1, "{rt:?}: the program is process 1 in its namespace");
    let pid = p.pid.to_string();
    let d = ok_json(&dir, &["heap-dump", &pid, "-o", "c.nettrace", "--json"]);
    assert_eq!(d["eventpipe"], true, "{rt:?}: {d}");
    assert_eq!(d["dump"]["complete"], true, "{rt:?}: {d}");
    let dump = ok_json(&dir, &["dump", "c.nettrace", "0", "--top", "0", "--json"]);
    assert_eq!(objects_of(&dump, "Marker"), N * K, "{rt:?}: Marker objects");
    assert_eq!(objects_of(&dump, "Node"), M, "{rt:?}: Node objects");
    assert_eq!(objects_of(&dump, "FinObj"), F, "{rt:?}: FinObj objects");
    // The sampled recording too.
    let rec = clrprof(&dir, &["record", "--sampled", "-p", &pid, "--duration", "1", "-o", "c-sampled.nettrace", "-q"]);
    assert!(rec.status.success(), "{rt:?}: {}", String::from_utf8_lossy(&rec.stderr));
    ok_json(&dir, &["summary", "c-sampled.nettrace", "--json", "-q"]);
    let w = clrprof(&dir, &["watch", "-p", &pid, "--duration", "4", "--json"]);
    assert!(w.status.success(), "{rt:?}: {}", String::from_utf8_lossy(&w.stderr));
    let text = String::from_utf8_lossy(&w.stdout);
    assert!(text.lines().any(|l| l.contains("\"gc-heap-size\"") && l.contains(&format!("\"pid\":{pid}"))), "{rt:?}: {text}");
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn container_heap_dump_on_net8() {
    container_heap_dump(Runtime::Net8);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn container_heap_dump_on_core31() {
    container_heap_dump(Runtime::Core31);
}

/// The sidecar way: the program runs in a container with
/// `DOTNET_DiagnosticPorts` naming a socket in a folder both sides share;
/// `heap-dump --diagnostic-port` listens there, and the dump of the
/// runtime that connects is exact. A folder others may write to is
/// refused before anything listens.
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn sidecar_port_through_a_shared_folder() {
    let Some(dn) = dotnet_env() else { return };
    if !can_contain() {
        return;
    }
    let rt = Runtime::Net8;
    let dir = dn.app_dir("heapgraph", rt, &dn.work.join("sidecar"));
    let shared = dir.join("shared");
    let _ = std::fs::remove_dir_all(&shared);
    std::fs::create_dir(&shared).expect("shared folder");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let port = shared.join("port.sock");
    let args = [N, K, M, F].map(|v| v.to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // nosuspend: the program builds its graph while no one listens yet,
    // and connects once clrprof does.
    let p = Program::start(
        dn,
        rt,
        &dir,
        "heapgraph",
        &args,
        Tmp::Private,
        &[("DOTNET_DiagnosticPorts", format!("{},nosuspend", port.display()))],
    );
    let d = ok_json(
        &dir,
        &["heap-dump", "--diagnostic-port", port.to_str().expect("UTF-8"), "-o", "side.nettrace", "--json", "--timeout", "60"],
    );
    assert_eq!(d["pid"], p.pid, "{d}");
    assert_eq!(d["dump"]["complete"], true, "{d}");
    let dump = ok_json(&dir, &["dump", "side.nettrace", "0", "--top", "0", "--json"]);
    assert_eq!(objects_of(&dump, "Marker"), N * K, "Marker objects");
    assert_eq!(objects_of(&dump, "Node"), M, "Node objects");
    assert_eq!(objects_of(&dump, "FinObj"), F, "FinObj objects");
    assert!(!port.exists(), "the port is removed when clrprof ends");
    // Watched through the port as well.
    let w = clrprof(&dir, &["watch", "--diagnostic-port", port.to_str().expect("UTF-8"), "--duration", "6", "--json"]);
    assert!(w.status.success(), "{}", String::from_utf8_lossy(&w.stderr));
    let text = String::from_utf8_lossy(&w.stdout);
    assert!(text.lines().any(|l| l.contains("\"gc-heap-size\"") && l.contains(&format!("\"pid\":{}", p.pid))), "{text}");
    // A folder others may write to: refused, nothing listens.
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let out = clrprof(&dir, &["heap-dump", "--diagnostic-port", port.to_str().expect("UTF-8"), "--timeout", "2"]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && e.contains("may be written by others"), "{e}");
    assert!(!port.exists());
}

/// The trust checks hold across namespaces: in a container's private
/// `/tmp`, another user's socket under the runtime's name is refused and
/// gets no byte; a socket of the right owner answered by another process
/// than the program (its host id, as the kernel names peers here) is
/// refused too.
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn trust_checks_across_namespaces() {
    let Some(dn) = dotnet_env() else { return };
    if !can_contain() {
        return;
    }
    let Some(other) = other_user::get("planting a socket in a container's /tmp") else { return };
    let rt = Runtime::Net8;
    let dir = dn.app_dir("grower", rt, &dn.work.join("trust"));
    // The container's /tmp is a host folder that the other user may write to.
    let tmp = other_user::shared_dir("container-tmp");
    let p = Program::start(dn, rt, &dir, "grower", &[], Tmp::Bound(tmp.clone()), &[("DOTNET_EnableDiagnostics", "0".into())]);
    let pid = p.pid.to_string();
    let planted = other_user::FakeServer::start(other, &tmp.join("dotnet-diagnostic-1-1-socket"), b"x");
    for args in [
        vec!["heap-dump", &pid, "-o", "t.nettrace"],
        vec!["watch", "-p", &pid, "--duration", "2"],
        vec!["record", "--sampled", "-p", &pid, "-o", "t2.nettrace"],
    ] {
        let out = clrprof(&dir, &args);
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains("refused") && e.contains(&format!("belongs to user {}", other.uid)), "{args:?}: {e}");
        assert!(e.contains(&format!("/proc/{pid}/root/")), "{args:?}: the socket named as seen from here: {e}");
        assert!(!out.status.success(), "{args:?}");
    }
    assert!(planted.received().is_empty(), "bytes reached the planted socket");
    drop(planted);
    // Root's own socket under the name, answered by this test.
    let ours = tmp.join("dotnet-diagnostic-1-2-socket");
    let listener = std::os::unix::net::UnixListener::bind(&ours).expect("bind");
    let out = clrprof(&dir, &["heap-dump", &pid, "-o", "t3.nettrace"]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && e.contains(&format!("not by process {pid}")), "{e}");
    listener.set_nonblocking(true).expect("nonblocking");
    if let Ok((mut conn, _)) = listener.accept() {
        conn.set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut conn, &mut b);
        assert!(b.is_empty(), "clrprof wrote to a socket another process answers");
    }
    drop(p);
    let _ = std::fs::remove_dir_all(&tmp);
}

/// A `clrprof collect` in `dir`, killed when dropped.
struct Collector {
    child: Child,
    target: String,
}

impl Collector {
    fn start(dir: &Path) -> Collector {
        std::fs::create_dir_all(dir).expect("collector dir");
        let mut child = Command::new(env!("CARGO_BIN_EXE_clrprof"))
            .args(["collect", "--listen", "127.0.0.1:0", "--dir"])
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

/// With `--target` and the token, a firing's dump goes to `clrprof
/// collect` (stored there whole, and it opens), and its record stays in
/// the process's folder.
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn actions_go_to_a_collector() {
    let Some(dn) = dotnet_env() else { return };
    let rt = Runtime::Net8;
    let dir = dn.app_dir("grower", rt, &dn.work.join("to-collector"));
    let cdir = dir.join("collector");
    let _ = std::fs::remove_dir_all(&cdir);
    let collector = Collector::start(&cdir);
    let mut p = Program::start(dn, rt, &dir, "grower", &[], Tmp::Host, &[]);
    assert_eq!(p.send("grow 300")["chunks"], 300);
    let pid = p.pid.to_string();
    let token = cdir.join("collector.token");
    let out = clrprof(
        &dir,
        &[
            "watch",
            "-p",
            &pid,
            "--duration",
            "8",
            "--json",
            "-o",
            "out",
            "--target",
            &collector.target,
            "--token-file",
            token.to_str().expect("UTF-8"),
            "--rule",
            "gc-heap-size > 1MB limit 1 per 1h do dump",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let recs = records(&dir.join("out").join(&pid));
    assert_eq!(recs.len(), 1, "{recs:?}");
    let act = &recs[0]["actions"][0];
    assert_eq!(act["ok"], true, "{act}");
    assert!(act["file"].is_null() && act["said"].as_str().is_some_and(|s| s.contains("streamed the whole trace")), "{act}");
    assert!(!dir.join("out").join(&pid).join("fired-1-dump.nettrace").exists());
    let listed = clrprof(&cdir, &["sessions", "--json", "--dir", cdir.to_str().expect("UTF-8")]);
    let sessions: Value = serde_json::from_slice(&listed.stdout).expect("sessions JSON");
    let s = sessions.as_array().and_then(|a| a.iter().find(|s| s["state"] == "ended")).cloned().unwrap_or_else(|| panic!("{sessions}"));
    let stored = cdir.join(s["log"].as_str().expect("log"));
    let d = ok_json(&dir, &["dump", stored.to_str().expect("UTF-8"), "0", "--top", "0", "--json"]);
    assert_eq!(objects_of(&d, "Chunk"), 300, "the dump at the collector is the program's");
}
