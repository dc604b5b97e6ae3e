//! A multi-threaded program with known truth (`agent/testapps/threads.cs`:
//! four threads allocating two types of different sizes at once, a kept
//! fraction in a static list, an `object[]` of a million references, two
//! induced GCs, a held phase) on .NET 8, captured by the runtime itself
//! (`DOTNET_EnableEventPipe`) and by `clrprof heap-dump PID`:
//!
//! - the GCs in time order: the timeline's GCs are the runtime's GCs in
//!   the order of their own numbers (`GC/Start`'s `Count`), with their
//!   generations, the program's two induced GCs last;
//! - the heap walk whole: every dumped object reachable, the kept objects
//!   reached through the program's own list, and the containers' retained
//!   bytes equal to the agent's dump of the same heap.
//!
//! Needs `scripts/setup-dotnet.sh`: without it the tests print SKIPPED, and
//! fail under `CI=true`.

mod common;

use clrprof::eventpipe::{NetTraceReader, Order, ReadOptions, Value as Field};
use common::dotnet::{self, Dotnet, Runtime};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};

/// Quokkas per thread, and the references of the large array.
const PER_THREAD: &str = "250000";
const BIG: &str = "1000000";

fn dotnet_env() -> Option<&'static Dotnet> {
    dotnet::dotnet(&Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("eventpipe-threads-{}", std::process::id())))
}

fn ok_json(dir: &Path, args: &[&str]) -> Value {
    let quiet: &[&str] = if args[0] == "heap-dump" { &["--json"] } else { &["--json", "-q"] };
    let out = Command::new(env!("CARGO_BIN_EXE_clrprof")).args(args).args(quiet).current_dir(dir).output().expect("run clrprof");
    assert!(out.status.success(), "clrprof {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("clrprof {args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// The runtime's GCs from the trace: (Count, Depth) of each `GC/Start`,
/// in the reader's order.
fn gc_starts(trace: &Path, order: Order) -> Vec<(u64, u64)> {
    let bytes = std::fs::read(trace).expect("read the trace");
    let mut r = NetTraceReader::with_options(&bytes, ReadOptions { order, ..ReadOptions::default() }).expect("header");
    let mut out = Vec::new();
    while let Some(e) = r.next_event().expect("event") {
        if e.name() != "GC/Start" {
            continue;
        }
        let fields = e.fields().expect("fields").expect("GC/Start decodes");
        let get =
            |n: &str| fields.iter().find(|f| f.name == n).and_then(|f| if let Field::Unsigned(v, _) = f.value { Some(v) } else { None });
        out.push((get("Count").expect("Count"), get("Depth").expect("Depth")));
    }
    out
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn gcs_of_four_threads_in_time_order_on_net8() {
    let Some(dn) = dotnet_env() else { return };
    let rt = Runtime::Net8;
    let dir = dn.app_dir("threads", rt, &dn.work.join("threads-trace"));
    let trace = dir.join("threads.nettrace");
    let _ = std::fs::remove_file(&trace);
    let out = Command::new(dn.host(rt))
        .args(["threads.dll", PER_THREAD, BIG, "exit"])
        .current_dir(&dir)
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .env("DOTNET_EnableEventPipe", "1")
        .env("DOTNET_EventPipeOutputPath", &trace)
        .env("DOTNET_EventPipeConfig", "Microsoft-Windows-DotNETRuntime:0x400001:5")
        .output()
        .expect("run the program");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let truth = dotnet::json_line(&out.stdout).expect("the program's truth");

    // The reader: the runtime numbers its GCs 1, 2, 3, ... in the order
    // they happen; in time order they come so.
    let starts = gc_starts(&trace, Order::Time);
    let counts: Vec<u64> = starts.iter().map(|s| s.0).collect();
    assert!(counts.windows(2).all(|w| w[0] < w[1]), "GC/Start counts in time order: {counts:?}");
    let file_counts: Vec<u64> = gc_starts(&trace, Order::File).iter().map(|s| s.0).collect();
    eprintln!("GC/Start counts in time order {counts:?}, in file order {file_counts:?}");
    let mut by_count = starts.clone();
    by_count.sort_unstable();
    let generations: Vec<u64> = by_count.iter().map(|s| s.1.min(2)).collect();
    assert_eq!(counts.len() as u64, truth["gc"][0].as_u64().expect("gen 0 count"), "every GC of the program: {truth}");

    // The timeline: the same GCs, in that order, with those generations.
    let t = trace.to_str().expect("UTF-8");
    let timeline = ok_json(&dir, &["timeline", t]);
    let gcs = timeline["gcs"].as_array().expect("gcs");
    let tl_generations: Vec<u64> = gcs.iter().map(|g| g["generation"].as_u64().expect("generation")).collect();
    assert_eq!(tl_generations, generations, "the timeline's GC generations against the runtime's, by its GC numbers");
    let ms: Vec<f64> = gcs.iter().map(|g| g["ms"].as_f64().expect("ms")).collect();
    assert!(ms.windows(2).all(|w| w[0] <= w[1]), "GC times: {ms:?}");
    let numbers: Vec<u64> = gcs.iter().map(|g| g["number"].as_u64().expect("number")).collect();
    assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");
    // The program's induced GCs, GC.Collect(1) then GC.Collect(2), last,
    // at the generations the program's own counters say the runtime did
    // them (it may raise the first to a gen 2).
    let induced: Vec<u64> = truth["induced"].as_array().expect("induced").iter().map(|g| g.as_u64().expect("generation")).collect();
    assert_eq!(induced[1], 2, "{truth}");
    assert_eq!(tl_generations[tl_generations.len() - 2..], induced[..], "{tl_generations:?}: {truth}");
    let s = ok_json(&dir, &["summary", t]);
    for (k, key) in ["gen0_collections", "gen1_collections", "gen2_collections"].iter().enumerate() {
        assert_eq!(s[key], truth["gc"][k], "{key}: {s}");
    }
}

/// The held program, driven through its standard input.
struct Held {
    child: Child,
    stdin: ChildStdin,
}

impl Drop for Held {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "exit");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Objects of the type named exactly `name` in a dump.
fn objects_of(dump: &Value, name: &str) -> u64 {
    dump["types"].as_array().and_then(|v| v.iter().find(|r| r["name"] == name)).and_then(|r| r["objects"].as_u64()).unwrap_or(0)
}

/// The retained bytes of the largest object whose type name `is` and
/// whose own size is `size` (any size when `None`).
fn retained_of(retained: &Value, what: &str, is: impl Fn(&str) -> bool, size: Option<u64>) -> u64 {
    let rows = retained["top_objects"].as_array().expect("top objects");
    let named = rows.iter().filter(|r| r["name"].as_str().is_some_and(&is) && size.is_none_or(|s| r["size"].as_u64() == Some(s)));
    named.filter_map(|r| r["retained"].as_u64()).max().unwrap_or_else(|| panic!("no {what} among the top objects"))
}

/// The program's list of kept Quokkas (spelled differently in a trace and
/// in a log).
fn the_list(name: &str) -> bool {
    name.contains("List") && name.contains("Quokka")
}

/// The program's large `object[]`.
fn the_array(name: &str) -> bool {
    name.replace(' ', "") == "System.Object[]"
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn heap_walk_of_four_threads_is_whole_on_net8() {
    let Some(dn) = dotnet_env() else { return };
    let Some(agent) = dotnet::agent_beside(Path::new(env!("CARGO_BIN_EXE_clrprof"))) else { return };
    let rt = Runtime::Net8;
    let dir = dn.app_dir("threads", rt, &dn.work.join("threads-dump"));
    let mut child = Command::new(dn.host(rt))
        .args(["threads.dll", PER_THREAD, BIG])
        .current_dir(&dir)
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the program");
    let stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("the program's truth");
    let truth: Value = serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("{line:?}: {e}"));
    let pid = child.id().to_string();
    let _held = Held { child, stdin };

    let d = ok_json(&dir, &["heap-dump", &pid, "-o", "ep.nettrace"]);
    assert_eq!(d["eventpipe"], true, "{d}");
    assert_eq!(d["dump"]["complete"], true, "{d}");
    let ep = dir.join("ep.nettrace");
    let ep = ep.to_str().expect("UTF-8");
    let dump = ok_json(&dir, &["dump", ep, "0", "--top", "0"]);
    assert_eq!(objects_of(&dump, "Quokka"), truth["kept_quokkas"].as_u64().expect("kept"), "kept Quokkas");
    assert_eq!(objects_of(&dump, "Pellet"), truth["pellets"].as_u64().expect("pellets"), "Pellets");

    // Every object reachable: the walk's nodes joined to their edges.
    let retained = ok_json(&dir, &["dump", ep, "0", "--retained", "--top", "50"]);
    eprintln!(
        "heap walk: {} objects, {} reachable, {} unreachable",
        retained["objects"], retained["reachable_objects"], retained["unreachable_objects"]
    );
    assert_eq!(retained["unreachable_objects"], 0, "{}", retained["unreachable_types"]);
    assert_eq!(retained["reachable_objects"], retained["objects"]);

    // The kept Quokkas are held by the program's own static list.
    let paths = ok_json(&dir, &["dump", ep, "0", "--path-to", "Quokka", "--max", "20"]);
    let paths = paths["paths"].as_array().expect("paths");
    assert_eq!(paths.len(), 20);
    for path in paths {
        let names: Vec<&str> = path["steps"].as_array().expect("steps").iter().filter_map(|s| s["name"].as_str()).collect();
        assert!(names.iter().any(|n| n.contains("List") && n.contains("Quokka")), "{names:?}");
    }

    // The agent's dump of the same heap: the containers retain the same.
    let agent_dump = Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .args(["heap-dump", &pid, "--attach", "-o", "agent.log", "--json"])
        .current_dir(&dir)
        .env("CLRPROF_AGENT", &agent)
        .output()
        .expect("run heap-dump --attach");
    assert!(agent_dump.status.success(), "{}", String::from_utf8_lossy(&agent_dump.stderr));
    let agents = ok_json(&dir, &["dump", "agent.log", "0", "--retained", "--top", "50"]);
    // The program's object[]: its own size tells it from the runtime's
    // (the statics' arrays retain the program's containers in the agent's
    // dump).
    let big = Some(truth["pellets"].as_u64().expect("pellets") * 8 + 24);
    for (name, is, size) in [("the list of kept Quokkas", the_list as fn(&str) -> bool, None), ("the object[] of Pellets", the_array, big)] {
        let (ours, theirs) = (retained_of(&retained, name, is, size), retained_of(&agents, name, is, size));
        eprintln!("{name}: retained {ours} bytes over EventPipe, {theirs} from the agent");
        assert_eq!(ours, theirs, "{name}: retained bytes over EventPipe and from the agent");
    }
    let kept = truth["kept_quokkas"].as_u64().expect("kept") * truth["quokka_size"].as_u64().expect("size");
    assert!(retained_of(&retained, "the list", the_list, None) >= kept);
}
