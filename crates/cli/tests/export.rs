//! `clrprof export`: each format written through the command line, the
//! figures it reports, and the outputs it refuses to overwrite. (The
//! exports are read by their consumers' own software in
//! crates/export/tests.)

mod common;

use common::clrprof;
use serde_json::Value;
use std::io::Read;
use std::path::Path;

const LOG: &str = "corpus/all-kinds.log";

fn json(out: &std::process::Output) -> Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn summary(log: &str) -> Value {
    json(&clrprof(&["summary", log, "--json"]))
}

fn gen_log(dir: &Path) -> String {
    let log = dir.join("small.log");
    let out = clrprof(&["gen", "--preset", "tiny", "--heap-dumps", "2", "-o", log.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    log.to_str().unwrap().to_string()
}

#[test]
fn pprof_is_a_gzipped_profile_and_is_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.pb.gz");
    let o = out.to_str().unwrap();
    let report = json(&clrprof(&["export", LOG, "--format", "pprof", "-o", o, "--json", "--type-frames"]));
    assert_eq!(report["format"], "pprof");
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(report["bytes"].as_u64(), Some(bytes.len() as u64));
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(&bytes[..]).read_to_end(&mut raw).expect("gzip");
    // The string table holds the sample types (a protobuf's strings are
    // stored as written).
    for s in ["alloc_space", "inuse_objects", "type"] {
        assert!(raw.windows(s.len()).any(|w| w == s.as_bytes()), "{s} missing");
    }
    // A second export to the same file is refused and leaves it alone.
    let again = clrprof(&["export", LOG, "--format", "pprof", "-o", o]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"));
    assert_eq!(std::fs::read(&out).unwrap(), bytes);
    assert!(clrprof(&["export", LOG, "--format", "pprof", "-o", o, "--force", "--at", "1"]).status.success());
}

#[test]
fn speedscope_weights_add_up_to_the_allocated_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let log = gen_log(dir.path());
    let out = dir.path().join("s.json");
    let o = out.to_str().unwrap();
    let q = clrprof(&["export", &log, "--format", "speedscope", "-o", o, "-q"]);
    assert!(q.status.success() && q.stdout.is_empty(), "{}", String::from_utf8_lossy(&q.stderr));
    let file: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(file["$schema"], "https://www.speedscope.app/file-format-schema.json");
    let sum = |p: &Value| p["weights"].as_array().unwrap().iter().map(|w| w.as_u64().unwrap()).sum::<u64>();
    let allocated = summary(&log)["allocated_bytes"].as_u64().unwrap();
    assert_eq!(sum(&file["profiles"][0]), allocated);
    // A window keeps fewer bytes.
    let w = dir.path().join("w.json");
    assert!(clrprof(&["export", &log, "--format", "speedscope", "-o", w.to_str().unwrap(), "--to", "5"]).status.success());
    let windowed: Value = serde_json::from_slice(&std::fs::read(&w).unwrap()).unwrap();
    assert!(sum(&windowed["profiles"][0]) < allocated);
    // Options of another format are refused.
    let bad = clrprof(&["export", &log, "--format", "speedscope", "-o", "x.json", "--at", "3"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--at applies to --format pprof"));
}

#[test]
fn parquet_writes_one_file_per_table_and_keeps_foreign_files() {
    let dir = tempfile::tempdir().unwrap();
    let log = gen_log(dir.path());
    let out = dir.path().join("pq");
    let o = out.to_str().unwrap();
    let report = json(&clrprof(&["export", &log, "--format", "parquet", "-o", o, "--json"]));
    let tables = report["tables"].as_array().unwrap();
    assert_eq!(tables.len(), 14);
    for t in tables {
        let name = t["name"].as_str().unwrap();
        let file = out.join(format!("{name}.parquet"));
        let head = std::fs::read(&file).unwrap();
        assert_eq!(&head[..4], b"PAR1", "{name}");
        assert_eq!(t["bytes"].as_u64(), Some(head.len() as u64));
    }
    let objects = tables.iter().find(|t| t["name"] == "objects").unwrap();
    let count = json(&clrprof(&["types", &log, "--json"]));
    let objects_allocated: u64 = count.as_array().unwrap().iter().map(|t| t["count"].as_u64().unwrap()).sum();
    assert_eq!(objects["rows"].as_u64(), Some(objects_allocated));
    // Writing again into the export's own folder is fine; a folder with
    // something else in it is refused and left as it was.
    assert!(clrprof(&["export", &log, "--format", "parquet", "-o", o, "-q"]).status.success());
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let refused = clrprof(&["export", &log, "--format", "parquet", "-o", o, "-q"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("notes.txt"));
    assert_eq!(std::fs::read_to_string(out.join("notes.txt")).unwrap(), "mine");
}
