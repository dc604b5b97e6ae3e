//! One way into the model: a trace or a `.gcdump` whose records go
//! straight into the builder (`load_trace`, `load_gcdump`) gives the same
//! model as the same records written as log text and loaded as a log (the
//! way they were loaded before: `to_log`/`write_log`, then
//! `load_imported`/`load`). Compared as the whole model's serialized
//! tables, but for the two things that differ by construction: the file's
//! size (the trace's, not the text's) and the time table's record offsets
//! (record numbers, not text bytes).
//!
//! On the corpus's traces and snapshot, on generated traces (dense ticks,
//! sparse ticks, lost events), and on every `.nettrace` in the folder named
//! by `CLRPROF_IMPORT_DIFF_DIR` when it is set (real runtime traces with
//! heap walks, which are too large to keep in the repository).

use ciborium::value::Value;
use clrprof::model::{load, load_gcdump, load_imported, load_trace, Model};
use clrprof_gen::nettrace::{generate_nettrace, NetTraceOptions};
use clrprof_gen::{GenOptions, Preset};
use std::path::PathBuf;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/eventpipe")
}

/// The model's tables as a CBOR value (maps in a canonical order), without
/// what differs by construction (and the fields named in `without`).
fn tables(m: &Model, without: &[&str]) -> Value {
    let mut v = Value::serialized(m).expect("a model serializes");
    if let Value::Map(fields) = &mut v {
        fields.retain(|(k, _)| !matches!(k.as_text(), Some(name) if name == "file_bytes" || without.contains(&name)));
        for (k, t) in fields.iter_mut() {
            if k.as_text() == Some("time") {
                if let Value::Map(time) = t {
                    time.retain(|(k, _)| k.as_text() != Some("offsets"));
                }
            }
        }
    }
    canonical(&mut v);
    v
}

/// Sorts every map's entries by key (hash maps serialize in any order).
fn canonical(v: &mut Value) {
    match v {
        Value::Map(entries) => {
            for (k, x) in entries.iter_mut() {
                canonical(k);
                canonical(x);
            }
            entries.sort_by_cached_key(|(k, _)| format!("{k:?}"));
        }
        Value::Array(items) => items.iter_mut().for_each(canonical),
        Value::Tag(_, x) => canonical(x),
        _ => {}
    }
}

/// The first place where `a` and `b` differ.
fn first_difference(a: &Value, b: &Value, at: &str) -> Option<String> {
    match (a, b) {
        (Value::Map(x), Value::Map(y)) => {
            if x.len() != y.len() {
                return Some(format!("{at}: {} against {} entries", x.len(), y.len()));
            }
            x.iter().zip(y).find_map(|((ka, va), (kb, vb))| {
                let here = format!("{at}.{}", ka.as_text().map_or_else(|| format!("{ka:?}"), str::to_string));
                if ka != kb {
                    Some(format!("{here}: key {ka:?} against {kb:?}"))
                } else {
                    first_difference(va, vb, &here)
                }
            })
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                return Some(format!("{at}: {} against {} items", x.len(), y.len()));
            }
            x.iter().zip(y).enumerate().find_map(|(i, (p, q))| first_difference(p, q, &format!("{at}[{i}]")))
        }
        _ if a == b => None,
        _ => Some(format!("{at}: {a:?} against {b:?}")),
    }
}

fn same_trace_model(name: &str, bytes: &[u8]) {
    let direct = load_trace(bytes, &Default::default(), |_| {}).unwrap_or_else(|e| panic!("{name}: {e}"));
    let imported = clrprof::import::nettrace::to_log(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    let text_bytes = imported.log.len();
    let via_text = load_imported(imported, &Default::default(), |_| {}).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(direct.file_bytes(), bytes.len() as u64, "{name}: the model's file is the trace");
    assert_eq!(via_text.file_bytes(), text_bytes as u64);
    assert_eq!(direct.imported(), via_text.imported(), "{name}: the facts");
    assert_eq!(direct.time().len(), via_text.time().len(), "{name}: the time table");
    let (a, b) = (tables(&direct, &[]), tables(&via_text, &[]));
    if let Some(d) = first_difference(&a, &b, "model") {
        panic!("{name}: the models differ at {d}");
    }
    eprintln!("{name}: {} records, {} objects, the same model both ways", direct.records(), direct.allocations().len());
}

#[test]
fn corpus_traces_give_the_same_model_both_ways() {
    let dir = corpus();
    if !dir.exists() {
        assert!(std::env::var("CI").is_err(), "CI=true and {} is missing", dir.display());
        eprintln!("SKIPPED: {} is missing", dir.display());
        return;
    }
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("the corpus") {
        let path = entry.expect("an entry").path();
        if path.extension().is_some_and(|e| e == "nettrace") {
            same_trace_model(&path.display().to_string(), &std::fs::read(&path).expect("a trace"));
            n += 1;
        }
    }
    assert!(n >= 3, "{n} corpus traces");
}

#[test]
fn generated_traces_give_the_same_model_both_ways() {
    let opts = GenOptions { objects: 40_000, ..Preset::Small.options() };
    for (label, nt) in [
        ("a tick per object", NetTraceOptions { tick_bytes: 0, ..NetTraceOptions::default() }),
        ("a tick per 100 KB", NetTraceOptions::default()),
        ("a tick per object, events lost", NetTraceOptions { tick_bytes: 0, lose_every: 97, ..NetTraceOptions::default() }),
    ] {
        let (trace, _) = generate_nettrace(&opts, &nt, Vec::new()).expect("a generated trace");
        same_trace_model(label, &trace);
    }
}

#[test]
fn gcdump_gives_the_same_model_both_ways() {
    let path = corpus().join("test1.gcdump");
    if !path.exists() {
        assert!(std::env::var("CI").is_err(), "CI=true and {} is missing", path.display());
        eprintln!("SKIPPED: {} is missing", path.display());
        return;
    }
    let bytes = std::fs::read(&path).expect("the snapshot");
    let direct = load_gcdump(&bytes, &Default::default(), |_| {}).expect("loads");
    let graph = clrprof::gcdump::read(&bytes).expect("reads");
    let mut log = Vec::new();
    clrprof::gcdump::write_log(&graph, &mut log);
    let via_text = load(&log, &Default::default()).expect("the text loads");
    assert_eq!(direct.heap_dumps().dumps().len(), 1);
    // The text's model has no import facts (it is a log); the rest is
    // the same.
    let (a, b) = (tables(&direct, &["imported"]), tables(&via_text, &["imported"]));
    if let Some(d) = first_difference(&a, &b, "model") {
        panic!("test1.gcdump: the models differ at {d}");
    }
}

#[test]
fn traces_in_a_folder_give_the_same_model_both_ways() {
    let Ok(dir) = std::env::var("CLRPROF_IMPORT_DIFF_DIR") else {
        eprintln!("(CLRPROF_IMPORT_DIFF_DIR not set: no more traces)");
        return;
    };
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("the folder") {
        let path = entry.expect("an entry").path();
        if path.extension().is_some_and(|e| e == "nettrace") {
            same_trace_model(&path.display().to_string(), &std::fs::read(&path).expect("a trace"));
            n += 1;
        }
    }
    assert!(n > 0, "no .nettrace in {dir}");
}
