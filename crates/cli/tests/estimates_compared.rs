//! Two traces compared (`diff`, `check`): their figures are estimates from
//! samples, so each comparison carries both sides' 95% ranges and the
//! change's, and a rule is decided only where the sampling cannot explain
//! the change. Traces made by `clrprof gen --format nettrace` (one
//! allocation tick per about 100 KB, as the runtime samples): two runs of
//! the same program (seeds 1 and 2) and one that allocates twice as much.

mod common;

use common::clrprof;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn work(test: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("estimates-compared-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&d).expect("work folder");
    d
}

/// A generated trace of `objects` allocations with `seed`.
fn trace(dir: &Path, name: &str, objects: &str, seed: &str) -> String {
    let path = dir.join(name);
    let out = clrprof(&[
        "gen",
        "--preset",
        "small",
        "--objects",
        objects,
        "--seed",
        seed,
        "--format",
        "nettrace",
        "-q",
        "-o",
        path.to_str().expect("UTF-8"),
    ]);
    assert!(out.status.success(), "gen: {}", String::from_utf8_lossy(&out.stderr));
    path.to_string_lossy().into_owned()
}

fn json(args: &[&str]) -> (Value, Option<i32>) {
    let out = clrprof(args);
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    (v, out.status.code())
}

/// The rule named `rule` of a check's JSON.
fn verdict<'a>(v: &'a Value, metric: &str, name: Option<&str>) -> &'a Value {
    v["rules"]
        .as_array()
        .and_then(|r| r.iter().find(|x| x["metric"] == metric && x["name"].as_str() == name))
        .unwrap_or_else(|| panic!("no {metric} {name:?} in {v}"))
}

#[test]
fn diff_of_traces_gives_each_change_its_range() {
    let dir = work("diff");
    let (a, a2, b) =
        (trace(&dir, "a.nettrace", "300000", "1"), trace(&dir, "a2.nettrace", "309000", "1"), trace(&dir, "b.nettrace", "600000", "1"));

    // Two runs of the same program: every row has its ranges, each figure
    // inside its own, and most changes are the sampling's.
    let (same, code) = json(&["diff", &a, &a2, "--json", "-q", "--top", "0"]);
    assert_eq!(code, Some(0), "{same}");
    let rows = same["allocated_by_type"].as_array().expect("rows");
    assert!(rows.len() > 10, "{same}");
    for r in rows {
        let [alo, ahi] = [r["a_bytes_range"][0].as_u64().expect("range"), r["a_bytes_range"][1].as_u64().expect("range")];
        let [blo, bhi] = [r["b_bytes_range"][0].as_u64().expect("range"), r["b_bytes_range"][1].as_u64().expect("range")];
        let (x, y) = (r["a_bytes"].as_u64().expect("a"), r["b_bytes"].as_u64().expect("b"));
        assert!(alo <= x && x <= ahi && blo <= y && y <= bhi, "{r}");
        let [lo, hi] = [r["diff_bytes_range"][0].as_i64().expect("range"), r["diff_bytes_range"][1].as_i64().expect("range")];
        let d = r["diff_bytes"].as_i64().expect("diff");
        assert!(lo <= d && d <= hi, "{r}");
        assert_eq!(r["significant"].as_bool(), Some(lo > 0 || hi < 0), "{r}");
    }
    let noise = rows.iter().filter(|r| r["significant"] == false).count();
    assert!(noise * 10 >= rows.len() * 8, "two runs of one program: {noise} of {} changes within the sampling's range", rows.len());

    // Twice the allocations: the big types' changes are real.
    let (twice, _) = json(&["diff", &a, &b, "--json", "-q", "--top", "0"]);
    let rows = twice["allocated_by_type"].as_array().expect("rows");
    let big: Vec<&Value> = rows.iter().filter(|r| r["a_bytes"].as_u64() > Some(3_000_000)).collect();
    assert!(!big.is_empty() && big.iter().all(|r| r["significant"] == true), "{twice}");

    // The table says which changes are noise.
    let out = clrprof(&["diff", &a, &a2, "-q"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("bytes B-A 95% range") && text.contains("(noise)"), "{text}");
}

#[test]
fn check_of_traces_decides_only_beyond_the_sampling() {
    let dir = work("check");
    let (a, a2, b) =
        (trace(&dir, "a.nettrace", "300000", "1"), trace(&dir, "a2.nettrace", "309000", "1"), trace(&dir, "b.nettrace", "600000", "1"));

    // Same program: within +50% for sure; +1% the sampling cannot tell
    // (neither for the whole nor for one type).
    let rules = [
        "--rule",
        "summary allocated_bytes +1%",
        "--rule",
        "summary allocated_bytes +50%",
        "--rule",
        "type:System.Object [] allocated_bytes +1%",
    ];
    let mut args = vec!["check", a.as_str(), a2.as_str(), "--json", "-q"];
    args.extend(rules);
    let (same, code) = json(&args);
    assert_eq!(code, Some(2), "undecided rules exit 2: {same}");
    let tight = verdict(&same, "allocated_bytes", None);
    assert_eq!(tight["status"], "unknown", "{same}");
    assert!(tight["reason"].as_str().is_some_and(|r| r.contains("sampling")), "{tight}");
    assert!(tight["baseline_range"].is_array() && tight["candidate_range"].is_array(), "{tight}");
    let rows = same["rules"].as_array().expect("rules");
    assert!(rows.iter().any(|r| r["metric"] == "allocated_bytes" && r["name"].is_null() && r["status"] == "pass"), "{same}");
    assert_eq!(verdict(&same, "allocated_bytes", Some("System.Object []"))["status"], "unknown", "{same}");

    // Twice the allocations: failed beyond the ranges.
    let mut args = vec!["check", a.as_str(), b.as_str(), "--json", "-q"];
    args.extend(["--rule", "summary allocated_bytes +30%", "--rule", "type:System.String allocated_bytes +0%"]);
    let (twice, code) = json(&args);
    assert_eq!(code, Some(1), "{twice}");
    assert!(twice["rules"].as_array().expect("rules").iter().all(|r| r["status"] == "fail"), "{twice}");

    // Logs of every allocation: exact figures, no ranges, the point
    // comparison.
    let log = |name: &str, objects: &str| {
        let p = dir.join(name);
        let out = clrprof(&["gen", "--preset", "small", "--objects", objects, "--seed", "1", "-q", "-o", p.to_str().expect("UTF-8")]);
        assert!(out.status.success());
        p.to_string_lossy().into_owned()
    };
    let (la, lb) = (log("a.log", "300000"), log("b.log", "300000"));
    let (exact, code) = json(&["check", &la, &lb, "--json", "-q", "--rule", "summary allocated_bytes +0%"]);
    assert_eq!(code, Some(0), "{exact}");
    let r = verdict(&exact, "allocated_bytes", None);
    assert!(r.get("baseline_range").is_none() && r["status"] == "pass", "{r}");
}
