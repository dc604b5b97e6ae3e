//! The launch port of `record --sampled -- CMD` against another local
//! user: the program and every process it starts inherit
//! `DOTNET_DiagnosticPorts=<folder>/diagnostics.sock,connect,suspend`, so
//! the port must be served, and its folder kept, until the whole process
//! tree has ended. A squatter of another Unix user watches the temporary
//! folder and makes every `clrprof-port-*` folder it has seen again, with
//! a socket that keeps every byte, the moment the name is free; it must
//! never get a connection. Meanwhile a .NET child started by the program
//! (and a .NET grandchild started by `sh` after the program has ended)
//! must be resumed by the port and run to their end.
//!
//! Needs `scripts/setup-dotnet.sh` and root (for the second user).

mod common;

use common::dotnet::{self, Dotnet, Runtime};
use common::other_user::{self, OtherUser};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn dotnet_env() -> Option<&'static Dotnet> {
    dotnet::dotnet(&Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("launch-port-{}", std::process::id())))
}

/// The squatter: as the other user, it lists `base` every few ms, and
/// makes each folder it has seen whose name starts with one of
/// `prefixes` (comma-separated) again (mode 0777) with a
/// listening socket at `diagnostics.sock` as soon as the name is free.
/// Every connection is counted in `<log>.connections`, every byte kept in
/// `<log>`, every folder it took in `<log>.squatted`.
const SQUATTER: &str = r#"
import os, socket, sys, threading, time
base, log, prefixes = sys.argv[1], sys.argv[2], tuple(sys.argv[3].split(","))
open(log, "wb").close()
open(log + ".connections", "w").close()
open(log + ".squatted", "w").close()
def note(name, text):
    with open(name, "a") as f:
        f.write(text)
def read(c):
    c.settimeout(30)
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            with open(log, "ab") as f:
                f.write(d)
    except OSError:
        pass
def serve(s):
    while True:
        c, _ = s.accept()
        note(log + ".connections", "connection\n")
        threading.Thread(target=read, args=(c,), daemon=True).start()
seen = set()
open(log + ".ready", "w").close()
while True:
    try:
        seen.update(n for n in os.listdir(base) if n.startswith(prefixes))
    except OSError:
        pass
    for n in list(seen):
        d = os.path.join(base, n)
        try:
            os.mkdir(d)
        except OSError:
            continue
        os.chmod(d, 0o777)
        p = os.path.join(d, "diagnostics.sock")
        s = socket.socket(socket.AF_UNIX)
        s.bind(p)
        os.chmod(p, 0o777)
        s.listen(64)
        note(log + ".squatted", d + "\n")
        threading.Thread(target=serve, args=(s,), daemon=True).start()
    time.sleep(0.002)
"#;

struct Squatter {
    child: Child,
    log: PathBuf,
}

impl Squatter {
    fn start(user: OtherUser, base: &Path, prefixes: &str) -> Squatter {
        let log = base.join("squatter.log");
        let child = user
            .command("/usr/bin/python3")
            .args(["-c", SQUATTER])
            .arg(base)
            .arg(&log)
            .arg(prefixes)
            .current_dir("/")
            .stdin(Stdio::null())
            .spawn()
            .expect("start the squatter as the other user");
        let ready = log.with_extension("log.ready");
        let start = Instant::now();
        while !ready.exists() {
            assert!(start.elapsed() < Duration::from_secs(20), "the squatter did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Squatter { child, log }
    }

    fn read(&self, ext: &str) -> String {
        let p = if ext.is_empty() { self.log.clone() } else { self.log.with_extension(format!("log.{ext}")) };
        String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned()
    }
}

impl Drop for Squatter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `record --sampled -o TRACE -- dotnet spawner.dll ARGS` with `TMPDIR` the
/// shared folder.
fn record(dn: &Dotnet, dir: &Path, tmp: &Path, trace: &str, args: &[&str]) -> Output {
    let _ = std::fs::remove_file(dir.join(trace));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_clrprof"));
    cmd.args(["record", "--sampled", "-o", trace, "--"])
        .arg(dn.host(Runtime::Net8))
        .arg("spawner.dll")
        .args(args)
        .current_dir(dir)
        .env("TMPDIR", tmp)
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1");
    let (out, killed) = common::run_within(&mut cmd, Duration::from_secs(150));
    assert!(!killed, "record --sampled -- spawner {args:?} still ran after 150 s: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// The squatter got no connection and no byte.
fn untouched(squatter: &Squatter, when: &str) {
    let connections = squatter.read("connections");
    let bytes = squatter.read("");
    assert!(
        connections.is_empty() && bytes.is_empty(),
        "{when}: another user's socket at the launch port got {} connections and {} bytes ({:?}); folders it took: {}",
        connections.lines().count(),
        bytes.len(),
        &bytes.as_bytes()[..bytes.len().min(40)],
        squatter.read("squatted")
    );
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn the_launch_port_serves_the_program_tree_and_no_one_else() {
    let Some(dn) = dotnet_env() else { return };
    let Some(user) = other_user::get("squatting the launch port of record --sampled") else { return };
    let tmp = other_user::shared_dir("launch-port");
    let dir = dn.app_dir("spawner", Runtime::Net8, &dn.work.join("launch-port"));
    let squatter = Squatter::start(user, &tmp, "clrprof-port-");

    // A .NET child started 2 s into the program's life: it connects to
    // the port at its start and must be resumed there.
    let out = record(dn, &dir, &tmp, "parent.nettrace", &["parent", "2000"]);
    let err = String::from_utf8_lossy(&out.stderr);
    untouched(&squatter, &format!("while a child started: {err}"));
    let said = dotnet::json_line(&out.stdout).unwrap_or_else(|| panic!("the program's line: {err}"));
    assert_eq!(said["child_ended"], true, "the program's .NET child never finished starting: {said} {err}");
    assert_eq!(said["child_exit"], 0, "{said} {err}");
    assert!(out.status.success(), "{err}");

    // A .NET grandchild that starts (through sh, 2 s later) after the
    // program has ended: record serves the port until it has ended too.
    let marker = dir.join("orphan.marker");
    let _ = std::fs::remove_file(&marker);
    let out = record(dn, &dir, &tmp, "orphan.nettrace", &["orphan", "500", marker.to_str().expect("UTF-8")]);
    let err = String::from_utf8_lossy(&out.stderr);
    untouched(&squatter, &format!("while an orphan started: {err}"));
    assert!(out.status.success(), "{err}");
    let ran = std::fs::read_to_string(&marker).unwrap_or_default();
    assert!(ran.starts_with("child "), "the grandchild did not run before record ended: {err}");

    // The squatter had every chance, during and after: give it a moment
    // more, then it must have had no connection and no byte.
    std::thread::sleep(Duration::from_secs(2));
    untouched(&squatter, "after both runs");
    // Nothing of clrprof's is left in the shared folder.
    let left: Vec<String> = std::fs::read_dir(&tmp)
        .expect("list")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("clrprof-port-"))
        .filter(|e| e.metadata().is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) != user.uid))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.is_empty(), "port folders left behind: {left:?}");
    drop(squatter);
    let _ = std::fs::remove_dir_all(&tmp);
}

/// SIGTERM to `record --sampled -- CMD` (not to the program) stops the
/// session while the program runs on: `StopTracing` goes to the runtime
/// on its reconnection, which the port holds, so the runtime writes its
/// rundown and ends the stream; the program's allocations after that are
/// not in the trace, and clrprof waits for the program before it ends.
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn sigterm_stops_a_launched_session_through_the_held_connection() {
    use std::io::{BufRead, BufReader, Write};
    let Some(dn) = dotnet_env() else { return };
    let dir = dn.app_dir("sampled", Runtime::Net8, &dn.work.join("launch-port-stop"));
    let _ = std::fs::remove_file(dir.join("stopped.nettrace"));
    let mut record = Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .args(["record", "--sampled", "-o", "stopped.nettrace", "--"])
        .arg(dn.host(Runtime::Net8))
        .args(["sampled.dll", "1", "pause"])
        .current_dir(&dir)
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start record");
    let mut stdin = record.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(record.stdout.take().expect("stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("the program's first line");
    assert!(line.contains("\"ready\":true"), "{line}");
    // Safety: a signal to a child of this test.
    unsafe { libc::kill(record.id() as i32, libc::SIGTERM) };
    // The stop has time to be done before the program allocates.
    std::thread::sleep(Duration::from_secs(3));
    writeln!(stdin, "go").expect("go");
    stdin.flush().expect("flush");
    line.clear();
    stdout.read_line(&mut line).expect("the program's truth");
    let truth: serde_json::Value = serde_json::from_str(line.trim()).expect("JSON");
    writeln!(stdin, "end").expect("end");
    drop(stdin);
    let (out, killed) = {
        let start = Instant::now();
        loop {
            if record.try_wait().expect("wait").is_some() || start.elapsed() > Duration::from_secs(60) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let killed = record.try_wait().expect("wait").is_none();
        if killed {
            let _ = record.kill();
        }
        (record.wait_with_output().expect("output"), killed)
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!killed && out.status.success(), "{err}");
    assert!(err.contains("stopped;") && !err.contains("without the rundown") && !err.contains("INCOMPLETE"), "{err}");
    let summary = Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .args(["summary", "stopped.nettrace", "--json", "-q"])
        .current_dir(&dir)
        .output()
        .expect("summary");
    let read = String::from_utf8_lossy(&summary.stderr);
    assert!(summary.status.success() && !read.contains("cut short"), "the stopped trace is whole: {read}");
    let s: serde_json::Value = serde_json::from_slice(&summary.stdout).expect("summary JSON");
    let in_trace = s["gen0_collections"].as_u64().expect("gen0");
    let after = truth["gc"][0].as_u64().expect("the program's gen0 count");
    assert!(after > 0 && in_trace < after, "the GCs after the stop are not in the trace: {in_trace} in the trace, {after} after the stop");
}

/// `record -- CMD` with the agent gives the program `CLRPROF_STATUS`, a
/// file in a private folder; every process the program starts inherits
/// it, and a .NET one loads the agent, which writes its status there. So
/// when processes of the program still run at its end, the folder is left
/// in place: another user watching for it never gets to make it again.
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn the_agents_status_folder_stays_while_the_programs_processes_run() {
    let Some(dn) = dotnet_env() else { return };
    let Some(agent) = dotnet::agent_beside(Path::new(env!("CARGO_BIN_EXE_clrprof"))) else { return };
    let Some(user) = other_user::get("squatting the agent's status folder") else { return };
    let tmp = other_user::shared_dir("status-folder");
    let dir = dn.app_dir("spawner", Runtime::Net8, &dn.work.join("status-folder"));
    let squatter = Squatter::start(user, &tmp, "clrprof-record-");
    let marker = dir.join("status.marker");
    let _ = std::fs::remove_file(&marker);
    let _ = std::fs::remove_file(dir.join("agent.log"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_clrprof"));
    cmd.args(["record", "-o", "agent.log", "--agent"])
        .arg(&agent)
        .arg("--")
        .arg(dn.host(Runtime::Net8))
        .args(["spawner.dll", "orphan", "500"])
        .arg(&marker)
        .current_dir(&dir)
        .env("TMPDIR", &tmp)
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1");
    let (out, killed) = common::run_within(&mut cmd, Duration::from_secs(150));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!killed && out.status.success(), "{err}");
    // The grandchild starts 2 s after the program ended, record gone.
    let start = Instant::now();
    while !marker.exists() {
        assert!(start.elapsed() < Duration::from_secs(60), "the grandchild never ran: {err}");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(1));
    let squatted = squatter.read("squatted");
    assert!(squatted.is_empty(), "another user made the agent's status folder again while the program's processes ran: {squatted}; {err}");
    drop(squatter);
    let _ = std::fs::remove_dir_all(&tmp);
}
