//! The agent measures the program, not itself: `agent/testapps/fidelity.cs`
//! (number and date formatting, string interpolation, LINQ, dictionaries,
//! async/await, exceptions, reflection) is recorded on CoreCLR 3.1 and
//! .NET 8 in every stack mode. The objects and bytes recorded per type must
//! equal the no-stacks recording's (the hooks must not change what the
//! program allocates), and the recorded total must equal what the program
//! itself says it allocated (`GC.GetTotalAllocatedBytes(true)` around the
//! measured phase) within 1%.
//!
//! The per-type comparison covers the program's thread (all of the
//! measured work runs on it; the thread that allocates most): the
//! runtime's own background threads allocate at moments that depend on
//! timing, in any mode; the 1% total covers every thread. Tiered
//! compilation also allocates a little of its own at moments that depend
//! on timing, with or without the agent (CoreCLR 3.1: a few small
//! `System.SByte []`, sometimes on the program's thread; .NET 8: a
//! `System.RuntimeType` now and then, from the JIT): up to
//! [`TIERING_SLACK`] objects of those two types may differ, nothing else.
//!
//! Needs `scripts/setup-dotnet.sh` (see agent/tests/runtime.rs).

use clrprof::format::{read_all, Record};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

#[path = "../../crates/cli/tests/common/dotnet.rs"]
mod dotnet;

use dotnet::{Dotnet, Runtime};

struct Env {
    dotnet: &'static Dotnet,
    agent: PathBuf,
}

fn env() -> Option<&'static Env> {
    static ENV: OnceLock<Option<Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fidelity-tests-{}", std::process::id()));
        let dotnet = dotnet::dotnet(&work)?;
        let exe = std::env::current_exe().ok()?;
        let deps = exe.parent()?;
        let Some(agent) =
            [deps.join("libclrprof_agent.so"), deps.parent()?.join("libclrprof_agent.so")].into_iter().find(|p| p.is_file())
        else {
            return dotnet::skip("libclrprof_agent.so was not built next to the tests");
        };
        Some(Env { dotnet, agent })
    })
    .as_ref()
}

/// Objects of a type tiered compilation itself allocates at moments that
/// depend on timing, by which two recordings may differ.
const TIERING_SLACK: u64 = 4;
/// The types tiered compilation itself allocates.
const TIERING_TYPES: [&str; 2] = ["System.SByte []", "System.RuntimeType"];

/// Objects and bytes per type name.
type PerType = BTreeMap<String, (u64, u64)>;

struct Recording {
    /// The program's thread.
    per_type: PerType,
    /// Bytes on every thread.
    total: u64,
    /// What the program says it allocated in the measured phase.
    allocated: u64,
}

fn record(env: &Env, rt: Runtime, mode: &str) -> Recording {
    let dir = env.dotnet.app_dir("fidelity", rt, &env.dotnet.work.join(format!("fidelity-{}-{mode}", rt.tag())));
    let log = dir.join("out.log");
    let _ = std::fs::remove_file(&log);
    let out = Command::new(env.dotnet.host(rt))
        .current_dir(&dir)
        .args(["fidelity.dll", "2000", "3"])
        .env("CORECLR_ENABLE_PROFILING", "1")
        .env("CORECLR_PROFILER", clrprof_agent::PROFILER_GUID)
        .env("CORECLR_PROFILER_PATH", &env.agent)
        .env("CLRPROF_OUTPUT", &log)
        .env("CLRPROF_STACKS", mode)
        // Off until the program switches it on around the measured phase.
        .env("CLRPROF_ALLOCATIONS", "0")
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .env_remove("CLRPROF_CALLS")
        .output()
        .expect("run dotnet");
    assert!(out.status.success(), "fidelity on {rt:?}/{mode} failed: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = dotnet::json_line(&out.stdout).unwrap_or_else(|| panic!("fidelity printed no JSON on {rt:?}/{mode}"));
    let allocated = stdout["allocated"].as_u64().expect("allocated");
    let bytes = std::fs::read(&log).unwrap_or_else(|_| panic!("{rt:?}/{mode}: no log"));
    let (per_type, total) = per_type(&bytes);
    Recording { per_type, total, allocated }
}

/// Objects and bytes per type on the thread that allocated most, and the
/// bytes of every thread.
fn per_type(log: &[u8]) -> (PerType, u64) {
    let (records, diags) = read_all(log);
    assert_eq!(diags.total(), 0, "the log has warnings");
    let mut types: HashMap<i32, String> = HashMap::new();
    let mut stacks: HashMap<i32, (i32, u64)> = HashMap::new();
    let mut by_thread: HashMap<i32, PerType> = HashMap::new();
    let mut total = 0u64;
    for p in &records {
        match &p.record {
            Record::Type(t) => {
                types.insert(t.id.0, t.decoded_name());
            }
            Record::Stack(s) => {
                if let Some(a) = s.alloc {
                    stacks.insert(s.id.0, (a.0 .0, a.1 as u64));
                }
            }
            Record::Alloc(a) => {
                let (ty, size) = stacks[&a.stack.0];
                let e = by_thread.entry(a.thread.map_or(0, |t| t.0)).or_default().entry(types[&ty].clone()).or_default();
                e.0 += 1;
                e.1 += size;
                total += size;
            }
            _ => {}
        }
    }
    let objects = |t: &PerType| t.values().map(|v| v.0).sum::<u64>();
    let main = by_thread.into_values().max_by_key(objects).unwrap_or_default();
    (main, total)
}

fn differences(a: &PerType, b: &PerType) -> Vec<String> {
    let names: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    names
        .into_iter()
        .filter_map(|n| {
            let x = a.get(n).copied().unwrap_or_default();
            let y = b.get(n).copied().unwrap_or_default();
            let slack = TIERING_TYPES.contains(&n.as_str()) && x.0.abs_diff(y.0) <= TIERING_SLACK;
            if x != y && slack {
                eprintln!("allowed (tiered compilation's own): {n}: {} objects vs {}", x.0, y.0);
            }
            (x != y && !slack).then(|| format!("{n}: {} objects {} bytes vs {} objects {} bytes", x.0, x.1, y.0, y.1))
        })
        .collect()
}

fn check(rt: Runtime) {
    let Some(env) = env() else { return };
    let base = record(env, rt, "none");
    for mode in ["none", "shadow", "snapshot"] {
        let r = if mode == "none" {
            Recording { per_type: base.per_type.clone(), total: base.total, allocated: base.allocated }
        } else {
            record(env, rt, mode)
        };
        let off = (r.total as f64 - r.allocated as f64).abs() / r.allocated as f64;
        assert!(
            off <= 0.01,
            "{rt:?}/{mode}: the log holds {} bytes, the program allocated {} ({:.2}% apart)",
            r.total,
            r.allocated,
            off * 100.0
        );
        if mode != "none" {
            let d = differences(&r.per_type, &base.per_type);
            assert!(d.is_empty(), "{rt:?}/{mode} differs from no stacks per type:\n{}", d.join("\n"));
        }
    }
}

#[test]
#[cfg_attr(no_dotnet, ignore = "needs the .NET runtimes, missing when built: run scripts/setup-dotnet.sh, then touch agent/build.rs")]
fn fidelity_core31() {
    check(Runtime::Core31);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "needs the .NET runtimes, missing when built: run scripts/setup-dotnet.sh, then touch agent/build.rs")]
fn fidelity_net8() {
    check(Runtime::Net8);
}
