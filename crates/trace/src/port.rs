//! The launch port once the program runs.
//!
//! A program started under a session carries
//! `DOTNET_DiagnosticPorts=PATH,connect,suspend` in its environment, and
//! so does every process it starts. In connect mode a runtime connects to
//! `PATH` again after each command, for its whole life; a .NET child
//! connects at its start and waits there until it is told to resume. So
//! the port is served, and its folder kept, until the whole process tree
//! has ended: were the folder removed, another user could make it again
//! with a socket of their own, and the runtimes (running as you) would
//! connect to it and take its commands.
//!
//! ```text
//!  connection on PATH ──► peer (SO_PEERCRED): your user, and in the tree?
//!      no  ──► closed, not a byte read or written
//!      yes ──► greeting ADVR_V1{cookie, pid}, pid = the peer's
//!          a runtime's first connection  ──► ResumeRuntime, so it starts
//!          its later ones (after each command) ──► held open, unanswered
//! ```
//!
//! A runtime is known by its greeting's cookie, drawn once per runtime,
//! so a program that runs another runtime in the same process (exec) is
//! resumed again.

use crate::protocol::{self, Advertise};
use crate::session::exchange;
use crate::tree::Tree;
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a process of the tree has to send its greeting.
const GREETING_WAIT: Duration = Duration::from_secs(5);

/// The runtimes' reconnections held open, by process id: a command for
/// one of them (`StopTracing` for the program's session) is sent on its
/// held connection.
#[derive(Default)]
pub(crate) struct Held(Mutex<HashMap<u64, UnixStream>>);

impl Held {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, UnixStream>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Holds `s`, the connection of process `pid` (its key).
    pub(crate) fn insert(&self, pid: u32, s: UnixStream) {
        self.lock().insert(u64::from(pid), s);
    }

    /// Drops the connections of processes that have ended.
    pub(crate) fn prune(&self) {
        self.lock().retain(|pid, _| std::path::Path::new(&format!("/proc/{pid}")).exists());
    }

    /// Takes the held connection of process `pid`, waiting up to `wait`
    /// for its runtime to connect again.
    pub(crate) fn take(&self, pid: u32, wait: Duration) -> Option<UnixStream> {
        let start = Instant::now();
        loop {
            if let Some(s) = self.lock().remove(&u64::from(pid)) {
                return Some(s);
            }
            if start.elapsed() >= wait {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The launch port, served for the program's process tree.
pub struct Port {
    dir: PathBuf,
    tree: Arc<Tree>,
    stop: Arc<AtomicBool>,
    refused: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl Port {
    /// Serves `listener` (the socket in `dir`) for `tree`; `program` is
    /// the program's runtime, resumed already.
    pub(crate) fn serve(listener: UnixListener, dir: PathBuf, tree: Arc<Tree>, program: Advertise, held: Arc<Held>) -> Port {
        let stop = Arc::new(AtomicBool::new(false));
        let refused = Arc::new(AtomicU64::new(0));
        let thread = {
            let (tree, stop, refused) = (tree.clone(), stop.clone(), refused.clone());
            std::thread::spawn(move || serve(&listener, &tree, &stop, &refused, program, &held))
        };
        Port { dir, tree, stop, refused, thread: Some(thread) }
    }

    /// The program's process tree.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// The folder of the port.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// Connections closed unanswered so far (not from the tree).
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::SeqCst)
    }

    /// Serves the port until the whole tree has ended, then closes it and
    /// removes its folder: true. If `give_up` says so first (it is asked
    /// every 100 ms), the port is closed but its folder (yours, mode 0700)
    /// is left in place, so that no one else can make it again while
    /// processes that know its name still run: false.
    pub fn close(mut self, give_up: &dyn Fn() -> bool) -> bool {
        let ended = self.tree.wait_all(give_up);
        self.shut();
        ended
    }

    fn shut(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if self.tree.is_empty() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

impl Drop for Port {
    /// Closes the port; the folder is removed only if the tree has ended.
    fn drop(&mut self) {
        self.shut();
    }
}

/// The port's loop: accepts, checks and answers until `stop`.
fn serve(listener: &UnixListener, tree: &Tree, stop: &AtomicBool, refused: &AtomicU64, program: Advertise, held: &Held) {
    let _ = listener.set_nonblocking(true);
    // Safety: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let mut resumed: HashSet<Advertise> = HashSet::from([program]);
    let mut pruned = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((s, _)) => {
                let from_tree = clrprof_control::trust::peer_cred(&s).is_ok_and(|p| p.uid == me && tree.contains(p.pid));
                if !from_tree {
                    // Not a byte read or written: dropped, it is closed.
                    refused.fetch_add(1, Ordering::SeqCst);
                    continue;
                }
                let Some((s, said)) = greeting(s) else { continue };
                if resumed.insert(said) {
                    // A runtime's first connection: it waits to be
                    // resumed. On a thread of its own, so that a slow
                    // answer holds up no one else.
                    std::thread::spawn(move || {
                        let mut s = s;
                        let pid = u32::try_from(said.pid).unwrap_or(0);
                        let _ = exchange(&mut s, &protocol::resume_request(), pid, "ResumeRuntime");
                    });
                } else {
                    // A runtime connecting again after a command: kept
                    // open and unanswered (closing it would make it
                    // connect again at once).
                    held.lock().insert(said.pid, s);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
        if pruned.elapsed() > Duration::from_secs(1) {
            held.lock().retain(|pid, _| std::path::Path::new(&format!("/proc/{pid}")).exists());
            pruned = Instant::now();
        }
    }
}

/// Reads a runtime's greeting; `None` (the connection closed) if it is
/// not one, or names another process than the peer.
fn greeting(mut s: UnixStream) -> Option<(UnixStream, Advertise)> {
    let peer = clrprof_control::trust::peer_cred(&s).ok()?;
    s.set_nonblocking(false).ok()?;
    s.set_read_timeout(Some(GREETING_WAIT)).ok()?;
    let mut hello = [0u8; protocol::ADVERTISE_LEN];
    s.read_exact(&mut hello).ok()?;
    let said = protocol::parse_advertise(&hello).ok()?;
    (said.pid == u64::from(peer.pid)).then_some((s, said))
}
