//! Another local user, for tests of what such a user can plant: a second
//! Unix account (`clrprof-other`, made with `useradd` when the tests run as
//! root) that runs commands through `setpriv` with no supplementary
//! groups; a shared folder like `/tmp` (mode 1777); and fake servers run
//! as that user on Unix sockets planted in it, which keep every byte they
//! receive so a test can show that nothing reached them.
//!
//! Where the tests do not run as root no second user can be made: the
//! tests that need one say what they could not do and pass, or fail under
//! `CI=true` (CI runs as root).
//!
//! Shared by `crates/cli/tests` and `crates/collect/tests` (included with
//! `#[path]`).
#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The second user's name.
pub const NAME: &str = "clrprof-other";

/// The second user.
#[derive(Clone, Copy, Debug)]
pub struct OtherUser {
    /// Its user id.
    pub uid: u32,
    /// Its group id.
    pub gid: u32,
}

fn id(flag: &str) -> Option<u32> {
    let out = Command::new("id").args([flag, NAME]).output().ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

impl OtherUser {
    /// `program` to be run as this user, with no supplementary groups
    /// (`setpriv`, from util-linux).
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("setpriv");
        c.arg(format!("--reuid={}", self.uid)).arg(format!("--regid={}", self.gid)).arg("--clear-groups").arg(program);
        c
    }

    /// Runs `script` with `sh -c` as this user (no supplementary groups),
    /// `args` as `$1`, `$2`, ...; panics if it fails.
    pub fn sh(&self, script: &str, args: &[&std::ffi::OsStr]) {
        let out = self
            .command("sh")
            .args(["-c", script, "sh"])
            .args(args)
            .current_dir("/")
            .output()
            .expect("run setpriv");
        assert!(out.status.success(), "as {NAME}: {script}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

/// True under `CI=true`.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// The second user, made if missing; `None` (or a panic under `CI=true`)
/// where this process cannot make one. `what` names the test's step that
/// needs it, for the message.
pub fn get(what: &str) -> Option<OtherUser> {
    let missing = |why: String| -> Option<OtherUser> {
        if in_ci() {
            panic!("CI=true and {what} cannot run as another local user: {why}");
        }
        eprintln!("NOT RUN: {what}, as another local user: {why}");
        None
    };
    // Safety: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return missing("it needs root to create the user clrprof-other".into());
    }
    for _ in 0..50 {
        if id("-u").is_some() {
            break;
        }
        let made = Command::new("useradd").args(["-M", "-r", "-s", "/usr/sbin/nologin", NAME]).status();
        match made.map(|s| s.code()) {
            // 9: the user exists (another test made it meanwhile).
            Ok(Some(0 | 9)) => break,
            // 10: /etc/passwd is locked by another useradd: try again.
            Ok(Some(10)) => std::thread::sleep(std::time::Duration::from_millis(100)),
            other => return missing(format!("useradd {NAME} failed: {other:?}")),
        }
    }
    match (id("-u"), id("-g")) {
        (Some(uid), Some(gid)) => Some(OtherUser { uid, gid }),
        _ => missing(format!("id {NAME} gave no ids")),
    }
}

/// A new folder that every user may write to, as `/tmp` (mode 1777).
pub fn shared_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("clrprof-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("a shared folder");
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).expect("chmod 1777");
    d
}

/// A Unix socket server run as the other user: it listens at `socket`,
/// appends every byte any client sends to `received` and answers each
/// first read with `reply`.
pub struct FakeServer {
    child: Child,
    /// Where the bytes it received go.
    pub received: PathBuf,
}

const SERVER: &str = r#"
import os, socket, sys, threading
path, received, reply = sys.argv[1], sys.argv[2], bytes.fromhex(sys.argv[3])
open(received, "wb").close()
s = socket.socket(socket.AF_UNIX)
s.bind(path)
os.chmod(path, 0o777)
s.listen(16)
open(received + ".ready", "w").close()
def serve(c):
    c.settimeout(5)
    first = True
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            with open(received, "ab") as f:
                f.write(d)
            if first:
                c.sendall(reply)
                first = False
    except OSError:
        pass
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"#;

impl FakeServer {
    /// Starts the server as `user` at `socket` (in a folder that user can
    /// write to) and waits until it listens.
    pub fn start(user: OtherUser, socket: &Path, reply: &[u8]) -> FakeServer {
        let received = socket.with_extension("received");
        let hex: String = reply.iter().map(|b| format!("{b:02x}")).collect();
        let child = user
            .command("/usr/bin/python3")
            .args(["-c", SERVER])
            .arg(socket)
            .arg(&received)
            .arg(hex)
            .current_dir("/")
            .stdin(Stdio::null())
            .spawn()
            .expect("start a fake server as the other user");
        let ready = received.with_extension("received.ready");
        let start = Instant::now();
        while !ready.exists() {
            assert!(start.elapsed() < Duration::from_secs(20), "the fake server at {} did not start", socket.display());
            std::thread::sleep(Duration::from_millis(20));
        }
        FakeServer { child, received }
    }

    /// The bytes it received so far.
    pub fn received(&self) -> Vec<u8> {
        std::fs::read(&self.received).unwrap_or_default()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
