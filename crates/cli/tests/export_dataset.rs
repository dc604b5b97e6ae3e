//! `clrprof export --format parquet --dataset DIR LOG...`: logs appended
//! as Hive partitions, names from the files, the `--name`/`--host`/
//! `--start` options, and the refusals (a name the dataset has, two files
//! making one name, a name a folder cannot carry) before anything is
//! written. DuckDB and Spark read the datasets in
//! crates/export/tests/dataset.rs.

mod common;

use common::clrprof;
use serde_json::Value;
use std::path::Path;

const TABLES: [&str; 15] = [
    "logs",
    "objects",
    "stacks",
    "functions",
    "modules",
    "types",
    "gcs",
    "gc_ranges",
    "handles",
    "finalizations",
    "comments",
    "heap_dumps",
    "dump_objects",
    "dump_references",
    "dump_roots",
];

fn gen(dir: &Path, name: &str, seed: &str) -> String {
    let path = dir.join(name).display().to_string();
    let out = clrprof(&["gen", "-q", "--preset", "tiny", "--objects", "3000", "--seed", seed, "-o", &path]);
    assert!(out.status.success(), "gen: {}", String::from_utf8_lossy(&out.stderr));
    path
}

fn export(args: &[&str]) -> (Option<i32>, String, String) {
    let mut all = vec!["export", "--format", "parquet"];
    all.extend_from_slice(args);
    let out = clrprof(&all);
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn logs_are_appended_as_partitions_and_never_rewritten() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (gen(dir.path(), "run-a.log", "1"), gen(dir.path(), "run b.log", "2"));
    let ds = dir.path().join("ds");
    let ds_s = ds.display().to_string();
    let (code, o, e) = export(&["--dataset", &ds_s, &a, &b, "--host", "ci-7", "--json", "-q"]);
    assert_eq!(code, Some(0), "{o}{e}");
    let v: Value = serde_json::from_str(&o).expect("JSON");
    let logs = v["logs"].as_array().expect("logs");
    let names: Vec<&str> = logs.iter().map(|l| l["name"].as_str().unwrap_or("")).collect();
    assert_eq!(names, ["run-a", "run_b"], "{v}");
    assert!(logs.iter().all(|l| l["host"] == "ci-7" && l["tables"].as_array().map(Vec::len) == Some(15)), "{v}");
    assert_eq!(logs[0]["start_time_source"], "the file's modification time less the log's duration");
    for t in TABLES {
        for n in ["run-a", "run_b"] {
            assert!(ds.join(t).join(format!("log={n}")).join("part-0.parquet").is_file(), "{t} {n}");
        }
    }
    assert!(!ds.join(".staging").exists());
    let objects = ds.join("objects/log=run-a/part-0.parquet");
    let before = std::fs::read(&objects).expect("read");

    // The same name again: refused, nothing written.
    let (code, _, e) = export(&["--dataset", &ds_s, &a, "-q"]);
    assert_eq!(code, Some(1), "{e}");
    assert!(e.contains("the dataset has a log named `run-a` already") && e.contains("never rewritten"), "{e}");
    assert_eq!(std::fs::read(&objects).expect("read"), before);
    // Under another name, with a start time: a third partition.
    let (code, o, e) = export(&["--dataset", &ds_s, &a, "--name", "run-a.2", "--start", "2026-11-27T05:40:00Z", "--json", "-q"]);
    assert_eq!(code, Some(0), "{e}");
    let v: Value = serde_json::from_str(&o).expect("JSON");
    assert_eq!(v["logs"][0]["start_time_ms"], 1_795_758_000_000i64);
    assert_eq!(v["logs"][0]["start_time_source"], "given");
    assert!(ds.join("logs/log=run-a.2/part-0.parquet").is_file());
    // Refusals before any load: two files making one name, --name for
    // several logs, a name a folder cannot carry, a bad time, -o with it.
    let c = gen(dir.path(), "run-c.log", "3");
    let copy = dir.path().join("sub");
    std::fs::create_dir(&copy).expect("mkdir");
    std::fs::copy(&c, copy.join("run-c.log")).expect("copy");
    let copy_s = copy.join("run-c.log").display().to_string();
    let (code, _, e) = export(&["--dataset", &ds_s, &c, &copy_s, "-q"]);
    assert_eq!(code, Some(1), "{e}");
    assert!(e.contains("both make the partition log=run-c"), "{e}");
    let (code, _, e) = export(&["--dataset", &ds_s, &c, &b, "--name", "x", "-q"]);
    assert_eq!(code, Some(1), "{e}");
    assert!(e.contains("give one log with them"), "{e}");
    let (code, _, e) = export(&["--dataset", &ds_s, &c, "--name", "a=b", "-q"]);
    assert_eq!(code, Some(1), "{e}");
    assert!(e.contains("letters, digits and . _ - + @ only"), "{e}");
    let (code, _, e) = export(&["--dataset", &ds_s, &c, "--start", "yesterday", "-q"]);
    assert_eq!(code, Some(1), "{e}");
    assert!(e.contains("--start `yesterday`"), "{e}");
    assert!(!ds.join("logs/log=run-c").exists(), "nothing written by a refused export");
    let (code, _, e) = export(&["--dataset", &ds_s, &c, "-o", "x", "-q"]);
    assert_eq!(code, Some(2), "{e}");
}
