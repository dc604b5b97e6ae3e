//! Catching up from the spool: once a spooling agent reaches the collector
//! again, it sends the spool and goes on streaming.
//!
//! ```text
//!  writer thread --> spool file (every byte from `spool_from`, for good)
//!                        |
//!  clrprof-catch-up: reads the spool from its start --> [retained] --clrprof-net--> collector
//!                    (at most CLRPROF_STREAM_BUFFER_MB unacknowledged)   <--clrprof-net-recv-- acks, commands
//! ```
//!
//! The writer thread keeps writing the spool: the program's threads never
//! wait on the network, and the local copy stays whole whatever happens
//! to the connection. The catch-up thread tries the collector every
//! `CLRPROF_RECONNECT_MS`; when it answers (hello `resume` or `spooled`
//! with `catch_up`), the collector cuts its stored part back to the
//! spool's start and the thread sends the spool from its first byte as
//! `D` frames, then follows it as it grows, through the same retained
//! queue and network threads as a plain stream. At the end of the log it
//! sends the `E` frame and the collector's stored log is whole. If the
//! connection breaks again the thread starts over (the collector cuts
//! what the catch-up added away again, so its part followed by the spool
//! stays the log). It gives up after [`MAX_BARREN`] connections in a row
//! that were accepted but stored nothing (a collector that cannot take
//! the catch-up).

use std::io::Read;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use clrprof_wire::{Hello, Role, SessionKey, Token};

use crate::config::{Host, Tls};
use crate::stream::{Net, Session, State};

/// Accepted connections in a row that stored nothing before the thread
/// gives up.
pub const MAX_BARREN: u32 = 5;

/// How much of the spool one buffer takes.
const READ_BYTES: usize = 1 << 20;

/// How long the thread sleeps when it has read all the spool there is.
const IDLE: Duration = Duration::from_millis(100);

/// How the catch-up stands (shared with the writer thread).
#[derive(Debug, Default)]
struct Progress {
    /// The writer wrote the end of the log to the spool.
    done: bool,
    /// The spool lost bytes (a write failed): the log can never be whole.
    broken: bool,
    /// A catch-up connection is up.
    connected: bool,
    /// The collector stored the whole log.
    caught_up: bool,
    /// The thread stopped trying.
    gave_up: bool,
}

/// The writer thread's handle on the catch-up.
pub struct CatchUp {
    progress: Mutex<Progress>,
    cv: Condvar,
}

/// What a catch-up connection needs to know.
pub struct Plan {
    /// The spool file.
    pub spool: PathBuf,
    /// The log offset at which the spool starts.
    pub from: u64,
    /// The hello (`resume` with the session, or `spooled`), `catch_up` set.
    pub hello: Hello,
    /// For `resume`: the session's key, which the hello proves (made at
    /// the session's first handshake, kept in this process's memory).
    pub key: Option<SessionKey>,
    /// The collector's address.
    pub target: String,
    /// TLS or not, and how the collector is known.
    pub tls: Tls,
    /// The collector's token.
    pub token: Token,
    /// How often to try the collector.
    pub period: Duration,
    /// Unacknowledged bytes kept at most.
    pub bound: usize,
    /// The status fields of the spool (`spooling_to=... spooling_from=...`).
    pub note: String,
    /// Why the stream stopped (the status's last field).
    pub because: String,
    /// Where the status goes and who runs commands.
    pub host: Host,
}

impl Plan {
    /// Amends the status line: the spool's fields, `extra`, and why the
    /// stream stopped (last: it runs to the end of the line).
    fn say(&self, extra: &str) {
        (self.host.status)(&format!("{} {extra} because={}", self.note, self.because));
    }
}

impl CatchUp {
    fn lock(&self) -> MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts the catch-up thread.
    pub fn start(plan: Plan) -> Arc<CatchUp> {
        let c = Arc::new(CatchUp { progress: Mutex::new(Progress::default()), cv: Condvar::new() });
        let theirs = Arc::clone(&c);
        let started = std::thread::Builder::new().name("clrprof-catch-up".into()).spawn(move || crate::guard((), || theirs.run(plan)));
        if started.is_err() {
            c.lock().gave_up = true;
        }
        c
    }

    /// The writer wrote more of the spool.
    pub fn wrote(&self) {
        self.cv.notify_all();
    }

    /// The spool lost bytes: the catch-up can never end whole.
    pub fn broken(&self) {
        self.lock().broken = true;
        self.cv.notify_all();
    }

    /// The writer wrote the end of the log; waits at most `limit` for a
    /// catch-up under way to be stored whole. Gives whether it was.
    pub fn finish(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut p = self.lock();
        p.done = true;
        self.cv.notify_all();
        while p.connected && !p.caught_up && !p.gave_up {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            p = match self.cv.wait_timeout(p, left) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        }
        p.caught_up
    }

    /// The catch-up thread: tries the collector until the log is stored
    /// whole, the thread gives up, or the process ends.
    fn run(&self, mut plan: Plan) {
        let mut barren = 0;
        loop {
            std::thread::sleep(plan.period);
            if self.lock().broken {
                return self.give_up(&plan, "spool_lost_bytes");
            }
            let net = Net::new(State::at(plan.from), plan.host);
            let (session, stored) = self.connection(&net, &plan);
            let accepted = session.is_some();
            if let Some(s) = session {
                // Later attempts resume the session the collector gave,
                // with its key.
                plan.hello.role = Role::Resume;
                plan.hello.session = Some(s.name);
                plan.key = Some(s.key);
            }
            if self.lock().caught_up {
                return;
            }
            if stored {
                barren = 0;
            } else if accepted {
                barren += 1;
                if barren >= MAX_BARREN {
                    return self.give_up(&plan, "stored_nothing");
                }
            }
        }
    }

    fn give_up(&self, plan: &Plan, why: &str) {
        self.lock().gave_up = true;
        self.cv.notify_all();
        plan.say(&format!("catch_up_gave_up={why}"));
    }

    /// One catch-up connection: sends the spool from its start and follows
    /// it. Gives the session name (if the collector accepted) and whether
    /// the collector stored any byte.
    fn connection(&self, net: &Arc<Net>, plan: &Plan) -> (Option<Session>, bool) {
        let theirs = Arc::clone(net);
        let (target, tls, token, hello, key) =
            (plan.target.clone(), plan.tls.clone(), plan.token.clone(), plan.hello.clone(), plan.key.clone());
        let spawned = std::thread::Builder::new()
            .name("clrprof-net".into())
            .spawn(move || crate::guard((), || crate::stream::send_main(&theirs, &target, &tls, Some(&token), hello, key)));
        if spawned.is_err() {
            return (None, false);
        }
        let Some(session) = net.wait_session() else {
            return (None, false);
        };
        self.lock().connected = true;
        plan.say(&format!("catching_up={}", session.name));
        let whole = self.follow(net, plan);
        if whole {
            // Said before the writer thread learns it (the process may
            // end as soon as it does).
            plan.say("caught_up=yes");
        }
        let mut p = self.lock();
        p.connected = false;
        p.caught_up |= whole;
        self.cv.notify_all();
        drop(p);
        net.close();
        let stored = net.lock().acked > plan.from;
        (Some(session), stored)
    }

    /// Feeds the spool to `net` until the collector has stored all of it
    /// after the end of the log (true) or the connection fails (false).
    fn follow(&self, net: &Arc<Net>, plan: &Plan) -> bool {
        let Ok(mut file) = clrprof_files::open_existing(&plan.spool, clrprof_files::Access::Read, Some(clrprof_files::my_uid())) else {
            return false;
        };
        let mut buf = vec![0u8; READ_BYTES];
        loop {
            {
                let s = net.lock();
                if s.failed.is_some() {
                    return false;
                }
                if s.end_sent && s.acked >= s.end {
                    return true;
                }
                if s.finishing || (s.end - s.base) as usize + READ_BYTES > plan.bound.max(READ_BYTES) {
                    // Waits for acknowledgements (or the end's).
                    let _ = net.cv.wait_timeout(s, IDLE);
                    continue;
                }
            }
            // `done` is read before the spool: when it is set and the read
            // finds nothing more, the whole log has been read.
            let (done, broken) = {
                let p = self.lock();
                (p.done, p.broken)
            };
            let n = match file.read(&mut buf) {
                Ok(n) => n,
                Err(_) => return false,
            };
            if n > 0 {
                net.push(buf[..n].to_vec());
                continue;
            }
            if broken {
                return false;
            }
            if done {
                net.finish();
                continue;
            }
            let p = self.lock();
            if !p.done {
                let _ = self.cv.wait_timeout(p, IDLE);
            }
        }
    }
}
