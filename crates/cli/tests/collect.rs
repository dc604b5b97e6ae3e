//! `clrprof collect` end to end: real .NET programs (agent/testapps/)
//! stream their logs to a collector through `clrprof record --target`,
//! take commands through `clrprof ctl`, and survive the collector being
//! killed. The stored logs are read back with the library and the CLI.
//!
//! The runtime tests need `scripts/setup-dotnet.sh` and the agent built
//! next to `clrprof` (as in tests/record.rs); under `CI=true` they fail
//! without them. The refusal test (a forged resume among them) needs no
//! runtime.

mod common;

use clrprof::format::{read_all, Record};
use clrprof_wire::{handshake, Hello, Role, Token};
use common::dotnet::{self, Dotnet, Runtime};
use common::Killed;
use serde_json::Value;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

fn clrprof_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_clrprof"))
}

fn agent() -> Option<PathBuf> {
    dotnet::agent_beside(&clrprof_exe())
}

fn work() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("collect-tests-{}", std::process::id()))
}

fn setup() -> Option<(&'static Dotnet, PathBuf)> {
    let a = agent()?;
    Some((dotnet::dotnet(&work())?, a))
}

fn clrprof(args: &[&str]) -> std::process::Output {
    Command::new(clrprof_exe()).args(args).output().expect("run clrprof")
}

fn json(args: &[&str]) -> Value {
    let out = clrprof(args);
    assert!(out.status.success(), "clrprof {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("clrprof {args:?}: not JSON: {e}"))
}

fn eventually<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    eventually_or(what, f, String::new)
}

/// [`eventually`], saying what `context` gives when it times out.
fn eventually_or<T>(what: &str, mut f: impl FnMut() -> Option<T>, context: impl FnOnce() -> String) -> T {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        if let Some(t) = f() {
            return t;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out waiting for {what}\n{}", context());
}

/// A `clrprof collect` process, SIGKILLed when dropped.
struct Collector {
    child: Child,
    target: String,
    stderr: PathBuf,
}

impl Collector {
    fn start(dir: &Path, listen: &str) -> Collector {
        Collector::start_with(dir, listen, &[])
    }

    fn start_with(dir: &Path, listen: &str, extra: &[&str]) -> Collector {
        std::fs::create_dir_all(dir).unwrap();
        let stderr = dir.join(format!("collector-{}.err", rand_tag()));
        let mut child = Command::new(clrprof_exe())
            .args(["collect", "--listen", listen, "--dir"])
            .arg(dir)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("start clrprof collect");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut vars = HashMap::new();
        for _ in 0..2 {
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            let (k, v) = line.trim().split_once('=').unwrap_or_else(|| panic!("collector printed {line:?}"));
            vars.insert(k.to_string(), v.to_string());
        }
        let token_file = dir.join("collector.token");
        assert_eq!(std::fs::read_to_string(&token_file).unwrap().trim(), vars["CLRPROF_TOKEN"], "the printed token is the kept one");
        Collector { child, target: vars["CLRPROF_TARGET"].clone(), stderr }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.kill();
    }
}

fn rand_tag() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
}

/// A program run by `clrprof record --target`, talked to through its
/// standard input and output.
struct Program {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    lines: Vec<String>,
}

impl Program {
    fn start(dn: &Dotnet, agent: &Path, app: &str, rt: Runtime, tag: &str, target: &str, token_file: &Path) -> Program {
        let dir = dn.app_dir(app, rt, &work().join(format!("{app}-{}-{tag}", rt.tag())));
        let host = dn.host(rt).to_string_lossy().into_owned();
        let mut child = Command::new(clrprof_exe())
            .args(["record", "-o", "local.log", "--target", target, "--token-file"])
            .arg(token_file)
            .args(["--", &host, &format!("{app}.dll")])
            .current_dir(&dir)
            .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
            .env("CLRPROF_AGENT", agent)
            // Up to 30 s (not 5) for the collector to confirm the end:
            // the tests run programs side by side on two cores, and a
            // collector that slow is not what they are about.
            .env("CLRPROF_STREAM_LINGER_MS", "30000")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start clrprof record");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Program { child, stdin, stdout, lines: Vec::new() }
    }

    fn wait_for(&mut self, what: &str) {
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(n > 0, "the program ended before printing {what:?}; it printed {:?}", self.lines);
            self.lines.push(line.trim().to_string());
            if line.trim() == what {
                return;
            }
        }
    }

    fn go(&mut self) {
        self.stdin.write_all(b"go\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Waits for the end; gives the program's JSON line and record's
    /// standard error.
    fn finish(mut self) -> (Value, String) {
        let mut rest = String::new();
        self.stdout.read_to_string(&mut rest).unwrap();
        let mut err = String::new();
        self.child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "the program failed: {err}");
        let all = format!("{}\n{rest}", self.lines.join("\n"));
        (dotnet::json_line(all.as_bytes()).unwrap_or_else(|| panic!("no JSON line in {all:?}; stderr {err}")), err)
    }
}

fn sessions(dir: &Path) -> Vec<Value> {
    json(&["sessions", "--json", "--dir", dir.to_str().unwrap()]).as_array().cloned().unwrap_or_default()
}

fn ctl(dir: &Path, session: &str, command: &[&str]) -> String {
    let out = clrprof(&[&["ctl", "--dir", dir.to_str().unwrap(), session][..], command].concat());
    assert!(out.status.success(), "ctl {session} {command:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What the checks need from a stored log, in log order.
#[derive(Default, Debug)]
struct Facts {
    allocs: HashMap<String, u64>,
    /// Per type name: line index of the first and last allocation.
    alloc_span: HashMap<String, (usize, usize)>,
    /// Comments with their line index.
    comments: Vec<(usize, String)>,
    /// Line indexes of heap dump object lines, per type name.
    dump_objects: HashMap<String, Vec<usize>>,
}

fn facts(log: &[u8]) -> Facts {
    let (records, diags) = read_all(log);
    assert_eq!(diags.total(), 0, "the stored log has warnings: {:?}", diags.warnings().iter().take(3).collect::<Vec<_>>());
    let mut types: HashMap<i32, String> = HashMap::new();
    let mut stack_type: HashMap<i32, i32> = HashMap::new();
    let mut f = Facts::default();
    for (i, p) in records.iter().enumerate() {
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
                *f.allocs.entry(ty.clone()).or_default() += 1;
                let span = f.alloc_span.entry(ty).or_insert((i, i));
                span.1 = i;
            }
            Record::Comment(c) => f.comments.push((i, String::from_utf8_lossy(c.text).into_owned())),
            Record::HeapObject(o) => {
                f.dump_objects.entry(types.get(&o.type_id.0).cloned().unwrap_or_default()).or_default().push(i);
            }
            _ => {}
        }
    }
    f
}

fn counts_match(what: &str, f: &Facts, program: &Value, skip: &[&str]) {
    for (name, n) in program["types"].as_object().expect("types") {
        let want = if skip.contains(&name.as_str()) { 0 } else { n.as_u64().unwrap() };
        assert_eq!(f.allocs.get(name).copied().unwrap_or(0), want, "{what}: allocations of {name}");
    }
}

fn stored(dir: &Path, session: &Value) -> Vec<u8> {
    std::fs::read(dir.join(session["log"].as_str().unwrap())).unwrap()
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn three_programs_stream_and_take_commands_on_both_runtimes() {
    let Some((dn, agent)) = setup() else { return };
    let dir = work().join("three");
    let collector = Collector::start(&dir, "127.0.0.1:0");
    let token_file = dir.join("collector.token");
    let mut phases: Vec<(Runtime, Program)> = Runtime::ALL
        .iter()
        .map(|&rt| (rt, Program::start(dn, &agent, "phases", rt, "three", &collector.target, &token_file)))
        .collect();
    let markers = Program::start(dn, &agent, "markers", Runtime::Core31, "three", &collector.target, &token_file);
    for (_, p) in &mut phases {
        p.wait_for("phase A done");
    }
    // Both phase programs are live sessions; tell them apart by runtime.
    let live = eventually("two live phases sessions", || {
        let s: Vec<Value> = sessions(&dir).into_iter().filter(|s| s["program"] == "phases" && s["state"] == "live").collect();
        (s.len() == 2).then_some(s)
    });
    let session_of = |rt: Runtime| -> String {
        let prefix = if rt == Runtime::Core31 { "3." } else { "8." };
        live.iter().find(|s| s["runtime"].as_str().unwrap().starts_with(prefix)).unwrap()["session"].as_str().unwrap().to_string()
    };
    // Between A and B: a comment, then allocations off for phase B.
    for (rt, p) in &mut phases {
        let s = session_of(*rt);
        assert!(ctl(&dir, &s, &["comment", "after", "phase", "A"]).contains("ok"));
        assert!(ctl(&dir, &s, &["allocations", "off"]).contains("ok (was on)"));
        p.go();
    }
    // Between B and C: allocations on again, and a heap dump.
    for (rt, p) in &mut phases {
        p.wait_for("phase B done");
        let s = session_of(*rt);
        assert!(ctl(&dir, &s, &["allocations", "on"]).contains("ok (was off)"));
        let dumped = ctl(&dir, &s, &["dump"]);
        assert!(dumped.contains("ok heap dump"), "{dumped}");
        p.go();
    }
    let (markers_json, markers_err) = markers.finish();
    assert!(markers_err.contains("streamed the log to"), "{markers_err}");
    // The collector's real directory, from its token file (not a bare DIR).
    assert!(markers_err.contains(&format!("`clrprof sessions --dir {}` lists it", dir.display())), "{markers_err}");
    let results: Vec<(Runtime, Value)> = phases
        .into_iter()
        .map(|(rt, p)| {
            let (program, err) = p.finish();
            assert!(err.contains("streamed the log to") && !err.contains("spool"), "{rt:?}: {err}");
            (rt, program)
        })
        .collect();

    // Three sessions, all ended cleanly.
    let all = eventually("three ended sessions", || {
        let s = sessions(&dir);
        (s.len() == 3 && s.iter().all(|s| s["state"] == "ended")).then_some(s)
    });
    for s in &all {
        assert_eq!(s["bytes"].as_u64().unwrap(), stored(&dir, s).len() as u64);
    }
    let markers_session = all.iter().find(|s| s["program"] == "markers").expect("the markers session");
    let f = facts(&stored(&dir, markers_session));
    counts_match("markers", &f, &markers_json, &[]);

    for (rt, program) in &results {
        let s = all.iter().find(|s| s["session"] == session_of(*rt).as_str()).unwrap();
        let what = format!("phases on {rt:?}");
        let f = facts(&stored(&dir, s));
        // Phase B ran with allocations off: none of its objects, and all
        // of A's and C's.
        counts_match(&what, &f, program, &["PhaseB"]);
        let (_, last_a) = f.alloc_span["PhaseA"];
        let (first_c, _) = f.alloc_span["PhaseC"];
        let comment = f.comments.iter().find(|c| c.1 == "after phase A").unwrap_or_else(|| panic!("{what}: no comment"));
        assert!(last_a < comment.0 && comment.0 < first_c, "{what}: the comment is between phases A and C");
        // The dump: after the comment, before phase C, holding every
        // PhaseA object and the PhaseB objects kept (allocated while
        // allocation logging was off, so known only from the dump).
        let dump_a = &f.dump_objects["PhaseA"];
        assert_eq!(dump_a.len(), 1000, "{what}: PhaseA objects in the dump");
        assert_eq!(f.dump_objects["PhaseB"].len(), 1000, "{what}: PhaseB objects kept, in the dump");
        assert!(dump_a.iter().all(|&i| comment.0 < i && i < first_c), "{what}: the dump is between the comment and phase C");
        // The CLI agrees on the counts.
        let log = dir.join(s["log"].as_str().unwrap());
        let types = json(&["types", "--kind", "allocated", "--json", "--top", "0", log.to_str().unwrap()]);
        let count = |name: &str| types["types"].as_array().unwrap().iter().find(|r| r["type"] == name).map_or(0, |r| r["count"].as_u64().unwrap());
        assert_eq!((count("PhaseA"), count("PhaseB"), count("PhaseC")), (1000, 0, 3000), "{what}");
    }
    drop(collector);
}

/// The spool and its start in the log, from `record`'s message.
fn spool_of(err: &str) -> (PathBuf, u64) {
    let from = err.split("until byte ").nth(1).and_then(|r| r.split(',').next()).and_then(|n| n.parse().ok());
    let spool = err.split("then to the spool ").nth(1).and_then(|r| r.split_whitespace().next());
    match (spool, from) {
        (Some(s), Some(n)) => (PathBuf::from(s), n),
        _ => panic!("no spool named in {err:?}"),
    }
}

/// A collector in `dir` and `phases` on `rt` streaming to it; once phase A
/// is done and its session live, the collector is SIGKILLed. Gives the
/// program (waiting to run phase B), the collector's address and the
/// session's name.
fn killed_after_phase_a(dn: &Dotnet, agent: &Path, rt: Runtime, tag: &str, dir: &Path) -> (Program, String, String) {
    let mut collector = Collector::start(dir, "127.0.0.1:0");
    let target = collector.target.clone();
    let mut p = Program::start(dn, agent, "phases", rt, tag, &target, &dir.join("collector.token"));
    p.wait_for("phase A done");
    let session = eventually("the live session", || sessions(dir).into_iter().find(|s| s["state"] == "live"));
    let name = session["session"].as_str().unwrap().to_string();
    collector.kill();
    (p, target, name)
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn collector_killed_mid_run_catches_up_from_the_spool_and_ends_whole() {
    let Some((dn, agent)) = setup() else { return };
    for rt in Runtime::ALL {
        let dir = work().join(format!("killed-{}", rt.tag()));
        let (mut p, target, name) = killed_after_phase_a(dn, &agent, rt, "killed", &dir);
        // The program goes on without the collector (into the spool).
        p.go();
        p.wait_for("phase B done");
        let again = Collector::start(&dir, &target);
        // The agent sends its spool to the restarted collector: the
        // session is live again and takes commands.
        eventually("the session live again", || sessions(&dir).into_iter().find(|s| s["session"] == name.as_str() && s["state"] == "live"));
        assert!(ctl(&dir, &name, &["comment", "after", "the", "restart"]).contains("ok"));
        p.go();
        let (program, err) = p.finish();
        assert!(err.contains("then to the spool") && err.contains("caught up from the spool"), "{rt:?}: {err}");
        let rec = eventually("the session ended", || sessions(&dir).into_iter().find(|s| s["session"] == name.as_str() && s["state"] != "live"));
        assert_eq!(rec["state"], "ended", "{rec}");
        assert!(rec["spool"].is_null() && rec["spool_from"].is_null(), "a whole log names no spool: {rec}");
        assert!(rec["reason"].as_str().unwrap().contains("the stored log is whole"), "{rec}");
        // The stored log alone is the whole log: every marker counted,
        // no warning, the comment sent after the restart in it.
        let whole = stored(&dir, &rec);
        assert_eq!(rec["bytes"].as_u64().unwrap(), whole.len() as u64);
        let f = facts(&whole);
        counts_match(&format!("caught up, {rt:?}"), &f, &program, &[]);
        assert!(f.comments.iter().any(|c| c.1 == "after the restart"), "{rt:?}: {:?}", f.comments);
        // The local spool is the log from the break on, byte for byte.
        let (spool, from) = spool_of(&err);
        assert_eq!(std::fs::read(&spool).unwrap(), &whole[from as usize..], "{rt:?}: the spool is the log's tail");
        let summary = json(&["summary", "--json", dir.join(rec["log"].as_str().unwrap()).to_str().unwrap()]);
        assert!(summary["allocated_bytes"].as_u64().unwrap() > 0);
        drop(again);
    }
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn collector_back_only_after_the_program_ended_part_plus_spool_is_the_whole_log() {
    let Some((dn, agent)) = setup() else { return };
    let dir = work().join("late-return");
    let (mut p, target, name) = killed_after_phase_a(dn, &agent, Runtime::Net8, "late", &dir);
    p.go();
    p.wait_for("phase B done");
    p.go();
    let (program, err) = p.finish();
    assert!(err.contains("then to the spool") && !err.contains("caught up"), "{err}");
    let _again = Collector::start(&dir, &target);
    // The restart marks the session cut; its stored part may hold bytes
    // whose acknowledgement never came: its first `spooling_from` bytes
    // followed by the spool are the log.
    let rec = sessions(&dir).into_iter().find(|s| s["session"] == name.as_str()).unwrap();
    assert_eq!(rec["state"], "cut", "{rec}");
    let part = dir.join(rec["log"].as_str().unwrap());
    let (spool, from) = spool_of(&err);
    let joined = dir.join("joined.log");
    let out = clrprof(&["join", "--spool-from", &from.to_string(), part.to_str().unwrap(), spool.to_str().unwrap(), "-o", joined.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    counts_match("part + spool", &facts(&std::fs::read(&joined).unwrap()), &program, &[]);
    // `join` never replaces a file.
    assert!(!clrprof(&["join", part.to_str().unwrap(), spool.to_str().unwrap(), "-o", joined.to_str().unwrap()]).status.success());
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn unreachable_collector_at_start_spools_the_whole_log() {
    let Some((dn, agent)) = setup() else { return };
    let dir = work().join("unreachable");
    std::fs::create_dir_all(&dir).unwrap();
    let token_file = dir.join("t.token");
    std::fs::write(&token_file, format!("{}\n", "5a".repeat(32))).unwrap();
    // A port nobody listens on: bind one and let it go.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let p = Program::start(dn, &agent, "markers", Runtime::Net8, "unreachable", &format!("127.0.0.1:{port}"), &token_file);
    let (program, err) = p.finish();
    assert!(err.contains("then to the spool") && err.contains("cannot connect"), "{err}");
    let spool = err.split("to the spool ").nth(1).and_then(|r| r.split_whitespace().next()).unwrap();
    let f = facts(&std::fs::read(spool).unwrap());
    counts_match("spooled from the start", &f, &program, &[]);
}

/// Connects, reads the challenge, sends `hello_line(token)`; gives what
/// the collector answered (None: it closed without a word).
fn try_hello(target: &str, token: &Token) -> Option<String> {
    try_hello_as(target, token, Role::Stream, None)
}

/// [`try_hello`] with `role`, naming `session`.
fn try_hello_as(target: &str, token: &Token, role: Role, session: Option<&str>) -> Option<String> {
    let s = std::net::TcpStream::connect(target).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line).unwrap();
    let server = handshake::parse_challenge(&line).unwrap();
    let hello = Hello {
        role,
        nonce: clrprof_wire::token::to_hex(&[1; 32]),
        pid: 1,
        program: "probe".into(),
        runtime: "x".into(),
        session: session.map(str::to_string),
        spool: session.map(|_| "/tmp/probe.spool.log".to_string()),
        spool_from: session.map(|_| 0),
        catch_up: false,
        resume_mac: None,
        content: Default::default(),
    };
    (&s).write_all(handshake::hello_line(token, &server, &hello).unwrap().as_bytes()).unwrap();
    let mut answer = String::new();
    match r.read_line(&mut answer) {
        Ok(n) if n > 0 => Some(answer),
        _ => None,
    }
}

#[test]
fn refusals_are_logged_with_the_peer_and_never_the_token() {
    let dir = work().join("refusals");
    let collector = Collector::start(&dir, "127.0.0.1:0");
    let token = Token::from_hex(&std::fs::read_to_string(dir.join("collector.token")).unwrap()).unwrap();
    assert_eq!(try_hello(&collector.target, &Token::from_bytes([3; 32])), None, "a wrong token gets no answer");
    let mut s = std::net::TcpStream::connect(&collector.target).unwrap();
    s.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let mut rest = Vec::new();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let _ = s.read_to_end(&mut rest);
    assert!(rest.starts_with(b"CLRPROF-COLLECT 1 ") && rest.iter().filter(|&&b| b == b'\n').count() == 1, "only the challenge");
    let ok = try_hello(&collector.target, &token).unwrap();
    assert!(ok.starts_with("OK "), "the right token is accepted");
    // Another holder of the token naming that session (pid and all) to
    // resume it, without the session's own key: refused, logged.
    let probe = ok.trim_end().rsplit(' ').next().unwrap().to_string();
    assert_eq!(try_hello_as(&collector.target, &token, Role::Resume, Some(&probe)), None, "a forged resume gets no answer");
    // `clrprof ctl` with a wrong token file is refused too.
    let bad = dir.join("bad.token");
    std::fs::write(&bad, "77".repeat(32)).unwrap();
    let out = clrprof(&["ctl", "--dir", dir.to_str().unwrap(), "--token-file", bad.to_str().unwrap(), "x", "flush"]);
    assert!(!out.status.success());
    let log = eventually("four refusals in the collector's log", || {
        let l = collector.log();
        (l.matches("refused").count() >= 4).then_some(l)
    });
    assert!(log.contains(&format!("resume of session {probe} refused")) && log.contains("no valid resume proof"), "{log}");
    assert!(log.contains("refused 127.0.0.1:") && log.contains("wrong token"), "{log}");
    assert!(log.contains("not HELLO"), "{log}");
    assert!(log.contains("refused admin socket"), "{log}");
    assert!(!log.contains(&token.to_hex()), "the token is never logged");
    // Sessions list: only the accepted probe (cut: it closed without an end).
    let listed = eventually("the probe session cut", || {
        let s = sessions(&dir);
        (s.len() == 1 && s[0]["state"] == "cut").then_some(s)
    });
    assert_eq!(listed[0]["program"], "probe");
    assert!(listed[0]["reason"].as_str().unwrap().contains("closed before the end"));
    assert!(listed[0]["spool"].is_null(), "the forged resume changed nothing: {}", listed[0]);
}

#[test]
fn a_collector_whose_output_reader_went_away_keeps_serving() {
    // `clrprof collect ... 2>&1 | tee collector.log`, and the tee stopped:
    // the collector's next line on standard error must not end it.
    let dir = work().join("no-reader");
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = Command::new(clrprof_exe())
        .args(["collect", "--listen", "127.0.0.1:0", "--dir"])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start clrprof collect");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut target = String::new();
    out.read_line(&mut target).unwrap();
    let target = target.trim().strip_prefix("CLRPROF_TARGET=").unwrap_or_else(|| panic!("collector printed {target:?}")).to_string();
    let token = Token::from_hex(&std::fs::read_to_string(dir.join("collector.token")).unwrap()).unwrap();
    // Both readers go away.
    drop(out);
    drop(child.stderr.take());
    let collector = Killed(child);
    // A refusal, then a session that ends without its end frame: each is a
    // line on the closed standard error.
    assert_eq!(try_hello(&target, &Token::from_bytes([3; 32])), None);
    let answer = try_hello(&target, &token).expect("the collector answers after its reader went away");
    assert!(answer.starts_with("OK"), "{answer}");
    std::thread::sleep(Duration::from_millis(300));
    let answer = try_hello(&target, &token).expect("the collector still answers");
    assert!(answer.starts_with("OK"), "{answer}");
    drop(collector);
}

/// `record --target ADDR --token-file F` with a token the collector does
/// not take: exit 1 before the program starts (it would leave a file), no
/// session made; with the right token the check makes no session either;
/// a collector that cannot be reached is only a warning (the agent spools).
#[test]
fn record_checks_the_token_before_starting_the_program() {
    let dir = work().join("token-check");
    let collector = Collector::start(&dir, "127.0.0.1:0");
    let bad = dir.join("bad.token");
    std::fs::write(&bad, "77".repeat(32)).unwrap();
    let ran = dir.join("ran");
    let run = |token: &Path, target: &str| {
        Command::new(clrprof_exe())
            .args(["record", "-o"])
            .arg(dir.join(format!("rec-{}.log", rand_tag())))
            .args(["--target", target, "--token-file"])
            .arg(token)
            .args(["--", "touch"])
            .arg(&ran)
            .env("CLRPROF_AGENT", agent().unwrap_or_else(|| PathBuf::from("/nonexistent/agent.so")))
            .output()
            .expect("run clrprof record")
    };
    let out = run(&bad, &collector.target);
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(e.contains(&format!("the collector at {} refused the token in {}", collector.target, bad.display())), "{e}");
    assert!(!ran.exists(), "the program ran although the token was refused");
    // The right token: the program runs (it is no .NET program, so no
    // session streams), and the check itself made no session.
    let out = run(&dir.join("collector.token"), &collector.target);
    assert!(ran.exists(), "{}", String::from_utf8_lossy(&out.stderr));
    let listed = json(&["sessions", "--json", "--dir", dir.to_str().unwrap()]);
    assert_eq!(listed.as_array().map(Vec::len), Some(0), "{listed}");
    let log = collector.log();
    assert!(log.contains("wrong token"), "the refused check is logged: {log}");
    // Nobody listening: a warning, and the program runs.
    std::fs::remove_file(&ran).unwrap();
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let out = run(&bad, &free);
    assert!(ran.exists(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("warning: cannot reach the collector at {free}")), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `collect --dataset DIR`: a session that ends whole is appended to the
/// Parquet dataset by the collector itself, one partition named after the
/// session; DuckDB reads the same objects and bytes the stored log has.
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn ended_sessions_are_appended_to_the_dataset() {
    let Some((dn, agent)) = setup() else { return };
    let venv = std::env::var_os("CLRPROF_EXPORT_VENV").map(PathBuf::from).unwrap_or_else(|| dotnet::repo().join("target/export-venv"));
    let python = venv.join("bin/python");
    if !Command::new(&python).args(["-c", "import duckdb"]).output().is_ok_and(|o| o.status.success()) {
        dotnet::skip::<()>(&format!("python with duckdb ({}; scripts/setup-export-tests.sh)", python.display()));
        return;
    }
    let dir = work().join("dataset");
    let dataset = dir.join("ds");
    let ds = dataset.to_str().unwrap();
    let collector = Collector::start_with(&dir, "127.0.0.1:0", &["--dataset", ds]);
    let token_file = dir.join("collector.token");
    let markers = Program::start(dn, &agent, "markers", Runtime::Net8, "dataset", &collector.target, &token_file);
    let (_, record_err) = markers.finish();
    let session = eventually_or(
        "the ended session",
        || sessions(&dir).into_iter().find(|s| s["state"] == "ended").map(|s| s["session"].as_str().unwrap().to_string()),
        || format!("sessions: {:?}\nrecord said: {record_err}\ncollector said: {}", sessions(&dir), collector.log()),
    );
    let part = dataset.join("objects").join(format!("log={session}")).join("part-0.parquet");
    eventually("the session's partition", || part.is_file().then_some(()));
    // The line comes once the append is done (after the partitions).
    eventually("the collector's line for the append", || {
        collector.log().contains(&format!("session {session} added to the dataset")).then_some(())
    });
    // What the stored log holds, by the library.
    let log = dir.join(format!("{session}.log"));
    let model = clrprof::model::load_path(&log, &Default::default()).expect("load the stored log");
    let objects = model.allocations().len() as u64;
    let bytes = clrprof::query::summary(&model).allocated_bytes;
    assert!(objects > 0);
    // What DuckDB reads from the dataset.
    let sql = format!(
        "import duckdb; r = duckdb.sql(\"select count(*), sum(size) from read_parquet('{ds}/objects/*/*.parquet', hive_partitioning=1) where log = '{session}'\").fetchall()[0]; \
         h = duckdb.sql(\"select host from read_parquet('{ds}/logs/*/*.parquet', hive_partitioning=1) where log = '{session}'\").fetchall()[0]; print(r[0], r[1], h[0])"
    );
    let out = Command::new(&python).args(["-c", &sql]).output().expect("run duckdb");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let got: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(got, [objects.to_string().as_str(), bytes.to_string().as_str(), "127.0.0.1"], "{text}");
}
