//! Survival followed through every GC, against a program that knows its
//! survivors (`agent/testapps/survival.cs`: four threads allocating at
//! once, each interleaving a type it keeps whole, one it keeps half of
//! (chosen at random: a fixed pattern lines up with the sampling), one it
//! keeps none of, and large arrays kept and dropped; old objects
//! made gen 2 and then released; a gen-1 GC and a gen-2 GC after the
//! release), on CoreCLR 3.1 (segments) and .NET 8 (regions), with the
//! trace written by the runtime itself (`DOTNET_EnableEventPipe`):
//!
//! - per type, the fraction of sampled objects alive at the end within a
//!   tolerance from the number of samples of the type (4 standard errors
//!   of a binomial proportion, and 2 samples);
//! - no survivor of a type the program keeps none of (unknown objects
//!   allowed, and counted apart), but for 2 samples and 0.2% of a type's
//!   samples, on both runtimes (measured: none, over 5 runs of each; 9.7%
//!   to 15.6% of the Droppers on 3.1 and up to 2.2% of the large
//!   `double[]` on .NET 8 before a background GC's report was read as
//!   covering every generation, and the samples made during it);
//! - at most 5% of any type's samples of unknown fate (measured: up to
//!   1.4%, large `double[]`s made during a background GC in memory its
//!   start did not describe);
//! - `lifetime`: the released old objects reclaimed in the generation the
//!   program saw them in (`GC.GetGeneration` just before the release);
//! - the unknown ones said: `survival_known` only when there are none.
//!
//! Needs `scripts/setup-dotnet.sh`: without it the tests print SKIPPED, and
//! fail under `CI=true`. `CLRPROF_SURVIVAL_TEST_BIN` runs the checks
//! against another `clrprof` binary (to see them fail on a build without
//! the fix).

mod common;

use clrprof::eventpipe::{NetTraceReader, Value as Field};
use common::dotnet::{self, Dotnet, Runtime};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Steps per thread (each makes a Keeper, a Halver and a Dropper).
const PER_THREAD: &str = "200000";
/// GC events at Verbose (`GC/AllocationTick`) and the survival and
/// movement ranges (`GCHeapSurvivalAndMovement`, 0x400000).
const CONFIG: &str = "Microsoft-Windows-DotNETRuntime:0x400001:5";

fn dotnet_env() -> Option<&'static Dotnet> {
    dotnet::dotnet(&Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("eventpipe-survival-{}", std::process::id())))
}

fn clrprof() -> PathBuf {
    std::env::var_os("CLRPROF_SURVIVAL_TEST_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_clrprof")), PathBuf::from)
}

fn json(args: &[&str]) -> Value {
    let out = Command::new(clrprof()).args(args).args(["--json", "-q"]).output().expect("run clrprof");
    assert!(out.status.success(), "clrprof {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("clrprof {args:?}: {e}"))
}

/// `GC/AllocationTick` events per type name, read from the trace itself.
fn samples_per_type(trace: &Path) -> HashMap<String, u64> {
    let bytes = std::fs::read(trace).expect("read the trace");
    let mut r = NetTraceReader::new(&bytes).expect("header");
    let mut out = HashMap::new();
    while let Some(e) = r.next_event().expect("event") {
        if e.name() != "GC/AllocationTick" {
            continue;
        }
        let fields = e.fields().expect("fields").expect("the tick decodes");
        if let Some(Field::Str(name)) = fields.iter().find(|f| f.name == "TypeName").map(|f| &f.value) {
            *out.entry(name.to_string()).or_default() += 1;
        }
    }
    out
}

/// The trace's spelling of the program's type names.
fn trace_name(name: &str) -> String {
    match name {
        "Int64[]" | "Double[]" => format!("System.{name}"),
        n => n.to_string(),
    }
}

fn row<'v>(rows: &'v Value, key: &str, name: &str) -> Option<&'v Value> {
    rows.as_array().and_then(|v| v.iter().find(|r| r[key] == name))
}

fn objects(v: &Value) -> f64 {
    v["objects"].as_f64().unwrap_or(0.0)
}

fn check(rt: Runtime) {
    let Some(dn) = dotnet_env() else { return };
    let (trace, truth) = dotnet::traced(dn, rt, "survival", &[PER_THREAD, "exit"], CONFIG);
    let t = trace.to_str().expect("a UTF-8 path");
    let samples = samples_per_type(&trace);
    let sv = json(&["survivors", t, "--top", "0"]);
    let life = json(&["lifetime", t, "--top", "0"]);
    let summary = json(&["summary", t]);
    let allocated = truth["allocated"].as_object().expect("allocated");
    let kept = truth["kept"].as_object().expect("kept");
    for (name, made) in allocated {
        let made = made.as_f64().expect("a count");
        let kept = kept[name].as_f64().expect("a count");
        let p = kept / made;
        let tn = trace_name(name);
        let n = samples.get(&tn).copied().unwrap_or(0) as f64;
        if n < 5.0 {
            eprintln!("{rt:?} {tn}: {n} samples, not checked");
            continue;
        }
        let (alive, unknown, all) = match row(&sv["by_type"], "name", &tn) {
            Some(r) => (objects(&r["surviving"]), objects(&r["unknown"]), objects(&r["allocated"])),
            // No survivor and none unknown: the type is left out.
            None => (0.0, 0.0, 1.0),
        };
        let (f_alive, f_unknown) = (alive / all, unknown / all);
        // (and 0.2%: on 3.1 a few of 6,601 kept large arrays were lost)
        let tolerance = 4.0 * (p * (1.0 - p) / n).sqrt() + 2.0 / n + 0.002;
        eprintln!(
            "{rt:?} {tn}: {n} samples; kept {:.3} of {made}; the tool: alive {f_alive:.3}, unknown {f_unknown:.3} (tolerance {tolerance:.3})",
            p
        );
        assert!(f_unknown <= 0.05, "{rt:?} {tn}: {f_unknown:.3} of the samples of unknown fate");
        if kept == 0.0 {
            // None alive (the program's last object of each thread, held
            // to the threads' end, is gone by the last GCs).
            let most = 2.0 / n + 0.002;
            assert!(f_alive <= most, "{rt:?} {tn}: the program keeps none, the tool says {f_alive:.3} of them survive (at most {most:.3})");
        } else {
            assert!(
                f_alive <= p + tolerance && f_alive + f_unknown >= p - tolerance,
                "{rt:?} {tn}: {f_alive:.3} alive and {f_unknown:.3} unknown against {p:.3} kept ({n} samples)"
            );
        }
    }

    // The released old objects: reclaimed in the generation they were in.
    for (name, gens) in truth["died_in_generation"].as_object().expect("died_in_generation") {
        let gens: Vec<f64> = gens.as_array().expect("3 counts").iter().map(|g| g.as_f64().expect("a count")).collect();
        let total: f64 = gens.iter().sum();
        let n = samples.get(name).copied().unwrap_or(0) as f64;
        if n < 5.0 {
            eprintln!("{rt:?} {name}: {n} samples, not checked");
            continue;
        }
        let r = row(&life["rows"], "name", name).unwrap_or_else(|| panic!("{rt:?}: no {name} in lifetime: {life}"));
        let all = objects(&r["allocated"]);
        // Reclaimed in the generation the program saw it in, or an older
        // one (a GC after the release that did not condemn it may promote
        // it first: CoreCLR 3.1 turns GC.Collect(1) into a background GC),
        // never a younger one; and all of them reclaimed.
        let youngest = gens.iter().position(|&c| c > 0.0).unwrap_or(0);
        let tolerance = 2.0 / n;
        let mut reclaimed = 0.0;
        for (g, key) in ["gen0", "gen1", "gen2"].iter().enumerate() {
            let got = objects(&r[key]) / all;
            reclaimed += got;
            eprintln!("{rt:?} {name}: {key} {got:.3} of the objects, the program {:.3}", gens[g] / total);
            if g < youngest {
                assert!(got <= tolerance, "{rt:?} {name}: {key} {got:.3}, younger than the program's gen {youngest}: {r}");
            }
        }
        assert!(reclaimed >= 1.0 - tolerance, "{rt:?} {name}: {reclaimed:.3} of the objects reclaimed: {r}");
    }

    // Said: survival is known only when no sample is unknown.
    let unknown_samples = summary["estimates"]["survival_unknown_samples"].as_u64().expect("survival_unknown_samples");
    eprintln!("{rt:?}: {unknown_samples} sample(s) of unknown fate; survivors {} of {} objects", sv["surviving"], sv["allocated"]);
    assert_eq!(summary["estimates"]["survival_known"], unknown_samples == 0, "{rt:?}: {}", summary["estimates"]);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn survival_of_four_threads_on_net8_regions() {
    check(Runtime::Net8);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn survival_of_four_threads_on_core31_segments() {
    check(Runtime::Core31);
}
