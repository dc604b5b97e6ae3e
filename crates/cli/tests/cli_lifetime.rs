//! `clrprof lifetime`, `ages`, `survivors` and `calls` end to end: golden
//! tables on the bundled example log, JSON equal to the library's answer,
//! and clear errors.

mod common;

use common::{clrprof, golden};

fn stdout(args: &[&str]) -> String {
    let out = clrprof(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

#[test]
fn tables_on_the_example_log() {
    let log = "corpus/all-kinds.log";
    golden("lifetime-all-kinds.txt", &stdout(&["lifetime", log]));
    golden("lifetime-all-kinds-objects.txt", &stdout(&["lifetime", "--objects", log]));
    golden("ages-all-kinds.txt", &stdout(&["ages", log]));
    golden("ages-at-all-kinds.txt", &stdout(&["ages", "--at", "13", log]));
    golden("survivors-all-kinds.txt", &stdout(&["survivors", "--from", "0", "--to", "13", log]));
    golden("calls-all-kinds.txt", &stdout(&["calls", log]));
    golden("calls-tree-all-kinds.txt", &stdout(&["calls", "--tree", log]));
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn json_equals_the_library() {
    let Some(dir) = common::reference_dir() else { return };
    let path = dir.join("gen-tiny.log");
    let p = path.to_str().unwrap();
    let model = clrprof::model::load(&std::fs::read(&path).unwrap(), &Default::default()).unwrap();
    let all = clrprof::query::Filter::all();
    let parse = |s: String| serde_json::from_str::<serde_json::Value>(&s).unwrap();
    let mut lib = serde_json::to_value(clrprof::query::lifetime(&model, &all)).unwrap();
    lib["rows_left_out"] = 0.into();
    assert_eq!(parse(stdout(&["lifetime", "--json", "--top", "0", p])), lib);
    // Complete without --top too (tables stop at 20 rows, JSON does not).
    assert_eq!(parse(stdout(&["lifetime", "--json", p])), lib);
    let lib = serde_json::to_value(clrprof::query::ages(&model, &all)).unwrap();
    assert_eq!(parse(stdout(&["ages", "--json", p])), lib);
    let by_gcs = parse(stdout(&["ages", "--json", "--by", "gcs", p]));
    assert_eq!(by_gcs["by_gcs"], lib["by_gcs"]);
    assert!(by_gcs.get("by_ms").is_none());
    let mut lib = serde_json::to_value(clrprof::query::calls(&model).unwrap()).unwrap();
    lib["functions_left_out"] = 0.into();
    lib["edges_left_out"] = 0.into();
    assert_eq!(parse(stdout(&["calls", "--json", "--top", "0", p])), lib);
    assert_eq!(parse(stdout(&["calls", "--json", p])), lib);
    let s = parse(stdout(&["survivors", "--json", "--between-comments", "Checkpoint 1", "Checkpoint 3", p]));
    assert!(s["surviving"]["objects"].as_u64().unwrap() > 0);
    let h = parse(stdout(&["ages", "--json", "--at", "40", "--markers", p]));
    assert!(h["bars"].as_array().unwrap().len() >= 2);
}

#[test]
fn clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("nocalls.log");
    let l = log.to_str().unwrap();
    assert!(clrprof(&["gen", "--preset", "tiny", "--objects", "500", "--quiet", "-o", l]).status.success());
    let out = clrprof(&["calls", l]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no calls"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = clrprof(&["calls", "--from", "3", "corpus/all-kinds.log"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("whole log"));
    let out = clrprof(&["ages", "--at", "5", "--scale", "0", "corpus/all-kinds.log"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("positive"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = clrprof(&["ages", "--at", "5", "--scale", "0.000000001", "--quiet", l]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("larger scale"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success());
    let out = clrprof(&["survivors", "--between-comments", "nope", "nada", l]);
    assert!(!out.status.success());
}
