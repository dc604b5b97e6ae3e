//! The Parquet export read by DuckDB (`tests/duckdb/check.py`): SQL over
//! the files reproduces the Summary's allocated and final-heap bytes, the
//! allocated and final-heap histograms by type, the lifetime table, each
//! heap dump's objects and bytes per type, and the guide's recipes
//! (`sql/recipes.sql`) answer what `clrprof types`, `clrprof functions`
//! and `clrprof lifetime` answer, a trace's estimates with their ranges
//! among them.

mod common;

use clrprof::model::Model;
use clrprof::query::dumps::{by_type as dump_by_type, DumpIndex};
use clrprof::query::{by_function, by_type, lifetime, summary, Filter, HistogramKind, Range95, SortBy, Tally};
use clrprof_export::{parquet, ExportOptions};
use common::{crate_dir, duckdb_python, load, logs, run, Log};
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Command;

fn int(v: &Value) -> u64 {
    match v {
        Value::Number(n) => n.as_u64().unwrap_or_else(|| panic!("{n} is not a u64")),
        Value::String(s) => s.parse().unwrap_or_else(|_| panic!("{s} is not a number")),
        Value::Null => 0,
        other => panic!("{other} is not a number"),
    }
}

/// `name -> (bytes, count)` of a list of SQL rows.
fn by_name(rows: &Value, bytes: &str, count: &str) -> BTreeMap<String, (u64, u64)> {
    rows.as_array()
        .expect("rows")
        .iter()
        .map(|r| (r["name"].as_str().or(r["type"].as_str()).expect("name").to_string(), (int(&r[bytes]), int(&r[count]))))
        .collect()
}

fn histogram(model: &Model, kind: HistogramKind) -> BTreeMap<String, (u64, u64)> {
    by_type(model, kind).into_iter().filter(|r| r.count > 0).map(|r| (r.name, (r.bytes as u64, r.count))).collect()
}

fn check(log: &Log, python: &std::path::Path) {
    let model = load(log);
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("export");
    let reports = parquet::write(&model, &ExportOptions::default(), &out).expect("export");
    assert!(reports.iter().all(|r| r.bytes > 0));
    let text = run(Command::new(python).arg(crate_dir().join("tests/duckdb/check.py")).arg(&out).arg(crate_dir().join("sql/recipes.sql")));
    let got: Value = serde_json::from_str(text.trim()).expect("check.py JSON");
    let name = &log.name;

    let s = summary(&model);
    assert_eq!(int(&got["allocated_bytes"]), s.allocated_bytes, "{name}: allocated bytes");
    assert_eq!(int(&got["final_heap_bytes"]), s.final_heap_bytes, "{name}: final heap bytes");
    let allocated = histogram(&model, HistogramKind::Allocated);
    assert_eq!(by_name(&got["allocated_by_type"], "bytes", "count"), allocated, "{name}: allocated by type");
    assert_eq!(by_name(&got["final_by_type"], "bytes", "count"), histogram(&model, HistogramKind::FinalHeap), "{name}: final heap by type");

    // The lifetime table, column by column.
    let columns = ["allocated", "gen0", "gen1", "gen2", "loh", "erased", "alive_at_end", "untracked"];
    let mut expected: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
    for r in lifetime(&model, &Filter::all()).rows {
        let t: [Tally; 8] = [r.allocated, r.gen0, r.gen1, r.gen2, r.loh, r.erased, r.alive_at_end, r.untracked];
        expected.insert(r.name, t.iter().map(|t| (t.objects, t.bytes)).collect());
    }
    let sql: BTreeMap<String, Vec<(u64, u64)>> = got["lifetime"]
        .as_array()
        .expect("lifetime")
        .iter()
        .map(|r| {
            let cells = columns.iter().map(|c| (int(&r[format!("{c}_objects")]), int(&r[format!("{c}_bytes")]))).collect();
            (r["name"].as_str().expect("name").to_string(), cells)
        })
        .collect();
    assert_eq!(sql, expected, "{name}: lifetime table");

    // Each heap dump's objects and bytes per type.
    let dumps = model.heap_dumps().dumps().len();
    let mut expected: Vec<(u64, i64, u64, u64)> = Vec::new();
    for k in 0..dumps {
        let t = dump_by_type(&model, DumpIndex(k as u32)).expect("dump");
        expected.extend(t.types.iter().map(|r| (k as u64, r.type_id as i64, r.objects, r.bytes)));
    }
    expected.sort();
    let mut sql: Vec<(u64, i64, u64, u64)> = got["dumps"]
        .as_array()
        .expect("dumps")
        .iter()
        .map(|r| (int(&r["dump"]), r["type_id"].as_i64().expect("type id"), int(&r["objects"]), int(&r["bytes"])))
        .collect();
    sql.sort();
    assert_eq!(sql, expected, "{name}: heap dumps by type");
    assert_eq!(got["dump_list"].as_array().map(Vec::len), Some(dumps), "{name}: heap dumps");

    // The guide's recipes (docs/src/exports.md).
    let recipes = &got["recipes"];
    assert_eq!(by_name(&recipes["bytes_by_type"], "bytes", "objects"), allocated, "{name}: recipe bytes_by_type");
    let inclusive: BTreeMap<i64, (u64, u64)> = by_function(&model, &Filter::all(), SortBy::Inclusive)
        .into_iter()
        .filter_map(|r| Some((r.function? as i64, (r.figures.inclusive_bytes, r.figures.inclusive_count))))
        .filter(|r| r.1 .1 > 0)
        .collect();
    let sql: BTreeMap<i64, (u64, u64)> = recipes["top_functions_inclusive"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| (r["function_id"].as_i64().expect("id"), (int(&r["inclusive_bytes"]), int(&r["inclusive_objects"]))))
        .collect();
    assert_eq!(sql, inclusive, "{name}: recipe top_functions_inclusive");
    let gen2: BTreeMap<String, (u64, u64)> = lifetime(&model, &Filter::all())
        .rows
        .into_iter()
        .filter(|r| r.gen2.objects > 0 && r.name != "(no type)")
        .map(|r| (r.name, (r.gen2.bytes, r.gen2.objects)))
        .collect();
    assert_eq!(by_name(&recipes["died_in_gen2"], "bytes", "objects"), gen2, "{name}: recipe died_in_gen2");
}

#[test]
#[cfg_attr(any(no_duckdb, no_reference_corpus), ignore = "needs DuckDB in target/export-venv and ../shared/corpus/reference, missing when built (touch crates/export/build.rs after installing)")]
fn duckdb_reproduces_clrprof_figures_from_the_parquet_files() {
    let Some(python) = duckdb_python() else { return };
    let Some(logs) = logs() else { return };
    for log in &logs {
        check(log, &python);
    }
    // Fates the other logs lack: an object erased by an overlapping
    // allocation and one under 12 bytes.
    let erased = b"t 1 0 T\nt 2 0 Small\nn 1 1 1 24\nn 2 1 2 8\ni 1\n! 1 0x1000 1\n! 1 0x1000 1\n! 1 0x2000 2\n! 1 0x3000 1\n";
    let hand = Log { name: "hand-made fates".to_string(), data: erased.to_vec() };
    let l = lifetime(&load(&hand), &Filter::all()).total;
    assert_eq!((l.erased.objects, l.untracked.objects), (1, 1), "the hand-made log's fates");
    check(&hand, &python);
    // The generated log has heap dumps, so that their check compared rows.
    let dumps = load(&logs[2]).heap_dumps().dumps().len();
    assert_eq!(dumps, 3, "the generated log's heap dumps");
}

#[test]
fn the_guide_holds_the_recipes_the_test_runs() {
    let guide = std::fs::read_to_string(common::repo().join("docs/src/exports.md")).expect("the guide's Exports chapter");
    let recipes = std::fs::read_to_string(crate_dir().join("sql/recipes.sql")).expect("recipes");
    for part in recipes.split("-- name: ").skip(1) {
        let body = part.split_once('\n').map_or("", |p| p.1);
        let sql: String = body.lines().filter(|l| !l.starts_with("--")).collect::<Vec<_>>().join("\n");
        assert!(guide.contains(sql.trim()), "docs/src/exports.md lacks the recipe:\n{}", sql.trim());
    }
}

/// A sampled trace's export: the guide's `estimates_by_type` recipe gives
/// each type's samples, estimated objects and bytes as `clrprof types`
/// gives them, and the 95% range of its bytes as `clrprof` computes it.
#[test]
#[cfg_attr(no_duckdb, ignore = "needs DuckDB in target/export-venv, missing when built (touch crates/export/build.rs after installing)")]
fn duckdb_gives_a_traces_estimates_with_clrprofs_ranges() {
    let Some(python) = duckdb_python() else { return };
    let mut o = clrprof_gen::Preset::Small.options();
    o.threads = 3;
    let (data, _) = clrprof_gen::nettrace::generate_nettrace(&o, &Default::default(), Vec::new()).expect("generate");
    let model = load(&Log { name: "a generated trace".to_string(), data });
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("export");
    parquet::write(&model, &ExportOptions::default(), &out).expect("export");
    let text = run(Command::new(python).arg(crate_dir().join("tests/duckdb/check.py")).arg(&out).arg(crate_dir().join("sql/recipes.sql")));
    let got: Value = serde_json::from_str(text.trim()).expect("check.py JSON");
    let sql: BTreeMap<String, &Value> = got["recipes"]["estimates_by_type"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| (r["type"].as_str().expect("type").to_string(), r))
        .collect();
    let expected = by_type(&model, HistogramKind::Allocated);
    assert_eq!(sql.len(), expected.len(), "types");
    let mut half_objects: BTreeMap<String, f64> = BTreeMap::new();
    for (row, _) in model.histograms().allocated.iter() {
        if let Some((ty, size)) = model.stacks().type_and_size(row) {
            *half_objects.entry(model.type_name(ty).into_owned()).or_default() += size as f64 / 2.0;
        }
    }
    let num = |v: &Value| v.as_f64().or_else(|| v.as_str().and_then(|s| s.parse().ok())).unwrap_or_else(|| panic!("a number: {v}"));
    let mut ranged = 0;
    for t in &expected {
        let r = sql.get(&t.name).unwrap_or_else(|| panic!("{} missing from the recipe", t.name));
        assert_eq!(int(&r["samples"]), t.samples, "{}: samples", t.name);
        let (objects, bytes) = (num(&r["objects"]), num(&r["bytes"]));
        // clrprof counts whole objects per stack row (one row per stack,
        // type and size), SQL sums the weights: up to half an object of
        // each row's size apart.
        assert!((objects - t.count as f64).abs() <= 1.0 + 1e-3 * t.count as f64, "{}: {objects} objects against {}", t.name, t.count);
        let slack = half_objects.get(&t.name).copied().unwrap_or(0.0);
        assert!((bytes - t.bytes as f64).abs() <= 1.0 + slack, "{}: {bytes} bytes against {}", t.name, t.bytes);
        let range = Range95::of(t.samples).expect("a sampled type");
        let (low, high) = (num(&r["bytes_low"]) / bytes, num(&r["bytes_high"]) / bytes);
        let slack = if t.samples >= 10 { 1e-3 } else { 2e-2 };
        assert!((low - range.low).abs() <= slack && (high - range.high).abs() <= slack, "{} ({} samples): SQL range {low:.5}..{high:.5}, clrprof {:.5}..{:.5}", t.name, t.samples, range.low, range.high);
        ranged += usize::from(t.samples >= 10);
    }
    assert!(ranged >= 3, "types with 10 samples or more: {ranged}");
    let (objects, samples) = expected.iter().fold((0, 0), |(o, k), t| (o + t.count, k + t.samples));
    assert!(objects > 10 * samples, "the estimates are not the samples ({objects} objects from {samples} samples)");
}
