//! The connections that have not finished their handshake yet, so that no
//! one on the machine can starve the collector by holding connections (the
//! web UI's rule, in `clrprof_ui::connections`, applied to the handshake):
//!
//! - **A deadline:** a connection has
//!   [`Options::handshake_timeout`](crate::Options::handshake_timeout)
//!   (10 s) from its accept to prove the token, or it is closed.
//! - **A cap** ([`Options::max_waiting`](crate::Options::max_waiting), 256
//!   by default, at most a quarter of the process's file limit): before a
//!   connection is accepted while that many are still waiting for their
//!   handshake, the one waiting the longest (accepted first) is closed to
//!   make room, but only once it has had its challenge and [`GRACE`]
//!   (50 ms) to answer it; until one has, accepting waits (new
//!   connections wait in the kernel's queue). A genuine agent sends its
//!   `HELLO` as soon as it reads the challenge, well within a millisecond
//!   on loopback; a flood would have to open as many connections as the
//!   cap in between to push it out, and cannot push it out before it had
//!   its chance. A connection that has proved the token leaves this list:
//!   a session is never closed for a newcomer.
//! - **Out of files:** when accepting fails for want of a file descriptor
//!   (`EMFILE`, `ENFILE`), the cap is lowered to the waiting connections'
//!   open sockets less [`FD_MARGIN`] (but not under [`MIN_WAITING`]), the
//!   longest waiting over it are closed, and accepting resumes as soon as
//!   one of them has let go of its socket, or after a pause that starts at
//!   [`OUT_OF_FILES_PAUSE`] and doubles while nothing can be closed (up to
//!   [`OUT_OF_FILES_PAUSE_MAX`]): the loop neither spins nor stops. The
//!   cap goes back up after [`RESTORE_AFTER`] without a shortage.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// The default cap on connections waiting for their handshake (when the
/// file limit allows it): far more than agents connecting at one moment.
pub const MAX_WAITING: usize = 256;

/// How long a connection has, after its challenge was sent, before it may
/// be closed to make room for a newer one.
pub const GRACE: Duration = Duration::from_millis(50);

/// The cap is never lowered under this.
pub const MIN_WAITING: usize = 16;

/// How far below the waiting connections' open sockets the cap is set
/// when the process runs out of file descriptors.
pub const FD_MARGIN: usize = 16;

/// The first pause of accepting after the process ran out of file
/// descriptors (it resumes as soon as a closed connection has let go of
/// its socket).
pub const OUT_OF_FILES_PAUSE: Duration = Duration::from_millis(10);

/// The longest pause of accepting while the process has no file
/// descriptor left and no waiting connection to close.
pub const OUT_OF_FILES_PAUSE_MAX: Duration = Duration::from_secs(1);

/// How long after the last shortage of file descriptors a lowered cap is
/// set back to its configured value.
pub const RESTORE_AFTER: Duration = Duration::from_secs(10);

/// The default cap: [`MAX_WAITING`], or a quarter of the process's file
/// limit (`RLIMIT_NOFILE`, its soft value) if that is less, but at least
/// [`MIN_WAITING`].
pub fn default_cap() -> usize {
    let by_files = open_files_limit().map_or(MAX_WAITING, |n| usize::try_from(n / 4).unwrap_or(usize::MAX));
    by_files.clamp(MIN_WAITING, MAX_WAITING)
}

/// The process's file limit (the soft `RLIMIT_NOFILE`), if known.
fn open_files_limit() -> Option<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // Safety: getrlimit writes the limit into the struct it is given, a
    // valid one of the right type.
    let r = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    // `rlim_t` is narrower than u64 on some targets.
    #[allow(clippy::unnecessary_cast)]
    let soft = limit.rlim_cur as u64;
    (r == 0 && limit.rlim_cur != libc::RLIM_INFINITY).then_some(soft)
}

/// Whether accepting failed for want of a file descriptor (or of the
/// memory for a socket).
pub(crate) fn is_out_of_files(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM))
}

/// An error of accepting that concerns one connection only (it went away
/// before it was accepted).
pub(crate) fn is_one_connections(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(e.kind(), ConnectionAborted | ConnectionReset | ConnectionRefused | Interrupted | WouldBlock)
}

/// The connections waiting for their handshake, the one waiting longest
/// first, and the cap.
pub(crate) struct Waiting {
    state: Mutex<State>,
    /// Notified when a connection closed to make room has let go of its
    /// socket.
    freed: Notify,
    /// Notified when a connection got its challenge or left.
    progress: Notify,
    configured: usize,
}

struct State {
    next: u64,
    /// Waiting connections by accept order.
    waiting: BTreeMap<u64, Entry>,
    /// Closed to make room, socket not yet let go.
    closing: usize,
    cap: usize,
    /// The last shortage of file descriptors.
    short_at: Option<Instant>,
    /// Connections closed to make room, in all.
    shed: u64,
}

struct Entry {
    /// Tells the connection it was closed.
    closed: Arc<Notify>,
    /// From when it may be closed to make room: [`GRACE`] after its
    /// challenge was sent.
    sheddable_at: Option<Instant>,
}

/// A connection's place in [`Waiting`] until its handshake is done
/// ([`Ticket::done`]) or its task ends.
pub(crate) struct Ticket {
    id: u64,
    /// Notified when the connection is closed to make room.
    pub closed: Arc<Notify>,
    waiting: Arc<Waiting>,
    done: bool,
}

impl Waiting {
    /// A list with the cap `cap` (at least 1).
    pub fn new(cap: usize) -> Waiting {
        let cap = cap.max(1);
        Waiting {
            state: Mutex::new(State { next: 0, waiting: BTreeMap::new(), closing: 0, cap, short_at: None, shed: 0 }),
            freed: Notify::new(),
            progress: Notify::new(),
            configured: cap,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes room for one more connection before it is accepted: while
    /// the cap is reached, closes the one waiting longest that has had its
    /// chance ([`GRACE`] since its challenge), or waits until one has.
    pub async fn room(&self) {
        loop {
            let wait = {
                let mut s = self.lock();
                if s.short_at.is_some_and(|t| t.elapsed() >= RESTORE_AFTER) {
                    s.cap = self.configured;
                    s.short_at = None;
                }
                if s.waiting.len() < s.cap {
                    return;
                }
                let now = Instant::now();
                let ready = s.waiting.iter().find(|(_, e)| e.sheddable_at.is_some_and(|t| t <= now)).map(|(id, _)| *id);
                match ready {
                    Some(id) => {
                        s.close(id);
                        continue;
                    }
                    None => s.waiting.values().filter_map(|e| e.sheddable_at).min().map_or(GRACE, |t| t - now),
                }
            };
            let _ = tokio::time::timeout(wait, self.progress.notified()).await;
        }
    }

    /// A newly accepted connection (after [`Waiting::room`]).
    pub fn admit(self: &Arc<Self>) -> Ticket {
        let mut s = self.lock();
        let id = s.next;
        s.next += 1;
        let closed = Arc::new(Notify::new());
        s.waiting.insert(id, Entry { closed: Arc::clone(&closed), sheddable_at: None });
        Ticket { id, closed, waiting: Arc::clone(self), done: false }
    }

    /// Accepting failed for want of file descriptors: lowers the cap to
    /// the waiting connections' sockets less [`FD_MARGIN`] and closes the
    /// longest waiting over it. Gives how many were closed.
    pub fn out_of_files(&self) -> usize {
        let mut s = self.lock();
        let sockets = s.waiting.len() + s.closing;
        s.cap = s.cap.min(sockets.saturating_sub(FD_MARGIN)).max(MIN_WAITING.min(self.configured));
        s.short_at = Some(Instant::now());
        let mut n = 0;
        // At least one, so that a socket is let go of even at the floor.
        while (s.waiting.len() > s.cap || n == 0) && s.close_oldest() {
            n += 1;
        }
        n
    }

    /// Waits until a closed connection lets go of its socket, at most
    /// `pause`.
    pub async fn freed(&self, pause: Duration) {
        let _ = tokio::time::timeout(pause, self.freed.notified()).await;
    }

    /// How many are waiting, and the cap.
    pub fn len_and_cap(&self) -> (usize, usize) {
        let s = self.lock();
        (s.waiting.len(), s.cap)
    }

    /// Connections closed to make room, in all.
    pub fn shed(&self) -> u64 {
        self.lock().shed
    }
}

impl State {
    fn close_oldest(&mut self) -> bool {
        let Some(id) = self.waiting.keys().next().copied() else { return false };
        self.close(id);
        true
    }

    fn close(&mut self, id: u64) {
        if let Some(e) = self.waiting.remove(&id) {
            e.closed.notify_one();
            self.closing += 1;
            self.shed += 1;
        }
    }
}

impl Ticket {
    /// The cap at this moment.
    pub fn cap(&self) -> usize {
        self.waiting.len_and_cap().1
    }

    /// Its challenge was sent: [`GRACE`] from now it may be closed to make
    /// room.
    pub fn challenged(&self) {
        let mut s = self.waiting.lock();
        if let Some(e) = s.waiting.get_mut(&self.id) {
            e.sheddable_at = Some(Instant::now() + GRACE);
        }
        drop(s);
        self.waiting.progress.notify_one();
    }

    /// The handshake is over (the connection proved the token, or was
    /// refused): it no longer counts against the cap.
    pub fn done(mut self) {
        self.leave();
    }

    fn leave(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        let mut s = self.waiting.lock();
        if s.waiting.remove(&self.id).is_none() {
            // It was closed to make room: its socket is let go of now.
            s.closing = s.closing.saturating_sub(1);
            drop(s);
            self.waiting.freed.notify_one();
        } else {
            drop(s);
        }
        self.waiting.progress.notify_one();
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.leave();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_waiting_is_closed_first_once_it_had_its_chance_and_a_done_one_never() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let w = Arc::new(Waiting::new(3));
        let a = w.admit();
        let b = w.admit();
        let c = w.admit();
        b.done();
        assert_eq!(w.len_and_cap(), (2, 3));
        rt.block_on(w.room());
        let d = w.admit();
        assert_eq!(w.len_and_cap(), (3, 3));
        // None had its challenge: making room waits.
        rt.block_on(async { assert!(tokio::time::timeout(GRACE * 3, w.room()).await.is_err()) });
        assert_eq!(w.shed(), 0);
        // c, then a, got theirs: a, waiting the longest, goes once its grace is over.
        c.challenged();
        a.challenged();
        let start = Instant::now();
        rt.block_on(w.room());
        assert!(start.elapsed() >= GRACE / 2);
        assert_eq!((w.len_and_cap(), w.shed()), ((2, 3), 1));
        rt.block_on(async { tokio::time::timeout(Duration::from_secs(5), a.closed.notified()).await.unwrap() });
        drop(a);
        assert_eq!(w.lock().closing, 0);
        let e = w.admit();
        // Out of files: the cap comes down (not under the floor) and the
        // longest waiting goes, whatever its grace.
        assert_eq!(w.out_of_files(), 1);
        assert_eq!(w.len_and_cap(), (2, 3));
        drop((c, d, e));
        assert_eq!(w.len_and_cap(), (0, 3));
    }

    #[test]
    fn the_default_cap_stays_under_the_file_limit() {
        let cap = default_cap();
        assert!((MIN_WAITING..=MAX_WAITING).contains(&cap));
        if let Some(n) = open_files_limit() {
            assert!(cap as u64 <= (n / 4).max(MIN_WAITING as u64));
        }
    }
}
