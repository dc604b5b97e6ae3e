//! Each GC handle under the stack that made it, after heap dumps that held
//! objects the log never saw allocated alive (`agent/testapps/handlestacks.cs`).
//!
//! A reader meeting such an object in a dump (`o` line) takes the
//! allocation-only stack of its type and size, making one when the log has
//! none; making one starts CLRProfiler's renumbering of stack ids, which
//! maps the ids of `!` and `n` lines but not those of `h` and `j` lines
//! (`src/model/stacks.rs`, `src/query/handles.rs`). Every handle made after
//! was then counted under whatever stack had its id's index: the capture
//! matrix's run 11 under load (two periodic dumps before `P::MakeHandles`,
//! .NET 8's frozen objects in the second) showed 60 handles under
//! `List<T>::set_Capacity <- List<T>::AddWithResize <- P::Grow <- P::Main`.
//! The agent now defines the allocation-only stack of each type and size
//! before a dump's first object of it (`agent/src/dump.rs`).
//!
//! The program makes the reader's case happen every run, load or not:
//! objects made while allocation logging is off (both runtimes), or only
//! .NET 8's frozen objects; two dumps; then handles made on three threads.
//! Each handle's creating stack must be the program's own call site.
//!
//! Needs `scripts/setup-dotnet.sh` (else SKIPPED, a failure under
//! `CI=true`) and the agent built beside `clrprof`.

mod common;

use common::dotnet::{self, Runtime};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn clrprof_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_clrprof"))
}

fn work() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("handle-stacks-{}", std::process::id()))
}

/// The program's frames (`P::`) of a group, innermost first.
fn program_frames(group: &Value) -> Vec<String> {
    group["frames"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).filter(|f| f.starts_with("P::")).map(str::to_string).collect())
        .unwrap_or_default()
}

fn check(rt: Runtime, off: bool) {
    let Some(agent) = dotnet::agent_beside(&clrprof_exe()) else { return };
    let Some(dn) = dotnet::dotnet(&work()) else { return };
    let what = format!("{rt:?}{}", if off { " off" } else { "" });
    let dir = dn.app_dir("handlestacks", rt, &work().join(format!("{}-{off}", rt.tag())));
    let mut args = vec!["record".to_string(), "-q".into(), "-o".into(), "rec.log".into(), "--heap-dump-every".into(), "0.2".into()];
    args.extend(["--".to_string(), dn.host(rt).to_string_lossy().into_owned(), "handlestacks.dll".into()]);
    if off {
        args.push("off".into());
    }
    let out = Command::new(clrprof_exe())
        .args(&args)
        .current_dir(&dir)
        .env("CLRPROF_AGENT", &agent)
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .output()
        .expect("run clrprof record");
    assert!(out.status.success(), "{what}: record: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let truth: Value = stdout
        .lines()
        .find_map(|l| serde_json::from_str(l.trim()).ok().filter(|v: &Value| v.get("main").is_some()))
        .unwrap_or_else(|| panic!("{what}: no truth line in {stdout:?}"));
    let (made, freed, thread_made) = (&truth["main"][0], &truth["main"][1], &truth["threads"]);

    let log = dir.join("rec.log");
    let q = Command::new(clrprof_exe()).args(["handles"]).arg(&log).args(["--json", "--top", "0"]).output().expect("clrprof handles");
    assert!(q.status.success(), "{what}: handles: {}", String::from_utf8_lossy(&q.stderr));
    let handles: Value = serde_json::from_slice(&q.stdout).expect("handles --json");
    let groups = handles["groups"].as_array().cloned().unwrap_or_default();

    // The program's handles (those of a `Held` object) are under the call
    // site that made them, with the whole of the program's part of the
    // stack; the runtime's own (thread starts, P/Invoke, statics) are not
    // counted.
    let mut main = (0, 0);
    let mut threads = 0;
    for g in &groups {
        let types = g["object_types"].as_array().cloned().unwrap_or_default();
        let held = types.iter().filter(|t| t["type"] == "Held").map(|t| t["count"].as_u64().unwrap_or(0)).sum::<u64>();
        if held == 0 && !program_frames(g).iter().any(|f| f == "P::MakeHandles" || f == "P::ThreadHandles") {
            continue;
        }
        let (created, destroyed) = (g["created"].as_u64().unwrap_or(0), g["destroyed"].as_u64().unwrap_or(0));
        // Every object the readers know in the group is a Held. A handle
        // made in the same millisecond as its object can come before the
        // object's `!` line (the agent merges its shared event list, where
        // `h`/`j` lines go to keep their order across threads, and the
        // threads' own records by tick, the event list first): the readers
        // then know no object for it (seen on CoreCLR 3.1, 1 to 20 of 20).
        let others: Vec<&Value> = types.iter().filter(|t| t["type"] != "Held").collect();
        assert!(others.is_empty() && held <= created, "{what}: a group of Held handles with others: {g}");
        match program_frames(g).iter().map(String::as_str).collect::<Vec<_>>()[..] {
            ["P::MakeHandles", "P::Main"] => main = (main.0 + created, main.1 + destroyed),
            ["P::ThreadHandles", "P::Worker"] => threads += created,
            _ => panic!("{what}: handles of the program under a stack it made none at: {g}\nall: {handles}"),
        }
    }
    assert_eq!((serde_json::json!(main.0), serde_json::json!(main.1)), (made.clone(), freed.clone()), "{what}: P::MakeHandles {handles}");
    assert_eq!(&serde_json::json!(threads), thread_made, "{what}: P::ThreadHandles {handles}");

    // The dumps held what the case needs: the program's two, and in the
    // "off" runs the unseen objects.
    let dumps = Command::new(clrprof_exe()).arg("dumps").arg(&log).arg("--json").output().expect("clrprof dumps");
    let dumps: Value = serde_json::from_slice(&dumps.stdout).expect("dumps --json");
    assert!(dumps["dumps"].as_array().is_some_and(|d| d.len() >= 2), "{what}: {dumps}");
    if off {
        let n = dumps["dumps"].as_array().map_or(0, Vec::len);
        let unseen = (0..n)
            .map(|i| {
                let d = Command::new(clrprof_exe())
                    .arg("dump")
                    .arg(&log)
                    .args([&i.to_string(), "--json", "--top", "0"])
                    .output()
                    .expect("clrprof dump");
                let d: Value = serde_json::from_slice(&d.stdout).expect("dump --json");
                let t = d["types"].as_array().and_then(|a| a.iter().find(|t| t["name"] == "Unseen")).cloned().unwrap_or_default();
                t["objects"].as_u64().unwrap_or(0)
            })
            .max();
        assert_eq!(unseen, Some(100), "{what}: the unseen objects in a dump");
    }
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn handles_after_dumps_of_unseen_objects_core31() {
    check(Runtime::Core31, true);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn handles_after_dumps_of_unseen_objects_net8() {
    check(Runtime::Net8, true);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn handles_after_dumps_of_frozen_objects_net8() {
    check(Runtime::Net8, false);
}
