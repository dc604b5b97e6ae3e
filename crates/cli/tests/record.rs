//! `clrprof record` end to end: real .NET programs (agent/testapps/) run
//! under the capture agent on CoreCLR 3.1 and .NET 8, and the recorded logs
//! read back with the tool's own queries (`summary`, `types`, `handles`).
//! The programs print what they did (JSON on their first output line), so
//! the checks compare the log's figures with the program's own counts.
//!
//! The runtime tests need `scripts/setup-dotnet.sh` (else they print
//! SKIPPED) and the agent built next to `clrprof` (`cargo build --release`
//! or `cargo test --release` at the workspace root builds both). The
//! failure cases that need no runtime always run.

mod common;

use common::dotnet::{self, Dotnet, Runtime};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn clrprof_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_clrprof"))
}

fn agent() -> Option<PathBuf> {
    dotnet::agent_beside(&clrprof_exe())
}

/// A copy of `clrprof` with the agent beside it, as `cargo build` leaves
/// them, so that `record` finds the agent on its own.
fn installed() -> Option<PathBuf> {
    let dir = work().join("bin");
    std::fs::create_dir_all(&dir).ok()?;
    let exe = dir.join("clrprof");
    if !exe.is_file() {
        std::fs::copy(agent()?, dir.join("libclrprof_agent.so")).ok()?;
        std::fs::copy(clrprof_exe(), &exe).ok()?;
    }
    Some(exe)
}

fn work() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("record-tests-{}", std::process::id()))
}

fn setup() -> Option<&'static Dotnet> {
    agent()?;
    dotnet::dotnet(&work())
}

/// Runs `clrprof record` with the agent given by `CLRPROF_AGENT` (unless
/// the arguments name one).
fn record(dir: &Path, args: &[&str], program: &[&str]) -> Output {
    record_with(&clrprof_exe(), agent(), dir, args, program)
}

fn record_with(exe: &Path, agent: Option<PathBuf>, dir: &Path, args: &[&str], program: &[&str]) -> Output {
    let mut cmd = Command::new(exe);
    cmd.arg("record")
        .args(args)
        .arg("--")
        .args(program)
        .current_dir(dir)
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .env_remove("CLRPROF_AGENT");
    if let Some(a) = agent {
        cmd.env("CLRPROF_AGENT", a);
    }
    cmd.output().expect("run clrprof record")
}

fn query(args: &[&str]) -> Value {
    let out = Command::new(clrprof_exe()).args(args).output().expect("run clrprof");
    assert!(out.status.success(), "clrprof {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("clrprof {args:?}: not JSON: {e}"))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Records `markers` on `rt` and checks the log against the program's own
/// figures through the CLI's queries.
fn markers(rt: Runtime, extra: &[&str]) {
    let Some(dn) = setup() else { return };
    let dir = dn.app_dir("markers", rt, &work().join(format!("markers-{}-{}", rt.tag(), extra.join(""))));
    let host = dn.host(rt).to_string_lossy().into_owned();
    let out = record(&dir, &[&["-o", "m.log"][..], extra].concat(), &[&host, "markers.dll"]);
    assert!(out.status.success(), "{rt:?}: record failed: {}", stderr(&out));
    assert!(stderr(&out).contains("wrote"), "{rt:?}: {}", stderr(&out));
    let program = dotnet::json_line(&out.stdout).expect("the program's JSON line passes through");
    let log = dir.join("m.log");
    let log = log.to_str().expect("a UTF-8 path");

    // The log loads without a warning.
    let stats = query(&["stats", "--json", log]);
    assert_eq!(stats["warnings"]["total"], 0, "{rt:?}: warnings: {}", stats["warnings"]);

    // GC counts: what GC.CollectionCount said at the end.
    let summary = query(&["summary", "--json", log]);
    let gc: Vec<i64> = program["gc"].as_array().expect("gc").iter().filter_map(Value::as_i64).collect();
    assert_eq!(
        vec![&summary["gen0_collections"], &summary["gen1_collections"], &summary["gen2_collections"]],
        gc.iter().map(|v| Value::from(*v)).collect::<Vec<_>>().iter().collect::<Vec<_>>(),
        "{rt:?}: GC counts"
    );

    // Marker allocations by type, exactly.
    let allocated = query(&["types", "--kind", "allocated", "--json", "--top", "0", log]);
    let count = |rows: &Value, name: &str| {
        rows["types"].as_array().and_then(|a| a.iter().find(|r| r["type"] == name)).map_or(0, |r| r["count"].as_u64().unwrap_or(0))
    };
    for (name, n) in program["types"].as_object().expect("types") {
        assert_eq!(count(&allocated, name), n.as_u64().unwrap_or(0), "{rt:?}: allocated {name}");
    }
    // Finalizer queueing of the finalizable marker.
    let finalized = query(&["types", "--kind", "finalized", "--json", "--top", "0", log]);
    assert_eq!(count(&finalized, "FinMarker"), program["finalized"].as_u64().unwrap_or(0), "{rt:?}: finalized");
    // Stacks: every marker allocation's stack names its allocating method
    // (`who`'s exclusive figures: the method allocated them itself) under
    // `Main`.
    if !extra.contains(&"--no-stacks") {
        for (ty, method) in [
            ("MarkerA", "P::AllocMarkers"),
            ("MarkerStruct []", "P::AllocArrays"),
            ("MarkerBox<System.Int32>", "P::AllocGenerics"),
            ("FinMarker", "P::AllocFinalizable"),
            ("HandleMarker", "P::MakeHandles"),
        ] {
            let who = query(&["who", log, ty, "--exact", "--json", "--top", "0"]);
            let expected = program["types"][ty].as_u64().unwrap_or(u64::MAX);
            let function = |name: &str| {
                who["functions"].as_array().and_then(|a| a.iter().find(|f| f["name"] == name)).cloned().unwrap_or_default()
            };
            assert_eq!(function(method)["exclusive_count"].as_u64(), Some(expected), "{rt:?}: {ty} allocated in {method}");
            assert_eq!(function("P::Main")["inclusive_count"].as_u64(), Some(expected), "{rt:?}: {ty} under P::Main");
        }
    }
    // Handles: the program made and freed `handles` handles itself (the
    // runtime makes some of its own).
    let handles = program["handles"].as_u64().unwrap_or(0);
    let created = summary["handles_created"].as_u64().unwrap_or(0);
    let destroyed = summary["handles_destroyed"].as_u64().unwrap_or(0);
    assert!(created >= handles && destroyed >= handles, "{rt:?}: handles {created}/{destroyed} < {handles}");
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn records_markers_on_core31() {
    markers(Runtime::Core31, &[]);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn records_markers_on_net8() {
    markers(Runtime::Net8, &[]);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn records_markers_without_stacks() {
    markers(Runtime::Net8, &["--no-stacks"]);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn records_markers_with_snapshot_stacks() {
    markers(Runtime::Core31, &["--stacks", "snapshot"]);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn passes_the_exit_code_of_a_crash_and_leaves_a_loadable_log() {
    let Some(dn) = setup() else { return };
    for rt in Runtime::ALL {
        let dir = dn.app_dir("crash", rt, &work().join(format!("crash-{}", rt.tag())));
        let host = dn.host(rt).to_string_lossy().into_owned();
        let direct = Command::new(&host)
            .arg("crash.dll")
            .current_dir(&dir)
            .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
            .output()
            .expect("run the program");
        // The agent found next to the binary, with no variable set.
        let Some(exe) = installed() else { return };
        let out = record_with(&exe, None, &dir, &[], &[&host, "crash.dll"]);
        let code = |o: &Output| {
            use std::os::unix::process::ExitStatusExt;
            o.status.code().or(o.status.signal().map(|s| 128 + s))
        };
        assert!(code(&direct) != Some(0), "{rt:?}: the program must fail");
        assert_eq!(out.status.code(), code(&direct), "{rt:?}: the exit code passes through: {}", stderr(&out));
        // The default name: <program>_<pid>_<yyyyMMdd>_<HHmmss>.log.
        let logs: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("read the run directory")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("crash_") && n.to_string_lossy().ends_with(".log")))
            .collect();
        assert_eq!(logs.len(), 1, "{rt:?}: one log named crash_<pid>_<stamp>.log in {}", dir.display());
        let stem = logs[0].file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        assert!(default_name_parts(&stem, "crash").is_some(), "{stem}");
        let log = logs[0].to_str().expect("UTF-8");
        let program = dotnet::json_line(&out.stdout).expect("JSON from the program");
        let allocated = query(&["types", "--kind", "allocated", "--json", "--top", "0", log]);
        let crash_markers = allocated["types"]
            .as_array()
            .and_then(|a| a.iter().find(|r| r["type"] == "CrashMarker"))
            .map_or(0, |r| r["count"].as_u64().unwrap_or(0));
        assert_eq!(crash_markers, program["types"]["CrashMarker"].as_u64().unwrap_or(u64::MAX), "{rt:?}");
    }
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn tells_when_the_runtime_refuses_the_agent() {
    let Some(dn) = setup() else { return };
    let dir = dn.app_dir("markers", Runtime::Net8, &work().join("refused"));
    let host = dn.host(Runtime::Net8).to_string_lossy().into_owned();
    // A file that is no shared library: the runtime cannot load it.
    let bogus = dir.join("markers.runtimeconfig.json");
    let out = record(&dir, &["--agent", bogus.to_str().expect("UTF-8"), "-o", "r.log"], &[&host, "markers.dll"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("did not load the profiler"), "{}", stderr(&out));
    assert!(!dir.join("r.log").exists());
}

#[test]
fn tells_when_the_program_is_not_dotnet_and_passes_its_exit_code() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    // Any existing file passes the agent check; the program never loads it.
    let exe = clrprof_exe();
    let agent = exe.to_str().expect("UTF-8");
    let out = record(dir.path(), &["--agent", agent, "-o", "x.log"], &["sh", "-c", "exit 3"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("does not look like a .NET"), "{}", stderr(&out));
    let out = record(dir.path(), &["--agent", agent, "-o", "x.log"], &["true"]);
    assert_eq!(out.status.code(), Some(1), "a program that ran but was not recorded is a failure");
    assert!(!dir.path().join("x.log").exists());
}

#[test]
fn errors_clearly_without_an_agent_or_program() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = record(dir.path(), &["--agent", "/nonexistent/libclrprof_agent.so"], &["true"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("the capture agent is not at /nonexistent/libclrprof_agent.so (--agent)"), "{}", stderr(&out));
    let exe = clrprof_exe();
    let out = record(dir.path(), &["--agent", exe.to_str().expect("UTF-8")], &["/nonexistent/program"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("cannot start /nonexistent/program"), "{}", stderr(&out));
}

/// `(pid, stamp)` of a default log name `<program>_<pid>_<yyyyMMdd>_<HHmmss>`.
fn default_name_parts(stem: &str, program: &str) -> Option<(u32, String)> {
    let rest = stem.strip_prefix(program)?.strip_prefix('_')?;
    let (pid, stamp) = rest.split_once('_')?;
    let ok = stamp.len() == 15 && stamp.as_bytes()[8] == b'_' && stamp.chars().filter(|c| c.is_ascii_digit()).count() == 14;
    ok.then(|| Some((pid.parse().ok()?, stamp.to_string()))).flatten()
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn two_recordings_started_in_the_same_second_keep_both_logs() {
    let Some(dn) = setup() else { return };
    let rt = Runtime::Net8;
    let host = dn.host(rt).to_string_lossy().into_owned();
    // Started together they nearly always share a second; try again when
    // the clock ticked between them.
    for attempt in 0..3 {
        let dir = dn.app_dir("markers", rt, &work().join(format!("same-second-{attempt}")));
        let start = |dir: &Path| {
            let mut cmd = Command::new(clrprof_exe());
            cmd.args(["record", "-q", "--no-stacks", "--", &host, "markers.dll"])
                .current_dir(dir)
                .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            if let Some(a) = agent() {
                cmd.env("CLRPROF_AGENT", a);
            }
            cmd.spawn().expect("start clrprof record")
        };
        let (a, b) = (start(&dir), start(&dir));
        for child in [a, b] {
            let out = child.wait_with_output().expect("wait for clrprof record");
            assert!(out.status.success(), "record failed: {}", stderr(&out));
        }
        let mut logs: Vec<(u32, String, PathBuf)> = std::fs::read_dir(&dir)
            .expect("read the run directory")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .filter_map(|p| {
                let stem = p.file_stem()?.to_string_lossy().into_owned();
                let (pid, stamp) = default_name_parts(&stem, "markers")?;
                Some((pid, stamp, p))
            })
            .collect();
        logs.sort();
        assert_eq!(logs.len(), 2, "two logs named markers_<pid>_<stamp>.log in {}", dir.display());
        assert_ne!(logs[0].0, logs[1].0, "each log carries its own process id");
        for (_, _, log) in &logs {
            let stats = query(&["stats", "--json", log.to_str().expect("UTF-8")]);
            assert_eq!(stats["warnings"]["total"], 0, "{}: {stats}", log.display());
            assert!(std::fs::metadata(log).map_or(0, |m| m.len()) > 1000, "{}: a whole log", log.display());
        }
        if logs[0].1 == logs[1].1 {
            return;
        }
    }
    panic!("three attempts never started two recordings in the same second");
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn output_onto_an_existing_file_refuses_without_force() {
    let Some(dn) = setup() else { return };
    let rt = Runtime::Net8;
    let host = dn.host(rt).to_string_lossy().into_owned();
    let dir = dn.app_dir("markers", rt, &work().join("no-overwrite"));
    let log = dir.join("keep.log");
    std::fs::write(&log, "an earlier log\n").expect("write the earlier log");
    let out = record(&dir, &["-o", "keep.log", "--no-stacks"], &[&host, "markers.dll"]);
    assert!(!out.status.success(), "record must refuse: {}", stderr(&out));
    assert!(stderr(&out).contains("exists") && stderr(&out).contains("--force"), "{}", stderr(&out));
    assert!(dotnet::json_line(&out.stdout).is_none(), "the program must not run");
    assert_eq!(std::fs::read_to_string(&log).expect("the earlier log"), "an earlier log\n");
    // The agent refuses too, whoever starts it.
    let status = dir.join("status");
    let direct = Command::new(&host)
        .arg("markers.dll")
        .current_dir(&dir)
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .env("CORECLR_ENABLE_PROFILING", "1")
        .env("CORECLR_PROFILER", "{BC620A3A-B286-4C9C-8138-256EE44F802D}")
        .env("CORECLR_PROFILER_PATH", agent().expect("the agent"))
        .env("CLRPROF_OUTPUT", &log)
        .env("CLRPROF_STATUS", &status)
        .output()
        .expect("run the program");
    assert!(direct.status.success());
    let line = std::fs::read_to_string(&status).expect("the agent's status");
    assert!(line.starts_with("error") && line.contains("exists"), "{line}");
    assert_eq!(std::fs::read_to_string(&log).expect("the earlier log"), "an earlier log\n");
    // --force replaces it.
    let out = record(&dir, &["-o", "keep.log", "--no-stacks", "--force"], &[&host, "markers.dll"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stats = query(&["stats", "--json", log.to_str().expect("UTF-8")]);
    assert_eq!(stats["warnings"]["total"], 0, "{stats}");
    assert!(std::fs::metadata(&log).map_or(0, |m| m.len()) > 1000, "the new log replaced the earlier one");
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn an_unwritable_place_is_refused_before_the_program_starts() {
    let Some(dn) = setup() else { return };
    let rt = Runtime::Net8;
    let host = dn.host(rt).to_string_lossy().into_owned();
    let dir = dn.app_dir("markers", rt, &work().join("unwritable"));
    // /proc is never writable, even for root.
    let out = record(&dir, &["-o", "/proc/clrprof.log"], &[&host, "markers.dll"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("cannot write /proc/clrprof.log"), "{}", stderr(&out));
    assert!(dotnet::json_line(&out.stdout).is_none(), "the program must not run");
}

/// `record --force` onto a symbolic link replaces the link with the log;
/// the file it pointed at is left as it was. Without `--force` the link
/// counts as an existing file.
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn force_replaces_a_link_instead_of_writing_through_it() {
    let Some(dn) = setup() else { return };
    let dir = dn.app_dir("markers", Runtime::Net8, &work().join("force-link"));
    let host = dn.host(Runtime::Net8).to_string_lossy().into_owned();
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, "someone's file\n").expect("write the victim");
    let link = dir.join("link.log");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&victim, &link).expect("plant a link");
    let out = record(&dir, &["-o", "link.log"], &[&host, "markers.dll"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("exists"), "{}", stderr(&out));
    let out = record(&dir, &["-o", "link.log", "--force"], &[&host, "markers.dll"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "someone's file\n");
    let meta = link.symlink_metadata().expect("the log");
    assert!(meta.file_type().is_file(), "the link was replaced by the log");
    let allocated = query(&["types", "--kind", "allocated", "--json", "--top", "0", link.to_str().expect("UTF-8")]);
    assert!(allocated["types"].as_array().is_some_and(|t| !t.is_empty()), "{allocated}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(meta.permissions().mode() & 0o077, 0, "the log is its owner's only: {:o}", meta.permissions().mode());
}
