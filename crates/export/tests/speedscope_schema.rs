//! The speedscope export checked with speedscope's own published schema
//! (`file-format-schema.json` of the npm package `speedscope`, validated
//! with Ajv by `tests/speedscope/validate.js`): the file is valid, every
//! profile's weights add up to its end value, the "all threads" profile
//! to the allocated bytes of the Summary, and each thread's profile to the
//! bytes that thread allocated (`clrprof types --thread N`).

mod common;

use clrprof::query::{group_by_name, summary, type_counts, Filter, HistogramKind, TimeWindow, TypeSelection};
use clrprof_export::{speedscope, ExportOptions};
use common::{load, logs, run, speedscope_validator};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn validate(script: &Path, file: &Path) -> Value {
    let out = run(Command::new("node").arg(script).arg(file));
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("validator output {out:?}: {e}"))
}

#[test]
#[cfg_attr(any(no_eventpipe_corpus, no_reference_corpus, no_speedscope), ignore = "needs ../shared/corpus/eventpipe and ../shared/corpus/reference and node and tests/speedscope/node_modules, missing when built (touch crates/export/build.rs after installing)")]
fn speedscope_schema_accepts_the_export_and_weights_add_up() {
    let Some(script) = speedscope_validator() else { return };
    let Some(mut logs) = logs() else { return };
    // A trace: the allocations `dotnet-trace convert` drops are there.
    let Some(trace) = common::trace_log() else { return };
    logs.push(trace);
    for log in &logs {
        let model = load(log);
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("export.speedscope.json");
        speedscope::write(&model, &ExportOptions::default(), &log.name, std::fs::File::create(&path).expect("create"))
            .expect("export");
        let report = validate(&script, &path);
        assert_eq!(report["valid"], true, "{}: {}", log.name, report["errors"]);
        assert_eq!(report["errors"], serde_json::json!([]), "{}", log.name);
        let profiles = report["profiles"].as_array().expect("profiles");
        let sum = |p: &Value| p["weightSum"].as_str().and_then(|s| s.parse::<u64>().ok()).expect("weightSum");
        for p in profiles {
            assert_eq!(Some(sum(p)), p["endValue"].as_u64(), "{}: {}", log.name, p["name"]);
        }
        assert_eq!(profiles[0]["name"], "all threads");
        assert_eq!(sum(&profiles[0]), summary(&model).allocated_bytes, "{}: all threads", log.name);
        let threads: u64 = profiles[1..].iter().map(sum).sum();
        assert_eq!(threads, summary(&model).allocated_bytes, "{}: the threads' profiles", log.name);
        assert!(profiles.len() > 2 || model.sampling().is_some(), "{}: several threads", log.name);
        if model.sampling().is_some() {
            assert!(sum(&profiles[0]) > 4_000_000_000, "{}: the trace's estimated bytes", log.name);
        }
        for p in &profiles[1..] {
            let name = p["name"].as_str().expect("name");
            let Some(id) = name.strip_prefix("thread ").and_then(|t| t.parse::<i32>().ok()) else { continue };
            let filter = Filter::resolve(&model, &TimeWindow::All, &[id]).expect("thread");
            let counts =
                type_counts(&model, &TypeSelection { kind: HistogramKind::Allocated, at: None }, &filter).expect("counts");
            let bytes: i64 = group_by_name(&model, counts.iter()).iter().map(|r| r.bytes).sum();
            assert_eq!(sum(p), bytes as u64, "{}: {name}", log.name);
        }
    }
}

#[test]
#[cfg_attr(no_speedscope, ignore = "needs node and tests/speedscope/node_modules, missing when built (touch crates/export/build.rs after installing)")]
fn the_validator_rejects_a_file_that_breaks_the_schema() {
    let Some(script) = speedscope_validator() else { return };
    let log = common::Log { name: "generated".into(), data: common::dumps_log() };
    let model = load(&log);
    let mut file = serde_json::to_value(speedscope::file(&model, &ExportOptions::default(), "x")).expect("json");
    file["profiles"][0]["unit"] = Value::from("furlongs");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("broken.json");
    std::fs::write(&path, serde_json::to_vec(&file).expect("json")).expect("write");
    let report = validate(&script, &path);
    assert_eq!(report["valid"], false, "a unit speedscope does not know must be refused");
}
