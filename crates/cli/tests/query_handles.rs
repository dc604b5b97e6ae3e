//! `clrprof handles`: totals equal CLRProfiler's Summary on every reference
//! log, groups add up, stacks and object types match what the logs say, and
//! the generator's truth (null objects, a type for every other handle).

use clrprof::model::load;
use clrprof::query::{handles_by_stack, Filter, TimeWindow};

mod common;
use common::*;

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn totals_equal_clrprofiler_on_every_reference_log() {
    let Some(dir) = reference_dir() else { return };
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).expect("list") {
        let path = entry.expect("entry").path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".clrprofiler.json"))
        else {
            continue;
        };
        let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
        if r["reader_exit_code"].as_i64() != Some(0) {
            continue;
        }
        let model = load(&std::fs::read(dir.join(format!("{name}.log"))).expect("log"), &Default::default())
            .expect("load");
        let h = handles_by_stack(&model, &Filter::all());
        let raw = &r["reader"];
        assert_eq!(Some(h.created), raw["handles_created_raw"].as_u64(), "{name}");
        assert_eq!(Some(h.destroyed), raw["handles_destroyed_raw"].as_u64(), "{name}");
        assert_eq!(Some(h.surviving), raw["handles_surviving_raw"].as_u64(), "{name}");
        if let Some(c) = r["summary"]["handles_created"].as_u64() {
            assert_eq!(c, h.created, "{name}");
            assert_eq!(r["summary"]["handles_destroyed"].as_u64(), Some(h.destroyed), "{name}");
            assert_eq!(r["summary"]["handles_surviving"].as_u64(), Some(h.surviving), "{name}");
        }
        assert_eq!(h.groups.iter().map(|g| g.created).sum::<u64>(), h.created, "{name}");
        assert_eq!(h.groups.iter().map(|g| g.destroyed).sum::<u64>(), h.destroyed, "{name}");
        assert_eq!(h.groups.iter().map(|g| g.surviving).sum::<u64>(), h.surviving, "{name}");
        for g in &h.groups {
            assert!(g.surviving <= g.created, "{name}: {g:?}");
        }
        checked += 1;
    }
    assert!(checked >= 10);
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn sample_all_kinds_by_hand() {
    let Some(dir) = reference_dir() else { return };
    let log = dir.join("sample-all-kinds.log");
    let model = load(&std::fs::read(&log).expect("log"), &Default::default()).expect("load");
    let h = handles_by_stack(&model, &Filter::all());
    // Two handles from stack 2 (Main -> Work): one on the Sample.Resource at
    // 0x200005C (stack 5), one on the String at 0x2000000 (stack 3); the
    // second is destroyed; a `j` of an unknown handle forms its own group.
    assert_eq!(h.groups.len(), 2);
    let g = &h.groups[0];
    assert_eq!(g.stack_id, Some(2));
    assert_eq!(g.frames, vec!["Program::Work".to_string(), "Program::Main".to_string()]);
    assert_eq!((g.created, g.destroyed, g.surviving), (2, 1, 1));
    let mut types: Vec<(&str, u64)> = g.object_types.iter().map(|t| (t.name.as_str(), t.count)).collect();
    types.sort();
    assert_eq!(types, vec![("Sample.Resource", 1), ("System.String", 1)]);
    let u = &h.groups[1];
    assert_eq!((u.stack_id, u.created, u.destroyed, u.surviving), (None, 0, 1, 0));
    // The command line gives the same JSON.
    let out = clrprof(&["handles", "--json", "-q", log.to_str().unwrap()]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let mut lib = serde_json::to_value(&h).unwrap();
    lib["groups_left_out"] = 0.into();
    assert_eq!(v, lib);
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn generated_log_types_and_nulls_match_the_truth() {
    let Some(dir) = reference_dir() else { return };
    let truth: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("gen-small.truth.json")).expect("truth")).expect("json");
    let model =
        load(&std::fs::read(dir.join("gen-small.log")).expect("log"), &Default::default()).expect("load");
    let h = handles_by_stack(&model, &Filter::all());
    let nulls: u64 = h.groups.iter().map(|g| g.null_objects).sum();
    assert_eq!(Some(nulls), truth["handles"]["null_initial_object"].as_u64());
    // The generator points every other handle at the object it just
    // allocated: each has a type.
    let typed: u64 = h.groups.iter().flat_map(|g| &g.object_types).map(|t| t.count).sum();
    assert_eq!(typed, h.created - nulls);
    for g in &h.groups {
        if g.stack_id.is_some() {
            assert!(g.stack_defined && !g.frames.is_empty(), "{g:?}");
        }
    }
    // A window keeps the events inside it; two halves add up.
    let mid = model.time().seconds(clrprof::model::TickIndex(model.time().len() as u32 / 2)).unwrap() * 1000.0;
    let a = Filter::resolve(&model, &TimeWindow::Millis { from: None, to: Some(mid) }, &[]).unwrap();
    let b = Filter::resolve(&model, &TimeWindow::Millis { from: Some(mid + 0.5), to: None }, &[]).unwrap();
    let (ha, hb) = (handles_by_stack(&model, &a), handles_by_stack(&model, &b));
    assert!(ha.created > 0 && hb.created > 0);
    assert_eq!(ha.created + hb.created, h.created);
    assert_eq!(ha.destroyed + hb.destroyed, h.destroyed);
    assert_eq!(ha.surviving + hb.surviving, h.surviving);
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn golden_table() {
    if reference_dir().is_none() {
        return;
    }
    let out = clrprof(&["handles", "--top", "10", "-q", "../shared/corpus/reference/gen-small.log"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    golden("handles-gen-small.txt", &String::from_utf8(out.stdout).expect("utf-8"));
}

/// A handle on an object allocated long before it (beyond the recent
/// objects searched first), one on an object that died before the handle
/// was made, and one on an address nothing was allocated at.
#[test]
fn object_types_of_old_dead_and_unknown_objects() {
    let mut log = String::from("f 1 Main void () 0x10 4 0 0\nt 1 0 Old\nt 2 0 Filler\nn 1 1 1 24 1\nn 2 1 2 32 1\nn 3 0 1\ni 1\n");
    log.push_str("! 7 0x1000 1\n");
    for k in 0..3000u64 {
        log.push_str(&format!("! 7 0x{:x} 2\n", 0x1018 + 32 * k));
    }
    log.push_str("i 5\nh 7 0x50 0x1000 3\nh 7 0x58 0x1018 3\nh 7 0x60 0x999000 3\n");
    let model = load(log.as_bytes(), &Default::default()).expect("load");
    let h = handles_by_stack(&model, &Filter::all());
    assert_eq!(h.groups.len(), 1);
    let types: Vec<(&str, u64)> = h.groups[0].object_types.iter().map(|t| (t.name.as_str(), t.count)).collect();
    assert_eq!(types, vec![("Filler", 1), ("Old", 1)]);
    // After a GC that removes everything, a handle on the old address finds
    // a dead object: no type.
    let mut log2 = log.clone();
    log2.push_str("b 1 0 0 0x1000 96024 200000 0\nb 0 0 0 0x1000 0 200000 0\ni 9\nh 7 0x68 0x1000 3\n");
    let model = load(log2.as_bytes(), &Default::default()).expect("load");
    let h = handles_by_stack(&model, &Filter::all());
    let typed: u64 = h.groups[0].object_types.iter().map(|t| t.count).sum();
    assert_eq!((h.created, typed), (4, 2));
}
