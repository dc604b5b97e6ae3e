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

/// Runs a reader's script (`tests/duckdb/dataset.py` or
/// `tests/spark/dataset.py`) over the dataset: its JSON (the last line of
/// its standard output).
fn read(python: &Path, script: &str, dir: &Path) -> Value {
    let text = run(Command::new(python).arg(crate_dir().join(script)).arg(dir).arg(TOP.to_string()));
    let line = text.lines().rev().find(|l| l.starts_with('{')).unwrap_or_else(|| panic!("{script}: no JSON line: {text}"));
    serde_json::from_str(line).expect("the reader's JSON")
}

/// Every difference between what a reader found and what clrprof's
/// queries say of each log (empty: they agree).
fn differences(got: &Value, want: &BTreeMap<String, (LogInfo, Expected)>) -> Vec<String> {
    let logs = per_log(got, "logs");
    let sums = per_log(got, "summary");
    let (alloc, fin) = (per_log(got, "top_allocated"), per_log(got, "top_final"));
    let mut out = Vec::new();
    let mut differ = |what: String, a: String, b: String| {
        if a != b {
            out.push(format!("{what}: read {a}, clrprof {b}"));
        }
    };
    differ("logs".into(), format!("{:?}", logs.keys().collect::<Vec<_>>()), format!("{:?}", want.keys().collect::<Vec<_>>()));
    differ("logs summed".into(), sums.len().to_string(), want.len().to_string());
    for (name, (info, e)) in want {
        let (Some(l), Some(s)) = (logs.get(name).and_then(|v| v.first()), sums.get(name).and_then(|v| v.first())) else {
            differ(name.clone(), "nothing".into(), "a log".into());
            continue;
        };
        let mut differ = |what: &str, a: String, b: String| differ(format!("{name}: {what}"), a, b);
        differ("name", l["name"].to_string(), format!("{:?}", info.name));
        differ("host", l["host"].to_string(), format!("{:?}", info.host));
        differ("start", l["start_ms"].to_string(), info.start_ms.to_string());
        differ("allocated bytes", int(&s["allocated_bytes"]).to_string(), e.allocated.to_string());
        differ("final heap bytes", int(&s["final_heap_bytes"]).to_string(), e.final_heap.to_string());
        differ("objects", int(&s["objects"]).to_string(), e.objects.to_string());
        differ("top types by allocated bytes", format!("{:?}", types(alloc.get(name))), format!("{:?}", e.top_allocated));
        differ("top types by final-heap bytes", format!("{:?}", types(fin.get(name))), format!("{:?}", e.top_final));
    }
    out
}

/// Reads the dataset with a reader and fails on any difference.
fn compare(python: &Path, script: &str, dir: &Path, want: &BTreeMap<String, (LogInfo, Expected)>) {
    let d = differences(&read(python, script, dir), want);
    assert!(d.is_empty(), "{script} over {}:\n{}", dir.display(), d.join("\n"));
}

/// A dataset of 20 generated logs, `gen-00` to `gen-19`, and what
/// clrprof's queries say of each.
fn twenty_logs(dataset: &Path) -> BTreeMap<String, (LogInfo, Expected)> {
    let mut want: BTreeMap<String, (LogInfo, Expected)> = BTreeMap::new();
    for k in 0..20 {
        let model = generated(k);
        let i = info(k);
        let reports = append(&model, &ExportOptions::default(), dataset, &i).expect("append");
        assert_eq!(reports.len(), TABLES.len() + 1, "every table and the logs row");
        for t in std::iter::once(LOGS_TABLE).chain(TABLES) {
            assert!(partition(dataset, t, &i.name).join("part-0.parquet").is_file(), "{t} of {}", i.name);
        }
        let e = expected(&model);
        assert!(e.top_allocated.len() == TOP && !e.top_final.is_empty() && e.final_heap > 0, "{}: a log with figures", i.name);
        want.insert(i.name.clone(), (i, e));
    }
    // The logs differ, so that a mix-up of partitions cannot pass.
    let allocated: std::collections::BTreeSet<u64> = want.values().map(|(_, e)| e.allocated).collect();
    assert_eq!(allocated.len(), 20, "20 different allocated-bytes figures");
    assert!(!dataset.join(".staging").exists(), "the staging folder is removed");
    want
}

#[test]
#[cfg_attr(no_duckdb, ignore = "needs DuckDB in target/export-venv, missing when built (touch crates/export/build.rs after installing)")]
fn duckdb_reads_twenty_logs_from_one_dataset() {
    let Some(python) = duckdb_python() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let dataset = dir.path().join("dataset");
    let mut want = twenty_logs(&dataset);
    compare(&python, "tests/duckdb/dataset.py", &dataset, &want);

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
    compare(&python, "tests/duckdb/dataset.py", &dataset, &want);
}

/// PySpark (`$CLRPROF_EXPORT_VENV`'s Python with `pyspark`, and Java);
/// `None` (a failure under `CI=true`) when missing.
fn spark_python() -> Option<std::path::PathBuf> {
    let python = duckdb_python()?;
    let ok = Command::new(&python).args(["-c", "import pyspark"]).output().is_ok_and(|o| o.status.success())
        && Command::new("java").arg("-version").output().is_ok_and(|o| o.status.success());
    common::required(&format!("pyspark and java ({})", python.display()), ok.then_some(python))
}

/// Spark in local mode over the dataset of 20 logs: the same figures as
/// DuckDB and clrprof. Then a dataset with one wrong partition (gen-05's
/// `objects` replaced by gen-06's) is read again and the comparison must
/// name gen-05's figures, and only its: the check can fail.
#[test]
#[cfg_attr(no_spark, ignore = "needs PySpark and Java, missing when built (touch crates/export/build.rs after installing)")]
fn spark_reads_twenty_logs_from_one_dataset() {
    let Some(python) = spark_python() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let dataset = dir.path().join("dataset");
    let want = twenty_logs(&dataset);
    let started = std::time::Instant::now();
    compare(&python, "tests/spark/dataset.py", &dataset, &want);
    eprintln!("spark over 20 logs: {:.1} s", started.elapsed().as_secs_f64());
    let wrong = partition(&dataset, "objects", "gen-05").join("part-0.parquet");
    std::fs::copy(partition(&dataset, "objects", "gen-06").join("part-0.parquet"), &wrong).expect("replace a partition");
    let d = differences(&read(&python, "tests/spark/dataset.py", &dataset), &want);
    assert!(!d.is_empty(), "a wrong partition went unnoticed");
    assert!(d.iter().all(|m| m.starts_with("gen-05: ")), "{d:?}");
    assert!(d.iter().any(|m| m.starts_with("gen-05: allocated bytes")), "{d:?}");
}
