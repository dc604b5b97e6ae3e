//! What a new user meets in the first hour: the grouped `--help` with a
//! line saying where to start, `who LOG TYPE` like every other command,
//! junk given as a log, OS errors said once, `--json` errors as JSON.

mod common;
use common::*;

fn text(out: &std::process::Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

const GROUPS: [&str; 7] =
    ["Load and inspect:", "Allocation:", "Lifetime:", "Heap dumps:", "Capture:", "Services:", "Export:"];

/// `clrprof --help` (and `clrprof help`) shows the groups in order, a
/// "Start here" line, and every command exactly once; `clrprof help CMD`
/// still shows one command's help.
#[test]
fn help_is_grouped_with_every_command_once() {
    for args in [&["--help"][..], &["help"][..]] {
        let out = clrprof(args);
        let (o, e) = text(&out);
        assert!(out.status.success(), "{args:?}: {e}");
        assert!(o.contains("Start here: `clrprof summary LOG`"), "{o}");
        assert!(o.contains("`clrprof ui LOG`"), "{o}");
        let mut at = 0;
        for g in GROUPS {
            let i = o[at..].find(&format!("\n{g}\n")).unwrap_or_else(|| panic!("{g} missing or out of order:\n{o}"));
            at += i + 1;
        }
        assert!(!o.contains("\nCommands:"), "the flat list is still there:\n{o}");
        // Every listed name is a command with its own help (the unit test
        // beside the groups checks that no command is left out).
        let listed: Vec<&str> = o
            .lines()
            .filter(|l| l.starts_with("  ") && !l.trim_start().starts_with('-'))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        for name in &listed {
            assert_eq!(listed.iter().filter(|n| *n == name).count(), 1, "{name} listed more than once:\n{o}");
            let sub = clrprof(&["help", name]);
            let (so, se) = text(&sub);
            assert!(sub.status.success(), "help {name}: {se}");
            assert!(so.contains(&format!("Usage: clrprof {name}")), "help {name}:\n{so}");
        }
        assert!(listed.len() >= 31, "{} commands listed:\n{o}", listed.len());
    }
}

/// `clrprof who LOG TYPE`, the log first as in every command; the old
/// order `who TYPE LOG` still works when it cannot mean anything else, with
/// a note on standard error; a missing log in the new order is an error
/// about the log.
#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn who_takes_the_log_first() {
    let log = "../shared/corpus/reference/gen-small.log";
    let Some(dir) = reference_dir() else { return };
    assert!(dir.join("gen-small.log").is_file());
    let new = clrprof(&["who", log, "System.String", "--exact", "--json", "-q"]);
    let (o_new, e_new) = text(&new);
    assert!(new.status.success(), "{e_new}");
    assert!(!e_new.contains("old order"), "{e_new}");
    let old = clrprof(&["who", "System.String", log, "--exact", "--json", "-q"]);
    let (o_old, e_old) = text(&old);
    assert!(old.status.success(), "{e_old}");
    assert_eq!(o_old, o_new);
    assert!(e_old.contains("`clrprof who TYPE LOG` is the old order"), "{e_old}");
    assert!(e_old.contains(&format!("`clrprof who {log} System.String`")), "{e_old}");
    let missing = clrprof(&["who", "no-such.log", "System.String"]);
    let (_, e) = text(&missing);
    assert_eq!(missing.status.code(), Some(1));
    assert!(e.contains("no-such.log") && !e.contains("old order"), "{e}");
    let help = text(&clrprof(&["help", "who"])).0;
    assert!(help.contains("Usage: clrprof who [OPTIONS] <LOG> <TYPE>"), "{help}");
}

/// A few MB of text in which no line is a record: exit 1 and a message
/// that says what the file is not, where it looked and what a log line
/// looks like (it used to load as an empty log: exit 0, all-zero Summary).
/// The same junk lines among a log's records still load, with the log's
/// figures.
#[test]
fn text_without_a_record_is_not_a_log() {
    let dir = tempfile::tempdir().expect("temp dir");
    let junk_line = "# this is a README, not a log: 1234 5678\n";
    let junk = dir.path().join("junk.txt");
    std::fs::write(&junk, junk_line.repeat(4 << 20 >> 5)).expect("write");
    let junk_s = junk.to_str().expect("UTF-8");
    for cmd in ["summary", "types", "dumps", "footprint"] {
        let out = clrprof(&[cmd, junk_s]);
        let (o, e) = text(&out);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {o}{e}");
        assert!(o.is_empty(), "{cmd}: {o}");
        assert!(e.contains("not a CLRProfiler log: none of its 131,072 lines starts with a record letter"), "{cmd}: {e}");
        assert!(e.contains("line 1, byte 0: \"# this is a README"), "{e}");
        assert!(e.contains("expected a line such as `t 1 0 System.String`"), "{e}");
    }
    // An empty file keeps its own message.
    let empty = dir.path().join("empty.log");
    std::fs::write(&empty, "").expect("write");
    let (_, e) = text(&clrprof(&["summary", empty.to_str().expect("UTF-8")]));
    assert!(e.contains("empty: it has no records"), "{e}");
    // Junk among records: loads as before, with the same figures.
    let log = repo_root().join("corpus/all-kinds.log");
    let original = std::fs::read_to_string(&log).expect("corpus/all-kinds.log");
    let mixed = dir.path().join("mixed.log");
    let mut m = junk_line.repeat(3);
    for line in original.lines() {
        m.push_str(line);
        m.push('\n');
        m.push_str(junk_line);
    }
    std::fs::write(&mixed, m).expect("write");
    let a = clrprof(&["summary", "--json", "-q", log.to_str().expect("UTF-8")]);
    let b = clrprof(&["summary", "--json", "-q", mixed.to_str().expect("UTF-8")]);
    assert!(a.status.success() && b.status.success(), "{}", text(&b).1);
    let (ja, jb): (serde_json::Value, serde_json::Value) =
        (serde_json::from_slice(&a.stdout).expect("JSON"), serde_json::from_slice(&b.stdout).expect("JSON"));
    assert_eq!(ja["allocated_bytes"], jb["allocated_bytes"]);
    assert!(ja["allocated_bytes"].as_u64().is_some_and(|n| n > 0), "{ja}");
}

/// An OS error is said once, not "No such file or directory (os error 2):
/// No such file or directory (os error 2)".
#[test]
fn os_errors_are_said_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("no/such/dir");
    let missing = missing.to_str().expect("UTF-8");
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").expect("write");
    let under_file = format!("{}/sub", file.display());
    let cases: Vec<Vec<&str>> = vec![
        vec!["sessions", "--dir", missing],
        vec!["ctl", "--dir", missing, "s1", "flush"],
        vec!["summary", missing],
        vec!["summary", dir.path().to_str().expect("UTF-8")],
        vec!["gen", "-o", &under_file],
    ];
    for args in cases {
        let out = clrprof(&args);
        let (_, e) = text(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {e}");
        let n = e.matches("(os error").count();
        assert!(n <= 1, "{args:?}: {e}");
        assert!(n == 1 || e.contains("ermission") || e.contains("no such") || e.contains("not found"), "{args:?}: {e}");
    }
}

/// With `--json`, an error is a JSON object `{"error": MESSAGE}` on
/// standard output, exit status 1, nothing on standard error; without it,
/// the plain line on standard error. Every `--json` option says so.
#[test]
fn json_errors_are_json() {
    let cases: Vec<Vec<&str>> = vec![
        vec!["summary", "--json", "no-such.log"],
        vec!["stats", "--json", "no-such.log"],
        vec!["types", "--json", "no-such.log"],
        vec!["footprint", "--json", "no-such.log"],
        vec!["dumps", "--json", "no-such.log"],
        vec!["who", "--json", "no-such.log", "System.String"],
        vec!["dump", "--json", "corpus/all-kinds.log", "99"],
        vec!["sessions", "--json", "--dir", "no/such/dir"],
        vec!["heap-dump", "--json", "999999999"],
    ];
    for args in cases {
        let out = clrprof(&args);
        let (o, e) = text(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {o}{e}");
        let v: serde_json::Value = serde_json::from_str(&o).unwrap_or_else(|x| panic!("{args:?}: not JSON ({x}): {o:?}"));
        let msg = v["error"].as_str().unwrap_or_else(|| panic!("{args:?}: {v}"));
        assert!(!msg.is_empty() && !msg.starts_with("clrprof:"), "{args:?}: {v}");
        assert!(!e.contains(msg), "{args:?}: the error on stderr too: {e}");
        let plain: Vec<&str> = args.iter().copied().filter(|a| *a != "--json").collect();
        let out = clrprof(&plain);
        let (o, e) = text(&out);
        assert_eq!(out.status.code(), Some(1), "{plain:?}");
        assert!(o.is_empty() && e.contains(&format!("clrprof: {msg}")), "{plain:?}: {o}{e}");
    }
    for cmd in ["summary", "stats", "types", "footprint", "sessions", "cache", "heap-dump"] {
        let help = text(&clrprof(&["help", cmd])).0;
        assert!(help.contains("An error is printed as `{\"error\": MESSAGE}` on standard output"), "{cmd}: {help}");
    }
}

/// `clrprof ui` stops on SIGTERM as on Ctrl-C: gracefully, exit status 0,
/// at once (well within a second) even with a browser's keep-alive
/// connection open.
#[test]
fn ui_stops_promptly_on_sigterm() {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::process::{Command, Stdio};
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let mut child = Killed(
            Command::new(env!("CARGO_BIN_EXE_clrprof"))
                .args(["ui", "--listen", "127.0.0.1:0", "corpus/all-kinds.log"])
                .current_dir(repo_root())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("start clrprof ui"),
        );
        let mut err = BufReader::new(child.0.stdout.take().expect("stdout"));
        let mut line = String::new();
        let mut out = String::new();
        while !line.contains("http://") {
            line.clear();
            assert!(err.read_line(&mut line).expect("read") > 0, "clrprof ui ended: {out}");
            out.push_str(&line);
        }
        let url = line.split_whitespace().find(|w| w.starts_with("http://")).expect("address");
        let host = url.trim_start_matches("http://").split('/').next().expect("host");
        // A keep-alive connection with one answered request.
        let mut conn = std::net::TcpStream::connect(host).expect("connect");
        let path = &url[url.find(host).expect("host") + host.len()..];
        write!(conn, "GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n").expect("request");
        let mut first = [0u8; 12];
        conn.read_exact(&mut first).expect("answer");
        assert_eq!(&first, b"HTTP/1.1 200");
        let start = std::time::Instant::now();
        // Safety: sending a signal to our own child.
        assert_eq!(unsafe { libc::kill(child.0.id() as i32, signal) }, 0);
        let status = loop {
            if let Some(s) = child.0.try_wait().expect("wait") {
                break s;
            }
            assert!(start.elapsed() < std::time::Duration::from_secs(3), "signal {signal}: still running after 3 s");
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        let took = start.elapsed();
        assert_eq!(status.code(), Some(0), "signal {signal}: {status:?}");
        assert!(took < std::time::Duration::from_secs(1), "signal {signal}: {took:?} to stop");
    }
}
