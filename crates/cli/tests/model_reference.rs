//! The model against CLRProfiler's own answers: for every reference log in
//! `../shared/corpus/reference/` that CLRProfiler's reader read to the end
//! (`reader_exit_code` 0), the Summary equals the reference `summary` field
//! for field, the five by-type histograms equal, and the sample table holds
//! `reader.sample_objects_created` samples (other reader counters are
//! compared too). For the logs where the reference reader failed, the model
//! returns an error naming the same line, or (for the hang) recovers as
//! documented. Skips when the folder is absent.

use clrprof::format::{ChunkOptions, LogSource};
use clrprof::model::{self, LoadOptions, Model};
use clrprof::query::{self, HistogramKind};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

mod common;
use common::*;

fn logs(dir: &Path) -> Vec<(String, PathBuf, Value)> {
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir).expect("read dir").flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let Some(stem) = name.strip_suffix(".log") else { continue };
        let json_path = dir.join(format!("{stem}.clrprofiler.json"));
        let text = std::fs::read_to_string(&json_path).expect("reference json");
        let v: Value = serde_json::from_str(&text).expect("json");
        out.push((stem.to_string(), p, v));
    }
    out
}

fn load(path: &Path, chunk_bytes: usize) -> model::Result<Model> {
    let src = LogSource::open(path).expect("open");
    let options = LoadOptions { chunks: ChunkOptions { chunk_bytes, threads: Some(2), in_flight: 0 } };
    model::load(src.bytes(), &options)
}

fn by_type_json(m: &Model, kind: HistogramKind) -> Value {
    let mut o = serde_json::Map::new();
    for r in query::by_type(m, kind) {
        o.insert(r.name.clone(), json!({"bytes": r.bytes, "count": r.count, "type_ids": r.type_ids}));
    }
    Value::Object(o)
}

/// The reader counters the model reproduces.
fn reader_counters(m: &Model) -> Value {
    let s = m.samples();
    let h = m.histograms();
    let b = m.gc_bookkeeping();
    let dumps: Vec<Value> = m
        .heap_dumps()
        .dumps()
        .iter()
        .map(|d| {
            json!({
                "bytes": query::summary::histogram_bytes(m, &d.matched),
                "objects": d.matched.total(),
                "tick_index": d.tick.0,
            })
        })
        .collect();
    json!({
        "sample_objects_created": s.len(),
        "sample_objects_total_incl_gc_ticks": s.len() + s.gc_ticks().len(),
        "sample_slots_used": s.grains().slots_used(),
        "sample_second_level_tables": s.reader_second_level_tables(),
        "sample_master_table_length": s.reader_master_length(),
        "gc_tick_list_length": s.gc_ticks().len(),
        "time_pos_count": m.time().len(),
        "max_tick_index": m.time().max_assigned().0,
        "stacktrace_table_length": m.stacks().reader_table_length(),
        "cumulative_generation_size": b.cumulative_sizes(),
        "gc_count": b.counts(),
        "induced_gc_count": b.induced(),
        "generation_size_last": b.last_sizes(),
        "gc_events": b.accepted_starts(),
        "heap_dump_events": m.heap_dumps().counted(),
        "comment_events": m.comments().kept().len(),
        "live_gen1_limit_tick": m.collections().gen1_limit.0,
        "live_gen2_limit_tick": m.collections().gen2_limit.0,
        "relocated_objects": h.relocated.total(),
        "allocated_objects": h.allocated.total(),
        "final_heap_objects": h.final_heap.total(),
        "finalized_objects_raw": h.finalized.total(),
        "critical_finalized_objects_raw": h.critical_finalized.total(),
        "handles_created_raw": m.handles().created().len(),
        "handles_destroyed_raw": m.handles().destroyed().len(),
        "handles_surviving_raw": m.handles().surviving_count(),
        "heap_dump_histograms": dumps,
        "types_defined_incl_free_space": m.types().named_count(),
        "finalizable_types": m.types().finalizable_count(),
        "callstack_histogram_total": h.calls.total(),
        "had_alloc_info": m.had_alloc_info(),
        "had_call_info": m.had_call_info(),
        "function_list_entries": m.functions().list_entries(),
        "modules": m.modules().modules().len(),
    })
}

fn compare(name: &str, m: &Model, reference: &Value) -> Vec<String> {
    let mut bad = Vec::new();
    let summary = serde_json::to_value(query::summary(m)).expect("summary json");
    if summary != reference["summary"] {
        bad.push(format!("{name}: summary\n  ours:      {summary}\n  reference: {}", reference["summary"]));
    }
    for (kind, key) in HistogramKind::ALL {
        let ours = by_type_json(m, kind);
        if ours != reference[key] {
            bad.push(format!("{name}: {key}\n  ours:      {ours}\n  reference: {}", reference[key]));
        }
    }
    // Comments: tick index, text, and time (serde_json parses floats to
    // within one unit in the last place, so times are compared that close).
    let ours: Vec<(u32, String, f64)> = m
        .comments()
        .kept()
        .iter()
        .map(|c| (c.tick.0, m.names().get(c.text).to_string(), m.time().seconds(c.tick).unwrap_or(-1.0)))
        .collect();
    let theirs: Vec<(u32, String, f64)> = reference["comments"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| {
                    let tick = c["tick_index"].as_u64().unwrap_or(u64::MAX) as u32;
                    (tick, c["text"].as_str().unwrap_or_default().to_string(), c["time_s"].as_f64().unwrap_or(-2.0))
                })
                .collect()
        })
        .unwrap_or_default();
    let same = ours.len() == theirs.len()
        && ours.iter().zip(&theirs).all(|(a, b)| a.0 == b.0 && a.1 == b.1 && (a.2 - b.2).abs() <= 1e-12 * b.2.abs().max(1.0));
    if !same {
        bad.push(format!("{name}: comments\n  ours:      {ours:?}\n  reference: {theirs:?}"));
    }
    let counters = reader_counters(m);
    for (k, v) in counters.as_object().expect("object") {
        if &reference["reader"][k] != v {
            bad.push(format!("{name}: reader.{k}: ours {v}, reference {}", reference["reader"][k]));
        }
    }
    bad
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn summaries_equal_the_reference() {
    let Some(dir) = reference_dir() else { return };
    let mut bad = Vec::new();
    let mut checked = 0;
    for (name, path, reference) in logs(&dir) {
        if reference["reader_exit_code"] != 0 {
            continue;
        }
        // Small chunks exercise the parallel path and chunk boundaries.
        for chunk in [1 << 12, 1 << 20] {
            match load(&path, chunk) {
                Ok(m) => bad.extend(compare(&name, &m, &reference)),
                Err(e) => bad.push(format!("{name}: unexpected error: {e}")),
            }
        }
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} logs checked");
    assert!(bad.is_empty(), "{} difference(s):\n{}", bad.len(), bad.join("\n"));
}

/// Where CLRProfiler's reader throws (exit code 1), the model returns an
/// error for the same line and record; where it never returns (exit code 3,
/// an unknown last line without a line end), the model skips that line with
/// a warning (the documented recovery) and its figures equal the reference
/// reader's state when it began to hang.
#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn failing_logs_error_or_recover() {
    let Some(dir) = reference_dir() else { return };
    let mut seen = 0;
    for (name, path, reference) in logs(&dir) {
        let code = reference["reader_exit_code"].as_i64().unwrap_or(-1);
        if code == 0 {
            continue;
        }
        seen += 1;
        let result = load(&path, 1 << 20);
        match code {
            1 => {
                let e = match result {
                    Err(e) => e,
                    Ok(_) => panic!("{name}: expected an error"),
                };
                let line = reference["error"]["line"].as_u64().expect("error line");
                assert_eq!(e.line, line, "{name}: {e}");
                assert!(e.kind.is_some(), "{name}: {e}");
                let msg = e.to_string();
                assert!(msg.contains(&format!("line {line}")), "{name}: {msg}");
            }
            3 => {
                let m = result.unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(m.diagnostics().total() > 0, "{name}: the skipped line is reported");
                let bad = compare(&name, &m, &reference);
                assert!(bad.is_empty(), "{}", bad.join("\n"));
            }
            other => panic!("{name}: unexpected exit code {other}"),
        }
    }
    assert!(seen >= 5, "only {seen} failing logs");
}

// ---------------------------------------------------------------- the CLI

/// The project's own corpus through `clrprof summary --json`. The golden
/// figures were checked against the throw-away model of
/// `docs/src/reference-reader.md` (section 10) when they were blessed.
/// `tricky.log` has a generation-4 range, where CLRProfiler's reader throws:
/// the CLI exits with status 1 and names the line.
#[test]
fn corpus_summaries_through_the_cli() {
    for log in ["all-kinds", "truncated"] {
        let out = clrprof(&["summary", "--json", "--quiet", &format!("corpus/{log}.log")]);
        assert!(out.status.success(), "{log}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let v: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(v.as_object().map(|o| o.len()), Some(18), "{log}: 18 keys");
        golden(&format!("summary-{log}.json"), &text);
    }
    let out = clrprof(&["summary", "--quiet", "corpus/tricky.log"]);
    assert_eq!(out.status.code(), Some(1));
    golden("summary-tricky.stderr", &String::from_utf8_lossy(&out.stderr));
    // The table form names every figure.
    let out = clrprof(&["summary", "corpus/all-kinds.log"]);
    assert!(out.status.success());
    golden("summary-all-kinds.txt", &String::from_utf8_lossy(&out.stdout));
}

/// The same figures from the reference logs through the CLI's JSON.
#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn reference_summaries_through_the_cli() {
    let Some(dir) = reference_dir() else { return };
    for name in ["sample-all-kinds", "gen-tiny", "quirk-q12_g_only"] {
        let path = dir.join(format!("{name}.log"));
        let out = clrprof(&["summary", "--json", "--quiet", path.to_str().expect("path")]);
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let ours: Value = serde_json::from_slice(&out.stdout).expect("json");
        let reference: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{name}.clrprofiler.json"))).expect("json"))
                .expect("json");
        assert_eq!(ours, reference["summary"], "{name}");
    }
}

/// `clrprof footprint --json` has the documented keys and sane values.
#[test]
fn footprint_json() {
    let out = clrprof(&["footprint", "--json", "--quiet", "corpus/all-kinds.log"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    for key in [
        "file_bytes",
        "load_seconds",
        "peak_rss_bytes",
        "peak_anon_bytes",
        "samples",
        "sample_table_bytes",
        "bytes_per_sample",
        "tables",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["samples"], 1122);
    assert_eq!(v["file_bytes"], std::fs::metadata(repo_root().join("corpus/all-kinds.log")).expect("meta").len());
    assert!(v["tables"]["stacks"].as_u64().is_some_and(|b| b > 0));
}

/// The loader gives back the pages of a mapped log it has read (they stay
/// in the page cache, not in the process): on a 270 MB generated log, the
/// resident pages beyond the anonymous memory stay far below the file's
/// size. Anything that reads the whole log again after the parse (counting
/// its lines, say) brings them all back and fails this.
#[test]
fn footprint_gives_back_the_log_pages_it_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("m3.log");
    let log_arg = log.to_str().expect("utf-8 path");
    let out = clrprof(&["gen", "--preset", "medium", "--objects", "9000000", "-o", log_arg]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let size = std::fs::metadata(&log).expect("meta").len();
    assert!(size > 250 << 20, "{size} bytes");
    let out = clrprof(&["footprint", "--json", "--quiet", log_arg]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let rss = v["peak_rss_bytes"].as_u64().expect("peak_rss_bytes");
    let anon = v["peak_anon_bytes"].as_u64().expect("peak_anon_bytes");
    let file_pages = rss.saturating_sub(anon);
    assert!(file_pages < size / 3, "{file_pages} bytes resident beyond the anonymous {anon}, for a {size}-byte log");
}

/// Object fates against the generator's ground truth (`NAME.truth.json`,
/// `deaths`): how many objects died, and their count and bytes by GCs
/// survived and by generation at death.
#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn fates_equal_the_generator_truth() {
    use clrprof::model::{Fate, ObjectId};
    use std::collections::BTreeMap;
    let Some(dir) = reference_dir() else { return };
    for name in ["gen-tiny", "gen-small"] {
        let truth: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{name}.truth.json"))).expect("truth"))
                .expect("json");
        let m = load(&dir.join(format!("{name}.log")), 1 << 20).expect("load");
        let a = m.allocations();
        let mut by_survived: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        let mut by_generation: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        let mut died = 0u64;
        for i in 0..a.len() as u32 {
            let o = ObjectId(i);
            if let Fate::DiedAtGc { generation, .. } = a.fate(o) {
                let size = m.stacks().type_and_size(a.stack(o)).map_or(0, |t| t.1 as u64);
                died += 1;
                let s = by_survived.entry(a.gcs_survived(o).expect("tracked") as u64).or_default();
                s.0 += 1;
                s.1 += size;
                let g = by_generation.entry(generation as u64).or_default();
                g.0 += 1;
                g.1 += size;
            }
        }
        // Death ticks: the end of the GC that removed the object.
        for i in (0..a.len() as u32).step_by(97) {
            let o = ObjectId(i);
            if let Fate::DiedAtGc { gc, .. } = a.fate(o) {
                assert_eq!(m.death_tick(o), m.gcs().get(gc).map(|g| g.end), "{name}: object {i}");
                assert!(m.death_tick(o) >= Some(a.tick(o)), "{name}: object {i} dies before birth");
            }
        }
        let deaths = &truth["deaths"];
        assert_eq!(died, deaths["objects"].as_u64().expect("objects"), "{name}: deaths");
        for (key, ours) in [("gcs_survived", &by_survived), ("generation", &by_generation)] {
            let list = deaths[format!("by_{key}")].as_array().expect("list");
            let want: BTreeMap<u64, (u64, u64)> = list
                .iter()
                .map(|e| {
                    let k = e[key].as_u64().expect("key");
                    (k, (e["objects"].as_u64().expect("objects"), e["bytes"].as_u64().expect("bytes")))
                })
                .collect();
            assert_eq!(ours, &want, "{name}: deaths by {key}");
        }
    }
}
