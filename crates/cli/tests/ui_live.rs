//! `clrprof ui --collector DIR` on a live session, in a real headless
//! Chromium: starts `clrprof collect` and `clrprof ui --collector`, and
//! runs `crates/ui/browser/live.test.mjs` (playwright-core), which runs
//! `agent/testapps/phases.cs` on .NET 8 under the agent through
//! `clrprof record --target`, and checks in the page that the session is
//! listed and opened, that its figures are the CLI's and refresh as the
//! log grows, that "heap dump now" takes a dump that appears with the
//! CLI's numbers, that a comment appears on the Time Line, that
//! allocations off/on work, and that a refused command shows the
//! collector's reason. Screenshots go to `target/ui-screenshots/live-*`.
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

#[test]
fn a_live_session_in_headless_chromium() {
    let browser_dir = repo_root().join("crates/ui/browser");
    if !has_node() {
        return missing("node (scripts/setup-ui-tests.sh installs it)");
    }
    if !chromium().is_file() {
        return missing(&format!("{} (scripts/setup-ui-tests.sh installs Debian's chromium)", chromium().display()));
    }
    if !browser_dir.join("node_modules/playwright-core").is_dir() {
        return missing("crates/ui/browser/node_modules (run scripts/setup-ui-tests.sh: npm ci)");
    }
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_clrprof"));
    let Some(agent) = dotnet::agent_beside(&exe) else { return };
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("ui-live-{}", std::process::id()));
    let Some(dn) = dotnet::dotnet(&work.join("apps")) else { return };
    let dir = work.join("sessions");
    std::fs::create_dir_all(&dir).expect("create the collector's directory");

    // The collector: its first two lines are the agents' settings.
    let mut child = Command::new(&exe)
        .args(["collect", "--listen", "127.0.0.1:0", "--dir"])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(work.join("collector.err")).expect("collector's stderr"))
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

    // The UI on the collector's directory only.
    let mut child = Command::new(&exe)
        .arg("ui")
        .arg("--collector")
        .arg(&dir)
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

    // The program, started by the browser test (it steps it through its
    // phases): `clrprof record --target` on phases.dll, .NET 8.
    let app_dir = dn.app_dir("phases", Runtime::Net8, &work.join("phases"));
    let program = serde_json::json!({
        "cmd": exe,
        "args": ["record", "-o", "local.log", "--target", vars["CLRPROF_TARGET"], "--token-file", dir.join("collector.token"),
                 "--", dn.host(Runtime::Net8), "phases.dll"],
        "cwd": app_dir,
        "env": { "DOTNET_SYSTEM_GLOBALIZATION_INVARIANT": "1", "CLRPROF_AGENT": agent },
    });
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().expect("target dir").join("ui-screenshots");
    let status = Command::new("node")
        .args(["--test", "--test-concurrency=1", "live.test.mjs"])
        .current_dir(&browser_dir)
        .env("CLRPROF_UI_URL", &url)
        .env("CLRPROF_CLI", &exe)
        .env("CLRPROF_COLLECTOR_DIR", &dir)
        .env("CLRPROF_PROGRAM", program.to_string())
        .env("CLRPROF_SCREENSHOTS", &shots)
        .env("CLRPROF_CHROMIUM", chromium())
        .status()
        .expect("run node");
    drop(server);
    drop(collector);
    assert!(
        status.success(),
        "the live browser test failed (screenshots in {}, the collector's log in {})",
        shots.display(),
        work.join("collector.err").display()
    );
    for view in ["live-sessions", "live-dump", "live-timeline"] {
        assert!(shots.join(format!("{view}.png")).is_file(), "no screenshot of {view}");
    }
}
