//! `clrprof ui` in a real headless Chromium: starts the server on
//! `gen-small` and `real-CLRProfilerTestBedMk1` from the reference corpus
//! and runs `crates/ui/browser/ui.test.mjs` (playwright-core), which checks
//! every view against this `clrprof`'s `--json`, the Time Line's drag and
//! click, the dominator tree's expansion, and that requests without the
//! token or for other files are refused, every Summary figure links to its
//! view, and the Handles view matches `clrprof handles`; that neighbouring
//! types (table rows, legend entries, touching Time Line pixels, flame graph
//! frames) are at least 10 apart in CIEDE2000 and a type has one colour in
//! every view; that the Summary shows the last heap dump's top retainers
//! (`clrprof dump --retained`), one click from the dominator tree; and,
//! when the .NET runtimes are installed, that the Leaks view of an agent's
//! log with four dumps of a leaking program gives `clrprof leaks`' verdict.
//! Screenshots of each view go to `target/ui-screenshots/`.
//!
//! Needs node, `/usr/bin/chromium` (or `$CLRPROF_CHROMIUM`) and
//! `crates/ui/browser/node_modules` (`scripts/setup-ui-tests.sh` installs
//! them): under `CI=true` their absence fails the test, elsewhere it is a
//! visible skip.

mod common;

use common::dotnet::{self, Runtime};
use common::{chromium, has_node, missing, reference_dir, repo_root, Killed};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[test]
#[cfg_attr(any(no_browser, no_reference_corpus), ignore = "needs node, chromium and crates/ui/browser/node_modules and ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn every_view_matches_the_cli_in_headless_chromium() {
    let Some(reference) = reference_dir() else { return };
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
    let mut logs: Vec<PathBuf> =
        ["gen-small.log", "real-CLRProfilerTestBedMk1.log"].iter().map(|n| reference.join(n)).collect();
    // A real .NET Core 3.0 trace, served last: its views must say their
    // figures are estimates.
    logs.push(reference.join("../eventpipe/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace"));
    for l in &logs {
        assert!(l.is_file(), "{} is missing from the reference corpus", l.display());
    }
    // A generated trace whose runtime "dropped" every 50th event, served
    // after it: its views must say it is incomplete.
    let lossy = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("ui-lossy-{}.nettrace", std::process::id()));
    let made = Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .args(["gen", "--preset", "tiny", "--objects", "3000", "--gcs", "3", "--format", "nettrace", "--tick-bytes", "0", "--lose-every", "50", "-q", "-o"])
        .arg(&lossy)
        .status()
        .expect("run clrprof gen");
    assert!(made.success(), "gen --lose-every");
    logs.push(lossy);
    let (trace_id, lossy_id) = (logs.len() - 2, logs.len() - 1);
    // A log of the agent with a heap dump after each of four steps of a
    // leaking program, served after them: its Leaks view.
    let leaks_id = agent_leak_log().map(|l| {
        logs.push(l);
        logs.len() - 1
    });
    let exe = env!("CARGO_BIN_EXE_clrprof");
    let mut child = Command::new(exe)
        .arg("ui")
        .args(&logs)
        .args(["--listen", "127.0.0.1:0", "--quiet"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start clrprof ui");
    let stdout = child.stdout.take().expect("server stdout");
    let server = Killed(child);
    let mut reader = BufReader::new(stdout);
    let mut first = String::new();
    reader.read_line(&mut first).expect("read the server's address");
    // Keep reading what the server says, so that it never writes to a
    // closed pipe.
    std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
    let url = first.trim().strip_prefix("clrprof ui: open ").unwrap_or_else(|| panic!("unexpected first line {first:?}")).to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "served on loopback: {url}");
    assert!(url.contains("?token=") && url.len() > "http://127.0.0.1:1/?token=".len() + 31, "the address carries a token: {url}");

    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().expect("target dir").join("ui-screenshots");
    let logs_json = serde_json::to_string(&logs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>()).expect("json");
    let status = Command::new("node")
        .args(["--test", "--test-concurrency=1", "ui.test.mjs"])
        .current_dir(&browser_dir)
        .env("CLRPROF_UI_URL", &url)
        .env("CLRPROF_CLI", exe)
        .env("CLRPROF_UI_LOGS", logs_json)
        .env("CLRPROF_UI_TRACE", trace_id.to_string())
        .env("CLRPROF_UI_LOSSY", lossy_id.to_string())
        .envs(leaks_id.map(|id| ("CLRPROF_UI_LEAKS", id.to_string())))
        .env("CLRPROF_SCREENSHOTS", &shots)
        .env("CLRPROF_CHROMIUM", chromium())
        .status()
        .expect("run node");
    drop(server);
    assert!(status.success(), "the browser tests failed (screenshots in {})", shots.display());
    for view in [
        "trace-summary",
        "trace-types",
        "gen-small-summary",
        "gen-small-summary-retainers",
        "gen-small-timeline",
        "gen-small-flame",
        "gen-small-flame-colours",
        "gen-small-dump-types",
        "gen-small-handles",
        "real-timeline",
        "real-flame-colours",
        "real-handles",
    ]
    .into_iter()
    .chain(leaks_id.map(|_| "leaks"))
    {
        assert!(shots.join(format!("{view}.png")).is_file(), "no screenshot of {view}");
    }
}

/// The agent's log of `agent/testapps/leaky.cs` on .NET 8 with four heap
/// dumps (`None`, after a message, without the runtimes; a failure under
/// `CI=true`).
fn agent_leak_log() -> Option<PathBuf> {
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("ui-leaks-{}", std::process::id()));
    let dn = dotnet::dotnet(&work)?;
    let exe = Path::new(env!("CARGO_BIN_EXE_clrprof"));
    let agent = dotnet::agent_beside(exe)?;
    let dir = dn.app_dir("leaky", Runtime::Net8, &work.join("run"));
    common::leaky::agent_log(dn, Runtime::Net8, &dir, &agent, exe, "leak.log", 4);
    Some(dir.join("leak.log"))
}
