//! The agent against real runtimes: C# test programs (agent/testapps/)
//! compiled with Mono's `mcs` and run on CoreCLR 3.1 and .NET 8 under the
//! agent, in each stack mode. The logs must load without warnings and
//! agree with what the programs report: marker allocation counts, GC
//! counts, finalizer queueing, handles, allocation stacks.
//!
//! Needs `scripts/setup-dotnet.sh` to have run (it installs both runtimes
//! into target/dotnet-venv and `mcs`); without it every test here prints
//! a message and passes without checking anything.

use clrprof::format::{read_all, Record};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

#[path = "../../crates/cli/tests/common/dotnet.rs"]
mod dotnet;

use dotnet::{Dotnet, Runtime};

const GUID: &str = clrprof_agent::PROFILER_GUID;

struct Env {
    dotnet: &'static Dotnet,
    agent: PathBuf,
}

fn find_agent() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let deps = exe.parent()?;
    [deps.join("libclrprof_agent.so"), deps.parent()?.join("libclrprof_agent.so")].into_iter().find(|p| p.is_file())
}

fn env() -> Option<&'static Env> {
    static ENV: OnceLock<Option<Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("agent-tests-{}", std::process::id()));
        let dotnet = dotnet::dotnet(&work)?;
        let Some(agent) = find_agent() else {
            return dotnet::skip("libclrprof_agent.so was not built next to the tests");
        };
        Some(Env { dotnet, agent })
    })
    .as_ref()
}

struct Run {
    stdout: Value,
    status: std::process::ExitStatus,
    log: Vec<u8>,
}

fn run(env: &Env, app: &str, rt: Runtime, vars: &[(&str, &str)]) -> Run {
    let name = format!("{app}-{}-{}", rt.tag(), vars.iter().map(|v| format!("{}{}", v.0, v.1)).collect::<Vec<_>>().join("-"));
    let dir = env.dotnet.app_dir(app, rt, &env.dotnet.work.join(name));
    let log = dir.join("out.log");
    let _ = std::fs::remove_file(&log);
    let mut cmd = Command::new(env.dotnet.host(rt));
    cmd.current_dir(&dir)
        .arg(format!("{app}.dll"))
        .env("CORECLR_ENABLE_PROFILING", "1")
        .env("CORECLR_PROFILER", GUID)
        .env("CORECLR_PROFILER_PATH", &env.agent)
        .env("CLRPROF_OUTPUT", &log)
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .env_remove("CLRPROF_STACKS")
        .env_remove("CLRPROF_CALLS");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run dotnet");
    let stdout = dotnet::json_line(&out.stdout).unwrap_or_else(|| {
        panic!(
            "{app} on {rt:?} printed no JSON; stdout: {}; stderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let log = std::fs::read(&log).unwrap_or_else(|_| panic!("{app} on {rt:?}: no log: the runtime did not load the agent"));
    Run { stdout, status: out.status, log }
}

/// What the tests need from a log, computed independently of the model.
#[derive(Default)]
struct Facts {
    types: HashMap<i32, (String, bool)>,
    functions: HashMap<i32, String>,
    /// stack id -> (alloc type id, frames outermost first)
    stacks: HashMap<i32, (Option<i32>, Vec<i32>)>,
    allocs_by_type: HashMap<String, u64>,
    alloc_threads_by_type: HashMap<String, HashSet<i32>>,
    alloc_stacks_by_type: HashMap<String, Vec<i32>>,
    gc_ends: [u64; 3],
    last_g: Option<[i32; 3]>,
    finalized_by_type: HashMap<String, u64>,
    handles_created: Vec<i32>,
    handles_destroyed: Vec<i32>,
    calls: u64,
}

impl Facts {
    fn type_name(&self, id: i32) -> String {
        self.types.get(&id).map(|t| t.0.clone()).unwrap_or_default()
    }
    fn frame_names(&self, stack: i32) -> Vec<String> {
        self.stacks.get(&stack).map(|s| s.1.iter().map(|f| self.functions.get(f).cloned().unwrap_or_default()).collect()).unwrap_or_default()
    }
}

fn analyze(log: &[u8]) -> Facts {
    let (records, diags) = read_all(log);
    assert_eq!(
        diags.total(),
        0,
        "the log has warnings: {:?}",
        diags.warnings().iter().take(5).map(|w| format!("{w:?}")).collect::<Vec<_>>()
    );
    let mut f = Facts::default();
    // Simulated heap: address -> type id, to attribute `l` lines.
    let mut heap: BTreeMap<u64, i32> = BTreeMap::new();
    let mut moves: Vec<(u64, u64, u64)> = Vec::new();
    for p in &records {
        match &p.record {
            Record::Type(t) => {
                f.types.insert(t.id.0, (t.decoded_name(), t.finalizable == Some(true)));
            }
            Record::Function(d) => {
                f.functions.insert(d.id.0, d.decoded_name());
            }
            Record::Stack(s) => {
                let mut frames = Vec::new();
                if let Some(r) = s.reference {
                    let prev = &f.stacks.get(&r.0).unwrap_or_else(|| panic!("stack {} refers to undefined {}", s.id.0, r.0)).1;
                    frames.extend_from_slice(&prev[..s.shared_frames() as usize]);
                }
                frames.extend(s.frames.iter().map(|x| x.0));
                assert!(f.stacks.insert(s.id.0, (s.alloc.map(|a| a.0 .0), frames)).is_none(), "stack {} defined twice", s.id.0);
            }
            Record::Alloc(a) => {
                let (ty, _) = f.stacks.get(&a.stack.0).unwrap_or_else(|| panic!("undefined stack {}", a.stack.0)).clone();
                let ty = ty.expect("allocation with a call stack");
                let name = f.type_name(ty);
                *f.allocs_by_type.entry(name.clone()).or_default() += 1;
                f.alloc_threads_by_type.entry(name.clone()).or_default().insert(a.thread.map_or(0, |t| t.0));
                f.alloc_stacks_by_type.entry(name).or_default().push(a.stack.0);
                heap.insert(a.address.0, ty);
            }
            Record::GcBoundary(b) if !b.is_start => {
                let g = b.condemned.clamp(0, 2) as usize;
                for k in 0..=g {
                    f.gc_ends[k] += 1;
                }
                let mut moved = Vec::new();
                for &(old, new, len) in &moves {
                    let keys: Vec<u64> = heap.range(old..old + len).map(|(&k, _)| k).collect();
                    for k in keys {
                        let ty = heap.remove(&k).unwrap();
                        moved.push((k - old + new, ty));
                    }
                }
                heap.extend(moved);
                moves.clear();
            }
            Record::Moved(m) => moves.push((m.old.0, m.new.0, m.length as u64)),
            Record::GcCounts(g) => f.last_g = Some([g.gen0, g.gen1, g.gen2]),
            Record::Finalizer(l) => {
                let name = heap.get(&l.address.0).map(|&t| f.type_name(t)).unwrap_or_default();
                *f.finalized_by_type.entry(name).or_default() += 1;
            }
            Record::HandleCreated(h) => f.handles_created.push(h.stack.0),
            Record::HandleDestroyed(j) => f.handles_destroyed.push(j.stack.0),
            Record::Call(_) => f.calls += 1,
            _ => {}
        }
    }
    f
}

fn check_markers(rt: Runtime, mode: &str, extra: &[(&str, &str)]) {
    let Some(env) = env() else { return };
    let mut vars = vec![("CLRPROF_STACKS", mode)];
    vars.extend_from_slice(extra);
    let r = run(env, "markers", rt, &vars);
    assert!(r.status.success(), "markers failed on {rt:?}");
    let f = analyze(&r.log);
    let what = format!("{rt:?}/{mode}");

    for (name, count) in r.stdout["types"].as_object().unwrap() {
        assert_eq!(f.allocs_by_type.get(name).copied().unwrap_or(0), count.as_u64().unwrap(), "{what}: allocations of {name}");
    }
    let gc: Vec<u64> = r.stdout["gc"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    assert_eq!(f.gc_ends.to_vec(), gc, "{what}: GC counts from b lines");
    assert_eq!(f.last_g.map(|g| g.map(|v| v as u64).to_vec()), Some(gc), "{what}: the last g line");
    assert_eq!(
        f.finalized_by_type.get("FinMarker").copied().unwrap_or(0),
        r.stdout["finalized"].as_u64().unwrap(),
        "{what}: FinMarker objects queued for finalization"
    );
    let fin = f.types.values().find(|t| t.0 == "FinMarker").expect("FinMarker type");
    assert!(fin.1, "{what}: FinMarker is finalizable");
    assert!(!f.types.values().find(|t| t.0 == "MarkerA").unwrap().1, "{what}: MarkerA is not finalizable");
    let threads = r.stdout["threads"].as_u64().unwrap() as usize;
    assert!(f.alloc_threads_by_type["ThreadMarker"].len() >= threads, "{what}: ThreadMarker threads");
    let handles = r.stdout["handles"].as_u64().unwrap() as usize;
    assert!(f.handles_created.len() >= handles && f.handles_destroyed.len() >= handles, "{what}: handle counts");

    if mode == "none" {
        for stacks in f.alloc_stacks_by_type.values() {
            for s in stacks {
                assert!(f.stacks[s].1.is_empty(), "{what}: frames without stacks");
            }
        }
        return;
    }
    // Allocation stacks name the allocating method.
    let expect_in = |ty: &str, method: &str| {
        for &s in &f.alloc_stacks_by_type[ty] {
            let names = f.frame_names(s);
            assert!(names.iter().any(|n| n == method), "{what}: a {ty} allocation stack lacks {method}: {names:?}");
            assert!(names.iter().any(|n| n == "P::Main"), "{what}: a {ty} allocation stack lacks P::Main: {names:?}");
        }
    };
    expect_in("MarkerA", "P::AllocMarkers");
    expect_in("MarkerStruct []", "P::AllocArrays");
    expect_in("MarkerBox<System.Int32>", "P::AllocGenerics");
    expect_in("MarkerBox<System.Int64> []", "P::AllocLarge");
    expect_in("FinMarker", "P::AllocFinalizable");
    expect_in("ExcMarker", "P::AfterCatch");
    expect_in("HandleMarker", "P::MakeHandles");
    for &s in &f.alloc_stacks_by_type["ThreadMarker"] {
        assert!(f.frame_names(s).iter().any(|n| n == "P::ThreadBody"), "{what}: ThreadMarker stack");
    }
    // Exceptions unwound the shadow stack: no thrower frames remain.
    for &s in &f.alloc_stacks_by_type["ExcMarker"] {
        let names = f.frame_names(s);
        assert!(!names.iter().any(|n| n == "P::Thrower" || n == "P::RunExceptions" && names.last() != Some(&"P::AfterCatch".to_string())), "{what}: {names:?}");
        assert_eq!(names.last().map(String::as_str), Some("P::AfterCatch"), "{what}: innermost ExcMarker frame");
    }
    // Strings made in AllocStrings.
    let strings = f.alloc_stacks_by_type["System.String"].iter().filter(|&&s| f.frame_names(s).iter().any(|n| n == "P::AllocStrings")).count();
    // The runtime may make a string of its own the first time (seen on
    // .NET 8: one string allocated directly in AllocStrings, outside
    // String::Ctor): at least the program's strings, and hardly more.
    let expected = r.stdout["strings_in_AllocStrings"].as_u64().unwrap();
    assert!((expected..=expected + 2).contains(&(strings as u64)), "{what}: {strings} strings made in AllocStrings, expected {expected}");
    if mode == "shadow" {
        let made = f.handles_created.iter().filter(|&&s| f.frame_names(s).iter().any(|n| n == "P::MakeHandles")).count();
        let freed = f.handles_destroyed.iter().filter(|&&s| f.frame_names(s).iter().any(|n| n == "P::FreeHandles")).count();
        assert_eq!((made, freed), (handles, handles), "{what}: handles made in MakeHandles / freed in FreeHandles");
    }
}

#[test]
#[cfg_attr(no_dotnet, ignore = "needs the .NET runtimes, missing when built: run scripts/setup-dotnet.sh, then touch agent/build.rs")]
fn markers_core31_shadow() {
    check_markers(Runtime::Core31, "shadow", &[]);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "needs the .NET runtimes, missing when built: run scripts/setup-dotnet.sh, then touch agent/build.rs")]
fn markers_net8_shadow() {
    check_markers(Runtime::Net8, "shadow", &[]);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "needs the .NET runtimes, missing when built: run scripts/setup-dotnet.sh, then touch agent/build.rs")]
fn markers_core31_snapshot() {
    check_markers(Runtime::Core31, "snapshot", &[]);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "needs the .NET runtimes, missing when built: run scripts/setup-dotnet.sh, then touch agent/build.rs")]
fn markers_net8_snapshot() {
    check_markers(Runtime::Net8, "snapshot", &[]);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "needs the .NET runtimes, missing when built: run scripts/setup-dotnet.sh, then touch agent/build.rs")]
fn markers_core31_no_stacks() {
    check_markers(Runtime::Core31, "none", &[]);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "needs the .NET runtimes, missing when built: run scripts/setup-dotnet.sh, then touch agent/build.rs")]
fn markers_net8_no_stacks() {
    check_markers(Runtime::Net8, "none", &[]);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "needs the .NET runtimes, missing when built: run scripts/setup-dotnet.sh, then touch agent/build.rs")]
fn markers_net8_server_gc() {
    check_markers(Runtime::Net8, "shadow", &[("DOTNET_gcServer", "1")]);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "needs the .NET runtimes, missing when built: run scripts/setup-dotnet.sh, then touch agent/build.rs")]
fn markers_core31_server_gc() {
    check_markers(Runtime::Core31, "shadow", &[("COMPlus_gcServer", "1")]);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "needs the .NET runtimes, missing when built: run scripts/setup-dotnet.sh, then touch agent/build.rs")]
fn markers_net8_calls() {
    check_markers(Runtime::Net8, "shadow", &[("CLRPROF_CALLS", "1")]);
    let Some(env) = env() else { return };
    let r = run(env, "markers", Runtime::Net8, &[("CLRPROF_STACKS", "shadow"), ("CLRPROF_CALLS", "1")]);
    // About 7,700 on .NET 8 since hooks switch tiered compilation off
    // (optimized code inlines small methods, which then make no call; tier-0
    // code made over 10,000).
    assert!(analyze(&r.log).calls > 5_000, "c lines with call logging");
}

fn check_crash(rt: Runtime) {
    let Some(env) = env() else { return };
    let r = run(env, "crash", rt, &[]);
    assert!(!r.status.success(), "the crash program must fail");
    let f = analyze(&r.log);
    let n = r.stdout["types"]["CrashMarker"].as_u64().unwrap();
    assert_eq!(f.allocs_by_type.get("CrashMarker").copied(), Some(n), "{rt:?}: CrashMarker allocations before the crash");
}

#[test]
#[cfg_attr(no_dotnet, ignore = "needs the .NET runtimes, missing when built: run scripts/setup-dotnet.sh, then touch agent/build.rs")]
fn crash_core31_leaves_a_loadable_log() {
    check_crash(Runtime::Core31);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "needs the .NET runtimes, missing when built: run scripts/setup-dotnet.sh, then touch agent/build.rs")]
fn crash_net8_leaves_a_loadable_log() {
    check_crash(Runtime::Net8);
}
