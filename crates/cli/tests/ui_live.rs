//! `clrprof ui --collector DIR` on a live session, in a real headless
//! Chromium. `a_live_session_in_headless_chromium` starts `clrprof
//! collect` and `clrprof ui --collector`, and runs
//! `crates/ui/browser/live.test.mjs` (playwright-core), which runs
//! `agent/testapps/phases.cs` on .NET 8 under the agent through
//! `clrprof record --target`, and checks in the page that the session is
//! listed and opened, that its figures are the CLI's and refresh as the
//! log grows, that "heap dump now" takes a dump that appears with the
//! CLI's numbers, that a comment appears on the Time Line, that
//! allocations off/on work, and that a refused command shows the
//! collector's reason. `a_session_through_a_collector_restart_in_headless_chromium`
//! starts the UI only, and runs `crates/ui/browser/catchup.test.mjs`, which
//! starts the collector itself, SIGKILLs it after phase A and starts it
//! again on the same address after phase B: the page must follow the
//! session through the agent's catch-up from its spool to its end, whole.
//! Screenshots go to `target/ui-screenshots/live-*`.
//!
//! Needs what `ui_browser.rs` needs (node, chromium, playwright-core:
//! `scripts/setup-ui-tests.sh`) and what `collect.rs` needs (the .NET
//! runtimes and mcs: `scripts/setup-dotnet.sh`; the agent built next to
//! `clrprof`): under `CI=true` their absence fails the test, elsewhere it
//! is a visible skip.

mod common;

use common::dotnet::{self, Runtime};
use common::{chromium, has_node, missing, repo_root, Killed};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What both tests need: the `clrprof` binary, the agent, the .NET
/// runtimes, a work folder and the browser tests' folder (`None`, having
/// said why, when something is missing).
struct Setup {
    exe: PathBuf,
    agent: PathBuf,
    dn: &'static dotnet::Dotnet,
    work: PathBuf,
    browser_dir: PathBuf,
}

fn setup(name: &str) -> Option<Setup> {
    let browser_dir = repo_root().join("crates/ui/browser");
    if !has_node() {
        missing("node (scripts/setup-ui-tests.sh installs it)");
        return None;
    }
    if !chromium().is_file() {
        missing(&format!("{} (scripts/setup-ui-tests.sh installs Debian's chromium)", chromium().display()));
        return None;
    }
    if !browser_dir.join("node_modules/playwright-core").is_dir() {
        missing("crates/ui/browser/node_modules (run scripts/setup-ui-tests.sh: npm ci)");
        return None;
    }
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_clrprof"));
    let agent = dotnet::agent_beside(&exe)?;
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let dn = dotnet::dotnet(&work.join("apps"))?;
    Some(Setup { exe, agent, dn, work, browser_dir })
}

/// `clrprof ui --collector DIR` on a free port: the server (killed when
/// dropped) and the address it printed, with its token.
fn start_ui(exe: &Path, dir: &Path) -> (Killed, String) {
    let mut child = Command::new(exe)
        .arg("ui")
        .arg("--collector")
        .arg(dir)
        .args(["--listen", "127.0.0.1:0", "--quiet"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start clrprof ui");
    let mut reader = BufReader::new(child.stdout.take().expect("server stdout"));
    let server = Killed(child);
    let mut first = String::new();
    reader.read_line(&mut first).expect("read the server's address");
    std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
    let url = first.trim().strip_prefix("clrprof ui: open ").unwrap_or_else(|| panic!("unexpected first line {first:?}")).to_string();
    (server, url)
}

/// `phases` on .NET 8 under `clrprof record --target TARGET`, as the
/// browser tests start it.
fn phases(s: &Setup, target: &str, token_file: &Path, dir_name: &str) -> serde_json::Value {
    let app_dir = s.dn.app_dir("phases", Runtime::Net8, &s.work.join(dir_name));
    serde_json::json!({
        "cmd": s.exe,
        "args": ["record", "-o", "local.log", "--target", target, "--token-file", token_file,
                 "--", s.dn.host(Runtime::Net8), "phases.dll"],
        "cwd": app_dir,
        "env": { "DOTNET_SYSTEM_GLOBALIZATION_INVARIANT": "1", "CLRPROF_AGENT": s.agent },
    })
}

/// Runs one browser test file; gives whether it passed, and where the
/// screenshots went.
fn node_test(s: &Setup, file: &str, url: &str, dir: &Path, program: &serde_json::Value) -> (bool, PathBuf) {
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().expect("target dir").join("ui-screenshots");
    let status = Command::new("node")
        .args(["--test", "--test-concurrency=1", file])
        .current_dir(&s.browser_dir)
        .env("CLRPROF_UI_URL", url)
        .env("CLRPROF_CLI", &s.exe)
        .env("CLRPROF_COLLECTOR_DIR", dir)
        .env("CLRPROF_PROGRAM", program.to_string())
        .env("CLRPROF_SCREENSHOTS", &shots)
        .env("CLRPROF_CHROMIUM", chromium())
        .status()
        .expect("run node");
    (status.success(), shots)
}

#[test]
#[cfg_attr(any(no_dotnet, no_browser), ignore = "needs the .NET runtimes and node, chromium and crates/ui/browser/node_modules, missing when built (touch crates/cli/build.rs after installing)")]
fn a_live_session_in_headless_chromium() {
    let Some(s) = setup("ui-live") else { return };
    let dir = s.work.join("sessions");
    std::fs::create_dir_all(&dir).expect("create the collector's directory");

    // The collector: its first two lines are the agents' settings.
    let mut child = Command::new(&s.exe)
        .args(["collect", "--listen", "127.0.0.1:0", "--dir"])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(s.work.join("collector.err")).expect("collector's stderr"))
        .spawn()
        .expect("start clrprof collect");
    let mut out = BufReader::new(child.stdout.take().expect("collector stdout"));
    let collector = Killed(child);
    let mut vars = HashMap::new();
    for _ in 0..2 {
        let mut line = String::new();
        out.read_line(&mut line).expect("read the collector's settings");
        let (k, v) = line.trim().split_once('=').unwrap_or_else(|| panic!("the collector printed {line:?}"));
        vars.insert(k.to_string(), v.to_string());
    }
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));

    // The UI on the collector's directory only; the program, started by
    // the browser test (it steps it through its phases).
    let (server, url) = start_ui(&s.exe, &dir);
    let program = phases(&s, &vars["CLRPROF_TARGET"], &dir.join("collector.token"), "phases");
    let (ok, shots) = node_test(&s, "live.test.mjs", &url, &dir, &program);
    drop(server);
    drop(collector);
    assert!(ok, "the live browser test failed (screenshots in {}, the collector's log in {})", shots.display(), s.work.join("collector.err").display());
    for view in ["live-sessions", "live-dump", "live-timeline"] {
        assert!(shots.join(format!("{view}.png")).is_file(), "no screenshot of {view}");
    }
}

#[test]
#[cfg_attr(any(no_dotnet, no_browser), ignore = "needs the .NET runtimes and node, chromium and crates/ui/browser/node_modules, missing when built (touch crates/cli/build.rs after installing)")]
fn a_session_through_a_collector_restart_in_headless_chromium() {
    let Some(s) = setup("ui-catchup") else { return };
    let dir = s.work.join("sessions");
    std::fs::create_dir_all(&dir).expect("create the collector's directory");
    // The browser test starts the collector (and restarts it); the UI only
    // reads the directory.
    let (server, url) = start_ui(&s.exe, &dir);
    let program = phases(&s, "{TARGET}", &dir.join("collector.token"), "phases-catchup");
    let (ok, shots) = node_test(&s, "catchup.test.mjs", &url, &dir, &program);
    drop(server);
    assert!(ok, "the catch-up browser test failed (screenshots in {})", shots.display());
    assert!(shots.join("live-catchup.png").is_file(), "no screenshot of the session caught up");
}
