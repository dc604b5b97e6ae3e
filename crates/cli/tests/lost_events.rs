//! A trace whose runtime dropped events (gaps in its sequence numbers)
//! says so wherever its figures are shown: a warning on standard error
//! for every command, a line above the heap-dump tables, and the key
//! `incomplete` in every JSON answer. The trace is the generator's, with
//! every Nth event dropped as a runtime with full buffers drops them.

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn trace(dir: &Path, name: &str, lose_every: &str) -> (PathBuf, u64) {
    let path = dir.join(name);
    let p = path.to_str().expect("UTF-8");
    let out = clrprof(&[
        "gen", "--preset", "tiny", "--objects", "3000", "--gcs", "3", "--format", "nettrace", "--tick-bytes", "0", "--lose-every", lose_every,
        "-o", p,
    ]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "gen: {err}");
    // "... 12 methods; 61 dropped, as --lose-every asks), ..."
    let dropped = err.find(" dropped, as --lose-every asks").map(|end| {
        let digits: String = err[..end].chars().rev().take_while(char::is_ascii_digit).collect();
        digits.chars().rev().collect::<String>().parse::<u64>().expect("a count")
    });
    (path, dropped.unwrap_or(0))
}

/// The UI's logs once the first is loaded.
fn eventually_ready(base: &str, token: &str) -> Value {
    let start = std::time::Instant::now();
    loop {
        let (code, logs) = http(base, token, "GET", "/api/logs");
        assert_eq!(code, 200, "{logs}");
        if logs[0]["state"] == "ready" {
            return logs;
        }
        assert!(start.elapsed().as_secs() < 60, "the log did not load: {logs}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn run(args: &[&str]) -> (String, String) {
    let out = clrprof(args);
    let (o, e) = (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
    assert!(out.status.success(), "{args:?}: {e}");
    (o, e)
}

#[test]
fn lost_events_are_said_everywhere() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (lossy, dropped) = trace(dir.path(), "lossy.nettrace", "50");
    assert!(dropped > 0, "the generator dropped events");
    let lossy = lossy.to_str().expect("UTF-8");
    let line = format!("incomplete: {dropped} events lost");

    // Every JSON answer carries the count, and what it means.
    for cmd in [&["summary", "--json"][..], &["types", "--json"], &["dumps", "--json"], &["functions", "--json"]] {
        let args = [cmd, &[lossy]].concat();
        let (o, e) = run(&args);
        let v: Value = serde_json::from_str(&o).unwrap_or_else(|err| panic!("{args:?}: {err}: {o}"));
        assert_eq!(v["incomplete"]["lost_events"].as_u64(), Some(dropped), "{args:?}: {}", v["incomplete"]);
        assert!(v["incomplete"]["note"].as_str().is_some_and(|n| n.starts_with(&line)), "{args:?}: {}", v["incomplete"]);
        // And standard error warns, even with --json.
        assert!(e.contains(&format!("clrprof: warning: {lossy}: {line}")), "{args:?}: {e}");
    }
    // The heap-dump tables say it above their figures.
    let (o, _) = run(&["dumps", lossy]);
    assert!(o.starts_with(&line), "{o}");
    // Each gap has its warning, but only the first ten are printed.
    let (_, e) = run(&["types", lossy]);
    assert_eq!(e.matches("were dropped by the runtime").count(), 10, "{e}");
    assert!(e.contains("... and ") && e.contains(" more warnings like these"), "{e}");
    // -q does not hide it: it is a warning, not a note.
    let (_, e) = run(&["summary", lossy, "-q"]);
    assert!(e.contains(&line), "{e}");

    // The web UI says it of the log (its page shows it on every view).
    let (_ui, base, token) = start_ui(&[lossy]);
    let logs = eventually_ready(&base, &token);
    assert_eq!(logs[0]["incomplete"]["lost_events"].as_u64(), Some(dropped), "{logs}");

    // The same trace without losses says nothing of the kind.
    let (whole, none) = trace(dir.path(), "whole.nettrace", "0");
    assert_eq!(none, 0);
    let whole = whole.to_str().expect("UTF-8");
    let (o, e) = run(&["summary", "--json", whole]);
    let v: Value = serde_json::from_str(&o).expect("JSON");
    assert!(v.get("incomplete").is_none(), "{}", v["incomplete"]);
    assert!(!e.contains("incomplete"), "{e}");
    let (o, _) = run(&["dumps", whole]);
    assert!(!o.contains("incomplete"), "{o}");
}
