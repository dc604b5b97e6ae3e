//! Another local user, for tests of what such a user can plant: a second
//! Unix account (`clrprof-other`, made with `useradd` when the tests run as
//! root), a shared folder like `/tmp` (mode 1777), and fake servers run as
//! that user on Unix sockets planted in it, which keep every byte they
//! receive so a test can show that nothing reached them.
//!
//! Where the tests do not run as root no second user can be made: the
//! tests that need one say SKIPPED, or fail under `CI=true` (CI runs as
//! root).

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
}

/// The second user, made if missing; `None` (or a panic under `CI=true`)
/// where this process cannot make one.
pub fn get() -> Option<OtherUser> {
    let missing = |why: String| -> Option<OtherUser> {
        if super::dotnet::in_ci() {
            panic!("CI=true and the tests acting as another local user cannot run: {why}");
        }
        eprintln!("SKIPPED: tests acting as another local user: {why}");
        None
    };
    // Safety: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return missing("they need root to create the user clrprof-other".into());
    }
    if id("-u").is_none() {
        let made = Command::new("useradd").args(["-M", "-r", "-s", "/usr/sbin/nologin", NAME]).status();
        // 9: the user exists (another test made it meanwhile).
        if !matches!(made.map(|s| s.code()), Ok(Some(0 | 9))) {
            return missing("useradd clrprof-other failed".into());
        }
    }
    match (id("-u"), id("-g")) {
        (Some(uid), Some(gid)) => Some(OtherUser { uid, gid }),
        _ => missing("id clrprof-other gave no ids".into()),
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
