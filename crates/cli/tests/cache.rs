//! The model cache (`crates/cache`): a command that reads the
//! model back from the cache answers exactly as one that loads the log; a
//! changed log, a damaged entry, standard input, `CLRPROF_CACHE=off` and a
//! cache folder others may write to all load the log itself. Each test uses a cache folder of its own
//! (`CLRPROF_CACHE_DIR`), saves every load (`CLRPROF_CACHE_MIN_MS=0`) and
//! reads what the cache did from `CLRPROF_CACHE_TRACE`. `clrprof ui` uses
//! the same cache for the logs it is given.

mod common;

use common::{reference_dir, repo_root};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What a run printed: success, standard output, standard error without
/// the cache's own lines, and those lines.
struct Run {
    ok: bool,
    out: String,
    err: String,
    trace: String,
}

fn run(args: &[&str], log: &Path, cache: Option<&Path>) -> Run {
    let mut cmd = match cache {
        Some(dir) => {
            let mut c = with_cache(clrprof_exe(), dir, "0");
            c.env("CLRPROF_CACHE_TRACE", "1");
            c
        }
        None => {
            let mut c = Command::new(clrprof_exe());
            c.env("CLRPROF_CACHE", "off");
            c
        }
    };
    cmd.args(args).arg(log);
    let o = cmd.output().expect("run clrprof");
    let err = String::from_utf8_lossy(&o.stderr);
    let (trace, rest): (Vec<&str>, Vec<&str>) = err.lines().partition(|l| l.starts_with("clrprof cache: "));
    Run { ok: o.status.success(), out: String::from_utf8_lossy(&o.stdout).into_owned(), err: rest.join("\n"), trace: trace.join("\n") }
}

/// `exe` (a `clrprof`) with its cache in `cache`, saving loads of at least
/// `min_ms` milliseconds.
fn with_cache(exe: &Path, cache: &Path, min_ms: &str) -> Command {
    let mut cmd = Command::new(exe);
    cmd.env("CLRPROF_CACHE_DIR", cache).env("CLRPROF_CACHE_MIN_MS", min_ms);
    cmd
}

fn clrprof_exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_clrprof"))
}

/// A fresh folder under the target's temporary folder.
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cache-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create a scratch folder");
    d
}

/// The cache's entries.
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| r.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "clrprof-model")).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// The queries compared (in JSON, the complete answers, but the flame
/// graph's folded stacks).
const QUERIES: [&[&str]; 17] = [
    &["summary", "--json"],
    &["types", "--json"],
    &["functions", "--json"],
    &["modules", "--json"],
    &["lifetime", "--json"],
    &["ages", "--json"],
    &["threads", "--json"],
    &["handles", "--json"],
    &["dumps", "--json"],
    &["calls", "--json"],
    &["timeline", "--json"],
    &["graph", "--json"],
    &["classes", "--json"],
    &["survivors", "--json", "--from", "0", "--to", "1000000"],
    &["flame", "--collapsed"],
    &["types", "--json", "--kind", "final"],
    &["types", "--json", "--kind", "relocated"],
];

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn a_cached_model_answers_every_query_as_the_log_does() {
    let Some(reference) = reference_dir() else { return };
    let mut logs: Vec<PathBuf> = std::fs::read_dir(&reference)
        .expect("read the reference corpus")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    let bundled = std::fs::read_dir(repo_root().join("corpus")).expect("read corpus/");
    logs.extend(bundled.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "log")));
    logs.sort();
    assert!(logs.len() > 20, "expected the reference corpus' logs, found {logs:?}");
    let cache = scratch("queries");
    let mut hits = 0;
    for log in &logs {
        let first = run(QUERIES[0], log, Some(&cache));
        if !first.ok {
            // A log the model refuses is never saved.
            assert!(!first.trace.contains("stored:"), "{}: {}", log.display(), first.trace);
            continue;
        }
        assert!(first.trace.contains("stored:"), "{}: the first load was not saved: {}", log.display(), first.trace);
        for q in QUERIES {
            let plain = run(q, log, None);
            let cached = run(q, log, Some(&cache));
            assert!(cached.trace.contains("hit:"), "{} {q:?}: not read from the cache: {}", log.display(), cached.trace);
            assert_eq!(plain.ok, cached.ok, "{} {q:?}: {} / {}", log.display(), plain.err, cached.err);
            assert_eq!(plain.out, cached.out, "{} {q:?}: the cached model answers differently", log.display());
            assert_eq!(plain.err, cached.err, "{} {q:?}", log.display());
            hits += 1;
        }
    }
    assert!(hits >= QUERIES.len() * 20, "only {hits} cached answers compared");
}

#[test]
fn a_changed_log_is_loaded_again() {
    let dir = scratch("changed");
    let cache = dir.join("cache");
    let log = dir.join("app.log");
    std::fs::copy(repo_root().join("corpus/all-kinds.log"), &log).expect("copy the example log");
    let before = run(&["summary", "--json"], &log, Some(&cache));
    assert!(before.ok && before.trace.contains("stored:"), "{}", before.trace);
    // One more GC's worth of text: a comment at the end.
    std::fs::OpenOptions::new().append(true).open(&log).and_then(|mut f| f.write_all(b"z one more comment\n")).expect("append");
    let after = run(&["summary", "--json"], &log, Some(&cache));
    assert!(after.trace.contains("saved for another log"), "{}", after.trace);
    assert!(after.trace.contains("stored:"), "{}", after.trace);
    assert_eq!(after.out, run(&["summary", "--json"], &log, None).out);
    assert_ne!(before.out, after.out, "the appended comment changes the summary");
    // One entry per log: the new one replaced the old.
    assert_eq!(entries(&cache).len(), 1);
    // Nothing was written beside the log.
    let beside: Vec<_> = std::fs::read_dir(&dir).expect("list").filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    assert_eq!(beside.len(), 2, "{beside:?}");
    let again = run(&["summary", "--json"], &log, Some(&cache));
    assert!(again.trace.contains("hit:"), "{}", again.trace);
    assert_eq!(again.out, after.out);
}

#[test]
fn a_damaged_entry_is_refused_and_replaced() {
    let dir = scratch("damaged");
    let cache = dir.join("cache");
    let log = repo_root().join("corpus/all-kinds.log");
    let plain = run(&["types", "--json"], &log, None);
    assert!(run(&["types", "--json"], &log, Some(&cache)).trace.contains("stored:"));
    let [entry] = entries(&cache).try_into().expect("one entry");
    // A byte in the middle of the model flipped, then the entry cut short.
    let mut bytes = std::fs::read(&entry).expect("read the entry");
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    std::fs::write(&entry, &bytes).expect("damage the entry");
    let r = run(&["types", "--json"], &log, Some(&cache));
    assert!(r.trace.contains("checksum mismatch") && r.trace.contains("stored:"), "{}", r.trace);
    assert_eq!(r.out, plain.out);
    let whole = std::fs::read(&entry).expect("read the entry");
    std::fs::write(&entry, &whole[..whole.len() - 100]).expect("cut the entry");
    let r = run(&["types", "--json"], &log, Some(&cache));
    assert!(r.trace.contains("miss:") && r.trace.contains("stored:"), "{}", r.trace);
    assert_eq!(r.out, plain.out);
    std::fs::write(&entry, b"CLRPROFM").expect("cut the entry to its magic");
    let r = run(&["types", "--json"], &log, Some(&cache));
    assert!(r.trace.contains("cut short"), "{}", r.trace);
    assert_eq!(r.out, plain.out);
    let r = run(&["types", "--json"], &log, Some(&cache));
    assert!(r.trace.contains("hit:"), "{}", r.trace);
    assert_eq!(r.out, plain.out);
}

#[test]
fn standard_input_and_cache_off_are_never_saved() {
    let dir = scratch("off");
    let cache = dir.join("cache");
    let log = repo_root().join("corpus/all-kinds.log");
    let o = with_cache(clrprof_exe(), &cache, "0")
        .args(["summary", "--json", "-"])
        .stdin(std::fs::File::open(&log).expect("open the log"))
        .stdout(Stdio::piped())
        .output()
        .expect("run clrprof");
    assert!(o.status.success());
    assert!(entries(&cache).is_empty(), "standard input was saved");
    for off in [("CLRPROF_CACHE", "off"), ("CLRPROF_CACHE_MB", "0")] {
        let o = with_cache(clrprof_exe(), &cache, "0").args(["summary", "--json"]).arg(&log).env(off.0, off.1).output().expect("run clrprof");
        assert!(o.status.success());
        assert!(!cache.exists(), "{}={} still made the cache", off.0, off.1);
    }
    // A load shorter than the threshold is not saved either.
    let o = with_cache(clrprof_exe(), &cache, "600000").args(["summary", "--json"]).arg(&log).output().expect("run clrprof");
    assert!(o.status.success());
    assert!(!cache.exists(), "a short load was saved");
    // A folder others may write to is not used.
    use std::os::unix::fs::PermissionsExt;
    let open = dir.join("open");
    std::fs::create_dir_all(&open).expect("create");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let r = run(&["summary", "--json"], &log, Some(&open));
    assert!(r.ok && r.trace.contains("off:"), "{}", r.trace);
    assert!(entries(&open).is_empty(), "an entry went into a folder others may write to");
}

/// `GET path` on the UI server at `addr` (HTTP/1.1, one request per
/// connection): the status line's code and the body.
fn get(addr: &str, path: &str) -> (u16, String) {
    request(addr, "GET", path)
}

/// `METHOD path` (no body) on the UI server at `addr`.
fn request(addr: &str, method: &str, path: &str) -> (u16, String) {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the UI");
    // One write: the request whole in one segment.
    let req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).expect("send");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("read the answer");
    let code = text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    // A chunked body (axum's JSON is sent whole: one chunk) is unwrapped.
    let body = match text.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        true => body.split_once("\r\n").map_or("", |(_, rest)| rest).rsplit_once("\r\n0\r\n").map_or(body, |(b, _)| b).to_string(),
        false => body.to_string(),
    };
    (code, body)
}

/// Starts `clrprof ui` on `log` with the cache in `cache`; gives its
/// `Summary` answer once the log is ready, and what the cache said.
fn ui_summary(log: &Path, cache: &Path) -> (String, String) {
    ui_summary_of(&[log.as_os_str()], None, cache)
}

/// Starts `clrprof ui ARGS` with the cache in `cache`, opens the collector's
/// session `open` if given (it is then log 0); gives log 0's `Summary`
/// answer once it is ready, and what the cache said.
fn ui_summary_of(args: &[&std::ffi::OsStr], open: Option<&str>, cache: &Path) -> (String, String) {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .args(["ui", "--listen", "127.0.0.1:0", "--quiet"])
        .args(args)
        .env("CLRPROF_CACHE_DIR", cache)
        .env("CLRPROF_CACHE_MIN_MS", "0")
        .env("CLRPROF_CACHE_TRACE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start clrprof ui");
    let mut first = String::new();
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    stdout.read_line(&mut first).expect("read the address");
    // The server's later lines must find the pipe open.
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    let url = first.trim().strip_prefix("clrprof ui: open http://").unwrap_or_else(|| panic!("unexpected first line {first:?}")).to_string();
    let (addr, token) = url.split_once("/?token=").expect("address and token");
    if let Some(name) = open {
        let (code, body) = request(addr, "POST", &format!("/api/session/{name}/open?token={token}"));
        assert_eq!(code, 200, "{body}");
    }
    let mut summary = None;
    for _ in 0..200 {
        let (code, logs) = get(addr, &format!("/api/logs?token={token}"));
        assert_eq!(code, 200, "{logs}");
        if logs.contains("\"state\":\"ready\"") {
            let (code, body) = get(addr, &format!("/api/log/0/summary?token={token}"));
            assert_eq!(code, 200, "{body}");
            // The page is told where the model came from.
            let cached = logs.contains("\"from_cache\":true");
            summary = Some(format!("{body}\nfrom_cache={cached}"));
            break;
        }
        assert!(!logs.contains("\"state\":\"failed\""), "{logs}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let out = child.wait_with_output().expect("wait for the UI");
    let trace = String::from_utf8_lossy(&out.stderr).lines().filter(|l| l.starts_with("clrprof cache: ")).collect::<Vec<_>>().join("\n");
    (summary.expect("the log never became ready"), trace)
}

#[test]
fn the_ui_opens_a_log_from_the_cache_with_the_same_figures() {
    let cache = scratch("ui");
    let log = repo_root().join("corpus/dump-sites.log");
    let (first, trace) = ui_summary(&log, &cache);
    assert!(trace.contains("stored:"), "the UI's load was not saved: {trace}");
    let (second, trace) = ui_summary(&log, &cache);
    assert!(trace.contains("hit:"), "the UI did not read the cache: {trace}");
    assert!(first.ends_with("from_cache=false") && second.ends_with("from_cache=true"), "{first}\n{second}");
    assert_eq!(first.replace("from_cache=false", ""), second.replace("from_cache=true", ""));
    // A command reads the entry the UI wrote, and agrees with a load.
    let r = run(&["summary", "--json"], &log, Some(&cache));
    assert!(r.trace.contains("hit:"), "{}", r.trace);
    assert_eq!(r.out, run(&["summary", "--json"], &log, None).out);
}

#[test]
fn clrprof_cache_lists_the_entries_and_clears_them() {
    let cache = scratch("list");
    let logs = [repo_root().join("corpus/all-kinds.log"), repo_root().join("corpus/dump-sites.log")];
    for log in &logs {
        assert!(run(&["summary", "--json"], log, Some(&cache)).trace.contains("stored:"));
    }
    std::fs::write(cache.join("notes.txt"), "not an entry").expect("write");
    let list = |args: &[&str]| -> serde_json::Value {
        let o = Command::new(env!("CARGO_BIN_EXE_clrprof")).arg("cache").args(args).env("CLRPROF_CACHE_DIR", &cache).output().expect("run");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).expect("JSON")
    };
    let v = list(&["--json"]);
    let mut listed: Vec<String> = v["entries"].as_array().expect("entries").iter().map(|e| e["log"].as_str().unwrap_or("").to_string()).collect();
    listed.sort();
    let mut want: Vec<String> = logs.iter().map(|l| std::fs::canonicalize(l).expect("canonical").display().to_string()).collect();
    want.sort();
    assert_eq!(listed, want);
    let sizes: u64 = entries(&cache).iter().map(|p| std::fs::metadata(p).expect("size").len()).sum();
    assert_eq!(v["bytes"].as_u64(), Some(sizes));
    let v = list(&["--clear", "--json"]);
    assert_eq!((v["removed"].as_u64(), v["removed_bytes"].as_u64()), (Some(2), Some(sizes)));
    assert!(entries(&cache).is_empty());
    assert!(cache.join("notes.txt").is_file(), "a file that is not an entry was removed");
    assert_eq!(list(&["--json"])["entries"].as_array().map(Vec::len), Some(0));
}

#[test]
fn the_ui_opens_a_finished_session_from_the_cache() {
    // A collector's folder with one ended session (as `clrprof collect`
    // leaves it: the log and its record).
    let dir = scratch("session");
    let cache = dir.join("cache");
    let sessions = dir.join("sessions");
    std::fs::create_dir_all(&sessions).expect("create");
    let name = "app_4242_20261125_000000";
    let log = sessions.join(format!("{name}.log"));
    std::fs::copy(repo_root().join("corpus/dump-sites.log"), &log).expect("copy the log");
    let bytes = std::fs::metadata(&log).expect("size").len();
    let record = serde_json::json!({
        "session": name, "log": format!("{name}.log"), "pid": 4242, "program": "app", "runtime": "8.0.4",
        "peer": "127.0.0.1:50000", "start": "2026-11-25T00:00:00Z", "end": "2026-11-25T00:00:05Z",
        "bytes": bytes, "state": "ended", "reason": null, "spool": null, "spool_from": null,
    });
    std::fs::write(sessions.join(format!("{name}.json")), record.to_string()).expect("write the record");
    let args = [std::ffi::OsStr::new("--collector"), sessions.as_os_str()];
    let (first, trace) = ui_summary_of(&args, Some(name), &cache);
    assert!(trace.contains("stored:"), "a finished session was not saved: {trace}");
    let (second, trace) = ui_summary_of(&args, Some(name), &cache);
    assert!(trace.contains("hit:"), "a finished session was not read from the cache: {trace}");
    assert_eq!(first.replace("from_cache=false", ""), second.replace("from_cache=true", ""));
    // The commands share the entry.
    let r = run(&["summary", "--json"], &log, Some(&cache));
    assert!(r.trace.contains("hit:"), "{}", r.trace);
}

#[test]
fn another_build_does_not_read_the_entries_of_this_one() {
    let dir = scratch("build");
    let cache = dir.join("cache");
    let log = repo_root().join("corpus/all-kinds.log");
    assert!(run(&["summary", "--json"], &log, Some(&cache)).trace.contains("stored:"));
    // A copy of the binary is another file (another modification time):
    // what another build of clrprof would be.
    let other = dir.join("clrprof-other");
    std::fs::copy(env!("CARGO_BIN_EXE_clrprof"), &other).expect("copy the binary");
    let o = with_cache(&other, &cache, "0").args(["summary", "--json"]).arg(&log).env("CLRPROF_CACHE_TRACE", "1").output().expect("run the copy");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("another build") && err.contains("stored:"), "{err}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), run(&["summary", "--json"], &log, None).out);
}
