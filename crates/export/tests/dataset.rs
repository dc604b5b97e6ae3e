//! A Parquet dataset of many logs (`parquet::dataset::append`, what
//! `clrprof export --format parquet --dataset DIR LOG...` does), read by
//! DuckDB over its Hive partitions (`tests/duckdb/dataset.py`): for each
//! of 20 generated logs, SQL over the whole dataset reproduces the log's
//! Summary allocated and final-heap bytes and its top types by allocated
//! and by final-heap bytes, and the `logs` table its name, host and start
//! time. A log whose name the dataset has already is refused and the
//! partition it would have replaced is unchanged; another log appended
//! later is read with the others.

mod common;

use clrprof::model::Model;
use clrprof::query::{by_bytes, by_type, summary, HistogramKind};
use clrprof_export::parquet::dataset::{append, partition, LogInfo, LOGS_TABLE};
use clrprof_export::parquet::TABLES;
use clrprof_export::ExportOptions;
use common::{crate_dir, duckdb_python, run};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Top types compared per log.
const TOP: usize = 5;

/// Log `k` of the dataset: the generator's tiny preset with its own seed
/// and object count (so that every log's figures differ).
fn generated(k: u64) -> Model {
    let mut o = clrprof_gen::Preset::Tiny.options();
    o.seed = 1000 + k;
    o.objects = 4_000 + 700 * k;
    o.heap_dumps = (k % 2) as u32;
    let (data, _) = clrprof_gen::generate(&o, Vec::new()).expect("generate");
    clrprof::model::load(&data, &Default::default()).expect("load")
}

fn info(k: u64) -> LogInfo {
    LogInfo {
        name: format!("gen-{k:02}"),
        host: if k % 2 == 0 { "build-a".into() } else { "build-b".into() },
        start_ms: 1_795_758_000_000 + 60_000 * k as i64,
        start_source: "given".into(),
        source: format!("/logs/gen-{k:02}.log"),
    }
}

/// What clrprof's own queries say of a log: allocated and final-heap
/// bytes, and the top types (name, bytes, objects) of both histograms.
struct Expected {
    allocated: u64,
    final_heap: u64,
    objects: u64,
    top_allocated: Vec<(String, u64, u64)>,
    top_final: Vec<(String, u64, u64)>,
}

fn top(model: &Model, kind: HistogramKind) -> Vec<(String, u64, u64)> {
    by_bytes(by_type(model, kind)).into_iter().filter(|t| t.count > 0).take(TOP).map(|t| (t.name, t.bytes as u64, t.count)).collect()
}

fn expected(model: &Model) -> Expected {
    let s = summary(model);
    Expected {
        allocated: s.allocated_bytes,
        final_heap: s.final_heap_bytes,
        objects: model.allocations().len() as u64,
        top_allocated: top(model, HistogramKind::Allocated),
        top_final: top(model, HistogramKind::FinalHeap),
    }
}

fn int(v: &Value) -> u64 {
    v.as_u64().or_else(|| v.as_str().and_then(|s| s.parse().ok())).unwrap_or_else(|| panic!("{v} is not a number"))
}

/// Rows of a per-log list, by log.
fn per_log(got: &Value, key: &str) -> BTreeMap<String, Vec<Value>> {
    let mut m: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for r in got[key].as_array().unwrap_or_else(|| panic!("{key}: {got}")) {
        m.entry(r["log"].as_str().expect("log").to_string()).or_default().push(r.clone());
    }
    m
}

fn types(rows: Option<&Vec<Value>>) -> Vec<(String, u64, u64)> {
    rows.map(|rs| rs.iter().map(|r| (r["name"].as_str().expect("name").to_string(), int(&r["bytes"]), int(&r["objects"]))).collect())
        .unwrap_or_default()
}

/// Reads the dataset with DuckDB and compares every log with `want`.
fn compare(python: &Path, dir: &Path, want: &BTreeMap<String, (LogInfo, Expected)>) {
    let text = run(Command::new(python).arg(crate_dir().join("tests/duckdb/dataset.py")).arg(dir).arg(TOP.to_string()));
    let got: Value = serde_json::from_str(text.trim()).expect("dataset.py JSON");
    let logs = per_log(&got, "logs");
    let sums = per_log(&got, "summary");
    let (alloc, fin) = (per_log(&got, "top_allocated"), per_log(&got, "top_final"));
    assert_eq!(logs.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>(), "the logs DuckDB sees");
    assert_eq!(sums.len(), want.len());
    for (name, (info, e)) in want {
        let l = &logs[name][0];
        assert_eq!(l["name"], info.name.as_str(), "{name}");
        assert_eq!(l["host"], info.host.as_str(), "{name}");
        assert_eq!(l["start_ms"].as_i64(), Some(info.start_ms), "{name}");
        let s = &sums[name][0];
        assert_eq!(int(&s["allocated_bytes"]), e.allocated, "{name}: allocated bytes");
        assert_eq!(int(&s["final_heap_bytes"]), e.final_heap, "{name}: final heap bytes");
        assert_eq!(int(&s["objects"]), e.objects, "{name}: objects");
        assert_eq!(types(alloc.get(name)), e.top_allocated, "{name}: top types by allocated bytes");
        assert_eq!(types(fin.get(name)), e.top_final, "{name}: top types by final-heap bytes");
    }
}

#[test]
fn duckdb_reads_twenty_logs_from_one_dataset() {
    let Some(python) = duckdb_python() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let dataset = dir.path().join("dataset");
    let mut want: BTreeMap<String, (LogInfo, Expected)> = BTreeMap::new();
    for k in 0..20 {
        let model = generated(k);
        let i = info(k);
        let reports = append(&model, &ExportOptions::default(), &dataset, &i).expect("append");
        assert_eq!(reports.len(), TABLES.len() + 1, "every table and the logs row");
        for t in std::iter::once(LOGS_TABLE).chain(TABLES) {
            assert!(partition(&dataset, t, &i.name).join("part-0.parquet").is_file(), "{t} of {}", i.name);
        }
        let e = expected(&model);
        assert!(e.top_allocated.len() == TOP && !e.top_final.is_empty() && e.final_heap > 0, "{}: a log with figures", i.name);
        want.insert(i.name.clone(), (i, e));
    }
    // The logs differ, so that a mix-up of partitions cannot pass.
    let allocated: std::collections::BTreeSet<u64> = want.values().map(|(_, e)| e.allocated).collect();
    assert_eq!(allocated.len(), 20, "20 different allocated-bytes figures");
    assert!(!dataset.join(".staging").exists(), "the staging folder is removed");
    compare(&python, &dataset, &want);

    // Appending a log under a name the dataset has: refused, and the
    // partition it would have replaced is unchanged.
    let objects = partition(&dataset, "objects", "gen-03").join("part-0.parquet");
    let before = std::fs::read(&objects).expect("read");
    let other = generated(99);
    let err = append(&other, &ExportOptions::default(), &dataset, &info(3)).expect_err("an existing name");
    let msg = err.to_string();
    assert!(msg.contains("log=gen-03") && msg.contains("never rewritten"), "{msg}");
    assert_eq!(std::fs::read(&objects).expect("read"), before, "the partition is unchanged");
    // A name a partition folder cannot carry is refused too.
    let bad = LogInfo { name: "a/b".into(), ..info(50) };
    assert!(append(&other, &ExportOptions::default(), &dataset, &bad).is_err());
    assert!(!dataset.join("logs/log=a").exists());

    // A later log is appended beside the others and read with them.
    let late = LogInfo { name: "late-run".into(), ..info(99) };
    append(&other, &ExportOptions::default(), &dataset, &late).expect("append a 21st log");
    want.insert(late.name.clone(), (late, expected(&other)));
    compare(&python, &dataset, &want);
}
