//! What a trace holds, said truly: `stats` on a `.nettrace` counts its
//! events (not its bytes read as a text log), a trace without allocation
//! events gives "unknown" allocations and every view made of them refuses
//! it, and the estimate marks of a sampled trace stay under `-q`.

mod common;
use clrprof::eventpipe::{ThreadId, Timestamp};
use clrprof_gen::nettrace::{EventOut, KindDef, NetTraceWriter, TraceInfo, WriterOptions};
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn text(out: &std::process::Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The generator's trace of sampled allocations and GCs, with every 40th
/// event dropped.
fn sampled_trace(dir: &Path) -> PathBuf {
    let path = dir.join("sampled.nettrace");
    let p = path.to_str().expect("UTF-8");
    let out = clrprof(&[
        "gen",
        "--preset",
        "tiny",
        "--objects",
        "3000",
        "--gcs",
        "3",
        "--format",
        "nettrace",
        "--tick-bytes",
        "0",
        "--lose-every",
        "40",
        "-o",
        p,
    ]);
    assert!(out.status.success(), "gen: {}", text(&out).1);
    path
}

/// A trace of CPU samples only (`Thread/Sample` events), as
/// `dotnet-trace collect --profile cpu-sampling` writes.
fn cpu_only_trace(dir: &Path) -> PathBuf {
    let info = TraceInfo {
        sync_time_utc: [2026, 11, 5, 29, 1, 0, 0, 0],
        sync_time_qpc: Timestamp(1_000),
        qpc_frequency: 1_000_000_000,
        pointer_size: 8,
        process_id: 77,
        processors: 2,
        expected_cpu_sampling_rate: 1000,
    };
    let mut w = NetTraceWriter::new(Vec::new(), &info, WriterOptions::default()).expect("writer");
    let sample = w.define(&KindDef {
        provider: "Microsoft-DotNETCore-SampleProfiler",
        event_id: 0,
        name: "",
        keywords: 0,
        version: 0,
        level: 5,
        opcode: None,
    });
    for k in 0..25i64 {
        let payload = 1u32.to_le_bytes();
        w.event(&EventOut {
            kind: sample,
            thread: ThreadId(7 + (k % 2) as u64),
            processor: 0,
            timestamp: Timestamp(1_000 + 1_000_000 * (k + 1)),
            stack: &[],
            payload: &payload,
        })
        .expect("event");
    }
    let (bytes, _) = w.finish().expect("finish");
    let path = dir.join("cpu.nettrace");
    std::fs::write(&path, bytes).expect("write");
    path
}

#[test]
fn stats_says_what_a_trace_holds() {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = sampled_trace(dir.path());
    let t = trace.to_str().expect("UTF-8");
    let out = clrprof(&["stats", t, "--json"]);
    let (o, e) = text(&out);
    assert!(out.status.success(), "{e}");
    let v: Value = serde_json::from_str(&o).unwrap_or_else(|err| panic!("{err}: {o}"));
    assert!(v["format"].as_str().is_some_and(|f| f.starts_with("NetTrace")), "{v}");
    // The kinds' counts add up to the events, and the losses are the
    // sequence numbers' gaps.
    let kinds = v["kinds"].as_array().expect("kinds");
    let sum: u64 = kinds.iter().map(|k| k["events"].as_u64().unwrap_or(0)).sum();
    assert_eq!(Some(sum), v["events"].as_u64(), "{v}");
    assert!(v["lost_events"].as_u64().is_some_and(|n| n > 0), "{v}");
    let count = |name: &str| kinds.iter().filter(|k| k["name"] == name).map(|k| k["events"].as_u64().unwrap_or(0)).sum::<u64>();
    assert!(count("GC/AllocationTick") > 0 && count("GC/Start") > 0, "{v}");
    assert!(kinds.iter().all(|k| k["provider"] == "Microsoft-Windows-DotNETRuntime"), "{v}");
    let span = &v["span"];
    assert!(span["ms"].as_f64().is_some_and(|ms| ms > 0.0), "{v}");
    let q = &v["questions"];
    assert_eq!(q["allocations"]["answered"], true, "{q}");
    assert_eq!(q["allocations"]["from"]["GC/AllocationTick"].as_u64(), Some(count("GC/AllocationTick")), "{q}");
    assert_eq!(q["gcs"]["answered"], true, "{q}");
    for no in ["survival", "heap_walks", "cpu_samples"] {
        assert_eq!(q[no]["answered"], false, "{no}: {q}");
        assert!(q[no]["reason"].as_str().is_some_and(|r| r.contains("events in the trace")), "{no}: {q}");
    }

    // The table: events by provider and kind, never "unknown kind" lines.
    let out = clrprof(&["stats", t]);
    let (o, e) = text(&out);
    assert!(out.status.success(), "{e}");
    assert!(!o.contains("skipped (unknown kind)") && !o.contains("lines"), "{o}");
    assert!(o.contains("GC/AllocationTick") && o.contains("lost events") && o.contains("time span"), "{o}");
    assert!(o.lines().any(|l| l.trim_start().starts_with("heap_walks") && l.contains(" no ")), "{o}");
}

#[test]
fn a_trace_without_allocations_says_unknown_and_refuses_allocation_views() {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = cpu_only_trace(dir.path());
    let t = trace.to_str().expect("UTF-8");

    let out = clrprof(&["stats", t, "--json"]);
    let v: Value = serde_json::from_str(&text(&out).0).expect("JSON");
    assert_eq!(v["questions"]["cpu_samples"]["from"]["Thread/Sample"].as_u64(), Some(25), "{v}");
    assert_eq!(v["questions"]["allocations"]["answered"], false, "{v}");

    // The Summary: unknown, with the reason; never 0.
    let out = clrprof(&["summary", t]);
    let (o, e) = text(&out);
    assert!(out.status.success(), "{e}");
    let line = |name: &str| o.lines().find(|l| l.trim_start().starts_with(name)).unwrap_or_default().to_string();
    assert!(line("Allocated bytes").ends_with("Unknown"), "{o}");
    assert!(line("Final heap bytes").ends_with("Unknown"), "{o}");
    assert!(o.contains("no allocation events"), "{o}");
    let out = clrprof(&["summary", t, "--json"]);
    let v: Value = serde_json::from_str(&text(&out).0).expect("JSON");
    assert!(v["allocated_bytes"].is_null() && v["final_heap_bytes"].is_null(), "{v}");
    assert!(v["allocations_unknown"].as_str().is_some_and(|r| r.contains("no allocation events")), "{v}");

    // Every view made of allocations refuses, exports included.
    let out_file = dir.path().join("out");
    let o = out_file.to_str().expect("UTF-8");
    for args in [
        &["types", t][..],
        &["functions", t],
        &["modules", t],
        &["who", t, "System.String"],
        &["graph", t],
        &["flame", t, "-o", o],
        &["survivors", t],
        &["lifetime", t],
        &["ages", t],
        &["threads", t],
        &["export", t, "--format", "speedscope", "-o", o],
        &["export", t, "--format", "pprof", "-o", o],
    ] {
        let out = clrprof(args);
        let (_, e) = text(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {e}");
        assert!(e.contains("needs allocations, and they are unknown") && e.contains("no allocation events"), "{args:?}: {e}");
        assert!(!out_file.exists(), "{args:?} wrote a file");
    }
}

#[test]
fn quiet_keeps_the_estimate_marks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = sampled_trace(dir.path());
    let t = trace.to_str().expect("UTF-8");
    for args in [&["types", t, "-q"][..], &["functions", t, "-q"], &["threads", t, "-q"], &["lifetime", t, "-q"]] {
        let out = clrprof(args);
        let (o, e) = text(&out);
        assert!(out.status.success(), "{args:?}: {e}");
        assert!(!e.contains("note:"), "{args:?}: -q silences the note: {e}");
        assert!(o.contains("bytes est.") || o.contains("objects est.") || o.contains("allocated est."), "{args:?}: {o}");
    }
    // A log's figures are exact: no mark.
    let log = dir.path().join("a.log");
    let l = log.to_str().expect("UTF-8");
    assert!(clrprof(&["gen", "--preset", "tiny", "--objects", "500", "-o", l]).status.success());
    let (o, _) = text(&clrprof(&["types", l, "-q"]));
    assert!(!o.contains("est."), "{o}");
}

/// A trace of `GC/AllocationTick`s, each for 100,000 bytes of `type_name`
/// (the runtime's spelling).
fn ticks_trace(dir: &Path, type_name: &str, ticks: u64) -> PathBuf {
    let info = TraceInfo {
        sync_time_utc: [2026, 11, 5, 29, 1, 0, 0, 0],
        sync_time_qpc: Timestamp(1_000),
        qpc_frequency: 1_000_000_000,
        pointer_size: 8,
        process_id: 78,
        processors: 2,
        expected_cpu_sampling_rate: 1000,
    };
    let mut w = NetTraceWriter::new(Vec::new(), &info, WriterOptions::default()).expect("writer");
    let tick = w.define(&KindDef {
        provider: "Microsoft-Windows-DotNETRuntime",
        event_id: 10,
        name: "",
        keywords: 1,
        version: 4,
        level: 5,
        opcode: None,
    });
    for k in 0..ticks {
        let mut p = Vec::new();
        clrprof_gen::nettrace::events::AllocationTick {
            amount: 100_000,
            large: false,
            type_id: 0x300,
            type_name,
            address: 0x90_0000 + k * 0x1000,
            size: 1_000,
        }
        .encode(&mut clrprof_gen::nettrace::events::Payload::new(&mut p, 8));
        let ts = Timestamp(2_000 + 1_000 * k as i64);
        w.event(&EventOut { kind: tick, thread: ThreadId(7), processor: 0, timestamp: ts, stack: &[], payload: &p }).expect("tick");
    }
    let (bytes, _) = w.finish().expect("finish");
    let path = dir.join("ticks.nettrace");
    std::fs::write(&path, bytes).expect("write");
    path
}

/// A CLRProfiler log: ten 1,000-byte `System.Byte []` (the log's
/// spelling) and one `App.Gone`.
fn byte_array_log(dir: &Path) -> PathBuf {
    let mut s = String::from("f 1 App.Program::Main void () 0 0 1 0\nt 1 0 System.Byte []\nt 2 0 App.Gone\n");
    s.push_str("n 1 1 1 1000 1\nn 2 1 2 24 1\ni 1\n");
    for i in 0..10u64 {
        s.push_str(&format!("! 1 0x{:x} 1\n", 0x10_0000 + i * 1000));
    }
    s.push_str("! 1 0x200000 2\n");
    let path = dir.join("baseline.log");
    std::fs::write(&path, s).expect("write");
    path
}

#[test]
fn check_matches_type_names_across_formats_and_never_takes_a_missing_subject_for_0() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = byte_array_log(dir.path());
    let trace = ticks_trace(dir.path(), "System.Byte[]", 3);
    let (l, t) = (log.to_str().expect("UTF-8"), trace.to_str().expect("UTF-8"));
    // 10,000 bytes against an estimated 300,000: the same type, grown.
    for name in ["System.Byte []", "System.Byte[]"] {
        let rule = format!("type:{name} allocated_bytes +5%");
        let out = clrprof(&["check", l, t, "--rule", &rule, "--json"]);
        let (o, e) = text(&out);
        assert_eq!(out.status.code(), Some(1), "{rule}: {o}{e}");
        let v: Value = serde_json::from_str(&o).unwrap_or_else(|err| panic!("{err}: {o}"));
        let r = &v["rules"][0];
        assert_eq!((r["baseline"].as_i64(), r["candidate"].as_i64()), (Some(10_000), Some(300_000)), "{rule}: {r}");
    }
    // A type only one side has is undecided (exit 2), with the reason.
    let out = clrprof(&["check", l, t, "--rule", "type:App.Gone allocated_bytes +5%", "--json"]);
    let (o, e) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{o}{e}");
    let v: Value = serde_json::from_str(&o).unwrap_or_else(|err| panic!("{err}: {o}"));
    let r = &v["rules"][0];
    assert!(r["candidate"].is_null() && r["status"] == "unknown", "{r}");
    assert!(r["reason"].as_str().is_some_and(|s| s.contains("`App.Gone` is not allocated")), "{r}");
    // And `diff` puts both spellings on one row.
    let out = clrprof(&["diff", l, t, "--json"]);
    let (o, e) = text(&out);
    assert!(out.status.success(), "{e}");
    let v: Value = serde_json::from_str(&o).unwrap_or_else(|err| panic!("{err}: {o}"));
    let rows = v["allocated_by_type"].as_array().expect("rows");
    let bytes: Vec<&Value> = rows.iter().filter(|r| r["name"].as_str().is_some_and(|n| n.starts_with("System.Byte"))).collect();
    assert_eq!(bytes.len(), 1, "{rows:?}");
    assert_eq!((bytes[0]["a_bytes"].as_u64(), bytes[0]["b_bytes"].as_u64()), (Some(10_000), Some(300_000)), "{rows:?}");
}

/// A heap dump file as clrprof's agent writes one (no allocation events):
/// `nodes` `App.Node` objects held in a chain from one root.
fn dump_only_log(dir: &Path, name: &str, nodes: u64) -> PathBuf {
    let mut s = String::from("z clrprof heap dump of pid 4242\nt 1 0 App.Node\nt 2 0 System.Byte []\ni 1\n");
    let base = 0x10_0000u64;
    s.push_str(&format!("e 0x{base:x} 3 0x0 0x99\n"));
    for i in 0..nodes {
        let next = if i + 1 < nodes { format!(" 0x{:x}", base + 40 * (i + 1)) } else { String::new() };
        s.push_str(&format!("o 0x{:x} 1 40{next}\n", base + 40 * i));
    }
    s.push_str("o 0x900000 2 1000\n");
    let path = dir.join(name);
    std::fs::write(&path, s).expect("write");
    path
}

#[test]
fn two_files_dumps_are_compared() {
    let dir = tempfile::tempdir().expect("temp dir");
    let a = dump_only_log(dir.path(), "a.log", 50);
    let b = dump_only_log(dir.path(), "b.log", 80);
    let (a, b) = (a.to_str().expect("UTF-8"), b.to_str().expect("UTF-8"));

    // dump-diff FILE_A FILE_B: each file's last dump, per type.
    let out = clrprof(&["dump-diff", a, b, "--json"]);
    let (o, e) = text(&out);
    assert!(out.status.success(), "{e}");
    let v: Value = serde_json::from_str(&o).unwrap_or_else(|err| panic!("{err}: {o}"));
    assert_eq!((v["a"]["objects"].as_u64(), v["b"]["objects"].as_u64()), (Some(51), Some(81)), "{v}");
    let types = v["types"].as_array().expect("types");
    assert_eq!(types.len(), 1, "only App.Node changed: {v}");
    assert_eq!(types[0]["name"], "App.Node");
    assert_eq!((types[0]["objects_a"].as_u64(), types[0]["objects_b"].as_u64()), (Some(50), Some(80)), "{v}");
    let (o, _) = text(&clrprof(&["dump-diff", a, b]));
    assert!(o.contains("App.Node") && o.contains("+30") && o.contains("+1,200"), "{o}");
    // The one-log form is unchanged; --by needs one log.
    assert!(clrprof(&["dump-diff", a, "0", "0"]).status.success());
    let out = clrprof(&["dump-diff", a, b, "--by", "stack"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out).1);

    // diff: allocations unknown on both sides (not "no difference"), and
    // the dumps compared.
    let out = clrprof(&["diff", a, b, "--json"]);
    let (o, e) = text(&out);
    assert!(out.status.success(), "{e}");
    let v: Value = serde_json::from_str(&o).unwrap_or_else(|err| panic!("{err}: {o}"));
    assert!(v["allocated_by_type"].is_null(), "{v}");
    assert_eq!(v["allocations_unknown"].as_array().map(Vec::len), Some(2), "{v}");
    let t = &v["dump_by_type"]["types"][0];
    assert_eq!((t["name"].as_str(), t["objects_a"].as_u64(), t["objects_b"].as_u64()), (Some("App.Node"), Some(50), Some(80)), "{v}");
    let (o, _) = text(&clrprof(&["diff", a, b]));
    assert!(!o.contains("no difference"), "{o}");
    assert!(o.contains("last heap dump by type") && o.contains("App.Node"), "{o}");
}

/// `record --sampled -- dotnet app.dll` on CoreCLR 3.1 (which does not know
/// `DOTNET_DiagnosticPorts`) is refused before the program starts: no
/// program output, no trace file.
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn sampled_launch_on_core31_is_refused_before_the_program_starts() {
    use common::dotnet::{self, Runtime};
    let work = std::env::temp_dir().join(format!("clrprof-truth-{}", std::process::id()));
    let Some(dn) = dotnet::dotnet(&work) else { return };
    let dir = dn.app_dir("sampled", Runtime::Core31, &work.join("core31"));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .args(["record", "--sampled", "-o", "x.nettrace", "--"])
        .arg(dn.host(Runtime::Core31))
        .arg("sampled.dll")
        .current_dir(&dir)
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .output()
        .expect("run record --sampled");
    let (o, e) = text(&out);
    let _ = std::fs::remove_dir_all(&work);
    assert_eq!(out.status.code(), Some(1), "{o}{e}");
    assert!(e.contains("names Microsoft.NETCore.App 3.1") && e.contains("nothing was started"), "{e}");
    assert!(dotnet::json_line(&out.stdout).is_none(), "the program ran: {o}");
    assert!(!dir.join("x.nettrace").exists(), "a trace file was left");
}
