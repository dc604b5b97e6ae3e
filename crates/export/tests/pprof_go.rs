//! The pprof export read by Go's own pprof (`go tool pprof`): its flat
//! (exclusive) figures per function equal `clrprof functions`, its `type`
//! tags equal `clrprof types` (allocated and live at the end), its totals
//! the Summary's, and with `--type-frames` the types are the leaves.

mod common;

use clrprof::model::{Model, TickIndex};
use clrprof::query::{by_function, by_type, summary, type_counts, Filter, HistogramKind, SortBy, TypeSelection};
use clrprof_export::{pprof, ExportOptions};
use common::{go, load, logs, run, Log};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// What `go tool pprof -raw` says: samples (values, location ids) and
/// location names.
struct Raw {
    /// Values (4; 6 for a sampled trace) and location ids.
    samples: Vec<(Vec<i64>, Vec<u64>)>,
    names: BTreeMap<u64, String>,
}

fn raw(file: &Path) -> Raw {
    let text = run(Command::new("go").args(["tool", "pprof", "-raw"]).arg(file));
    let mut samples = Vec::new();
    let mut names = BTreeMap::new();
    let mut section = "";
    for line in text.lines() {
        match line.trim_end() {
            "Samples:" | "Locations" | "Mappings" => {
                section = line.trim_end();
                continue;
            }
            _ => {}
        }
        if section == "Samples:" {
            let Some((values, locations)) = line.split_once(": ") else { continue };
            let v: Vec<i64> = values.split_whitespace().filter_map(|x| x.parse().ok()).collect();
            if !(v.len() == 4 || v.len() == 6) || line.trim_start().starts_with(|c: char| !c.is_ascii_digit()) {
                continue;
            }
            let ids = locations.split_whitespace().map(|x| x.parse().expect("location id")).collect();
            samples.push((v, ids));
        } else if section == "Locations" {
            // `     3: 0x0 M=2 Name With Spaces :0 s=0(signature)`
            let Some((id, rest)) = line.trim_start().split_once(": ") else { continue };
            let Ok(id) = id.parse::<u64>() else { continue };
            let rest = rest.split_once(' ').map_or("", |r| r.1);
            let rest = match rest.strip_prefix("M=") {
                Some(r) => r.split_once(' ').map_or("", |r| r.1),
                None => rest,
            };
            let name = rest.rfind(" :0 s=").map_or(rest, |k| &rest[..k]);
            names.insert(id, name.to_string());
        }
    }
    assert!(!samples.is_empty(), "no samples in go tool pprof -raw output:\n{}", &text[..text.len().min(2000)]);
    Raw { samples, names }
}

/// `go tool pprof -tags`: the values of the `type` tag for a sample type.
fn type_tags(file: &Path, sample_index: &str) -> BTreeMap<String, u64> {
    let text = run(Command::new("go").args(["tool", "pprof", "-tags", "-unit=B"]).arg(format!("-sample_index={sample_index}")).arg(file));
    let mut out = BTreeMap::new();
    let mut in_type = false;
    for line in text.lines() {
        if !line.starts_with("  ") || line.trim_start().contains(": Total ") {
            in_type = line.trim_start().starts_with("type: Total");
            continue;
        }
        if !in_type {
            continue;
        }
        // `   7943280.0B (26.00%): System.String`
        let Some((value, name)) = line.split_once("%): ") else { continue };
        let number: String = value.trim_start().chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
        let v: f64 = number.parse().unwrap_or_else(|_| panic!("tag value in {line:?}"));
        *out.entry(name.to_string()).or_insert(0) += v as u64;
    }
    out.retain(|_, v| *v > 0);
    out
}

/// `go tool pprof -top`: the flat column per name and the total.
fn top(file: &Path, sample_index: &str) -> (BTreeMap<String, u64>, u64) {
    let text = run(Command::new("go")
        .args(["tool", "pprof", "-top", "-unit=B", "-nodecount=1000000", "-nodefraction=0", "-edgefraction=0"])
        .arg(format!("-sample_index={sample_index}"))
        .arg(file));
    let mut flat = BTreeMap::new();
    let mut total = None;
    let mut body = false;
    for line in text.lines() {
        if let Some(k) = line.find("% of ") {
            let t = line[k + 5..].split_whitespace().next().unwrap_or("");
            total = Some(t.trim_end_matches('B').parse::<u64>().unwrap_or_else(|_| panic!("total in {line:?}")));
        }
        if line.trim_start().starts_with("flat") {
            body = true;
            continue;
        }
        if !body {
            continue;
        }
        // `   1696408B  5.55%  5.55%   4133608B 13.53%  Name`
        let cells: Vec<&str> = line.split_whitespace().collect();
        if cells.len() < 6 {
            continue;
        }
        let mut rest = line.trim_start();
        for _ in 0..5 {
            rest = rest.split_once(char::is_whitespace).map_or("", |r| r.1).trim_start();
        }
        let v: u64 = cells[0].trim_end_matches('B').parse().unwrap_or_else(|_| panic!("flat in {line:?}"));
        *flat.entry(rest.to_string()).or_insert(0) += v;
    }
    (flat, total.unwrap_or_else(|| panic!("no total in:\n{text}")))
}

fn export(model: &Model, options: &ExportOptions, dir: &Path, name: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    pprof::write(model, options, std::fs::File::create(&path).expect("create")).expect("export");
    path
}

/// Exclusive bytes and objects per function name, as `clrprof functions`.
fn exclusive_by_name(model: &Model) -> BTreeMap<String, (u64, u64)> {
    let mut m = BTreeMap::new();
    for r in by_function(model, &Filter::all(), SortBy::Exclusive) {
        if r.figures.exclusive_count > 0 {
            let e = m.entry(r.name).or_insert((0, 0));
            e.0 += r.figures.exclusive_bytes;
            e.1 += r.figures.exclusive_count;
        }
    }
    m
}

fn bytes_by_type(model: &Model, kind: HistogramKind) -> BTreeMap<String, u64> {
    by_type(model, kind).into_iter().filter(|r| r.bytes > 0).map(|r| (r.name, r.bytes as u64)).collect()
}

/// Checks one log; true when its middle's live bytes differ from its end's
/// (so that `--at` was seen to matter).
fn check(log: &Log, dir: &Path) -> bool {
    let model = load(log);
    let s = summary(&model);
    let file = export(&model, &ExportOptions::default(), dir, "plain.pb.gz");

    // -raw: the samples, with the leaf location's function.
    let r = raw(&file);
    let mut flat: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut totals = [0i64; 6];
    for (v, ids) in &r.samples {
        for (k, x) in v.iter().enumerate() {
            totals[k] += x;
        }
        if v[0] > 0 {
            let leaf = &r.names[&ids[0]];
            let e = flat.entry(leaf.clone()).or_insert((0, 0));
            e.0 += v[1] as u64;
            e.1 += v[0] as u64;
        }
    }
    assert_eq!(flat, exclusive_by_name(&model), "{}: flat per function (go tool pprof -raw) vs clrprof functions", log.name);
    assert_eq!(totals[1] as u64, s.allocated_bytes, "{}: alloc_space", log.name);
    assert_eq!(totals[3] as u64, s.final_heap_bytes, "{}: inuse_space", log.name);
    let objects: u64 = by_type(&model, HistogramKind::Allocated).iter().map(|r| r.count).sum();
    assert_eq!(totals[0] as u64, objects, "{}: alloc_objects (as clrprof types counts them)", log.name);
    if model.sampling().is_none() {
        assert_eq!(objects, model.allocations().len() as u64, "{}: every allocation", log.name);
    }
    let widths: std::collections::BTreeSet<usize> = r.samples.iter().map(|(v, _)| v.len()).collect();
    if model.sampling().is_some() {
        // The samples behind the figures: every sample once, as `types`
        // counts them per type, allocated and in use.
        assert_eq!(widths, [6].into(), "{}: a trace's profile has alloc_samples and inuse_samples", log.name);
        assert_eq!(totals[4] as u64, model.allocations().len() as u64, "{}: alloc_samples", log.name);
        let samples_by_type = |kind| -> BTreeMap<String, u64> {
            by_type(&model, kind).into_iter().filter(|r| r.samples > 0).map(|r| (r.name, r.samples)).collect()
        };
        assert_eq!(type_tags(&file, "alloc_samples"), samples_by_type(HistogramKind::Allocated), "{}: alloc_samples per type", log.name);
        let inuse = samples_by_type(HistogramKind::FinalHeap);
        assert_eq!(totals[5] as u64, inuse.values().sum::<u64>(), "{}: inuse_samples", log.name);
        assert_eq!(type_tags(&file, "inuse_samples"), inuse, "{}: inuse_samples per type", log.name);
        let comments = run(Command::new("go").args(["tool", "pprof", "-comments"]).arg(&file));
        assert!(comments.contains("a figure resting on k samples has a 95% range"), "{}: {comments}", log.name);
    } else {
        assert_eq!(widths, [4].into(), "{}: a log's profile has the four exact sample types", log.name);
    }

    // -top: pprof's own aggregation.
    let (top_flat, total) = top(&file, "alloc_space");
    assert_eq!(total, s.allocated_bytes, "{}: -top total", log.name);
    let expected: BTreeMap<String, u64> =
        exclusive_by_name(&model).into_iter().filter(|e| e.1 .0 > 0).map(|(k, v)| (k, v.0)).collect();
    let top_flat: BTreeMap<String, u64> = top_flat.into_iter().filter(|e| e.1 > 0).collect();
    assert_eq!(top_flat, expected, "{}: -top flat vs clrprof functions (exclusive bytes)", log.name);

    // -tags: the type label, allocated and in use.
    assert_eq!(type_tags(&file, "alloc_space"), bytes_by_type(&model, HistogramKind::Allocated), "{}: alloc types", log.name);
    assert_eq!(type_tags(&file, "inuse_space"), bytes_by_type(&model, HistogramKind::FinalHeap), "{}: inuse types", log.name);

    // --type-frames: the types are the leaves.
    let options = ExportOptions { type_frames: true, ..ExportOptions::default() };
    let typed = export(&model, &options, dir, "typed.pb.gz");
    let (leaves, total) = top(&typed, "alloc_space");
    assert_eq!(total, s.allocated_bytes);
    let leaves: BTreeMap<String, u64> = leaves.into_iter().filter(|e| e.1 > 0).collect();
    assert_eq!(leaves, bytes_by_type(&model, HistogramKind::Allocated), "{}: type frames", log.name);

    // --at: the objects live in the middle of the log.
    let at = TickIndex((model.time().len() / 2) as u32);
    let options = ExportOptions { at: Some(at), ..ExportOptions::default() };
    let mid = export(&model, &options, dir, "at.pb.gz");
    let live = type_counts(&model, &TypeSelection { kind: HistogramKind::FinalHeap, at: Some(at) }, &Filter::all()).expect("live");
    let live_bytes = clrprof::query::summary::histogram_bytes(&model, &live);
    let (_, total) = top(&mid, "inuse_space");
    assert_eq!(total, live_bytes, "{}: in use at the middle", log.name);
    live_bytes != s.final_heap_bytes
}

#[test]
#[cfg_attr(any(no_go, no_reference_corpus), ignore = "needs go and ../shared/corpus/reference, missing when built (touch crates/export/build.rs after installing)")]
fn go_pprof_reads_the_figures_of_clrprof() {
    let Some(()) = go() else { return };
    let Some(logs) = logs() else { return };
    let mut at_mattered = false;
    for log in &logs {
        let dir = tempfile::tempdir().expect("tempdir");
        at_mattered |= check(log, dir.path());
    }
    assert!(at_mattered, "no log has other live objects in its middle than at its end");
}

/// A trace's sampled allocations, weighted, reach pprof (what
/// `dotnet-trace convert` leaves out): every figure `go tool pprof` reads
/// is clrprof's.
#[test]
#[cfg_attr(any(no_eventpipe_corpus, no_go, no_reference_corpus), ignore = "needs ../shared/corpus/eventpipe and go and ../shared/corpus/reference, missing when built (touch crates/export/build.rs after installing)")]
fn go_pprof_reads_a_traces_allocations() {
    let Some(()) = go() else { return };
    let Some(trace) = common::trace_log() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    check(&trace, dir.path());
    let model = common::load(&trace);
    assert!(summary(&model).allocated_bytes > 4_000_000_000, "the trace's estimated bytes");
}

/// pprof's `File:` line names the program (here the log) the caller gives,
/// not the first module, which is often a framework DLL.
#[test]
#[cfg_attr(any(no_go, no_reference_corpus), ignore = "needs go and ../shared/corpus/reference, missing when built (touch crates/export/build.rs after installing)")]
fn file_line_names_the_program() {
    let Some(()) = go() else { return };
    let Some(logs) = logs() else { return };
    let log = &logs[0];
    let model = load(log);
    let dir = tempfile::tempdir().expect("tempdir");
    let options = ExportOptions { program: Some("app_1234.log".into()), ..ExportOptions::default() };
    let file = export(&model, &options, dir.path(), "named.pb.gz");
    let text = run(Command::new("go").args(["tool", "pprof", "-top", "-nodecount=1"]).arg(&file));
    assert!(text.lines().any(|l| l == "File: app_1234.log"), "{}: {text}", log.name);
    // The figures are those of the unnamed profile.
    let plain = export(&model, &ExportOptions::default(), dir.path(), "plain.pb.gz");
    assert_eq!(top(&file, "alloc_space"), top(&plain, "alloc_space"), "{}", log.name);
}

/// A trace whose ticks carry object sizes (as .NET 5 and later write
/// them): there the estimated objects are not the samples, and pprof's
/// `alloc_samples`/`inuse_samples` must be the samples, per type and in
/// all, not the estimates.
#[test]
#[cfg_attr(no_go, ignore = "needs go, missing when built (touch crates/export/build.rs after installing)")]
fn go_pprof_reads_the_samples_behind_a_traces_estimates() {
    let Some(()) = go() else { return };
    let mut o = clrprof_gen::Preset::Small.options();
    o.threads = 3;
    let (data, _) = clrprof_gen::nettrace::generate_nettrace(&o, &Default::default(), Vec::new()).expect("generate");
    let log = Log { name: "a generated trace with object sizes".to_string(), data };
    let model = load(&log);
    let samples = model.allocations().len() as u64;
    let estimated: u64 = by_type(&model, HistogramKind::Allocated).iter().map(|r| r.count).sum();
    assert!(samples > 100 && estimated > 10 * samples, "{samples} samples for {estimated} estimated objects");
    let dir = tempfile::tempdir().expect("tempdir");
    check(&log, dir.path());
}
