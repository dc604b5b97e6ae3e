//! What a trace holds, said the same everywhere, on real programs:
//!
//! - the UI compares two dump files: two `heap-dump PID` traces of
//!   `agent/testapps/threads.cs` on .NET 8, held with different numbers
//!   of objects, give their last dumps per type (never "no difference"),
//!   and say that their allocations are unknown, with the reason, rather
//!   than compare them as 0;
//! - the GC count `record --sampled -p PID` prints on CoreCLR 3.1 is the
//!   trace's: attached while `agent/testapps/estimates.cs` collects about
//!   50 times a second, a GC already running when the session began sends
//!   its `GC/Stop` only, and is not one of the trace's GCs.
//!
//! - a log (the agent's) and a trace (the runtime's) of
//!   `agent/testapps/estimates.cs` keep their own spellings of a generic
//!   type of a nested type (`Cage<Den.Mole>`, ``Cage`1[Den+Mole]``), and
//!   `diff` matches them as one type.
//!
//! Needs `scripts/setup-dotnet.sh`: without it the tests print SKIPPED,
//! and fail under `CI=true`.

mod common;

use common::dotnet::{self, Dotnet, Runtime};
use common::{http, start_ui};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

fn dotnet_env() -> Option<&'static Dotnet> {
    dotnet::dotnet(&Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("eventpipe-holds-{}", std::process::id())))
}

fn ok_json(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_clrprof")).args(args).arg("--json").output().expect("run clrprof");
    assert!(out.status.success(), "clrprof {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("clrprof {args:?}: {e}"))
}

/// A program held in its last phase, told to end when dropped.
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

/// `clrprof heap-dump` of `threads.dll PER_THREAD BIG` held on .NET 8,
/// written to `out`.
fn dump_of_threads(dn: &Dotnet, per_thread: &str, big: &str, out: &Path) -> PathBuf {
    let dir = dn.app_dir("threads", Runtime::Net8, &dn.work.join(format!("threads-{per_thread}")));
    let mut child = Command::new(dn.host(Runtime::Net8))
        .args(["threads.dll", per_thread, big])
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
    assert!(line.starts_with('{'), "{line:?}");
    let pid = child.id().to_string();
    let _held = Held { child, stdin };
    let d = ok_json(&["heap-dump", &pid, "-o", out.to_str().expect("UTF-8")]);
    assert_eq!(d["eventpipe"], true, "{d}");
    out.to_path_buf()
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn the_ui_compares_two_dump_files_and_says_their_allocations_are_unknown() {
    let Some(dn) = dotnet_env() else { return };
    let a = dump_of_threads(dn, "20000", "1000", &dn.work.join("small.nettrace"));
    let b = dump_of_threads(dn, "40000", "20000", &dn.work.join("large.nettrace"));
    let objects = |p: &Path| ok_json(&["dumps", p.to_str().expect("UTF-8")])["dumps"][0]["objects"].as_u64().expect("objects");
    let (na, nb) = (objects(&a), objects(&b));
    assert!(nb > na, "the second program holds more: {na} and {nb}");

    let (_ui, base, token) = start_ui(&[a.to_str().expect("UTF-8"), b.to_str().expect("UTF-8")]);
    // The logs load in the background: wait for both.
    let mut logs = Value::Null;
    for _ in 0..600 {
        logs = http(&base, &token, "GET", "/api/logs").1;
        let ready = logs.as_array().is_some_and(|l| l.len() == 2 && l.iter().all(|x| x["state"] == "ready"));
        if ready {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    for l in logs.as_array().expect("logs") {
        assert_eq!(l["state"], "ready", "{logs}");
        let why =
            l["allocations_unknown"].as_str().unwrap_or_else(|| panic!("every view of a dump file says allocations are unknown: {l}"));
        assert!(why.contains("no allocation events"), "{why}");
    }
    let (status, d) = http(&base, &token, "GET", "/api/compare/0/1?top=0");
    assert_eq!(status, 200, "{d}");
    let c = &d["dump_by_type"];
    assert_eq!(c["a"]["objects"].as_u64(), Some(na), "{c}");
    assert_eq!(c["b"]["objects"].as_u64(), Some(nb), "{c}");
    let types = c["types"].as_array().unwrap_or_else(|| panic!("the dumps compared per type: {d}"));
    let quokkas = types.iter().find(|t| t["name"] == "Quokka").unwrap_or_else(|| panic!("Quokka among the changes: {c}"));
    assert_eq!(quokkas["objects_a"], 20_000, "a quarter of 4 x 20,000 kept: {quokkas}");
    assert_eq!(quokkas["objects_b"], 40_000, "{quokkas}");
    assert!(d["allocations_unknown"]["a"].is_string() && d["allocations_unknown"]["b"].is_string(), "{d}");
    assert_eq!(d["allocated_by_type"], serde_json::json!([]), "unknown allocations are not compared as 0: {d}");
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn gcs_printed_on_attach_are_the_traces_on_core31() {
    let Some(dn) = dotnet_env() else { return };
    let rt = Runtime::Core31;
    let dir = dn.app_dir("estimates", rt, &dn.work.join("estimates-attach"));
    // Several attaches: each has a GC running at its start about as often
    // as the program is in a GC.
    for run in 0..4 {
        let child = Command::new(dn.host(rt))
            .args(["estimates.dll", "30000000"])
            .current_dir(&dir)
            .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
            .stdout(Stdio::null())
            .spawn()
            .expect("start the program");
        let pid = child.id().to_string();
        let _running = common::Killed(child);
        // The runtime's diagnostics socket comes up as it starts.
        let socket_up = || {
            std::fs::read_dir("/tmp")
                .map(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with(&format!("dotnet-diagnostic-{pid}-"))))
                .unwrap_or(false)
        };
        for _ in 0..200 {
            if socket_up() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        let trace = dir.join(format!("attach-{run}.nettrace"));
        let out = Command::new(env!("CARGO_BIN_EXE_clrprof"))
            .args(["record", "--sampled", "-p", &pid, "--duration", "1", "-o"])
            .arg(&trace)
            .output()
            .expect("run clrprof record");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{said}");
        // "... wrote PATH (N bytes, G GCs) ..."
        let printed: u64 = said
            .split(" GCs)")
            .next()
            .and_then(|s| s.rsplit(", ").next())
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no GC count in {said:?}"));
        let t = trace.to_str().expect("UTF-8");
        let summary = ok_json(&["summary", t, "-q"]);
        let timeline = ok_json(&["timeline", t, "-q"]);
        let gcs = timeline["gcs"].as_array().map_or(0, |g| g.len() as u64);
        eprintln!("run {run}: printed {printed} GCs; the trace's timeline {gcs}, summary {}", summary["gen0_collections"]);
        assert_eq!(printed, gcs, "the printed GC count against the trace's GCs: {said}");
        assert_eq!(summary["gen0_collections"].as_u64(), Some(gcs), "{summary}");
    }
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn a_log_and_a_trace_of_one_program_name_its_generic_types_alike() {
    let Some(dn) = dotnet_env() else { return };
    let Some(agent) = dotnet::agent_beside(Path::new(env!("CARGO_BIN_EXE_clrprof"))) else { return };
    let rt = Runtime::Net8;
    let dir = dn.app_dir("estimates", rt, &dn.work.join("estimates-names"));
    // The agent's log of every allocation.
    let log = dir.join("estimates.log");
    let out = Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .args(["record", "-q", "--agent"])
        .arg(&agent)
        .arg("-o")
        .arg(&log)
        .arg("--")
        .arg(dn.host(rt))
        .args(["estimates.dll", "100000"])
        .current_dir(&dir)
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .output()
        .expect("run clrprof record");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The runtime's own trace of the same program.
    let trace = dir.join("estimates.nettrace");
    let out = Command::new(dn.host(rt))
        .args(["estimates.dll", "100000"])
        .current_dir(&dir)
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .env("DOTNET_EnableEventPipe", "1")
        .env("DOTNET_EventPipeOutputPath", &trace)
        .env("DOTNET_EventPipeConfig", "Microsoft-Windows-DotNETRuntime:0x1:5")
        .output()
        .expect("run the program");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (l, t) = (log.to_str().expect("UTF-8"), trace.to_str().expect("UTF-8"));
    let names = |f: &str| -> Vec<String> {
        ok_json(&["types", f, "-q"])["types"]
            .as_array()
            .expect("types")
            .iter()
            .map(|r| r["type"].as_str().expect("name").to_string())
            .collect()
    };
    // Each file keeps its own spelling.
    assert!(names(l).iter().any(|n| n == "Cage<Den.Mole>"), "the log: {:?}", names(l));
    assert!(names(t).iter().any(|n| n == "Cage`1[Den+Mole]"), "the trace: {:?}", names(t));
    // diff matches them: one row with both files' bytes (100,000 steps of
    // which about 20,000 make a Cage<Den.Mole> of 200 bytes).
    let d = ok_json(&["diff", l, t, "--top", "0", "-q"]);
    let rows = d["allocated_by_type"].as_array().unwrap_or_else(|| panic!("{d}"));
    let cage: Vec<&Value> = rows.iter().filter(|r| r["name"].as_str().is_some_and(|n| n.starts_with("Cage"))).collect();
    assert_eq!(cage.len(), 1, "one row for the generic type in both spellings: {cage:?}");
    let r = cage[0];
    assert!(r["a_bytes"].as_u64().is_some_and(|b| b > 3_000_000) && r["b_bytes"].as_u64().is_some_and(|b| b > 1_000_000), "{r}");
    // A type both spell alike and the arrays a log spells with a blank.
    for name in ["Lynx", "Wren[]", "Wren []"] {
        let matched: Vec<&Value> = rows.iter().filter(|r| r["name"] == name).collect();
        assert!(matched.iter().all(|r| r["a_bytes"].as_u64() > Some(0) && r["b_bytes"].as_u64() > Some(0)), "{name}: {matched:?}");
    }
}
