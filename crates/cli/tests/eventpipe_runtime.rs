//! Traces written by the .NET runtime itself (EventPipe started by
//! environment variables, no tool), opened by clrprof's commands and
//! compared with what the traced program counted of itself
//! (`agent/testapps/sampled.cs`): GC counts exact, each marker type's
//! estimated bytes within 15% of what it allocated, the sampled objects
//! followed through the GCs; and the trace cut at every block boundary and
//! inside every block loads up to its last complete block and says so.
//!
//! Needs `scripts/setup-dotnet.sh` (CoreCLR 3.1, .NET 8, `mcs`): without
//! it the tests print SKIPPED, and fail under `CI=true`.

mod common;

use clrprof::eventpipe::{read_block, read_header, NetTraceReader};
use common::dotnet::{self, Dotnet, Runtime};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// GC events at Verbose (which includes `GC/AllocationTick`) and the
/// survival and movement ranges.
const CONFIG: &str = "Microsoft-Windows-DotNETRuntime:0x400001:5";

fn dotnet_env() -> Option<&'static Dotnet> {
    dotnet::dotnet(&Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("eventpipe-runtime-{}", std::process::id())))
}

/// Runs the program on `rt` with the runtime writing a trace
/// ([`dotnet::traced`]: a folder per call; CoreCLR 3.1.23 writes
/// `<program>.<pid>.nettrace` itself, as it crashes in
/// `FastSerializer::WriteBuffer` whenever `COMPlus_EventPipeOutputPath` is
/// set); returns the trace and the program's truth.
fn traced(dn: &Dotnet, rt: Runtime) -> (PathBuf, Value) {
    dotnet::traced(dn, rt, "sampled", &[], CONFIG)
}

fn clrprof_json(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_clrprof")).args(args).arg("--json").arg("-q").output().expect("run clrprof");
    assert!(out.status.success(), "clrprof {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("clrprof {args:?}: {e}"))
}

fn check(rt: Runtime) {
    let Some(dn) = dotnet_env() else { return };
    let (trace, truth) = traced(dn, rt);
    let t = trace.to_str().expect("a UTF-8 path");

    // GCs: exact, as the program counted them.
    let s = clrprof_json(&["summary", t]);
    let gc = &truth["gc"];
    for (k, key) in ["gen0_collections", "gen1_collections", "gen2_collections"].iter().enumerate() {
        assert_eq!(s[key], gc[k], "{rt:?}: {key}: clrprof {} against GC.CollectionCount {}", s[key], gc[k]);
    }
    assert_eq!(s["induced_collections"], 2, "{rt:?}: the program's two GC.Collect calls");
    let e = &s["estimates"];
    assert_eq!(e["method"], "GC/AllocationTick", "{rt:?}: the summary says its figures are estimates: {s}");
    // Survival is known unless some samples lay in memory a GC condemned
    // without reporting its survivors; those are counted, and few.
    let unknown = e["survival_unknown_samples"].as_u64().unwrap_or(0);
    assert_eq!(e["survival_known"], unknown == 0, "{rt:?}: {e}");
    assert!(unknown * 20 <= e["samples"].as_u64().unwrap_or(0), "{rt:?}: more than 5% of the samples' survival unknown: {e}");
    // .NET 8's AllocationTick (version 4) gives the object's size; 3.1's
    // (version 3) does not.
    assert_eq!(e["sizes_unknown"], rt == Runtime::Core31, "{rt:?}: {e}");

    // Bytes per marker type: each with at least 2% of the bytes within 15%
    // of what the program allocated.
    let types = clrprof_json(&["types", t]);
    assert!(types["estimates"].is_object(), "types --json carries the estimates");
    let allocated = s["allocated_bytes"].as_u64().expect("allocated bytes");
    let markers = truth["markers"].as_object().expect("markers");
    let row = |name: &str| types["types"].as_array().and_then(|v| v.iter().find(|r| r["type"] == name)).cloned();
    for (name, m) in markers {
        let want = m["bytes"].as_f64().expect("bytes");
        if want < 0.02 * allocated as f64 {
            continue;
        }
        let got = row(name).and_then(|r| r["bytes"].as_f64()).unwrap_or_else(|| panic!("{rt:?}: no {name} in {types}"));
        let error = (got - want).abs() / want;
        eprintln!("{rt:?} {name}: estimated {got} bytes, allocated {want} ({:+.2}%)", (got - want) / want * 100.0);
        assert!(error <= 0.15, "{rt:?} {name}: estimated {got} bytes, the program allocated {want}");
        if rt == Runtime::Net8 {
            // With sizes, objects are estimated too.
            let objects = row(name).and_then(|r| r["count"].as_f64()).unwrap_or(0.0);
            let want = m["objects"].as_f64().expect("objects");
            assert!((objects - want).abs() / want <= 0.15, "{rt:?} {name}: estimated {objects} objects, allocated {want}");
        }
    }

    if rt == Runtime::Net8 {
        // The sampled objects are followed through the GCs: every large
        // array is sampled (each is more than the 100 KB between ticks),
        // and exactly the 3 the program kept are alive at the end.
        let sv = clrprof_json(&["survivors", t]);
        let kept = sv["by_type"].as_array().and_then(|v| v.iter().find(|r| r["name"] == "MarkerL[]")).cloned();
        let kept = kept.unwrap_or_else(|| panic!("no MarkerL[] among the survivors: {sv}"));
        assert_eq!(kept["surviving"]["objects"], 3, "{kept}");
    }

    // The allocating function is named from the trace's own method events.
    let who = clrprof_json(&["who", t, "MarkerA"]);
    let text = who.to_string();
    assert!(text.contains("P::Main"), "{rt:?}: MarkerA's allocations are attributed to P::Main: {text}");
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn net8_trace_tells_the_programs_truth() {
    check(Runtime::Net8);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn core31_trace_tells_the_programs_truth() {
    check(Runtime::Core31);
}

/// The trace cut at every block boundary and in the middle of every block:
/// the import reads up to the last complete block (every sampled
/// allocation in it, none after), warns that the trace is cut short, and
/// the model loads.
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn net8_trace_cut_anywhere_loads_what_it_has() {
    let Some(dn) = dotnet_env() else { return };
    let (trace, _) = traced(dn, Runtime::Net8);
    let bytes = std::fs::read(&trace).expect("read the trace");
    // Where each block ends, and the AllocationTick events before it.
    let mut ticks_at = Vec::new();
    let mut reader = NetTraceReader::new(&bytes).expect("header");
    while let Some(e) = reader.next_event().expect("event") {
        if e.name() == "GC/AllocationTick" {
            ticks_at.push(e.offset);
        }
    }
    let mut ends = Vec::new();
    let mut at = read_header(&bytes).expect("header").end_offset;
    while let Some(b) = read_block(&bytes, at).expect("block") {
        ends.push((b.offset, b.end_offset));
        at = b.end_offset;
    }
    assert!(ends.len() > 10, "the trace has blocks: {}", ends.len());
    let mut cuts = 0;
    for &(start, end) in &ends {
        for (cut, complete_until) in [(end, end), ((start + end) / 2, start)] {
            if cut as usize >= bytes.len() {
                continue;
            }
            let piece = &bytes[..cut as usize];
            let imported = clrprof::import::nettrace::to_log(piece).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
            let expected = ticks_at.iter().filter(|&&o| o < complete_until).count() as u64;
            assert_eq!(imported.facts.sampled_allocations, expected, "cut at {cut}");
            assert!(
                imported.facts.warnings.iter().any(|w| w.contains("cut short") || w.contains("truncated") || w.contains("ends")),
                "cut at {cut}: no warning says the trace is incomplete: {:?}",
                imported.facts.warnings
            );
            let model = clrprof::model::load_trace(piece, &Default::default(), |_| {}).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
            assert_eq!(model.allocations().len() as u64, expected, "cut at {cut}");
            cuts += 1;
        }
    }
    eprintln!("{cuts} cuts of a {} byte trace with {} blocks", bytes.len(), ends.len());
    // The command line says so too.
    let cut = std::env::temp_dir().join(format!("clrprof-cut-{}.nettrace", std::process::id()));
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).expect("write the cut trace");
    let out = Command::new(env!("CARGO_BIN_EXE_clrprof")).arg("summary").arg(&cut).output().expect("run clrprof");
    let _ = std::fs::remove_file(&cut);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("warning"), "the summary of a cut trace warns: {err}");
}
