//! `clrprof leaks` on real .NET programs (agent/testapps/leaky.cs), dumped
//! with `clrprof heap-dump PID` (EventPipe, no agent) after each of four
//! steps while several threads allocate:
//!
//! - a true leak (a static `List<Order>` that only grows) and an event
//!   handler leak (subscribers kept by a long-lived publisher), among the
//!   non-leaks below: both named, with their containers, the path from the
//!   static field that roots them, and growth per minute equal to the
//!   program's own; nothing else named; exit status 1;
//! - the non-leaks alone (a cache that fills and then plateaus, garbage
//!   churn on four threads, a one-time warm-up): no leak, exit status 0;
//! - two dumps: cannot tell, exit status 2.
//!
//! Needs `scripts/setup-dotnet.sh` (else SKIPPED, or a failure under
//! `CI=true`).

mod common;

use common::dotnet::{self, Dotnet, Runtime};
use common::leaky::Program;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The program's step sizes (leaky.cs).
const ORDERS: u64 = 3000;
const LISTENERS: u64 = 400;

fn clrprof_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_clrprof"))
}

fn work() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("leaks-tests-{}", std::process::id()))
}

fn clrprof(dir: &Path, args: &[&str]) -> Output {
    Command::new(clrprof_exe()).args(args).current_dir(dir).output().expect("run clrprof")
}

/// Runs the program in `mode` for `steps` steps, dumping it after each;
/// gives the dump files and the program's answers.
fn dumped(dn: &Dotnet, rt: Runtime, mode: &str, steps: usize) -> (PathBuf, Vec<String>, Vec<Value>) {
    let dir = dn.app_dir("leaky", rt, &work().join(format!("{mode}-{steps}-{}", rt.tag())));
    let mut program = Program::start(dn, rt, &dir, mode);
    let mut files = Vec::new();
    let mut answers = Vec::new();
    for k in 0..steps {
        answers.push(program.step());
        let file = format!("{mode}{k}.nettrace");
        let out = clrprof(&dir, &["heap-dump", &program.pid.to_string(), "-o", &file]);
        assert!(out.status.success(), "heap-dump {k}: {}", String::from_utf8_lossy(&out.stderr));
        files.push(file);
    }
    program.finish();
    (dir, files, answers)
}

fn leaks_json(dir: &Path, files: &[String]) -> (Value, i32) {
    let mut args = vec!["leaks", "--json", "--every", "1m"];
    args.extend(files.iter().map(String::as_str));
    let out = clrprof(dir, &args);
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("leaks: not JSON: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    (v, out.status.code().unwrap_or(-1))
}

fn find<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["leaks"]
        .as_array()
        .and_then(|l| l.iter().find(|x| x["name"] == name))
        .unwrap_or_else(|| panic!("no leak of {name} in {report:#}"))
}

fn leak_and_noise(rt: Runtime) {
    let Some(dn) = dotnet::dotnet(&work()) else { return };
    let (dir, files, answers) = dumped(dn, rt, "leak", 4);
    assert_eq!(answers[3]["orders"], 4 * ORDERS, "{:?}", answers);
    assert_eq!(answers[3]["listeners"], 4 * LISTENERS, "{:?}", answers);
    let (report, code) = leaks_json(&dir, &files);
    assert_eq!(code, 1, "a leak is exit status 1: {report:#}");
    assert_eq!(report["verdict"], "leak");
    let names: Vec<&str> = report["leaks"].as_array().unwrap().iter().filter_map(|l| l["name"].as_str()).collect();
    // Exactly the two leaks: the cache, the churn and the warm-up stay quiet.
    assert_eq!(names.len(), 2, "{names:?}");

    let orders = find(&report, "Leaky.Order");
    let counts: Vec<u64> = orders["objects"].as_array().unwrap().iter().filter_map(Value::as_u64).collect();
    assert_eq!(counts, [1, 2, 3, 4].map(|k| k * ORDERS), "the program's own counts");
    assert!((orders["objects_per_minute"].as_f64().unwrap() - ORDERS as f64).abs() < 0.5, "{orders}");
    let holder = &orders["holder"];
    assert_eq!(holder["kind"], "list", "{holder}");
    assert_eq!(holder["holds"], 4 * ORDERS);
    assert!(holder["container"]["name"].as_str().unwrap().contains("System.Collections.Generic.List<Leaky.Order>"), "{holder}");
    assert_eq!(holder["root"]["static_field"], "All", "{holder}");
    // Their strings and payloads grow with them, reported with them.
    let with: Vec<&str> = orders["with"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(with.contains(&"System.Byte[]") && with.contains(&"System.String"), "{with:?}");

    let listeners = find(&report, "Leaky.Listener");
    let counts: Vec<u64> = listeners["objects"].as_array().unwrap().iter().filter_map(Value::as_u64).collect();
    assert_eq!(counts, [1, 2, 3, 4].map(|k| k * LISTENERS));
    let holder = &listeners["holder"];
    assert_eq!(holder["kind"], "event_handlers", "{holder}");
    assert_eq!(holder["holds"], 4 * LISTENERS);
    assert_eq!(holder["root"]["static_field"], "Instance", "{holder}");
    let path: Vec<&str> = holder["path"].as_array().unwrap().iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(path, ["Leaky.Bus", "System.EventHandler"], "the publisher's delegate");

    // The cache filled in the first two steps and then held: not a leak.
    let quiet: Vec<&str> = report["quiet"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(quiet.contains(&"Leaky.CacheEntry"), "{quiet:?}");

    // The table says the same.
    let mut args = vec!["leaks", "--every", "1m"];
    args.extend(files.iter().map(String::as_str));
    let out = clrprof(&dir, &args);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1. Leaky.Order: +3,000 objects/min"), "{text}");
    assert!(text.contains("path: [static field All] -> System.Collections.Generic.List<Leaky.Order>"), "{text}");
    assert!(text.contains("[static field Instance] -> Leaky.Bus -> System.EventHandler"), "{text}");

    // Two dumps cannot tell.
    let (report, code) = leaks_json(&dir, &files[..2]);
    assert_eq!(code, 2, "{report:#}");
    assert_eq!(report["verdict"], "undecided");
}

fn no_leak(rt: Runtime) {
    let Some(dn) = dotnet::dotnet(&work()) else { return };
    let (dir, files, answers) = dumped(dn, rt, "quiet", 4);
    assert_eq!(answers[3]["cache"], 5000, "{:?}", answers);
    let (report, code) = leaks_json(&dir, &files);
    assert_eq!(report["verdict"], "none", "{report:#}");
    assert_eq!(code, 0);
    assert_eq!(report["leaks"].as_array().map(Vec::len), Some(0));
}

/// The leak under the agent, dumped into its log after each step: the
/// roots are the static fields by class and field name, which the agent
/// reads itself (the runtime reports statics only as a pinned handle to
/// its `Object[]` of slots).
fn agent_names_static_roots(rt: Runtime) {
    let Some(dn) = dotnet::dotnet(&work()) else { return };
    let Some(agent) = dotnet::agent_beside(&clrprof_exe()) else { return };
    let dir = dn.app_dir("leaky", rt, &work().join(format!("agent-{}", rt.tag())));
    let answers = common::leaky::agent_log(dn, rt, &dir, &agent, &clrprof_exe(), "leak.log", 4);
    assert_eq!(answers[3]["orders"], 4 * ORDERS, "{answers:?}");
    let files = vec!["leak.log".to_string()];
    let (report, code) = leaks_json(&dir, &files);
    assert_eq!(code, 1, "{report:#}");
    let orders = find(&report, "Leaky.Order");
    let counts: Vec<u64> = orders["objects"].as_array().unwrap().iter().filter_map(Value::as_u64).collect();
    assert_eq!(counts, [1, 2, 3, 4].map(|k| k * ORDERS), "the agent's dumps are exact");
    assert_eq!(orders["holder"]["root"]["static_field"], "Leaky.Orders.All", "{:#}", orders["holder"]);
    let listeners = find(&report, "Leaky.Listener");
    assert_eq!(listeners["holder"]["root"]["static_field"], "Leaky.Bus.Instance", "{:#}", listeners["holder"]);

    let out = clrprof(&dir, &["leaks", "--every", "1m", "leak.log"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("path: [static Leaky.Orders.All] -> System.Collections.Generic.List<Leaky.Order>"), "{text}");
    assert!(text.contains("path: [static Leaky.Bus.Instance] -> Leaky.Bus -> System.EventHandler"), "{text}");

    // `dump --path-to` names the same root.
    let out = clrprof(&dir, &["dump", "leak.log", "3", "--path-to", "Leaky.Order", "--max", "1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("1. [static Leaky.Orders.All]"), "{text}");
}

#[test]
#[cfg_attr(no_dotnet, ignore = "the .NET runtimes are not installed (scripts/setup-dotnet.sh)")]
fn the_agent_names_static_roots_by_class_and_field_on_net8() {
    agent_names_static_roots(Runtime::Net8);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "the .NET runtimes are not installed (scripts/setup-dotnet.sh)")]
fn the_agent_names_static_roots_by_class_and_field_on_core31() {
    agent_names_static_roots(Runtime::Core31);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "the .NET runtimes are not installed (scripts/setup-dotnet.sh)")]
fn a_static_list_and_an_event_leak_are_named_on_net8() {
    leak_and_noise(Runtime::Net8);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "the .NET runtimes are not installed (scripts/setup-dotnet.sh)")]
fn a_cache_churn_and_warm_up_are_not_leaks_on_net8() {
    no_leak(Runtime::Net8);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "the .NET runtimes are not installed (scripts/setup-dotnet.sh)")]
fn a_static_list_and_an_event_leak_are_named_on_core31() {
    leak_and_noise(Runtime::Core31);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "the .NET runtimes are not installed (scripts/setup-dotnet.sh)")]
fn a_cache_churn_and_warm_up_are_not_leaks_on_core31() {
    no_leak(Runtime::Core31);
}
