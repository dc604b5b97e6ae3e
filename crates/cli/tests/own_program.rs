//! A user records their own C# program by following the guide's words
//! literally: the commands of "Step by step" in docs/src/task-record.md,
//! run by `bash` as they stand (only `cargo build` is left to the test
//! harness, and `clrprof` comes from this build), on .NET 8 and then on
//! CoreCLR 3.1, with `dotnet` taken from the PATH that
//! `scripts/setup-dotnet.sh` prints. The program (own_program/app.cs) is
//! written for this test, not one of agent/testapps/.
//!
//! Also: the runtime's no-ICU failure is explained by `record` (a folder of
//! empty `libicuuc.so.*` files first on `LD_LIBRARY_PATH` hides the system's
//! ICU from both runtimes, on any machine), the host's missing framework
//! is explained, and the `runtimeconfig.json` that `record` writes for a
//! bare `app.dll` (exclusively: an existing file or a link at the name is
//! left alone) — the last with a stand-in `dotnet` host, so it always runs.
//!
//! The runtime tests need `scripts/setup-dotnet.sh` (else SKIPPED, a
//! failure under `CI=true`) and the agent built beside `clrprof`.

mod common;

use common::dotnet::{self, Runtime};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn clrprof_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_clrprof"))
}

fn work() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("own-program-{}", std::process::id()))
}

/// `clrprof` with the agent beside it in a folder of its own, as `cargo
/// build --release` leaves them in target/release/.
fn installed() -> Option<PathBuf> {
    let agent = dotnet::agent_beside(&clrprof_exe())?;
    let dir = work().join("bin");
    std::fs::create_dir_all(&dir).ok()?;
    if !dir.join("clrprof").is_file() {
        std::fs::copy(agent, dir.join("libclrprof_agent.so")).ok()?;
        std::fs::copy(clrprof_exe(), dir.join("clrprof")).ok()?;
    }
    Some(dir)
}

/// The runtimes (checked through the shared helper, which fails under
/// `CI=true` when they are missing) and the installed `clrprof`.
fn setup() -> Option<(&'static dotnet::Dotnet, PathBuf)> {
    let bin = installed()?;
    Some((dotnet::dotnet(&work().join("testapps"))?, bin))
}

fn text(out: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn query(args: &[&str]) -> Value {
    let out = Command::new(clrprof_exe()).args(args).output().expect("run clrprof");
    assert!(out.status.success(), "clrprof {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("clrprof {args:?}: not JSON: {e}"))
}

/// The first three fenced blocks of the guide's "Step by step" section:
/// the commands to type.
fn guide_blocks() -> Vec<Vec<String>> {
    let guide = std::fs::read_to_string(dotnet::repo().join("docs/src/task-record.md")).expect("read docs/src/task-record.md");
    let section = guide.split("\n## ").find(|s| s.starts_with("Step by step")).expect("a \"## Step by step\" section in task-record.md");
    let mut blocks = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in section.lines() {
        if line.starts_with("```") {
            match current.take() {
                Some(block) => blocks.push(block),
                None => current = Some(Vec::new()),
            }
        } else if let Some(block) = current.as_mut() {
            block.push(line.to_string());
        }
    }
    // Then what the setup script prints, which is not to be typed.
    assert!(blocks.len() >= 3, "Step by step: once in the repository, in the program's folder, CoreCLR 3.1: {blocks:?}");
    blocks.truncate(3);
    blocks
}

/// The guide's first block, as the test runs it: `cargo build` is this
/// build, and `clrprof` is put on PATH from `bin` instead of
/// target/release/; every other line runs as written, in the repository.
fn repository_block(block: &[String], bin: &Path) -> String {
    let build = block.iter().filter(|l| l.starts_with("cargo build --release")).count();
    let path = block.iter().filter(|l| l.starts_with("export PATH=\"$PWD/target/release:$PATH\"")).count();
    assert_eq!((build, path), (1, 1), "the guide's first block builds and puts target/release on PATH: {block:?}");
    let mut script = format!("cd '{}'\n", dotnet::repo().display());
    for line in block {
        if line.starts_with("cargo build") {
            continue;
        }
        if line.starts_with("export PATH=\"$PWD/target/release:$PATH\"") {
            script.push_str(&format!("export PATH='{}':\"$PATH\"\n", bin.display()));
            continue;
        }
        script.push_str(line);
        script.push('\n');
    }
    script
}

/// Runs the guide's commands with `bash -e` in a clean environment (no
/// `dotnet` on PATH, no invariant-globalization variable of the caller's).
fn run_guide(script: &str) -> Output {
    let path = std::env::var("PATH").unwrap_or_default();
    let path: Vec<_> = std::env::split_paths(&path).filter(|d| !d.join("dotnet").exists()).collect();
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("set -euo pipefail\n{script}"))
        .env("PATH", std::env::join_paths(path).expect("a PATH"))
        .env_remove("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT")
        .env_remove("CLRPROF_AGENT")
        .env_remove("DOTNET_ROOT")
        .output()
        .expect("run bash");
    assert!(out.status.success(), "the guide's commands failed:\n{script}\n{}", text(&out));
    out
}

/// The log's allocations of the program's own types equal what the
/// program says it made, and they were made under `Shop::Main`.
fn check_log(log: &Path, program: &Value, what: &str) {
    let log = log.to_str().expect("a UTF-8 path");
    let stats = query(&["stats", "--json", log]);
    assert_eq!(stats["warnings"]["total"], 0, "{what}: warnings: {}", stats["warnings"]);
    let types = query(&["types", "--kind", "allocated", "--json", "--top", "0", log]);
    for name in ["ShopOrder", "ShopLine", "ShopPrice []"] {
        let want = program[name].as_u64().unwrap_or_else(|| panic!("{what}: the program's count of {name}: {program}"));
        assert!(want >= 2000, "{what}: {name}: {want}");
        let row = types["types"].as_array().and_then(|a| a.iter().find(|r| r["type"] == name)).cloned().unwrap_or_default();
        assert_eq!(row["count"].as_u64(), Some(want), "{what}: allocated {name}: {row}");
        let who = query(&["who", log, name, "--exact", "--json", "--top", "0"]);
        let main = who["functions"].as_array().and_then(|a| a.iter().find(|f| f["name"] == "Shop::Main")).cloned().unwrap_or_default();
        assert_eq!(main["inclusive_count"].as_u64(), Some(want), "{what}: {name} allocated under Shop::Main: {who}");
    }
}

fn framework_version(config: &Path) -> String {
    let text = std::fs::read_to_string(config).unwrap_or_else(|e| panic!("read {}: {e}", config.display()));
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", config.display()));
    v["runtimeOptions"]["framework"]["version"].as_str().unwrap_or_default().to_string()
}

/// The guide's "Step by step", typed as it stands: the setup script's
/// `eval` puts .NET 8's `dotnet` on PATH, `mcs` builds the program, and
/// `clrprof record -- dotnet app.dll` writes the missing
/// `app.runtimeconfig.json` (for 8.0) and a log holding the program's
/// allocations; then the CoreCLR 3.1 block switches PATH to 3.1's
/// `dotnet`, has `record` write the file for 3.1, and records again.
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn the_guide_records_an_own_program_on_net8_and_core31() {
    let Some((_, bin)) = setup() else { return };
    let blocks = guide_blocks();
    let folder = work().join("guide");
    std::fs::create_dir_all(&folder).expect("make the program's folder");
    std::fs::copy(dotnet::repo().join("crates/cli/tests/own_program/app.cs"), folder.join("app.cs")).expect("copy app.cs");
    let into_folder = format!("cd '{}'\n", folder.display());
    let first = repository_block(&blocks[0], &bin);

    // .NET 8, from the PATH the setup script's output sets.
    let out = run_guide(&format!("{first}{into_folder}{}", blocks[1].join("\n")));
    let said = text(&out);
    assert!(said.contains("wrote app.runtimeconfig.json for Microsoft.NETCore.App 8.0.0"), "{said}");
    assert_eq!(framework_version(&folder.join("app.runtimeconfig.json")), "8.0.0");
    let program = dotnet::json_line(&out.stdout).unwrap_or_else(|| panic!("the program's JSON line passes through: {said}"));
    let log = blocks[1].iter().find_map(|l| l.split(" -o ").nth(1)).and_then(|r| r.split_whitespace().next()).expect("record -o LOG");
    check_log(&folder.join(log), &program, ".NET 8");

    // CoreCLR 3.1, as the guide's next block says, in the same folder.
    let out = run_guide(&format!("{first}{into_folder}{}", blocks[2].join("\n")));
    let said = text(&out);
    assert!(said.contains("wrote app.runtimeconfig.json for Microsoft.NETCore.App 3.1.0"), "{said}");
    assert_eq!(framework_version(&folder.join("app.runtimeconfig.json")), "3.1.0");
    let program = dotnet::json_line(&out.stdout).unwrap_or_else(|| panic!("the program's JSON line passes through: {said}"));
    let log = blocks[2].iter().find_map(|l| l.split(" -o ").nth(1)).and_then(|r| r.split_whitespace().next()).expect("record -o LOG");
    check_log(&folder.join(log), &program, "CoreCLR 3.1");
}

/// A folder of empty files under every name the runtimes try for ICU's
/// common library (`libicuuc.so.MAJOR[.MINOR[.PATCH]]`, majors 50 to 100,
/// and openSUSE's `suse` names): first on `LD_LIBRARY_PATH`, each fails
/// to load and the loader looks no further, so the runtime finds no ICU
/// even where the system has one.
fn no_icu_folder() -> PathBuf {
    let dir = work().join("no-icu");
    std::fs::create_dir_all(&dir).expect("make the no-ICU folder");
    for major in 50..=100 {
        for prefix in ["", "suse"] {
            let mut names = vec![format!("libicuuc.so.{prefix}{major}")];
            for minor in 1..=5 {
                names.push(format!("libicuuc.so.{prefix}{major}.{minor}"));
                names.extend((1..=5).map(|patch| format!("libicuuc.so.{prefix}{major}.{minor}.{patch}")));
            }
            for n in names {
                std::fs::write(dir.join(n), b"").expect("write an empty library");
            }
        }
    }
    dir
}

/// The program compiled into a folder of its own for `rt`, with no
/// runtime configuration yet.
fn compiled(rt: Runtime, name: &str) -> PathBuf {
    let dir = work().join(format!("{name}-{}", rt.tag()));
    std::fs::create_dir_all(&dir).expect("make the folder");
    let out = Command::new("mcs")
        .arg(format!("-out:{}", dir.join("app.dll").display()))
        .arg(dotnet::repo().join("crates/cli/tests/own_program/app.cs"))
        .output()
        .expect("run mcs");
    assert!(out.status.success(), "mcs: {}", text(&out));
    dir
}

fn record_in(dir: &Path, bin: &Path, host: &Path, extra_env: &[(&str, &Path)], invariant: bool) -> Output {
    let mut cmd = Command::new(bin.join("clrprof"));
    cmd.args(["record", "-o", "app.log", "--force", "--"]).arg(host).arg("app.dll").current_dir(dir);
    cmd.env_remove("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT")
        .env_remove("CLR_ICU_VERSION_OVERRIDE")
        .env_remove("DOTNET_SYSTEM_GLOBALIZATION_APPLOCALICU")
        .env_remove("CLRPROF_AGENT");
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    if invariant {
        cmd.env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1");
    }
    cmd.output().expect("run clrprof record")
}

/// Without ICU and without `DOTNET_SYSTEM_GLOBALIZATION_INVARIANT`, the
/// runtime aborts before `Main`; its message passes through and `record`
/// names the variable to set and says the log is a header only. With the
/// variable set, as advised, the same program records in full.
fn icu_advice(rt: Runtime) {
    let Some((dn, bin)) = setup() else { return };
    let dir = compiled(rt, "icu");
    let no_icu = no_icu_folder();
    let env = [("LD_LIBRARY_PATH", no_icu.as_path())];
    let out = record_in(&dir, &bin, dn.host(rt), &env, false);
    let said = text(&out);
    assert!(!out.status.success(), "{rt:?}: a run without ICU fails: {said}");
    assert!(said.contains("Couldn't find a valid ICU package installed on the system"), "{rt:?}: the runtime's words pass through: {said}");
    assert!(said.contains("Set DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1"), "{rt:?}: record names the variable: {said}");
    assert!(said.contains("before the runtime stopped the program"), "{rt:?}: {said}");
    assert!(!said.contains("try `clrprof summary"), "{rt:?}: no summary hint for an empty log: {said}");

    let out = record_in(&dir, &bin, dn.host(rt), &env, true);
    let said = text(&out);
    assert!(out.status.success(), "{rt:?}: with the variable the program runs: {said}");
    let program = dotnet::json_line(&out.stdout).unwrap_or_else(|| panic!("{rt:?}: {said}"));
    check_log(&dir.join("app.log"), &program, &format!("{rt:?} in invariant mode"));
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn no_icu_on_core31_says_what_to_set() {
    icu_advice(Runtime::Core31);
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn no_icu_on_net8_says_what_to_set() {
    icu_advice(Runtime::Net8);
}

/// An `app.runtimeconfig.json` written for .NET 8, run by CoreCLR 3.1's
/// host: the host refuses it, and `record` says the file asks for a
/// runtime this `dotnet` lacks (not "not a .NET program").
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn a_runtime_the_host_lacks_is_explained() {
    let Some((dn, bin)) = setup() else { return };
    let dir = compiled(Runtime::Core31, "framework");
    let out = record_in(&dir, &bin, dn.host(Runtime::Net8), &[], true);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(framework_version(&dir.join("app.runtimeconfig.json")), "8.0.0");
    let out = record_in(&dir, &bin, dn.host(Runtime::Core31), &[], true);
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("app.runtimeconfig.json asks for a runtime this `dotnet` does not have"), "{said}");
    assert!(!said.contains("does not look like a .NET"), "{said}");
    assert_eq!(framework_version(&dir.join("app.runtimeconfig.json")), "8.0.0", "the file is left as it was");
}

/// A stand-in `dotnet` host: a script that writes its arguments to
/// `args.txt`, beside a runtime folder `shared/Microsoft.NETCore.App/6.0.9`
/// (and an older 3.1.2), as the real host's installation has.
fn fake_host() -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = work().join(format!("fake-host-{}", std::thread::current().name().unwrap_or("t").replace("::", "-")));
    for v in ["6.0.9", "3.1.2"] {
        let rt = dir.join("shared/Microsoft.NETCore.App").join(v);
        std::fs::create_dir_all(&rt).expect("make the runtime folder");
        std::fs::write(rt.join("libcoreclr.so"), b"").expect("write a stand-in runtime");
    }
    let host = dir.join("dotnet");
    std::fs::write(&host, format!("#!/bin/sh\necho \"$@\" > '{}'\n", dir.join("args.txt").display())).expect("write the host");
    std::fs::set_permissions(&host, std::fs::Permissions::from_mode(0o755)).expect("make the host executable");
    dir
}

fn record_fake(dir: &Path, path: &Path, command: &[&str]) -> Output {
    Command::new(clrprof_exe())
        .args(["record", "-o", "x.log", "--force", "--agent"])
        .arg(clrprof_exe()) // any file: the stand-in host loads nothing
        .arg("--")
        .args(command)
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .expect("run clrprof record")
}

/// `record -- dotnet app.dll` with no `app.runtimeconfig.json` writes one
/// for the newest runtime beside the host on PATH (6.0) and says so;
/// `record -- app.dll` alone runs `dotnet app.dll` with the `dotnet` on
/// PATH; a file at the name, a user's or a dangling link, is never
/// written; and with no `dotnet` on PATH a bare `app.dll` is refused with
/// what to do.
#[test]
fn a_bare_dll_gets_a_runtime_config_and_nothing_is_overwritten() {
    let host = fake_host();
    let app = work().join("bare");
    std::fs::create_dir_all(&app).expect("make the app folder");
    std::fs::write(app.join("app.dll"), b"MZ").expect("write app.dll");
    let config = app.join("app.runtimeconfig.json");
    let _ = std::fs::remove_file(&config);

    let out = record_fake(&app, &host, &["dotnet", "app.dll", "one"]);
    let said = text(&out);
    assert!(said.contains("app.dll had no runtimeconfig.json"), "{said}");
    assert!(said.contains("wrote app.runtimeconfig.json for Microsoft.NETCore.App 6.0.0"), "{said}");
    assert_eq!(framework_version(&config), "6.0.0");
    assert_eq!(std::fs::read_to_string(host.join("args.txt")).unwrap_or_default(), "app.dll one\n");

    // A user's own file stays as it is.
    std::fs::write(&config, "{\"mine\": true}").expect("write the user's file");
    let out = record_fake(&app, &host, &["app.dll", "two"]);
    assert!(!text(&out).contains("wrote app.runtimeconfig.json"), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&config).unwrap_or_default(), "{\"mine\": true}");
    assert_eq!(
        std::fs::read_to_string(host.join("args.txt")).unwrap_or_default(),
        "app.dll two\n",
        "app.dll alone runs as `dotnet app.dll`"
    );

    // A dangling link at the name is not followed.
    std::fs::remove_file(&config).expect("remove the user's file");
    let target = app.join("elsewhere.json");
    std::os::unix::fs::symlink(&target, &config).expect("plant a link");
    let out = record_fake(&app, &host, &["dotnet", "app.dll"]);
    assert!(!text(&out).contains("wrote app.runtimeconfig.json"), "{}", text(&out));
    assert!(!target.exists(), "nothing written through the link");

    // No `dotnet` on PATH: app.dll alone is refused, with what to do.
    let empty = work().join("empty-path");
    std::fs::create_dir_all(&empty).expect("make an empty folder");
    let out = record_fake(&app, &empty, &["app.dll"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("runs as `dotnet app.dll`, and there is no `dotnet` on PATH"), "{}", text(&out));
}

/// A config that cannot be written (here its name is too long for the
/// file system: the assembly's name leaves no room for
/// `.runtimeconfig.json`): nothing starts, and the error gives the exact
/// file to write.
#[test]
fn an_unwritable_config_gets_the_file_to_write() {
    let host = fake_host();
    let app = work().join("long-name");
    std::fs::create_dir_all(&app).expect("make the app folder");
    let dll = format!("{}.dll", "a".repeat(245));
    std::fs::write(app.join(&dll), b"MZ").expect("write the assembly");
    let _ = std::fs::remove_file(host.join("args.txt"));
    let out = record_fake(&app, &host, &["dotnet", &dll]);
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("cannot be written"), "{said}");
    assert!(said.contains("Write it yourself with this content"), "{said}");
    assert!(said.contains("\"version\": \"6.0.0\""), "{said}");
    assert!(!host.join("args.txt").exists(), "nothing was started");
}
