//! A diagnostics port clrprof listens on: the sidecar way into processes
//! in other containers. The application's container is started with
//! `DOTNET_DiagnosticPorts=PATH` (a socket in a volume both containers
//! share); its runtime connects to `PATH`, waits to be resumed (the
//! default `suspend` mode), and connects again after each command.
//!
//! ```text
//!  bind PATH: its folder must be yours, closed to others' writes; the socket 0600
//!  connection ──► peer (SO_PEERCRED): your user?               no ──► closed, not a byte read or written
//!             ──► greeting ADVR_V1{cookie, pid}: the pid must be the peer's in its own
//!                 namespace (NSpid), when the peer has an id here  no ──► closed
//!             ──► a runtime's first connection: ResumeRuntime, and it is listed
//!                 its later ones: held, for the next command (a session, StopTracing)
//! ```
//!
//! A peer in a PID namespace that is not below ours (a sidecar's
//! neighbour) has no process id here: the kernel reports 0. Its greeting's
//! process id cannot be checked then, and is shown as the runtime names it.

use crate::port::Held;
use crate::protocol::{self, Advertise, Collect, Provider};
use crate::session::{exchange, Session, BUFFER_MB};
use crate::Error;
use std::collections::HashSet;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a connection has to send its greeting.
const GREETING_WAIT: Duration = Duration::from_secs(5);

/// A runtime that connected to the port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Runtime {
    /// The process id the runtime names (in its own PID namespace).
    pub named_pid: u64,
    /// Its process id here, when the kernel gives one.
    pub host_pid: Option<u32>,
    /// Its user.
    pub uid: u32,
    /// Its instance cookie.
    pub cookie: [u8; 16],
}

impl Runtime {
    /// The key its connections are held by: its id here, else the one it
    /// names.
    fn key(&self) -> u32 {
        self.host_pid.unwrap_or(u32::try_from(self.named_pid).unwrap_or(0))
    }
}

/// The port, served until dropped; the socket is removed then.
pub struct Listener {
    path: PathBuf,
    held: Arc<Held>,
    runtimes: Arc<Mutex<Vec<Runtime>>>,
    refused: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Checks the folder of `path`: a real folder (not a link) of this user
/// that no one else may write to.
fn check_folder(path: &Path) -> Result<(), Error> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let meta = dir.symlink_metadata().map_err(|e| Error::io("cannot look at the folder", dir, e))?;
    // Safety: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let why = if !meta.file_type().is_dir() {
        Some("is not a folder (a link is not followed)".to_string())
    } else if meta.uid() != me {
        Some(format!("belongs to user {}, not to you ({me})", meta.uid()))
    } else if meta.mode() & 0o022 != 0 {
        Some(format!("may be written by others (mode {:o})", meta.mode() & 0o7777))
    } else {
        None
    };
    match why {
        Some(why) => Err(Error::Launch(format!(
            "refused to listen in {}: it {why}; a diagnostics port's folder must be yours and closed to others, since every runtime that connects takes its commands from whoever listens there",
            dir.display()
        ))),
        None => Ok(()),
    }
}

impl Listener {
    /// Listens at `path` (its folder checked; a socket of yours left at
    /// the name is replaced, anything else refused).
    pub fn bind(path: &Path) -> Result<Listener, Error> {
        check_folder(path)?;
        // Safety: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        if let Ok(m) = path.symlink_metadata() {
            if m.file_type().is_socket() && m.uid() == me {
                std::fs::remove_file(path).map_err(|e| Error::io("cannot replace the old socket", path, e))?;
            } else {
                return Err(Error::Launch(format!("{} exists and is not a socket of yours: refused to replace it", path.display())));
            }
        }
        let listener = UnixListener::bind(path).map_err(|e| Error::io("cannot listen on", path, e))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|e| Error::io("cannot set the mode of", path, e))?;
        listener.set_nonblocking(true).map_err(|e| Error::io("cannot use", path, e))?;
        Ok(Listener::serve(listener, path.to_path_buf(), me))
    }

    fn serve(listener: UnixListener, path: PathBuf, me: u32) -> Listener {
        let held = Arc::new(Held::default());
        let runtimes = Arc::new(Mutex::new(Vec::new()));
        let refused = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (held, runtimes, refused, stop) = (held.clone(), runtimes.clone(), refused.clone(), stop.clone());
            std::thread::spawn(move || serve(&listener, me, &held, &runtimes, &refused, &stop))
        };
        Listener { path, held, runtimes, refused, stop, thread: Some(thread) }
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The runtimes that have connected so far.
    pub fn runtimes(&self) -> Vec<Runtime> {
        self.runtimes.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Connections closed unanswered so far (another user, a greeting
    /// that is not one or names another process).
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::SeqCst)
    }

    /// Waits up to `wait` for a runtime other than those in `known`.
    pub fn next_runtime(&self, known: &[Runtime], wait: Duration) -> Option<Runtime> {
        let start = Instant::now();
        loop {
            if let Some(r) = self.runtimes().into_iter().find(|r| !known.contains(r)) {
                return Some(r);
            }
            if start.elapsed() >= wait {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A session with runtime `r` on its next connection.
    pub fn session(&self, r: &Runtime, providers: &[Provider], rundown: bool) -> Result<Session, Error> {
        self.session_buffered(r, providers, rundown, BUFFER_MB)
    }

    /// [`Listener::session`] with the runtime's buffers for the session
    /// capped at `buffer_mb` MB ([`Session::start_buffered`]).
    pub fn session_buffered(&self, r: &Runtime, providers: &[Provider], rundown: bool, buffer_mb: u32) -> Result<Session, Error> {
        let pid = r.key();
        let stream = self.held.take(pid, Duration::from_secs(10)).ok_or_else(|| {
            Error::Launch(format!("the runtime of process {} did not connect to {} again within 10 s", r.named_pid, self.path.display()))
        })?;
        let request = protocol::collect_request(Collect::V2 { rundown }, buffer_mb.max(1), providers).map_err(|what| Error::BadReply {
            pid,
            command: "CollectTracing",
            what,
        })?;
        Session::over(pid, stream, &request, self.held.clone())
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The accept loop.
fn serve(listener: &UnixListener, me: u32, held: &Held, runtimes: &Mutex<Vec<Runtime>>, refused: &AtomicU64, stop: &AtomicBool) {
    let mut resumed: HashSet<[u8; 16]> = HashSet::new();
    let mut pruned = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((mut s, _)) => match admit(&mut s, me) {
                None => {
                    // Counted before the connection is closed, so that a
                    // peer that sees it closed sees it counted.
                    refused.fetch_add(1, Ordering::SeqCst);
                    drop(s);
                }
                Some(r) => {
                    if resumed.insert(r.cookie) {
                        runtimes.lock().unwrap_or_else(|e| e.into_inner()).push(r.clone());
                        // Its first connection: it waits to be resumed.
                        std::thread::spawn(move || {
                            let mut s = s;
                            let _ = exchange(&mut s, &protocol::resume_request(), r.key(), "ResumeRuntime");
                        });
                    } else {
                        held.insert(r.key(), s);
                    }
                }
            },
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
        if pruned.elapsed() > Duration::from_secs(1) {
            held.prune();
            pruned = Instant::now();
        }
    }
}

/// Checks a connection: the peer is this user, and its greeting names the
/// peer (by its id in its own namespace) when the peer has an id here.
fn admit(s: &mut UnixStream, me: u32) -> Option<Runtime> {
    let peer = clrprof_control::trust::peer_cred(s).ok()?;
    if peer.uid != me {
        // Not a byte read or written.
        return None;
    }
    s.set_nonblocking(false).ok()?;
    s.set_read_timeout(Some(GREETING_WAIT)).ok()?;
    let mut hello = [0u8; protocol::ADVERTISE_LEN];
    s.read_exact(&mut hello).ok()?;
    let said: Advertise = protocol::parse_advertise(&hello).ok()?;
    let host_pid = (peer.pid != 0).then_some(peer.pid);
    if let Some(pid) = host_pid {
        let inside = clrprof_control::paths::ns_pid_of(pid).unwrap_or(pid);
        if said.pid != u64::from(inside) && said.pid != u64::from(pid) {
            return None;
        }
    }
    let _ = s.set_read_timeout(None);
    Some(Runtime { named_pid: said.pid, host_pid, uid: peer.uid, cookie: said.cookie })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn the_folder_is_checked() {
        let d = std::env::temp_dir().join(format!("clrprof-listen-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = Listener::bind(&d.join("port.sock")).err().unwrap().to_string();
        assert!(e.contains("may be written by others"), "{e}");
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::write(d.join("file"), b"").unwrap();
        let e = Listener::bind(&d.join("file")).err().unwrap().to_string();
        assert!(e.contains("not a socket of yours"), "{e}");
        let l = Listener::bind(&d.join("port.sock")).unwrap();
        let mode = d.join("port.sock").symlink_metadata().unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // A greeting that names another process than the peer: closed.
        let mut c = UnixStream::connect(l.path()).unwrap();
        let mut adv = protocol::ADVERTISE_MAGIC.to_vec();
        adv.extend_from_slice(&[9; 16]);
        adv.extend_from_slice(&(u64::from(std::process::id()) + 1).to_le_bytes());
        adv.extend_from_slice(&[0, 0]);
        c.write_all(&adv).unwrap();
        let mut b = [0u8; 1];
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        assert_eq!(c.read(&mut b).unwrap_or(0), 0);
        assert_eq!(l.refused(), 1);
        assert!(l.runtimes().is_empty());
        drop(l);
        assert!(!d.join("port.sock").exists());
        let _ = std::fs::remove_dir_all(&d);
    }
}
