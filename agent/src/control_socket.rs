//! The control socket: `$TMPDIR/clrprof-agent-PID.sock`, a Unix socket
//! that only the process's user may use (mode 0600, and each peer's
//! credentials are checked), speaking [`clrprof_control::protocol`]: one
//! request line, one reply line, handled by
//! [`crate::control::handle`].
//!
//! A thread removes the sockets that killed processes left in the same
//! directory, then accepts connections; each connection gets a thread of its
//! own, so a slow client cannot hold the others up. A line longer than
//! `MAX_LINE`, or one that is not a request, gets an error reply naming
//! what was expected; the connection stays usable.

use crate::agent::Agent;
use clrprof_control::paths;
use clrprof_control::protocol::{parse_request, reply_line, Reply, MAX_LINE};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::OnceLock;

static PATH: OnceLock<PathBuf> = OnceLock::new();

/// Binds the socket and starts accepting.
pub fn start(_agent: &'static Agent) -> Result<(), String> {
    let pid = std::process::id();
    let dir = paths::own_temp_dir();
    let path = paths::control_socket(&dir, pid);
    // A socket left by an earlier process with our pid is stale.
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| format!("cannot restrict {} to its owner: {e}", path.display()))?;
    let _ = PATH.set(path);
    std::thread::Builder::new()
        .name("clrprof-control".into())
        .spawn(move || {
            // Sockets of processes killed before their agent could remove
            // them (here, off the program's start-up path).
            for stale in paths::stale_control_sockets(&dir) {
                let _ = std::fs::remove_file(stale);
            }
            for conn in listener.incoming() {
                let Ok(stream) = conn else { continue };
                let _ = std::thread::Builder::new()
                    .name("clrprof-control-conn".into())
                    .spawn(move || crate::guard((), || serve(stream)));
            }
        })
        .map(|_| ())
        .map_err(|e| format!("cannot start the control thread: {e}"))
}

/// Removes the socket file (at shutdown).
pub fn remove() {
    if let Some(p) = PATH.get() {
        let _ = std::fs::remove_file(p);
    }
}

/// The peer's user id (`SO_PEERCRED`).
fn peer_uid(stream: &UnixStream) -> Option<u32> {
    clrprof_control::trust::peer_cred(stream).ok().map(|c| c.uid)
}

fn serve(stream: UnixStream) {
    // Safety: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let Ok(mut writer) = stream.try_clone() else { return };
    if peer_uid(&stream) != Some(me) {
        let _ = writer.write_all(&reply_line(&Reply::error("permission denied: the control socket answers only its process's user")));
        return;
    }
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut reader).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let reply = if line.len() > MAX_LINE && line.last() != Some(&b'\n') {
            // Skip the rest of the long line.
            let mut rest = Vec::new();
            let _ = reader.read_until(b'\n', &mut rest);
            Reply::error(format!("request longer than {MAX_LINE} bytes"))
        } else {
            match parse_request(&line) {
                Ok(req) => crate::control::handle(&req),
                Err(e) => Reply::error(e),
            }
        };
        if writer.write_all(&reply_line(&reply)).is_err() {
            return;
        }
    }
}
