//! No session lost at exit: `agent/testapps/exits.cs` ends in each way a
//! program can (its argument names the path) while a second thread is
//! still allocating, recorded by `clrprof record` on both runtimes,
//! streamed to a collector and written to a file. Each session must be
//! stored whole (`ended`, its log ending with the agent's end line) or
//! cut with a spool that `clrprof join` completes; the log's ExitMarker
//! (and HandlerMarker) counts must equal what the program printed. A
//! SIGKILLed program must be stored `cut` with what arrived kept, and its
//! file must lack the end line.
//!
//! The stress test runs the paths in turn under four busy processes:
//! 2 runs per path and runtime by default, `CLRPROF_EXIT_RUNS=N` for N
//! runs in all (the guide's figure is for 200).
//!
//! The tests need `scripts/setup-dotnet.sh` and the agent built next to
//! `clrprof`; under `CI=true` they fail without them.

mod common;

use clrprof::format::{read_all, Record};
use common::dotnet::{self, Dotnet, Runtime};
use common::Killed;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The paths the program takes itself, with the exit status `record`
/// passes through (128 + N for signal N).
const PATHS: [(&str, i32); 8] = [
    ("return", 0),
    ("exit", 3),
    ("throw", 134),
    ("throw-worker", 134),
    ("sigterm", 143),
    ("sigterm-handler", 143),
    ("sigint", 130),
    ("native-exit", 4),
];
/// `record` is SIGKILLed while the program waits on its standard input,
/// which is then closed: the program returns on its own.
const PARENT_KILLED: &str = "parent-killed";
/// The program is SIGKILLed: nothing in it runs.
const SIGKILL: &str = "sigkill";

fn clrprof_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_clrprof"))
}

fn work() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("exits-tests-{}", std::process::id()))
}

fn setup() -> Option<(&'static Dotnet, PathBuf)> {
    let a = dotnet::agent_beside(&clrprof_exe())?;
    Some((dotnet::dotnet(&work())?, a))
}

fn clrprof(args: &[&str]) -> std::process::Output {
    Command::new(clrprof_exe()).args(args).output().expect("run clrprof")
}

/// A `clrprof collect` process, killed when dropped.
struct Collector {
    _child: Killed,
    target: String,
    dir: PathBuf,
}

impl Collector {
    fn start(dir: &Path) -> Collector {
        std::fs::create_dir_all(dir).unwrap();
        let mut child = Command::new(clrprof_exe())
            .args(["collect", "--listen", "127.0.0.1:0", "--dir"])
            .arg(dir)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.join("collector.err")).unwrap())
            .spawn()
            .expect("start clrprof collect");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut target = None;
        for _ in 0..2 {
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            if let Some(t) = line.trim().strip_prefix("CLRPROF_TARGET=") {
                target = Some(t.to_string());
            }
        }
        Collector { _child: Killed(child), target: target.expect("the collector printed CLRPROF_TARGET"), dir: dir.to_path_buf() }
    }

    /// The session of process `pid`, once it is no longer live.
    fn session(&self, pid: u64) -> Value {
        let start = Instant::now();
        loop {
            let out = clrprof(&["sessions", "--json", "--dir", self.dir.to_str().unwrap()]);
            let all: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
            let found = all.as_array().and_then(|a| a.iter().find(|s| s["pid"].as_u64() == Some(pid)).cloned());
            if let Some(s) = found.filter(|s| s["state"] != "live") {
                return s;
            }
            assert!(start.elapsed() < Duration::from_secs(120), "no finished session of pid {pid}: {all}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// How a run ended: `record`'s exit status (None when it was killed),
/// the program's JSON lines, `record`'s standard error, the run's folder.
struct Run {
    status: Option<i32>,
    lines: Vec<Value>,
    stderr: String,
    dir: PathBuf,
}

impl Run {
    fn pid(&self) -> u64 {
        self.lines.iter().find_map(|l| l["pid"].as_u64()).unwrap_or_else(|| panic!("no pid printed; stderr {}", self.stderr))
    }

    /// What the program says it allocated: ExitMarker, and HandlerMarker
    /// when its exit handler ran.
    fn counts(&self) -> BTreeMap<String, u64> {
        let mut want = BTreeMap::new();
        for l in &self.lines {
            for key in ["types", "handler"] {
                if let Some(m) = l[key].as_object() {
                    for (k, v) in m {
                        want.insert(k.clone(), v.as_u64().unwrap());
                    }
                }
            }
        }
        want
    }
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines().filter(|l| l.starts_with('{')).filter_map(|l| serde_json::from_str(l).ok()).collect()
}

fn pid_alive(pid: u64) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && std::fs::read_to_string(format!("/proc/{pid}/stat")).map(|s| !s.contains(") Z ")).unwrap_or(false)
}

/// Runs the program on `rt` down `path` under `clrprof record`, streaming
/// to `to` or writing `local.log`.
fn run(dn: &Dotnet, agent: &Path, rt: Runtime, path: &str, to: Option<&Collector>, tag: &str) -> Run {
    let dir = dn.app_dir("exits", rt, &work().join(format!("{path}-{}-{tag}", rt.tag())));
    let host = dn.host(rt).to_string_lossy().into_owned();
    let arg = match path {
        PARENT_KILLED | SIGKILL => "wait",
        p => p,
    };
    let mut cmd = Command::new(clrprof_exe());
    cmd.args(["record", "-o", "local.log"]);
    if let Some(c) = to {
        cmd.args(["--target", &c.target, "--token-file"]).arg(c.dir.join("collector.token"));
    }
    cmd.args(["--", &host, "exits.dll", arg])
        .current_dir(&dir)
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .env("CLRPROF_AGENT", agent)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start clrprof record");
    let stdin = child.stdin.take();
    if arg != "wait" {
        drop(stdin);
        let (out, killed) = common::finish_within(child, Duration::from_secs(180));
        assert!(!killed, "{path} on {rt:?} did not end");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        return Run {
            status: out.status.code(),
            lines: json_lines(&stdout),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            dir,
        };
    }
    // The program waits on its standard input: read its first line (its
    // pid), then kill the parent or the program.
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let lines = json_lines(&first);
    let pid = lines.iter().find_map(|l| l["pid"].as_u64()).unwrap_or_else(|| panic!("{path}: the program printed {first:?}"));
    let mut stderr = String::new();
    if path == PARENT_KILLED {
        child.kill().unwrap();
        child.wait().unwrap();
        drop(stdin);
    } else {
        // Safety: kill(2) on the program's pid.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        drop(stdin);
        child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        child.wait().unwrap();
    }
    let start = Instant::now();
    while pid_alive(pid) {
        assert!(start.elapsed() < Duration::from_secs(120), "{path}: the program {pid} did not end");
        std::thread::sleep(Duration::from_millis(50));
    }
    Run { status: None, lines, stderr, dir }
}

/// Allocations per type name, the load's warnings, and the end line's
/// text if the log ends with one.
fn read_log(log: &[u8]) -> (HashMap<String, u64>, u64, Option<String>) {
    let (records, diags) = read_all(log);
    let mut types: HashMap<i32, String> = HashMap::new();
    let mut stack_type: HashMap<i32, i32> = HashMap::new();
    let mut allocs: HashMap<String, u64> = HashMap::new();
    for p in &records {
        match &p.record {
            Record::Type(t) => {
                types.insert(t.id.0, t.decoded_name());
            }
            Record::Stack(s) => {
                if let Some(a) = s.alloc {
                    stack_type.insert(s.id.0, a.0 .0);
                }
            }
            Record::Alloc(a) => {
                let ty = stack_type.get(&a.stack.0).and_then(|t| types.get(t)).cloned().unwrap_or_default();
                *allocs.entry(ty).or_default() += 1;
            }
            _ => {}
        }
    }
    let last = log.strip_suffix(b"\n").unwrap_or(log);
    let last = &last[last.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)..];
    let end = std::str::from_utf8(last)
        .ok()
        .and_then(|l| l.strip_prefix("z clrprof agent: end of log ("))
        .map(|s| s.trim_end_matches(')').to_string());
    (allocs, diags.total(), end)
}

/// Checks a log that must be whole: it loads without a warning, ends
/// with the end line, and holds what the program counted. Gives the end
/// line's reason.
fn check_whole(what: &str, log: &[u8], run: &Run) -> String {
    let (allocs, warnings, end) = read_log(log);
    assert_eq!(warnings, 0, "{what}: the log has warnings");
    let end = end.unwrap_or_else(|| panic!("{what}: the log does not end with the agent's end line; stderr {}", run.stderr));
    for (ty, n) in run.counts() {
        assert_eq!(allocs.get(&ty).copied().unwrap_or(0), n, "{what}: allocations of {ty}");
    }
    end
}

/// How a streamed session was stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stored {
    Ended,
    /// Cut, with a spool that `join` completes.
    CutWithSpool,
}

/// Checks the session of `run`: ended, or cut with a spool that `join`
/// completes; either way whole. Removes the stored log.
fn check_session(what: &str, c: &Collector, run: &Run) -> (Stored, String) {
    let s = c.session(run.pid());
    let part = c.dir.join(s["log"].as_str().unwrap());
    let result = match s["state"].as_str() {
        Some("ended") => {
            let log = std::fs::read(&part).unwrap();
            (Stored::Ended, check_whole(what, &log, run))
        }
        Some("cut") => {
            let (Some(spool), Some(from)) = (s["spool"].as_str(), s["spool_from"].as_u64()) else {
                panic!("{what}: the session was cut without a spool: {s}; stderr {}", run.stderr)
            };
            let whole = run.dir.join("joined.log");
            let out = clrprof(&["join", "--spool-from", &from.to_string(), part.to_str().unwrap(), spool, "-o", whole.to_str().unwrap()]);
            assert!(out.status.success(), "{what}: join: {}", String::from_utf8_lossy(&out.stderr));
            (Stored::CutWithSpool, check_whole(what, &std::fs::read(&whole).unwrap(), run))
        }
        _ => panic!("{what}: unexpected session {s}"),
    };
    let _ = std::fs::remove_file(&part);
    result
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn every_exit_path_ends_the_log_whole_streamed_and_in_a_file() {
    let Some((dn, agent)) = setup() else { return };
    let c = Collector::start(&work().join("matrix-collector"));
    let mut table = Vec::new();
    for rt in Runtime::ALL {
        for (path, code) in PATHS.iter().map(|&(p, c)| (p, Some(c))).chain([(PARENT_KILLED, None)]) {
            let what = format!("{path} on {rt:?}, streamed");
            let r = run(dn, &agent, rt, path, Some(&c), "s");
            assert_eq!(r.status, code, "{what}: record's exit status; stderr {}", r.stderr);
            let (stored, end) = check_session(&what, &c, &r);
            table.push(format!("{rt:?} {path}: streamed {stored:?} ({end})"));
            let what = format!("{path} on {rt:?}, to a file");
            let r = run(dn, &agent, rt, path, None, "f");
            assert_eq!(r.status, code, "{what}: record's exit status; stderr {}", r.stderr);
            let end = check_whole(&what, &std::fs::read(r.dir.join("local.log")).unwrap(), &r);
            table.push(format!("{rt:?} {path}: file whole ({end})"));
        }
        // SIGKILL: nothing in the process runs. The collector keeps what
        // arrived, in whole lines, and says the session was cut; the file
        // lacks the end line.
        let what = format!("SIGKILL on {rt:?}");
        let r = run(dn, &agent, rt, SIGKILL, Some(&c), "s");
        let s = c.session(r.pid());
        assert_eq!(s["state"], "cut", "{what}: {s}");
        let (_, warnings, end) = read_log(&std::fs::read(c.dir.join(s["log"].as_str().unwrap())).unwrap());
        assert_eq!((warnings, end), (0, None), "{what}: the stored part is whole lines without the end line");
        let r = run(dn, &agent, rt, SIGKILL, None, "f");
        let (_, _, end) = read_log(&std::fs::read(r.dir.join("local.log")).unwrap());
        assert_eq!(end, None, "{what}: a killed program's file has no end line");
        table.push(format!("{rt:?} sigkill: streamed cut ({}), file without the end line", s["reason"]));
    }
    eprintln!("{}", table.join("\n"));
}

/// Four processes spinning on the CPU while they live.
fn busy(n: usize) -> Vec<Killed> {
    (0..n).map(|_| Killed(Command::new("sh").args(["-c", "while :; do :; done"]).spawn().expect("start a busy process"))).collect()
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn exit_paths_under_load_lose_no_session() {
    let Some((dn, agent)) = setup() else { return };
    let paths: Vec<&str> = PATHS.iter().map(|p| p.0).chain([PARENT_KILLED]).collect();
    let runs = std::env::var("CLRPROF_EXIT_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(2 * paths.len() * 2);
    let c = Collector::start(&work().join("stress-collector"));
    let _load = busy(4);
    let mut tally: BTreeMap<(String, Stored), u32> = BTreeMap::new();
    for i in 0..runs {
        let path = paths[i % paths.len()];
        let rt = Runtime::ALL[(i / paths.len()) % 2];
        let what = format!("run {i}: {path} on {rt:?}");
        let r = run(dn, &agent, rt, path, Some(&c), &format!("load{i}"));
        let (stored, _) = check_session(&what, &c, &r);
        *tally.entry((path.to_string(), stored)).or_default() += 1;
        let _ = std::fs::remove_dir_all(&r.dir);
    }
    let ended: u32 = tally.iter().filter(|(k, _)| k.1 == Stored::Ended).map(|(_, n)| n).sum();
    eprintln!(
        "{runs} runs under 4 busy processes: {ended} ended, {} cut with a spool that join completed, 0 cut without one; {tally:?}",
        runs as u32 - ended
    );
}
