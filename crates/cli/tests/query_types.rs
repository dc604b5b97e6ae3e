//! `clrprof types` and the type queries: CLRProfiler's five histograms by
//! type equal its own figures (`*_by_type` of the reference files) on every
//! reference log it read without error; the live set at a time equals a
//! hand-computed answer and a naive per-object replay; filtered allocations
//! equal a naive count; the table output is pinned by golden files.

use clrprof::model::{load, Fate, Model, ObjectId, TickIndex};
use clrprof::query::{
    by_bytes, group_by_name, size_buckets, type_counts, BucketScale, Filter, HistogramKind, TimeWindow, TypeCount,
    TypeSelection,
};
use std::collections::BTreeMap;
use std::path::Path;

mod common;
use common::*;

/// `(name, bytes, count)` sorted by name.
type Rows = Vec<(String, i64, u64)>;

fn reference(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).expect("read reference json")).expect("reference json")
}

fn reference_rows(v: &serde_json::Value, key: &str) -> Rows {
    let obj = v[key].as_object().unwrap_or_else(|| panic!("{key} missing"));
    let mut rows: Rows = obj
        .iter()
        .map(|(name, e)| (name.clone(), e["bytes"].as_i64().expect("bytes"), e["count"].as_u64().expect("count")))
        .collect();
    rows.sort();
    rows
}

fn rows_of(types: &[TypeCount]) -> Rows {
    let mut rows: Rows = types.iter().map(|t| (t.name.clone(), t.bytes, t.count)).collect();
    rows.sort();
    rows
}

fn assert_sorted_by_bytes(types: &[TypeCount], what: &str) {
    for w in types.windows(2) {
        assert!(
            w[0].bytes > w[1].bytes || (w[0].bytes == w[1].bytes && w[0].name < w[1].name),
            "{what}: not sorted by bytes then name: {:?} before {:?}",
            w[0],
            w[1]
        );
    }
}

fn cli_kind(kind: HistogramKind) -> &'static str {
    match kind {
        HistogramKind::Allocated => "allocated",
        HistogramKind::Relocated => "relocated",
        HistogramKind::FinalHeap => "final",
        HistogramKind::Finalized => "finalized",
        HistogramKind::CriticalFinalized => "critical",
    }
}

fn cli_json(args: &[&str]) -> serde_json::Value {
    let out = clrprof(args);
    assert!(out.status.success(), "clrprof {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json output")
}

fn json_types(v: &serde_json::Value) -> Vec<TypeCount> {
    assert_eq!(v["types_left_out"], 0, "JSON lists every type unless --top is given");
    v["types"]
        .as_array()
        .expect("an array")
        .iter()
        .map(|e| TypeCount {
            name: e["type"].as_str().expect("type").to_string(),
            bytes: e["bytes"].as_i64().expect("bytes"),
            count: e["count"].as_u64().expect("count"),
            uncertainty: None,
        })
        .collect()
}

/// The reference logs CLRProfiler read to the end without an error.
fn clean_reference_logs() -> Vec<(String, std::path::PathBuf, serde_json::Value)> {
    let Some(dir) = reference_dir() else { return Vec::new() };
    let mut v = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("list reference dir") {
        let path = entry.expect("entry").path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".clrprofiler.json"))
        else {
            continue;
        };
        let r = reference(&path);
        if r["reader_exit_code"].as_i64() == Some(0) {
            v.push((name.to_string(), dir.join(format!("{name}.log")), r));
        }
    }
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

fn load_file(path: &Path) -> Model {
    load(&std::fs::read(path).expect("read log"), &Default::default()).expect("load")
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn every_kind_equals_clrprofiler_on_every_reference_log() {
    let logs = clean_reference_logs();
    if logs.is_empty() {
        return;
    }
    assert!(logs.len() >= 10, "only {} clean reference logs", logs.len());
    for (name, path, r) in &logs {
        let model = load_file(path);
        for (kind, key) in HistogramKind::ALL {
            let counts = type_counts(&model, &TypeSelection { kind, at: None }, &Filter::all()).expect("counts");
            let types = by_bytes(group_by_name(&model, counts.iter()));
            assert_sorted_by_bytes(&types, name);
            assert_eq!(rows_of(&types), reference_rows(r, key), "{name}: {key}");
        }
    }
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn cli_json_equals_clrprofiler() {
    let Some(dir) = reference_dir() else { return };
    for name in ["gen-small", "sample-all-kinds"] {
        let r = reference(&dir.join(format!("{name}.clrprofiler.json")));
        let log = dir.join(format!("{name}.log"));
        let log = log.to_str().expect("utf-8 path");
        for (kind, key) in HistogramKind::ALL {
            let v = cli_json(&["types", "--kind", cli_kind(kind), "--json", "--quiet", log]);
            let types = json_types(&v);
            assert_sorted_by_bytes(&types, name);
            assert_eq!(rows_of(&types), reference_rows(&r, key), "{name}: {key}");
        }
    }
}

/// The live set at the last tick slot, computed object by object from the
/// fates, equals the final-heap histogram (CLRProfiler's final walk).
#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn live_at_the_end_equals_the_final_heap() {
    for (name, path, _) in clean_reference_logs() {
        let model = load_file(&path);
        let last = TickIndex(model.time().len() as u32 - 1);
        let at = type_counts(&model, &TypeSelection { kind: HistogramKind::FinalHeap, at: Some(last) }, &Filter::all())
            .expect("at");
        assert_eq!(
            rows_of(&by_bytes(group_by_name(&model, at.iter()))),
            rows_of(&by_bytes(group_by_name(&model, HistogramKind::FinalHeap.of(&model).iter()))),
            "{name}"
        );
    }
    // And through the command line, on a log with GCs and moves.
    let Some(dir) = reference_dir() else { return };
    let log = dir.join("gen-small.log");
    let model = load_file(&log);
    let last_ms = model.time().seconds(TickIndex(model.time().len() as u32 - 1)).expect("time") * 1000.0;
    let log = log.to_str().expect("utf-8 path");
    let end = cli_json(&["types", "--kind", "final", "--json", "-q", log]);
    let at = cli_json(&["types", "--kind", "final", "--at", &format!("{last_ms}"), "--json", "-q", log]);
    assert_eq!(at, end);
}

/// A hand-made log: three objects, a GC that keeps only the middle one, a
/// fourth object after it.
#[test]
fn live_at_a_time_on_a_hand_log() {
    let log = b"t 1 0 A\nt 2 0 B\nn 1 1 1 24\nn 2 1 2 40\ni 10\n! 1 0x1000 1\n! 1 0x1018 2\n! 1 0x1040 1\n\
i 20\nb 1 0 0 0x1000 88 65536 0\nv 0x1018 40\nb 0 0 0 0x1000 88 65536 0\ni 30\n! 1 0x1058 2\ni 40\n";
    let model = load(log, &Default::default()).expect("load");
    let live = |ms: f64| -> Rows {
        let at = Some(model.time().tick_at(ms / 1000.0));
        let c = type_counts(&model, &TypeSelection { kind: HistogramKind::FinalHeap, at }, &Filter::all()).unwrap();
        rows_of(&by_bytes(group_by_name(&model, c.iter())))
    };
    let a = |n: u64| ("A".to_string(), 24 * n as i64, n);
    let b = |n: u64| ("B".to_string(), 40 * n as i64, n);
    assert_eq!(live(5.0), vec![]);
    assert_eq!(live(10.0), vec![a(2), b(1)]);
    assert_eq!(live(19.0), vec![a(2), b(1)]);
    // The GC ended in the 20 ms slot: at its end only B is left.
    assert_eq!(live(20.0), vec![b(1)]);
    assert_eq!(live(29.0), vec![b(1)]);
    assert_eq!(live(30.0), vec![b(2)]);
    assert_eq!(live(1e9), vec![b(2)]);
    // Objects allocated in a window and live at the end: only the last one.
    let f = Filter::resolve(&model, &TimeWindow::Millis { from: Some(25.0), to: None }, &[]).unwrap();
    let c = type_counts(&model, &TypeSelection { kind: HistogramKind::FinalHeap, at: None }, &f).unwrap();
    assert_eq!(rows_of(&by_bytes(group_by_name(&model, c.iter()))), vec![b(1)]);
}

/// Naive: every object, one at a time, through the model's random-access
/// accessors, grouped by type name.
fn naive(model: &Model, keep: impl Fn(ObjectId) -> bool) -> Rows {
    let mut m: BTreeMap<String, (i64, u64)> = BTreeMap::new();
    for i in 0..model.allocations().len() as u32 {
        let obj = ObjectId(i);
        if !keep(obj) {
            continue;
        }
        let (ty, size) = model.stacks().type_and_size(model.allocations().stack(obj)).expect("alloc stack");
        let e = m.entry(model.type_name(ty).into_owned()).or_insert((0, 0));
        e.0 += size as i64;
        e.1 += 1;
    }
    m.into_iter().map(|(k, (b, c))| (k, b, c)).collect()
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn live_at_mid_log_equals_a_naive_replay() {
    let Some(dir) = reference_dir() else { return };
    for name in ["gen-small", "gen-tiny", "sample-all-kinds"] {
        let model = load_file(&dir.join(format!("{name}.log")));
        let slots = model.time().len() as u32;
        for k in 1..=7 {
            let t = TickIndex(slots * k / 8);
            let a = model.allocations();
            let expected = naive(&model, |obj| {
                a.tick(obj) <= t
                    && a.fate(obj) != Fate::Untracked
                    && model.death_tick(obj).map_or(true, |d| d > t)
            });
            let c = type_counts(&model, &TypeSelection { kind: HistogramKind::FinalHeap, at: Some(t) }, &Filter::all())
                .unwrap();
            let got = rows_of(&by_bytes(group_by_name(&model, c.iter())));
            assert!(!expected.is_empty() || name == "sample-all-kinds", "{name} at {t}: empty");
            assert_eq!(got, expected, "{name}: live at tick {t}");
        }
        // With a window of allocation times and a thread, at the end and at
        // a time inside and after the window.
        let a = model.allocations();
        let thread = a.thread(ObjectId(a.len() as u32 / 2));
        let (from, to) = (TickIndex(slots / 5), TickIndex(slots * 3 / 5));
        let f = Filter { from, to, threads: Some(vec![thread]) };
        for at in [None, Some(TickIndex(slots / 2)), Some(TickIndex(slots * 4 / 5)), Some(TickIndex(slots - 1))] {
            let expected = naive(&model, |obj| {
                let tick = a.tick(obj);
                from <= tick
                    && tick <= to
                    && a.thread(obj) == thread
                    && at.map_or(true, |t| tick <= t)
                    && match at {
                        None => a.fate(obj) == Fate::Alive,
                        Some(t) => a.fate(obj) != Fate::Untracked && model.death_tick(obj).map_or(true, |d| d > t),
                    }
            });
            let c = type_counts(&model, &TypeSelection { kind: HistogramKind::FinalHeap, at }, &f).unwrap();
            let got = rows_of(&by_bytes(group_by_name(&model, c.iter())));
            assert!(!expected.is_empty() || name != "gen-small", "{name} {at:?}: empty");
            assert_eq!(got, expected, "{name}: window, thread, at {at:?}");
        }
    }
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn filtered_allocations_equal_a_naive_count() {
    let Some(dir) = reference_dir() else { return };
    let path = dir.join("gen-small.log");
    let model = load_file(&path);
    let a = model.allocations();
    let ms = |obj: ObjectId| model.time().seconds(a.tick(obj)).expect("time") * 1000.0;
    let thread = model.threads().id(a.thread(ObjectId(0))).expect("thread").0;
    let cases: [(Option<f64>, Option<f64>, Vec<i32>); 4] = [
        (Some(60.0), Some(140.0), vec![]),
        (None, Some(30.5), vec![]),
        (Some(200.0), None, vec![thread]),
        (None, None, vec![thread]),
    ];
    for (from, to, threads) in cases {
        let window = TimeWindow::Millis { from, to };
        let window = if from.is_none() && to.is_none() { TimeWindow::All } else { window };
        let f = Filter::resolve(&model, &window, &threads).expect("filter");
        let c = type_counts(&model, &TypeSelection { kind: HistogramKind::Allocated, at: None }, &f).unwrap();
        let got = rows_of(&by_bytes(group_by_name(&model, c.iter())));
        let expected = naive(&model, |obj| {
            let t = ms(obj);
            from.map_or(true, |f| t >= f)
                && to.map_or(true, |x| t <= x)
                && (threads.is_empty() || model.threads().id(a.thread(obj)).map(|i| i.0) == Some(threads[0]))
        });
        assert!(!expected.is_empty(), "{from:?}..{to:?} {threads:?}: nothing");
        assert_eq!(got, expected, "{from:?}..{to:?} {threads:?}");
        // The command line agrees.
        let mut args: Vec<String> = vec!["types".into(), "--json".into(), "-q".into()];
        if let Some(v) = from {
            args.extend(["--from".into(), v.to_string()]);
        }
        if let Some(v) = to {
            args.extend(["--to".into(), v.to_string()]);
        }
        for t in &threads {
            args.extend(["--thread".into(), t.to_string()]);
        }
        args.push(path.to_str().expect("utf-8").into());
        let v = cli_json(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(rows_of(&json_types(&v)), expected);
    }
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn finalized_filtered_by_all_equals_the_histogram_and_relocated_refuses_a_window() {
    let Some(dir) = reference_dir() else { return };
    let path = dir.join("gen-small.log");
    let model = load_file(&path);
    // A window covering everything takes the per-event path.
    let f = Filter::resolve(&model, &TimeWindow::Millis { from: Some(0.0), to: Some(1e12) }, &[]).unwrap();
    assert!(!f.is_all());
    for kind in [HistogramKind::Finalized, HistogramKind::CriticalFinalized, HistogramKind::Allocated] {
        let c = type_counts(&model, &TypeSelection { kind, at: None }, &f).unwrap();
        assert_eq!(
            rows_of(&by_bytes(group_by_name(&model, c.iter()))),
            rows_of(&by_bytes(group_by_name(&model, kind.of(&model).iter()))),
            "{kind:?}"
        );
    }
    let out = clrprof(&["types", "--kind", "relocated", "--from", "10", "-q", path.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("relocated"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = clrprof(&["types", "--kind", "allocated", "--at", "10", "-q", path.to_str().unwrap()]);
    assert!(!out.status.success());
}

/// Size classes: every object of a size in 8..2^30 is in exactly one class,
/// whose bounds hold its size; totals per class are naive sums.
#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn size_buckets_hold_every_object_once() {
    let Some(dir) = reference_dir() else { return };
    let model = load_file(&dir.join("gen-small.log"));
    let counts = HistogramKind::Allocated.of(&model);
    for scale in [BucketScale::Coarse, BucketScale::Medium, BucketScale::Fine, BucketScale::VeryFine] {
        let b = size_buckets(&model, counts, scale);
        let mut expect_count = 0u64;
        let mut expect_bytes = 0u64;
        for i in 0..model.allocations().len() as u32 {
            let (_, size) = model.stacks().type_and_size(model.allocations().stack(ObjectId(i))).unwrap();
            if (8..1 << 30).contains(&size) {
                expect_count += 1;
                expect_bytes += size as u64;
                let n = b.iter().filter(|k| k.min_size <= size as u32 && size as u32 <= k.max_size).count();
                assert_eq!(n, 1, "{scale:?}: size {size}");
            }
        }
        assert_eq!(b.iter().map(|k| k.count).sum::<u64>(), expect_count, "{scale:?}");
        assert_eq!(b.iter().map(|k| k.bytes).sum::<u64>(), expect_bytes, "{scale:?}");
        for k in &b {
            assert_eq!(k.types.iter().map(|t| t.count).sum::<u64>(), k.count);
            assert_eq!(k.types.iter().map(|t| t.bytes as u64).sum::<u64>(), k.bytes);
        }
        assert!(b.last().unwrap().count > 0 && b[1].count > 0);
    }
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn golden_tables() {
    if reference_dir().is_none() {
        return;
    }
    let log = "../shared/corpus/reference/gen-small.log";
    for (file, args) in [
        ("types-gen-small-allocated.txt", vec!["types", "--buckets", "-q", log]),
        ("types-gen-small-final-at-100.txt", vec!["types", "--kind", "final", "--at", "100", "--top", "8", "-q", log]),
        ("types-gen-small-finalized.txt", vec!["types", "--kind", "finalized", "-q", log]),
    ] {
        let out = clrprof(&args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        golden(file, &String::from_utf8(out.stdout).expect("utf-8"));
    }
}

/// The allocation table's range accessors the type queries use agree with
/// its whole-table iterators.
#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn range_accessors_agree_with_whole_table_iterators() {
    let Some(dir) = reference_dir() else { return };
    let model = load_file(&dir.join("gen-tiny.log"));
    let a = model.allocations();
    let n = a.len() as u32;
    let all: Vec<u64> = a.addresses().collect();
    let fates: Vec<Fate> = a.fates().collect();
    for (s, e) in [(0, n), (1, 300), (255, 257), (256, 1000), (n / 3, n / 2 + 7), (n - 5, n), (10, 10)] {
        let got: Vec<u64> = a.addresses_in(ObjectId(s)..ObjectId(e)).collect();
        assert_eq!(got, all[s as usize..e as usize], "addresses {s}..{e}");
        for (obj, fate) in a.stored_fates_in(ObjectId(s)..ObjectId(e)) {
            assert!((s..e).contains(&obj.0));
            assert_eq!(fate, fates[obj.index()], "{obj:?}");
        }
    }
    // Objects with no stored fate have the default one.
    let stored: std::collections::HashSet<u32> =
        a.stored_fates_in(ObjectId(0)..ObjectId(n)).map(|(o, _)| o.0).collect();
    let ends = a.allocated_before_gcs();
    for i in (0..n).filter(|i| !stored.contains(i)) {
        let born = ends.partition_point(|&b| b <= i);
        let default = if born == ends.len() {
            Fate::Alive
        } else {
            Fate::DiedAtGc { gc: clrprof::model::GcIndex(born as u32), generation: 0 }
        };
        assert_eq!(fates[i as usize], default, "object {i}");
    }
    assert!(!stored.is_empty() && stored.len() < n as usize);
}
