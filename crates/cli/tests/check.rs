//! `clrprof check`, the memory regression gate, end to end: a program whose
//! second build leaks `Leak.Node` objects fails the gate, which names the
//! type and both figures; an unchanged run passes every figure; the JSON
//! holds each rule's figures (checked against the logs' known contents);
//! a rules file of three rules gives JUnit XML that junitparser (the
//! parser CI plugins use, installed by scripts/setup-export-tests.sh)
//! reads with the right outcome per rule; logs made by `clrprof gen` and
//! a real .NET 8 program recorded under the agent, built with and without
//! a leak, give the same verdicts.

mod common;

use common::dotnet::{self, Runtime};
use common::{clrprof, repo_root};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Bytes of each object kind in [`program_log`].
const ROOT: u64 = 32;
const NODE: u64 = 40;
const ITEM: u64 = 24;

/// The log of a small program: `App.Program::Main` allocates an
/// `App.Root` (32 bytes), which holds a chain of `nodes` `Leak.Node`
/// objects (40 bytes each, allocated by `App.Cache::Add`), and `items`
/// `App.Item` objects (24 bytes, by `App.Work::Step`) that die at the one
/// gen-0 GC; a GC handle holds the `App.Root`; then a heap dump: the
/// handle's root on the `App.Root`, which references the first node, each
/// node the next.
fn program_log(nodes: u64, items: u64) -> String {
    use std::fmt::Write as _;
    let base = 0x10_0000u64;
    let node = |i: u64| base + ROOT + NODE * i;
    let item0 = node(nodes);
    let survivors = ROOT + NODE * nodes;
    let total = survivors + ITEM * items;
    let mut s = String::new();
    s.push_str("m 1 C:\\app\\App.exe 0x400000 1\n");
    s.push_str("f 1 App.Program::Main void () 0 0 1 0\nf 2 App.Cache::Add void () 0 0 1 0\nf 3 App.Work::Step void () 0 0 1 0\n");
    s.push_str("t 1 0 App.Root\nt 2 0 Leak.Node\nt 3 0 App.Item\n");
    let _ = write!(s, "n 1 1 1 {ROOT} 1\nn 2 1 2 {NODE} 1 2\nn 3 1 3 {ITEM} 1 3\nn 4 0 1\n");
    s.push_str("i 1\n");
    let _ = writeln!(s, "! 1 0x{base:x} 1");
    let _ = writeln!(s, "h 1 0x99 0x{base:x} 4");
    for i in 0..nodes {
        let _ = writeln!(s, "! 1 0x{:x} 2", node(i));
    }
    for i in 0..items {
        let _ = writeln!(s, "! 1 0x{:x} 3", item0 + ITEM * i);
    }
    let _ = writeln!(s, "i 2\nb 1 0 0 0x{base:x} {total} 16777216 0");
    let _ = writeln!(s, "v 0x{base:x} {survivors}");
    let _ = writeln!(s, "i 3\nb 0 0 0 0x{base:x} {total} 16777216 0\ng 1 0 0");
    let _ = writeln!(s, "i 4\ne 0x{base:x} 3 0x0 0x99");
    let first = if nodes > 0 { format!(" 0x{:x}", node(0)) } else { String::new() };
    let _ = writeln!(s, "o 0x{base:x} 1 {ROOT}{first}");
    for i in 0..nodes {
        let next = if i + 1 < nodes { format!(" 0x{:x}", node(i + 1)) } else { String::new() };
        let _ = writeln!(s, "o 0x{:x} 2 {NODE}{next}", node(i));
    }
    s.push_str("i 5\n");
    s
}

/// A temporary folder with the baseline (100 nodes) and the leaking
/// candidate (1,100 nodes), both with 500 items, and an unchanged copy
/// of the baseline.
struct Logs {
    dir: tempfile::TempDir,
}

const BASE_NODES: u64 = 100;
const LEAK_NODES: u64 = 1_100;
const ITEMS: u64 = 500;

impl Logs {
    fn new() -> Logs {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("base.log"), program_log(BASE_NODES, ITEMS)).expect("write");
        std::fs::write(dir.path().join("same.log"), program_log(BASE_NODES, ITEMS)).expect("write");
        std::fs::write(dir.path().join("leak.log"), program_log(LEAK_NODES, ITEMS)).expect("write");
        Logs { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

fn text(out: &Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Runs `clrprof check` with `args` and the given exit status expected.
fn check(args: &[&str], status: i32) -> (String, String) {
    let mut all = vec!["check", "-q"];
    all.extend_from_slice(args);
    let out = clrprof(&all);
    let (o, e) = text(&out);
    assert_eq!(out.status.code(), Some(status), "clrprof {all:?}:\n{o}{e}");
    (o, e)
}

/// `12,345`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn json(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// The rule of a JSON report with this text.
fn rule<'a>(report: &'a Value, text: &str) -> &'a Value {
    report["rules"].as_array().and_then(|r| r.iter().find(|r| r["rule"] == text)).unwrap_or_else(|| panic!("no rule {text}: {report}"))
}

#[test]
fn a_leak_fails_naming_the_type_and_both_figures() {
    let logs = Logs::new();
    let (base, leak) = (logs.path("base.log"), logs.path("leak.log"));
    let (o, _) = check(&[&base, &leak, "--rule", "type:Leak.Node surviving_bytes +10%", "--rule", "type:App.Item allocated_bytes +10%"], 1);
    // The table: the rule, both figures, the change, the limit, FAIL.
    let row = o.lines().find(|l| l.starts_with("type:Leak.Node surviving_bytes")).unwrap_or_else(|| panic!("{o}"));
    let cells: Vec<&str> = row.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(cells, ["type:Leak.Node surviving_bytes", "4,000", "44,000", "+40,000 (+1,000.0%)", "+10%", "FAIL"], "{o}");
    let row = o.lines().find(|l| l.starts_with("type:App.Item allocated_bytes")).unwrap_or_else(|| panic!("{o}"));
    assert!(row.ends_with("pass") && row.contains("12,000"), "{row}");
    // A sentence under the table names the type and both figures.
    assert!(
        o.contains(
            "FAIL type:Leak.Node surviving_bytes: baseline 4,000 -> candidate 44,000 bytes (+40,000, +1,000.0%); \
             exceeds the limit +10% (at most 4,400)"
        ),
        "{o}"
    );
    assert!(o.contains("2 rules: 1 passed, 1 failed"), "{o}");
    assert!(o.contains(&format!("baseline:  {base}")) && o.contains(&format!("candidate: {leak}")), "{o}");
    // The same logs the other way round: the leak went away, the gate passes.
    check(&[&leak, &base, "--rule", "type:Leak.Node surviving_bytes +10%"], 0);
    // An absolute limit just above and just below the growth.
    check(&[&base, &leak, "--rule", "type:Leak.Node surviving_objects +1000 objects"], 0);
    check(&[&base, &leak, "--rule", "type:Leak.Node surviving_objects +999"], 1);
    check(&[&base, &leak, "--rule", "type:Leak.Node retained_bytes +40KB"], 0);
    check(&[&base, &leak, "--rule", "type:Leak.Node retained_bytes +39.999KB"], 1);
}

/// Every rule the gate knows, at `+0`, on a log and an unchanged copy.
fn every_rule() -> String {
    let mut rules = String::from("# every figure, no growth allowed\n");
    for m in [
        "allocated_bytes",
        "relocated_bytes",
        "final_heap_bytes",
        "gen0_collections",
        "gen1_collections",
        "gen2_collections",
        "induced_collections",
        "gen0_heap_bytes",
        "gen1_heap_bytes",
        "gen2_heap_bytes",
        "loh_bytes",
        "objects_finalized",
        "critical_objects_finalized",
        "handles_created",
        "handles_destroyed",
        "handles_surviving",
        "heap_dumps",
        "comments",
    ] {
        rules.push_str(&format!("summary {m} +0\n"));
    }
    for t in ["Leak.Node", "App.Item", "App.Root"] {
        for m in ["allocated_bytes", "allocated_objects", "surviving_bytes", "surviving_objects"] {
            rules.push_str(&format!("type:{t} {m} +0\n"));
        }
    }
    for t in ["Leak.Node", "App.Root"] {
        for m in ["dump_objects", "dump_bytes", "retained_bytes"] {
            rules.push_str(&format!("type:{t} {m} +0\n"));
        }
    }
    for f in ["App.Program::Main", "App.Cache::Add", "App.Work::Step"] {
        for m in ["allocated_bytes", "allocated_objects", "surviving_bytes", "surviving_objects"] {
            rules.push_str(&format!("function:{f} {m} +0\nfunction:{f} exclusive_{m} +0   # by the function itself\n"));
        }
    }
    for m in ["objects", "bytes", "reachable_objects", "reachable_bytes", "unreachable_objects", "unreachable_bytes"] {
        rules.push_str(&format!("dump {m} +0\n"));
    }
    rules
}

#[test]
fn an_unchanged_run_passes_every_rule() {
    let logs = Logs::new();
    let file = logs.dir.path().join("every.rules");
    std::fs::write(&file, every_rule()).expect("write");
    let n = every_rule().lines().filter(|l| !l.starts_with('#')).count();
    let (o, _) = check(&[&logs.path("base.log"), &logs.path("same.log"), "--rules", &file.display().to_string()], 0);
    assert!(o.contains(&format!("{n} rules: {n} passed, 0 failed")), "{o}");
    // The leak moves the figures that count Leak.Node (and what holds
    // them), and only those.
    let (o, _) = check(&[&logs.path("base.log"), &logs.path("leak.log"), "--rules", &file.display().to_string(), "--json"], 1);
    let report = json(&o);
    let failed: Vec<&str> = report["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .filter(|r| r["status"] == "fail")
        .map(|r| r["rule"].as_str().expect("rule"))
        .collect();
    let expected = [
        "summary allocated_bytes +0",
        "summary final_heap_bytes +0",
        "summary gen0_heap_bytes +0",
        "type:Leak.Node allocated_bytes +0",
        "type:Leak.Node allocated_objects +0",
        "type:Leak.Node surviving_bytes +0",
        "type:Leak.Node surviving_objects +0",
        "type:Leak.Node dump_objects +0",
        "type:Leak.Node dump_bytes +0",
        "type:Leak.Node retained_bytes +0",
        "type:App.Root retained_bytes +0",
        "function:App.Program::Main allocated_bytes +0",
        "function:App.Program::Main allocated_objects +0",
        "function:App.Program::Main surviving_bytes +0",
        "function:App.Program::Main surviving_objects +0",
        "function:App.Cache::Add allocated_bytes +0",
        "function:App.Cache::Add exclusive_allocated_bytes +0",
        "function:App.Cache::Add allocated_objects +0",
        "function:App.Cache::Add exclusive_allocated_objects +0",
        "function:App.Cache::Add surviving_bytes +0",
        "function:App.Cache::Add exclusive_surviving_bytes +0",
        "function:App.Cache::Add surviving_objects +0",
        "function:App.Cache::Add exclusive_surviving_objects +0",
        "dump objects +0",
        "dump bytes +0",
        "dump reachable_objects +0",
        "dump reachable_bytes +0",
    ];
    let mut got = failed.clone();
    got.sort_unstable();
    let mut want = expected.to_vec();
    want.sort_unstable();
    assert_eq!(got, want, "{report}");
    assert_eq!(report["failed"], expected.len());
    assert_eq!(report["passed"], n - expected.len());
    assert_eq!(report["unknown"], 0);
}

#[test]
fn json_holds_both_figures_of_every_rule() {
    let logs = Logs::new();
    let rules = [
        "summary allocated_bytes +10%",
        "summary final_heap_bytes +1MiB",
        "type:Leak.Node allocated_objects +5 objects",
        "type:App.Item surviving_objects +0",
        "type:Leak.Node retained_bytes +10%",
        "type:App.Root retained_bytes -1%",
        "function:App.Cache::Add exclusive_surviving_objects +10%",
        "function:App.Program::Main allocated_objects +1000",
        "function:App.Work::Step surviving_bytes +0",
        "dump reachable_bytes +2 %",
    ];
    let mut args = vec![logs.path("base.log"), logs.path("leak.log"), "--json".into()];
    for r in rules {
        args.push("--rule".into());
        args.push(r.into());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (o, _) = check(&args, 1);
    let report = json(&o);
    assert_eq!(report["result"], "fail");
    assert_eq!(report["baseline"], logs.path("base.log"));
    assert_eq!(report["candidate"], logs.path("leak.log"));
    assert_eq!(report["baseline_dump"], 0);
    assert_eq!(report["rules"].as_array().map(Vec::len), Some(rules.len()));
    let (b, l) = (BASE_NODES, LEAK_NODES);
    // (rule, baseline, candidate, status): the figures follow from the
    // program: a root, its nodes, the items that die.
    let want: [(&str, u64, u64, &str); 10] = [
        (rules[0], ROOT + NODE * b + ITEM * ITEMS, ROOT + NODE * l + ITEM * ITEMS, "fail"),
        (rules[1], ROOT + NODE * b, ROOT + NODE * l, "pass"),
        (rules[2], b, l, "fail"),
        (rules[3], 0, 0, "pass"),
        (rules[4], NODE * b, NODE * l, "fail"),
        (rules[5], ROOT + NODE * b, ROOT + NODE * l, "fail"),
        (rules[6], b, l, "fail"),
        (rules[7], 1 + b + ITEMS, 1 + l + ITEMS, "pass"),
        (rules[8], 0, 0, "pass"),
        (rules[9], ROOT + NODE * b, ROOT + NODE * l, "fail"),
    ];
    for (text, base, cand, status) in want {
        let r = rule(&report, text);
        assert_eq!((r["baseline"].as_u64(), r["candidate"].as_u64()), (Some(base), Some(cand)), "{r}");
        assert_eq!(r["change"].as_i64(), Some(cand as i64 - base as i64), "{r}");
        assert_eq!(r["status"], status, "{r}");
        let figures = format!("baseline {} -> candidate {}", thousands(base), thousands(cand));
        assert!(r["message"].as_str().is_some_and(|m| m.contains(&figures)), "{r}");
    }
    let r = rule(&report, rules[1]);
    assert_eq!(r["limit"]["kind"], "absolute");
    assert_eq!(r["limit"]["amount"], 1 << 20);
    assert_eq!(r["allowed"].as_u64(), Some(ROOT + NODE * b + (1 << 20)));
    assert_eq!(r["unit"], "bytes");
    let r = rule(&report, rules[4]);
    assert_eq!(r["limit"]["kind"], "relative");
    assert_eq!(r["limit"]["percent"], 10.0);
    assert_eq!(r["change_percent"], 1000.0);
    assert_eq!(r["subject"], "type");
    assert_eq!(r["name"], "Leak.Node");
    assert_eq!(r["metric"], "retained_bytes");
    assert_eq!(r["origin"], "--rule 5");
    assert_eq!(rule(&report, rules[3])["change_percent"], Value::Null);
    assert_eq!(report["passed"], 4);
    assert_eq!(report["failed"], 6);
}

/// Python with junitparser: `$CLRPROF_EXPORT_VENV` or the repository's
/// `target/export-venv` (scripts/setup-export-tests.sh); `None` (a
/// failure under `CI=true`) when missing.
fn junitparser() -> Option<PathBuf> {
    let venv = std::env::var_os("CLRPROF_EXPORT_VENV").map(PathBuf::from).unwrap_or_else(|| repo_root().join("target/export-venv"));
    let python = venv.join("bin/python");
    let ok = Command::new(&python).args(["-c", "import junitparser"]).output().is_ok_and(|o| o.status.success());
    if ok {
        return Some(python);
    }
    common::missing(&format!("junitparser in {} (scripts/setup-export-tests.sh installs it)", venv.display()));
    None
}

/// Reads a JUnit file with junitparser.
fn read_junit(python: &Path, file: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/check/read_junit.py");
    let out = Command::new(python).arg(script).arg(file).output().expect("run python");
    let (o, e) = text(&out);
    assert!(out.status.success(), "read_junit.py: {e}");
    json(&o)
}

#[test]
fn junit_of_three_rules_reads_right_in_junitparser() {
    let logs = Logs::new();
    let rules = logs.dir.path().join("gate.rules");
    std::fs::write(
        &rules,
        "# the project's memory gate\n\
         type:Leak.Node surviving_objects +10%\n\
         type:App.Item allocated_bytes +5%\n\
         \n\
         dump reachable_bytes +1MB   # the whole heap\n",
    )
    .expect("write");
    let xml = logs.dir.path().join("check.xml");
    let (base, leak) = (logs.path("base.log"), logs.path("leak.log"));
    let (rules_s, xml_s) = (rules.display().to_string(), xml.display().to_string());
    let (o, _) = check(&[&base, &leak, "--rules", &rules_s, "--junit", &xml_s], 1);
    assert!(o.contains("3 rules: 2 passed, 1 failed"), "{o}");
    // The file is there before any parser: well-formed XML (quick-xml).
    let raw = std::fs::read_to_string(&xml).expect("read the XML");
    let mut reader = quick_xml::Reader::from_str(&raw);
    let mut cases = 0;
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e)) if e.name().as_ref() == b"testcase" => cases += 1,
            Ok(_) => {}
            Err(e) => panic!("not well-formed at {}: {e}\n{raw}", reader.buffer_position()),
        }
    }
    assert_eq!(cases, 3, "{raw}");
    let Some(python) = junitparser() else { return };
    let got = read_junit(&python, &xml);
    let suites = got["suites"].as_array().expect("suites");
    assert_eq!(suites.len(), 1, "{got}");
    let suite = &suites[0];
    assert_eq!((suite["tests"].as_u64(), suite["failures"].as_u64(), suite["errors"].as_u64()), (Some(3), Some(1), Some(0)), "{got}");
    assert_eq!(suite["properties"]["baseline"], base.as_str());
    assert_eq!(suite["properties"]["candidate"], leak.as_str());
    let cases = suite["cases"].as_array().expect("cases");
    let outcomes: Vec<(&str, &str)> =
        cases.iter().map(|c| (c["name"].as_str().unwrap_or(""), c["outcome"].as_str().unwrap_or(""))).collect();
    assert_eq!(
        outcomes,
        [
            ("type:Leak.Node surviving_objects +10%", "failure"),
            ("type:App.Item allocated_bytes +5%", "passed"),
            ("dump reachable_bytes +1MB", "passed"),
        ],
        "{got}"
    );
    assert_eq!(cases[0]["classname"], "clrprof.check.type");
    assert_eq!(cases[2]["classname"], "clrprof.check.dump");
    let message = cases[0]["message"].as_str().expect("failure message");
    assert!(message.contains("baseline 100 -> candidate 1,100 objects (+1,000, +1,000.0%)"), "{message}");
    let body = cases[0]["text"].as_str().expect("failure text");
    assert!(
        body.contains("baseline: 100\n") && body.contains("candidate: 1,100\n") && body.contains(&format!("from: {rules_s}:2")),
        "{body}"
    );
    // An unchanged run: every case passes; the file is replaced only with --force.
    let same = logs.path("same.log");
    let (_, e) = check(&[&base, &same, "--rules", &rules_s, "--junit", &xml_s], 2);
    assert!(e.contains("exists") && e.contains("--force"), "{e}");
    check(&[&base, &same, "--rules", &rules_s, "--junit", &xml_s, "--force"], 0);
    let got = read_junit(&python, &xml);
    let cases = got["suites"][0]["cases"].as_array().expect("cases");
    assert!(cases.len() == 3 && cases.iter().all(|c| c["outcome"] == "passed" && c["is_passed"] == true), "{got}");
    // A rule that cannot be decided is an <error>.
    let (_, _) = check(&[&base, &same, "--rules", &rules_s, "--junit", &xml_s, "--force", "--dump", "4"], 2);
    let got = read_junit(&python, &xml);
    let suite = &got["suites"][0];
    assert_eq!((suite["failures"].as_u64(), suite["errors"].as_u64()), (Some(0), Some(1)), "{got}");
    assert_eq!(suite["cases"][2]["outcome"], "error", "{got}");
    assert!(suite["cases"][2]["message"].as_str().is_some_and(|m| m.contains("no heap dump 4")), "{got}");
}

#[test]
fn undecided_rules_and_bad_input_exit_2() {
    let logs = Logs::new();
    let (base, leak) = (logs.path("base.log"), logs.path("leak.log"));
    // A dump the logs do not have: undecided, exit 2 (1 when a rule fails too).
    let (o, _) = check(&[&base, &leak, "--dump", "1", "--rule", "dump bytes +10%"], 2);
    assert!(
        o.contains("UNKNOWN dump bytes: baseline unknown -> candidate unknown; cannot be decided: both logs: no heap dump 1 (1 dump)"),
        "{o}"
    );
    assert!(o.contains("1 rule: 0 passed, 0 failed, 1 undecided"), "{o}");
    check(&[&base, &leak, "--dump", "1", "--rule", "dump bytes +10%", "--rule", "summary allocated_bytes +1%"], 1);
    check(&[&leak, &base, "--dump", "0", "--rule", "dump bytes -90%", "--rule", "summary allocated_bytes +0"], 0);
    check(&[&leak, &base, "--dump", "0", "--rule", "dump bytes -91%"], 1);
    // A log without heap dumps against one with.
    let no_dump: String = program_log(BASE_NODES, ITEMS).lines().filter(|l| !l.starts_with(['e', 'o'])).map(|l| format!("{l}\n")).collect();
    std::fs::write(logs.dir.path().join("nodump.log"), no_dump).expect("write");
    let (o, _) = check(&[&logs.path("nodump.log"), &leak, "--json", "--rule", "type:Leak.Node retained_bytes +10%"], 2);
    let r = json(&o);
    assert_eq!(r["result"], "unknown");
    assert_eq!(r["rules"][0]["reason"], "baseline: no heap dump");
    assert_eq!(r["rules"][0]["candidate"], NODE * LEAK_NODES);
    assert_eq!(r["rules"][0]["baseline"], Value::Null);
    // A misspelt type or function is an error, with the name it is close to.
    let (_, e) = check(&[&base, &leak, "--rule", "type:Leak.Nod surviving_bytes +10%"], 2);
    assert!(e.contains("type `Leak.Nod` is not allocated in either log (did you mean `Leak.Node`?)"), "{e}");
    let (_, e) = check(&[&base, &leak, "--rule", "function:App.Cache::Ad allocated_bytes +10%"], 2);
    assert!(e.contains("did you mean `App.Cache::Add`?"), "{e}");
    // Bad rules, no rule, a missing file: exit 2, the error said once.
    let (_, e) = check(&[&base, &leak, "--rule", "type:Leak.Node surviving_byte +10%"], 2);
    assert!(e.contains("--rule 1: `surviving_byte` is not a figure of type rules (did you mean `surviving_bytes`?)"), "{e}");
    let (_, e) = check(&[&base, &leak], 2);
    assert!(e.contains("no rule"), "{e}");
    let bad = logs.dir.path().join("bad.rules");
    std::fs::write(&bad, "summary allocated_bytes +10%\nsummary allocated_bytes 10%\n").expect("write");
    let (_, e) = check(&[&base, &leak, "--rules", &bad.display().to_string()], 2);
    assert!(e.contains("bad.rules:2: `10%`: a limit starts with +"), "{e}");
    let (_, e) = check(&[&base, &logs.path("missing.log"), "--rule", "summary allocated_bytes +1%"], 2);
    assert_eq!(e.matches("No such file").count(), 1, "{e}");
    // With --json an error is JSON on standard output.
    let (o, e) = check(&[&base, &leak, "--json", "--rule", "type:Nothing.Here allocated_bytes +1%"], 2);
    assert!(e.is_empty(), "{e}");
    assert!(json(&o)["error"].as_str().is_some_and(|m| m.contains("Nothing.Here")), "{o}");
    // A usage error is clap's exit 2.
    check(&[&base], 2);
}

/// Logs made by `clrprof gen`: the same options give a log that passes
/// every Summary rule at +0; more objects fail the allocated-bytes rule.
#[test]
fn generated_logs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let gen = |name: &str, objects: &str| {
        let path = dir.path().join(name).display().to_string();
        let out = clrprof(&["gen", "-q", "--preset", "tiny", "--seed", "7", "--objects", objects, "--heap-dumps", "1", "-o", &path]);
        assert!(out.status.success(), "gen: {}", text(&out).1);
        path
    };
    let (a, b, c) = (gen("a.log", "20000"), gen("b.log", "20000"), gen("c.log", "30000"));
    let rules = dir.path().join("summary.rules");
    let summary: String = [
        "allocated_bytes",
        "final_heap_bytes",
        "gen0_collections",
        "gen1_collections",
        "gen2_collections",
        "handles_surviving",
        "heap_dumps",
    ]
    .iter()
    .map(|m| format!("summary {m} +0\n"))
    .collect::<String>()
        + "dump reachable_bytes +0\n";
    std::fs::write(&rules, summary).expect("write");
    let rules = rules.display().to_string();
    let (o, _) = check(&[&a, &b, "--rules", &rules], 0);
    assert!(o.contains("8 rules: 8 passed, 0 failed"), "{o}");
    let (o, _) = check(&[&a, &c, "--rules", &rules, "--json"], 1);
    let report = json(&o);
    let r = rule(&report, "summary allocated_bytes +0");
    assert_eq!(r["status"], "fail", "{r}");
    assert!(r["candidate"].as_u64() > r["baseline"].as_u64(), "{r}");
    // The figures are the Summary's own.
    let summary_of = |log: &str| json(&text(&clrprof(&["summary", "--json", "-q", log])).0);
    assert_eq!(r["baseline"], summary_of(&a)["allocated_bytes"]);
    assert_eq!(r["candidate"], summary_of(&c)["allocated_bytes"]);
    // Half as many objects again: a limit of +100% lets that through.
    check(&[&a, &c, "--rule", "summary allocated_bytes +100%"], 0);
}

/// `crates/cli/tests/check/cache.cs` built as is (`tidy`, the cache keeps
/// its last 100 entries) or with `-define:LEAK` (`leak`, it keeps all
/// 5,000), in a folder of its own with a .NET 8 runtime configuration.
fn build_cache(work: &Path, build: &str) -> PathBuf {
    let dir = work.join(build);
    std::fs::create_dir_all(&dir).expect("create the build folder");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/check/cache.cs");
    let wrapper = dotnet::repo().join("agent/dotnet/ClrProfControl.cs");
    let mut mcs = Command::new("mcs");
    if build == "leak" {
        mcs.arg("-define:LEAK");
    }
    let out = mcs.arg(format!("-out:{}", dir.join("cache.dll").display())).arg(&src).arg(&wrapper).output().expect("run mcs");
    assert!(out.status.success(), "mcs: {}", text(&out).0);
    std::fs::write(
        dir.join("cache.runtimeconfig.json"),
        r#"{"runtimeOptions":{"framework":{"name":"Microsoft.NETCore.App","version":"8.0.0"}}}"#,
    )
    .expect("write the runtime configuration");
    dir
}

/// Records one build under the agent (`clrprof record`); returns the log
/// and the program's JSON line.
fn record_cache(host: &Path, agent: &Path, dir: &Path, log: &str) -> (String, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .args(["record", "-q", "-o", log, "--"])
        .arg(host)
        .arg("cache.dll")
        .current_dir(dir)
        .env("CLRPROF_AGENT", agent)
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .output()
        .expect("run clrprof record");
    let (o, e) = text(&out);
    assert!(out.status.success(), "record: {o}{e}");
    let line = dotnet::json_line(&out.stdout).unwrap_or_else(|| panic!("no JSON line from the program: {o}"));
    (dir.join(log).display().to_string(), line)
}

/// The strongest case: one C# program, its second build leaking, each
/// recorded for real on .NET 8 under the capture agent. The gate fails on
/// the leaked type with the program's own counts as figures (100 entries
/// kept, then 5,000), the retained bytes of the heap dump the program
/// took fail too; two recordings of the tidy build pass at +0 on the
/// cache's figures.
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn a_real_program_whose_second_build_leaks() {
    let Some(agent) = dotnet::agent_beside(Path::new(env!("CARGO_BIN_EXE_clrprof"))) else { return };
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("check-tests-{}", std::process::id()));
    let Some(dn) = dotnet::dotnet(&work.join("apps")) else { return };
    let host = dn.host(Runtime::Net8);
    let (tidy, leak) = (build_cache(&work, "tidy"), build_cache(&work, "leak"));
    let (base, said) = record_cache(host, &agent, &tidy, "base.log");
    assert_eq!(said["kept"], 100, "{said}");
    let (again, _) = record_cache(host, &agent, &tidy, "again.log");
    let (leaked, said) = record_cache(host, &agent, &leak, "leak.log");
    assert_eq!(said["kept"], 5000, "{said}");
    let rules = work.join("gate.rules");
    std::fs::write(
        &rules,
        "type:Leak.Node surviving_objects +10%
         type:Leak.Node retained_bytes +10%
         type:Leak.Node allocated_objects +0
",
    )
    .expect("write");
    let rules = rules.display().to_string();
    let (o, _) = check(&[&base, &leaked, "--rules", &rules], 1);
    assert!(o.contains("FAIL type:Leak.Node surviving_objects: baseline 100 -> candidate 5,000 objects (+4,900, +4,900.0%)"), "{o}");
    let (o, _) = check(&[&base, &leaked, "--rules", &rules, "--json"], 1);
    let report = json(&o);
    let retained = rule(&report, "type:Leak.Node retained_bytes +10%");
    assert_eq!(retained["status"], "fail", "{retained}");
    // Each entry retains itself and its payload: the same bytes per entry
    // in both builds, 50 times as many entries.
    let (b, c) = (retained["baseline"].as_u64().unwrap_or(0), retained["candidate"].as_u64().unwrap_or(0));
    assert!(b > 0 && c == b * 50, "{retained}");
    // Both builds allocate the same 5,000 entries: that rule passes.
    assert_eq!(rule(&report, "type:Leak.Node allocated_objects +0")["status"], "pass", "{report}");
    // The tidy build recorded twice: unchanged, every rule passes.
    let (o, _) = check(&[&base, &again, "--rules", &rules, "--rule", "summary allocated_bytes +1%"], 0);
    assert!(o.contains("4 rules: 4 passed, 0 failed"), "{o}");
}
