//! `clrprof gen` end to end: files, standard output, flags, errors.

use serde_json::Value;
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

fn clrprof(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .current_dir(dir)
        .arg("gen")
        .args(args)
        .output()
        .expect("run clrprof gen")
}

fn truth(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).expect("read the truth")).expect("the truth is JSON")
}

#[test]
fn writes_a_log_and_its_truth() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = clrprof(dir.path(), &["--preset", "tiny", "-o", "t.log"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let log = fs::read(dir.path().join("t.log")).expect("the log");
    let t = truth(&dir.path().join("t.truth.json"));
    assert_eq!(t["schema"], "clrprof-gen-truth/1");
    assert_eq!(t["log"]["bytes"].as_u64(), Some(log.len() as u64));
    assert_eq!(t["allocated"]["objects"].as_u64(), Some(20_000));
    assert_eq!(t["summary_as_clrprofiler"]["gen0_collections"].as_u64(), Some(8));
    let keys = t["summary_as_clrprofiler"].as_object().expect("a summary").len();
    assert_eq!(keys, 18, "the 18 Summary figures");
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(report.contains("MB/s") && report.contains("lines"), "one-line report: {report}");
    assert_eq!(report.lines().count(), 1);
    let (_, warnings) = clrprof::format::read_all(&log);
    assert_eq!(warnings.total(), 0);
}

#[test]
fn standard_output_gets_the_same_bytes_and_no_truth() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = clrprof(dir.path(), &["--objects", "5000", "--gcs", "3", "-o", "f.log", "--quiet"]);
    assert!(file.status.success());
    assert!(file.stderr.is_empty(), "--quiet");
    let piped = clrprof(dir.path(), &["--objects", "5000", "--gcs", "3", "-o", "-"]);
    assert!(piped.status.success(), "{}", String::from_utf8_lossy(&piped.stderr));
    assert!(piped.stdout == fs::read(dir.path().join("f.log")).expect("the log"), "same bytes");
    let names: Vec<String> =
        fs::read_dir(dir.path()).expect("list").map(|e| e.expect("entry").file_name().to_string_lossy().into()).collect();
    assert_eq!(names.len(), 2, "only f.log and its truth: {names:?}");
    let with_truth = clrprof(dir.path(), &["--objects", "5000", "--gcs", "3", "-o", "-", "--truth", "p.json"]);
    assert!(with_truth.status.success());
    assert_eq!(truth(&dir.path().join("p.json"))["log"]["bytes"].as_u64(), Some(piped.stdout.len() as u64));
}

#[test]
fn flags_reach_the_generator() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let args = [
        "--objects",
        "6000",
        "--gcs",
        "4",
        "--threads",
        "2",
        "--calls",
        "--heap-dumps",
        "2",
        "--seed",
        "7",
        "--pointer-bits",
        "32",
        "--tick-start",
        "4294967293",
        "--mean-size",
        "80",
        "-o",
        "x.log",
    ];
    let out = clrprof(dir.path(), &args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let t = truth(&dir.path().join("x.truth.json"));
    let p = &t["params"];
    assert_eq!(p["objects"].as_u64(), Some(6000));
    assert_eq!(p["gcs"].as_u64(), Some(4));
    assert_eq!(p["threads"].as_u64(), Some(2));
    assert_eq!(p["calls"].as_bool(), Some(true));
    assert_eq!(p["heap_dumps"].as_u64(), Some(2));
    assert_eq!(p["seed"].as_u64(), Some(7));
    assert_eq!(p["pointer_bits"].as_u64(), Some(32));
    assert_eq!(p["tick_start"].as_u64(), Some(4294967293));
    assert!(t["calls"]["c_lines"].as_u64().unwrap_or(0) > 0);
    assert_eq!(t["heap_dumps"]["written"].as_u64(), Some(2));
    assert!(t["ticks"]["wraps"].as_u64().unwrap_or(0) >= 1);
    let log = fs::read(dir.path().join("x.log")).expect("the log");
    let (_, warnings) = clrprof::format::read_all(&log);
    assert_eq!(warnings.total(), 0);
}

#[test]
fn bad_options_fail_with_a_message() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for args in [
        &["--pointer-bits", "16", "-o", "a.log"][..],
        &["--preset", "huge", "-o", "a.log"][..],
        &["--objects", "0", "-o", "a.log"][..],
        &["--heap-dumps", "50", "--gcs", "3", "-o", "a.log"][..],
        &["--preset", "tiny", "-o", "no/such/dir/a.log"][..],
    ] {
        let out = clrprof(dir.path(), args);
        assert!(!out.status.success(), "{args:?} should fail");
        assert!(!out.stderr.is_empty(), "{args:?} says why");
    }
}
