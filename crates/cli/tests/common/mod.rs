//! Helpers for the command-line tool's tests: the shared helpers of the
//! repository's tests, running the `clrprof` binary, and golden files.
#![allow(dead_code)] // each test binary uses a part

pub mod dotnet;
pub mod leaky;
#[path = "../../../../tests/common/other_user.rs"]
pub mod other_user;
#[path = "../../../../tests/common/mod.rs"]
mod shared;
pub use shared::*;

use std::path::Path;
use std::process::{Command, Output};

/// Runs `clrprof` from the repository root.
pub fn clrprof(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_clrprof")).args(args).current_dir(repo_root()).output().expect("run clrprof")
}

/// Compares `actual` with `crates/cli/tests/golden/NAME`, or writes it when
/// `UPDATE_GOLDEN` is set.
pub fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).expect("write golden");
        return;
    }
    let expected =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDEN=1 to create it)", path.display()));
    assert_eq!(actual, expected, "output differs from {}", path.display());
}

/// Kills a child process when the test ends, however it ends.
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The Chromium the browser tests drive (`CLRPROF_CHROMIUM`, else Debian's).
pub fn chromium() -> std::path::PathBuf {
    std::env::var_os("CLRPROF_CHROMIUM").map_or_else(|| std::path::PathBuf::from("/usr/bin/chromium"), std::path::PathBuf::from)
}

/// Whether `node` runs.
pub fn has_node() -> bool {
    Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// One HTTP/1.1 request to the UI at `base` (`http://HOST:PORT`) with its
/// token; gives the status code and the body as JSON.
pub fn http(base: &str, token: &str, method: &str, path: &str) -> (u16, serde_json::Value) {
    use std::io::{Read, Write};
    let host = base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(host).expect("connect to the UI");
    write!(s, "{method} {path} HTTP/1.1\r\nHost: {host}\r\nx-clrprof-token: {token}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .expect("request");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("response");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a response");
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).expect("a status");
    let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        // Chunks: a hex size line, the bytes, CRLF; a 0 size ends.
        let mut out = String::new();
        let mut rest = body;
        while let Some((size, after)) = rest.split_once("\r\n") {
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if n == 0 {
                break;
            }
            out.push_str(&after[..n]);
            rest = &after[n + 2..];
        }
        out
    } else {
        body.to_string()
    };
    (status, serde_json::from_str(&body).unwrap_or(serde_json::Value::Null))
}

/// `clrprof ui ARGS... --listen 127.0.0.1:0 --quiet` (logs, or
/// `--collector DIR`), killed when dropped, with its address
/// (`http://HOST:PORT`) and token.
pub fn start_ui(args: &[&str]) -> (Killed, String, String) {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .arg("ui")
        .args(args)
        .args(["--listen", "127.0.0.1:0", "--quiet"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start clrprof ui");
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut first).expect("the UI's address");
    let url = first.trim().strip_prefix("clrprof ui: open ").unwrap_or_else(|| panic!("{first:?}")).to_string();
    let (base, token) = url.split_once("/?token=").expect("address and token");
    (Killed(child), base.to_string(), token.to_string())
}

/// Waits for `child` at most `limit`, reading its standard output and, if
/// it was piped and not taken, its standard error: the output, and
/// whether the child had to be killed (its status then says so).
pub fn finish_within(mut child: std::process::Child, limit: std::time::Duration) -> (Output, bool) {
    use std::io::Read;
    fn drain(r: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut v);
            }
            v
        })
    }
    let o = drain(child.stdout.take());
    let e = drain(child.stderr.take());
    let start = std::time::Instant::now();
    let mut killed = false;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if start.elapsed() > limit {
            killed = true;
            let _ = child.kill();
            break child.wait().expect("wait");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    (Output { status, stdout: o.join().unwrap_or_default(), stderr: e.join().unwrap_or_default() }, killed)
}

/// Runs `cmd` with its output piped, killed if it has not ended within
/// `limit` (as [`finish_within`]).
pub fn run_within(cmd: &mut Command, limit: std::time::Duration) -> (Output, bool) {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .stdin(std::process::Stdio::null())
        .spawn()
        .expect("start");
    finish_within(child, limit)
}
