//! `clrprof dump N --retained --by type|stack|function` and `clrprof
//! dump-diff A B --by ...`: golden tables on a generated log and on
//! `corpus/dump-sites.log` (objects from before the log, a log without
//! allocation records), and JSON that holds every group with figures that
//! add up to the totals.

mod common;

use common::{clrprof, golden};
use serde_json::Value;
use std::path::Path;

fn run(args: &[&str]) -> String {
    let out = clrprof(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn json(args: &[&str]) -> Value {
    serde_json::from_str(&run(args)).expect("JSON output")
}

/// A log from the project's generator with three heap dumps.
fn generated(dir: &Path) -> String {
    let log = dir.join("g.log");
    let l = log.to_str().expect("UTF-8 path");
    run(&["gen", "--preset", "tiny", "--objects", "20000", "--gcs", "6", "--heap-dumps", "3", "--seed", "3", "-q", "-o", l]);
    l.to_string()
}

fn sum(v: &Value, field: &str) -> u64 {
    v.as_array().expect("an array").iter().map(|s| s[field].as_u64().expect(field)).sum()
}

#[test]
fn retained_by_site_tables_are_golden() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = generated(dir.path());
    for (by, top) in [("function", "8"), ("stack", "5"), ("type", "5")] {
        let out = run(&["dump", &log, "2", "--retained", "--by", by, "--top", top, "-q"]);
        golden(&format!("dump-retained-by-{by}-gen.txt"), &out);
    }
    let out = run(&["dump-diff", &log, "0", "2", "--by", "function", "--top", "8", "-q"]);
    golden("dump-diff-by-function-gen.txt", &out);
}

#[test]
fn objects_without_a_known_allocation_are_shown() {
    let log = "corpus/dump-sites.log";
    let mut out = String::new();
    for args in [
        vec!["dump", log, "0", "--retained", "--by", "function", "-q"],
        vec!["dump", log, "1", "--retained", "--by", "function", "-q"],
        vec!["dump", log, "1", "--retained", "--by", "stack", "-q"],
        vec!["dump-diff", log, "1", "2", "--by", "function", "-q"],
        vec!["dump-diff", log, "1", "2", "--by", "stack", "-q"],
    ] {
        out.push_str(&format!("$ clrprof {}\n", args.join(" ")));
        out.push_str(&run(&args));
    }
    // The same log without its allocation records.
    let dir = tempfile::tempdir().expect("temp dir");
    let bare = dir.path().join("bare.log");
    let text = std::fs::read_to_string(common::repo_root().join(log)).expect("read the corpus log");
    let kept: String = text.lines().filter(|l| !l.starts_with('!')).map(|l| format!("{l}\n")).collect();
    std::fs::write(&bare, kept).expect("write");
    let b = bare.to_str().expect("UTF-8 path");
    out.push_str("$ clrprof dump bare.log 2 --retained --by function -q\n");
    out.push_str(&run(&["dump", b, "2", "--retained", "--by", "function", "-q"]));
    golden("dump-sites-unknown.txt", &out);
}

#[test]
fn json_holds_every_group() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = generated(dir.path());
    let plain = json(&["dump", &log, "2", "--retained", "--json", "-q", "--top", "0"]);
    for by in ["function", "stack", "type"] {
        // The default --top (20) limits tables, never the JSON.
        let r = json(&["dump", &log, "2", "--retained", "--by", by, "--json", "-q"]);
        assert_eq!(r["by"], by);
        let sites = &r["sites"];
        assert!(sites.as_array().unwrap().len() > 20, "{by}: every group, not the top 20");
        assert_eq!(sum(sites, "objects"), r["objects"].as_u64().unwrap(), "{by}");
        assert_eq!(sum(sites, "bytes"), r["bytes"].as_u64().unwrap(), "{by}");
        assert_eq!(sum(sites, "top_level"), plain["root_retained"].as_u64().unwrap(), "{by}: top level adds up");
        assert_eq!(r["unknown"]["objects"], 0, "{by}: the generator allocates every object in the log");
        if by == "stack" {
            let deepest = sites.as_array().unwrap().iter().filter_map(|s| s["frames"].as_array()).map(Vec::len).max();
            assert!(deepest > Some(3), "frames, all of them: {deepest:?}");
        }
    }
    let d = json(&["dump-diff", &log, "0", "2", "--by", "function", "--json", "-q"]);
    let plain = json(&["dump-diff", &log, "0", "2", "--json", "-q"]);
    for field in ["new_objects", "new_bytes", "gone_objects", "gone_bytes"] {
        assert_eq!(sum(&d["sites"], field), plain[field].as_u64().unwrap(), "{field}");
    }
    assert_eq!(d["kept_objects"], plain["kept_objects"]);
    assert!(d["sites"].as_array().unwrap().len() > 20);
}

#[test]
fn by_needs_retained_and_a_known_key() {
    let log = "corpus/dump-sites.log";
    let out = clrprof(&["dump", log, "1", "--by", "function"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--retained"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = clrprof(&["dump-diff", log, "1", "2", "--by", "module"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("function"));
    let out = clrprof(&["dump", log, "5", "--retained", "--by", "stack", "-q"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no heap dump 5"));
}
