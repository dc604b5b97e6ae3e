//! `clrprof collect --tls` as a process: a session streamed over TLS by
//! the client the agent uses (crate `clrprof-stream`) survives the
//! collector being SIGKILLed and started again (same key, same
//! fingerprint): the client spools, catches the restarted collector up,
//! and the stored log is whole. Off loopback, `collect` without TLS does
//! not start unless told; `record --target` refuses a collector whose
//! certificate is not the one given, before the program starts. No .NET
//! runtime needed.

use clrprof_stream::{Host, Identity, Spool, StreamConfig, Streamer, Tls};
use clrprof_wire::tls::{Fingerprint, Trust};
use clrprof_wire::Token;
use serde_json::Value;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn clrprof_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_clrprof"))
}

fn eventually<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        if let Some(t) = f() {
            return t;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("timed out waiting for {what}");
}

/// A `clrprof collect --tls` process, SIGKILLed when dropped.
struct Collector {
    child: Child,
    vars: HashMap<String, String>,
}

impl Collector {
    fn start(dir: &Path, listen: &str) -> Collector {
        Collector::start_with(dir, listen, &[])
    }

    fn start_with(dir: &Path, listen: &str, extra: &[&str]) -> Collector {
        let mut child = Command::new(clrprof_exe())
            .args(["collect", "--tls", "--listen", listen, "--dir"])
            .arg(dir)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start clrprof collect");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut vars = HashMap::new();
        for _ in 0..3 {
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            let (k, v) = line.trim().split_once('=').unwrap_or_else(|| panic!("collector printed {line:?}"));
            vars.insert(k.to_string(), v.to_string());
        }
        Collector { child, vars }
    }

    fn target(&self) -> &str {
        &self.vars["CLRPROF_TARGET"]
    }

    fn fingerprint(&self) -> Fingerprint {
        Fingerprint::parse(&self.vars["CLRPROF_TLS_FINGERPRINT"]).unwrap()
    }

    /// SIGKILL.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.kill();
    }
}

fn lines(from: usize, n: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for i in from..from + n {
        writeln!(v, "z tls line {i} {}", "w".repeat(i % 90)).unwrap();
    }
    v
}

fn write_all(s: &mut Streamer, data: &[u8]) {
    for chunk in data.chunks(64 << 10) {
        s.write(chunk.to_vec());
        s.poll();
    }
}

fn stored_logs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "log")).collect();
    v.sort();
    v
}

fn sessions(dir: &Path) -> Vec<Value> {
    let out = Command::new(clrprof_exe()).args(["sessions", "--json", "--dir"]).arg(dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice::<Value>(&out.stdout).unwrap().as_array().cloned().unwrap_or_default()
}

#[test]
fn a_tls_session_survives_the_collector_killed_and_restarted_and_is_stored_whole() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("sessions");
    let mut first = Collector::start(&dir, "127.0.0.1:0");
    let target = first.target().to_string();
    let fingerprint = first.fingerprint();
    let token = Token::from_hex(&first.vars["CLRPROF_TOKEN"]).unwrap();
    let spool = work.path().join("client.spool.log");
    let config = StreamConfig {
        target: target.clone(),
        tls: Tls::Verify(Trust::Fingerprint(fingerprint)),
        token: Some(token),
        spool: Spool::At(spool.clone()),
        buffer_bytes: 64 << 20,
        linger_ms: 30_000,
        reconnect_ms: 100,
        content: Default::default(),
        speaker: "collect_tls test",
        host: Host::default(),
    };
    let mut s = Streamer::start(config, Identity { pid: 5151, program: "tls-kill".into(), runtime: "none".into() });
    let a = lines(0, 20_000);
    write_all(&mut s, &a);
    // Part A stored, then the collector is killed.
    let log = eventually("part A stored", || {
        stored_logs(&dir).into_iter().find(|p| std::fs::metadata(p).is_ok_and(|m| m.len() == a.len() as u64))
    });
    first.kill();
    // Part B goes to the spool once the client sees the connection gone.
    let b = lines(20_000, 20_000);
    write_all(&mut s, &b);
    eventually("the client spooling", || {
        s.poll();
        s.outcome().spool
    });
    // Back on the same port, with the same key and certificate.
    let second = Collector::start(&dir, &target);
    assert_eq!(second.fingerprint(), fingerprint, "a restarted collector keeps its certificate");
    // The client's catch-up reaches it over TLS: the session is live again.
    eventually("the session live again", || (sessions(&dir)[0]["state"] == "live").then_some(()));
    let c = lines(40_000, 20_000);
    write_all(&mut s, &c);
    s.finish();
    let o = s.outcome();
    let (spool_path, from) = o.spool.clone().expect("the stream went through the spool");
    assert!(o.caught_up, "the restarted collector was caught up: {o:?}");
    assert_eq!(o.lost, 0);
    let whole: Vec<u8> = [a, b, c].concat();
    let stored = std::fs::read(&log).unwrap();
    assert_eq!(stored.len(), whole.len());
    assert!(stored == whole, "the stored log is the log, byte for byte");
    assert_eq!(std::fs::read(spool_path).unwrap(), whole[from as usize..], "the spool is the log from the break on");
    // The record: ended, no spool named.
    let rec = eventually("the record written", || sessions(&dir).into_iter().next().filter(|r| r["state"] != "live"));
    assert_eq!(rec["state"], "ended", "{rec}");
    assert_eq!(rec["bytes"], whole.len() as u64, "{rec}");
    assert!(rec.get("spool").is_none_or(Value::is_null), "{rec}");
}

#[test]
fn beyond_loopback_collect_needs_tls_or_plain_off_loopback() {
    let work = tempfile::tempdir().unwrap();
    let mut child = Command::new(clrprof_exe())
        .args(["collect", "--listen", "0.0.0.0:0", "--dir"])
        .arg(work.path().join("s"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // It ends at once; one that started is killed (and the test fails).
    let ended = eventually("collect to stop", || match child.try_wait() {
        Ok(Some(status)) => Some(Some(status)),
        Ok(None) => None,
        Err(_) => Some(None),
    });
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(ended.and_then(|s| s.code()), Some(1), "{e}");
    assert!(e.contains("beyond loopback") && e.contains("--tls") && e.contains("--plain-off-loopback"), "{e}");
    assert!(out.stdout.is_empty(), "no token printed");
    // Told: it starts (and is stopped here).
    for extra in [&["--plain-off-loopback"][..], &["--tls"]] {
        let mut child = Command::new(clrprof_exe())
            .args(["collect", "--listen", "0.0.0.0:0", "--dir"])
            .arg(work.path().join("s"))
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let _ = child.kill();
        let _ = child.wait();
        assert!(line.starts_with("CLRPROF_TARGET=0.0.0.0:"), "{extra:?}: {line:?}");
    }
}

#[test]
fn record_refuses_a_collector_with_another_certificate_before_starting_the_program() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("sessions");
    // A short handshake deadline: a client without TLS is closed sooner.
    let collector = Collector::start_with(&dir, "127.0.0.1:0", &["--handshake-timeout", "1"]);
    let ran = work.path().join("ran");
    // Beside the tool (a workspace build) or among its dependencies (a test build).
    let beside = clrprof_exe().with_file_name("libclrprof_agent.so");
    let in_deps = clrprof_exe().with_file_name("deps").join("libclrprof_agent.so");
    let agent = [beside, in_deps].into_iter().find(|p| p.is_file()).unwrap_or_else(|| PathBuf::from("/nonexistent/libclrprof_agent.so"));
    let run = |tls: &[&str]| {
        Command::new(clrprof_exe())
            .args(["record", "-o"])
            .arg(work.path().join("rec.log"))
            .args(["--target", collector.target(), "--token-file"])
            .arg(dir.join("collector.token"))
            .args(tls)
            .args(["--", "touch"])
            .arg(&ran)
            .env("CLRPROF_AGENT", &agent)
            .env_remove("CLRPROF_TLS_FINGERPRINT")
            .env_remove("CLRPROF_TLS_CA")
            .output()
            .expect("run clrprof record")
    };
    let wrong = Fingerprint::of(b"another certificate").to_string();
    let out = run(&["--tls-fingerprint", &wrong]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(e.contains(&wrong) && e.contains(&collector.fingerprint().to_string()) && e.contains("nothing was started"), "{e}");
    assert!(!ran.exists(), "the program ran although the collector was not the expected one");
    // Without TLS: the collector says nothing in clear; refused too.
    let out = run(&[]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(e.contains("--tls-fingerprint"), "{e}");
    assert!(!ran.exists());
    // The right fingerprint: the program runs.
    let right = collector.fingerprint().to_string();
    let out = run(&["--tls-fingerprint", &right]);
    assert!(ran.exists(), "{}", String::from_utf8_lossy(&out.stderr));
}
