//! End-to-end tests of the `clrprof` binary, with golden files
//! (`UPDATE_GOLDEN=1 cargo test --release --test cli` blesses new output).

use std::process::Command;

mod common;
use common::*;

#[test]
fn stats_json_of_the_corpus_logs() {
    for log in ["all-kinds", "tricky", "truncated"] {
        let out = clrprof(&["stats", "--json", &format!("corpus/{log}.log")]);
        assert!(out.status.success(), "{log}: {}", String::from_utf8_lossy(&out.stderr));
        golden(&format!("stats-{log}.json"), &String::from_utf8_lossy(&out.stdout));
    }
}

#[test]
fn stats_table_of_the_tricky_log() {
    let out = clrprof(&["stats", "corpus/tricky.log"]);
    assert!(out.status.success());
    golden("stats-tricky.txt", &String::from_utf8_lossy(&out.stdout));
}

#[test]
fn stats_reads_standard_input() {
    let data = std::fs::read(repo_root().join("corpus/all-kinds.log")).expect("read");
    let mut child = Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .args(["stats", "--json", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    use std::io::Write;
    child.stdin.take().expect("stdin").write_all(&data).expect("write");
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["file"], "<stdin>");
    assert_eq!(v["total_records"], 48);
    assert_eq!(v["records"]["n"], 6);
}

#[test]
fn strict_mode_fails_with_the_position() {
    let out = clrprof(&["stats", "--strict", "corpus/tricky.log"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("corpus/tricky.log") && err.contains("line 4, byte 20"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn missing_file_is_a_one_line_error() {
    let out = clrprof(&["stats", "no/such.log"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no/such.log"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}
