//! Serving the accepted connections so that no one on the machine can
//! starve the server by holding connections: a deadline for each request's
//! head and a cap on connections, kept by closing the connections that
//! have waited longest without a request in progress.
//!
//! HTTP is hyper's (`hyper::server::conn::http1`, as `axum::serve` uses
//! it); this file only decides which connections to keep:
//!
//! - **Head deadline** ([`ConnectionLimits::head_timeout`], 10 s by
//!   default): hyper's header read timeout. A connection gets that long to
//!   send each request's whole head, counted from when it was accepted or
//!   from the end of the previous response; otherwise it is closed. So a
//!   connection that sends nothing, one that sends a head slowly or never
//!   finishes it, and an idle keep-alive connection are all closed after
//!   it (hyper counts the wait for the next request and the reading of its
//!   head with one timer, so the idle keep-alive timeout is the same 10 s;
//!   a browser opens a new connection when it needs one, which on
//!   loopback costs nothing).
//! - **Cap** ([`ConnectionLimits::max_connections`], 512 by default, at
//!   most half of the process's file limit): when a new connection is
//!   accepted and the cap is reached, the connection that has been idle
//!   (no request in progress: waiting for, or reading, a request's head)
//!   the longest is closed to make room. A connection with a request in
//!   progress (from its head read to its response's body handed whole to
//!   hyper) is never closed for another; if every connection has one, the
//!   new connection is closed instead. Among the idle ones, a connection
//!   whose socket is still full of a response's end (the client reads it
//!   slowly) is closed only when every idle connection is in that state
//!   (it cannot be spared for good: a client could fill a connection with
//!   403s it never reads). So a new connection is always accepted at
//!   once, and its request, which comes right after it connects, is
//!   answered: another client would have to open as many connections as
//!   the cap in between to push it out. A per-peer cap would not do: on
//!   loopback every client, the browser too, is 127.0.0.1.
//! - **Out of files**: when accepting fails because the process has no
//!   file descriptor left (`EMFILE`, `ENFILE`; other parts of the process
//!   hold files too), the cap is lowered to the connections' open sockets
//!   minus a margin of [`FD_MARGIN`], those over it are closed as above, and
//!   accepting resumes as soon as one of the connections being closed has
//!   let go of its socket, or after [`OUT_OF_FILES_PAUSE`] (10 ms): the
//!   loop neither spins nor stops.
//!
//! A client without the token can hold no request in progress for long:
//! its requests are refused at once (403, a few bytes), so all its
//! connections are idle ones, which are closed first.

use axum::body::Body;
use axum::Router;
use http_body_util::BodyExt as _;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::io::IoSlice;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Notify};
use tower::ServiceExt as _;

/// The default [`ConnectionLimits::head_timeout`]: 10 s.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// The default [`ConnectionLimits::max_connections`] (when the file limit
/// allows it): 512, far more than a few browser tabs open (a browser opens
/// at most 6 connections to a server).
pub const MAX_CONNECTIONS: usize = 512;

/// How far below the connections' open sockets the cap is set when the
/// process runs out of file descriptors (room for the sockets being
/// closed meanwhile and for the files the server opens).
pub const FD_MARGIN: usize = 16;

/// How long accepting pauses at most after the process ran out of file
/// descriptors (it resumes as soon as a connection closed to make room
/// has let go of its socket).
pub const OUT_OF_FILES_PAUSE: Duration = Duration::from_millis(10);

/// How long accepting pauses after an error that is neither one
/// connection's nor a lack of file descriptors.
const ERROR_PAUSE: Duration = Duration::from_millis(100);

/// How long, once asked to stop, the server waits for the responses in
/// progress to be sent before it closes their connections.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How the server treats connections ([`serve_connections`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// How long a connection has to send a request's whole head, counted
    /// from its accept or from the end of the previous response; also the
    /// idle keep-alive timeout. Default [`HEAD_TIMEOUT`].
    pub head_timeout: Duration,
    /// How many connections are kept at most; at the cap, a new connection
    /// closes the one idle the longest. Default [`MAX_CONNECTIONS`], or
    /// half the process's file limit (`RLIMIT_NOFILE`, its soft value) if
    /// that is less (but at least 8).
    pub max_connections: usize,
}

impl Default for ConnectionLimits {
    fn default() -> ConnectionLimits {
        let by_files = open_files_limit().map_or(MAX_CONNECTIONS, |n| usize::try_from(n / 2).unwrap_or(usize::MAX));
        ConnectionLimits { head_timeout: HEAD_TIMEOUT, max_connections: by_files.clamp(8, MAX_CONNECTIONS) }
    }
}

/// The process's file limit (the soft `RLIMIT_NOFILE`), if known.
fn open_files_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // Safety: getrlimit writes the limit into the struct it is given, a
        // valid one of the right type.
        let r = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
        // `rlim_t` is narrower than u64 on some targets.
        #[allow(clippy::unnecessary_cast)]
        let soft = limit.rlim_cur as u64;
        (r == 0 && limit.rlim_cur != libc::RLIM_INFINITY).then_some(soft)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Answers the connections `listener` accepts with `router` (HTTP/1.1,
/// keep-alive) within `limits` until `shutdown` completes; then accepts no
/// more, lets the responses in progress finish (at most
/// [`SHUTDOWN_GRACE`]) and returns. Accepting never stops on an error.
pub async fn serve_connections(
    listener: TcpListener,
    router: Router,
    limits: &ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) {
    let tracker = Arc::new(Tracker::default());
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(limits.head_timeout).keep_alive(true);
    let (stop, stopping) = watch::channel(false);
    // Each connection's task holds a sender: `recv` gives `None` when all
    // have ended.
    let (alive, mut ended) = mpsc::channel::<()>(1);
    let mut cap = limits.max_connections.max(1);
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        match accepted {
            Ok((stream, _peer)) => {
                while tracker.live() >= cap && tracker.close_oldest_idle() {}
                if tracker.live() >= cap {
                    // Every connection has a request in progress.
                    drop(stream);
                    continue;
                }
                let (id, closed, writing) = tracker.add(std::os::fd::AsRawFd::as_raw_fd(&stream));
                let stream = Watched { stream, writing };
                let conn = Connection { stream, id, tracker: tracker.clone(), closed, router: router.clone() };
                tokio::spawn(conn.serve(http.clone(), stopping.clone(), alive.clone()));
            }
            Err(e) if is_one_connections(&e) => {}
            Err(e) if is_out_of_files(&e) => {
                // The sockets open (those being closed too) are what the
                // files allow; lowering the cap from the connections held
                // alone would lower it again at each shortage.
                cap = cap.min(tracker.sockets().saturating_sub(FD_MARGIN)).max(1);
                while tracker.live() > cap && tracker.close_oldest_idle() {}
                // Try again as soon as one of them has let go of its
                // socket.
                let _ = tokio::time::timeout(OUT_OF_FILES_PAUSE, tracker.freed.notified()).await;
            }
            Err(_) => tokio::time::sleep(ERROR_PAUSE).await,
        }
    }
    drop(listener);
    let _ = stop.send(true);
    drop(alive);
    if tokio::time::timeout(SHUTDOWN_GRACE, ended.recv()).await.is_err() {
        tracker.close_all();
    }
}

/// An error of accepting that concerns one connection only (it went away
/// before it was accepted).
fn is_one_connections(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(e.kind(), ConnectionAborted | ConnectionReset | ConnectionRefused | Interrupted | WouldBlock)
}

/// Whether accepting failed for want of a file descriptor (or of the
/// memory for a socket).
fn is_out_of_files(e: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM))
    }
    #[cfg(not(unix))]
    {
        let _ = e;
        false
    }
}

/// One accepted connection, until it is served.
struct Connection {
    stream: Watched,
    id: ConnId,
    tracker: Arc<Tracker>,
    /// Notified when the tracker closes the connection.
    closed: Arc<Notify>,
    router: Router,
}

impl Connection {
    /// Serves the connection until the client or hyper ends it, the
    /// tracker closes it (its socket is dropped), or the server stops
    /// (the response in progress, if any, is finished first).
    async fn serve(
        self,
        http: hyper::server::conn::http1::Builder,
        mut stopping: watch::Receiver<bool>,
        _alive: mpsc::Sender<()>,
    ) {
        let Connection { stream, id, tracker, closed, router } = self;
        let _forget = Forget { id, tracker: tracker.clone() };
        let service = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
            let busy = Busy::new(id, tracker.clone());
            let router = router.clone();
            async move {
                let response = router.oneshot(request).await?;
                // The connection is busy until the response's body has been
                // read whole (then hyper drops it, and `busy` with it).
                Ok::<_, std::convert::Infallible>(response.map(|body| {
                    Body::new(body.map_frame(move |frame| {
                        let _busy = &busy;
                        frame
                    }))
                }))
            }
        });
        let conn = http.serve_connection(TokioIo::new(stream), service);
        tokio::pin!(conn);
        tokio::select! {
            _ = conn.as_mut() => return,
            () = closed.notified() => return,
            _ = stopping.wait_for(|stop| *stop) => {}
        }
        conn.as_mut().graceful_shutdown();
        tokio::select! {
            _ = conn => {}
            () = closed.notified() => {}
        }
    }
}

/// A connection's number, given at its accept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct ConnId(u64);

/// The connections held, which of them are idle, and since when.
#[derive(Default)]
struct Tracker {
    state: Mutex<TrackerState>,
    /// Notified when a connection closed by the tracker has let go of its
    /// socket.
    freed: Notify,
}

#[derive(Default)]
struct TrackerState {
    /// The next connection's number.
    next_id: u64,
    /// The next mark of a connection's going idle (a counter, so that
    /// marks order the idle connections by when they went idle).
    next_mark: u64,
    conns: HashMap<ConnId, Entry>,
    /// The idle connections, the one idle the longest first.
    idle: BTreeMap<u64, ConnId>,
    /// The connections closed by the tracker whose tasks have not ended
    /// yet (their sockets are still open).
    closing: HashSet<ConnId>,
}

struct Entry {
    closed: Arc<Notify>,
    /// Whether its socket is full (see [`Watched`]).
    writing: Arc<AtomicBool>,
    /// Its socket, whose send queue tells whether a response's end is
    /// still on its way to the client (see [`unsent`]).
    fd: std::os::fd::RawFd,
    /// Requests in progress (hyper's HTTP/1 has at most one at a time).
    busy: u32,
    /// When idle: its key in `idle`.
    idle_mark: Option<u64>,
}

impl Tracker {
    fn lock(&self) -> MutexGuard<'_, TrackerState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The connections held (not counting those being closed).
    fn live(&self) -> usize {
        self.lock().conns.len()
    }

    /// The connections' open sockets: those held and those being closed.
    fn sockets(&self) -> usize {
        let s = self.lock();
        s.conns.len() + s.closing.len()
    }

    /// A new connection on socket `fd`, idle; the `Notify` tells it the
    /// tracker closed it, the flag is its [`Watched::writing`].
    fn add(&self, fd: std::os::fd::RawFd) -> (ConnId, Arc<Notify>, Arc<AtomicBool>) {
        let mut s = self.lock();
        let id = ConnId(s.next_id);
        s.next_id += 1;
        let mark = s.mark();
        let closed = Arc::new(Notify::new());
        let writing = Arc::new(AtomicBool::new(false));
        s.conns.insert(id, Entry { closed: closed.clone(), writing: writing.clone(), fd, busy: 0, idle_mark: Some(mark) });
        s.idle.insert(mark, id);
        (id, closed, writing)
    }

    /// The connection has ended.
    fn forget(&self, id: ConnId) {
        let mut s = self.lock();
        if let Some(e) = s.conns.remove(&id) {
            if let Some(mark) = e.idle_mark {
                s.idle.remove(&mark);
            }
        }
        if s.closing.remove(&id) {
            self.freed.notify_one();
        }
    }

    /// Closes the connection idle the longest whose socket is not full,
    /// or if there is none, the one idle the longest; gives whether there
    /// was an idle connection.
    fn close_oldest_idle(&self) -> bool {
        let mut s = self.lock();
        // A response's end still to be delivered: a write found the socket
        // full, or the kernel still holds bytes of it (after hyper's last
        // write, which may have gone in whole, before the client read it).
        let writing = |id: &ConnId| s.conns.get(id).is_some_and(|e| e.writing.load(Ordering::Relaxed) || unsent(e.fd) > 0);
        let chosen = s.idle.iter().find(|(_, id)| !writing(id)).or_else(|| s.idle.first_key_value()).map(|(m, id)| (*m, *id));
        let Some((mark, id)) = chosen else { return false };
        s.idle.remove(&mark);
        if let Some(e) = s.conns.remove(&id) {
            e.closed.notify_one();
            s.closing.insert(id);
        }
        true
    }

    /// Closes every connection (the server is stopping).
    fn close_all(&self) {
        let mut s = self.lock();
        s.idle.clear();
        let conns = std::mem::take(&mut s.conns);
        for (id, e) in conns {
            e.closed.notify_one();
            s.closing.insert(id);
        }
    }

    fn start_request(&self, id: ConnId) {
        let mut s = self.lock();
        let Some(e) = s.conns.get_mut(&id) else { return };
        e.busy += 1;
        if let Some(mark) = e.idle_mark.take() {
            s.idle.remove(&mark);
        }
    }

    fn end_request(&self, id: ConnId) {
        let mut s = self.lock();
        let mark = s.next_mark;
        let Some(e) = s.conns.get_mut(&id) else { return };
        e.busy = e.busy.saturating_sub(1);
        if e.busy == 0 && e.idle_mark.is_none() {
            e.idle_mark = Some(mark);
            s.next_mark += 1;
            s.idle.insert(mark, id);
        }
    }
}

impl TrackerState {
    fn mark(&mut self) -> u64 {
        let m = self.next_mark;
        self.next_mark += 1;
        m
    }
}

/// Bytes the kernel still holds to send on socket `fd` (`SIOCOUTQ`: sent
/// and not yet acknowledged, or not yet sent), 0 when it cannot tell.
fn unsent(fd: std::os::fd::RawFd) -> usize {
    if fd < 0 {
        return 0;
    }
    let mut n: libc::c_int = 0;
    // Safety: SIOCOUTQ (TIOCOUTQ) writes one int to `n`; on a descriptor
    // that is not a TCP socket (any more) it fails and `n` is not used.
    let r = unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut n) };
    if r == 0 && n > 0 {
        n as usize
    } else {
        0
    }
}

/// A request in progress on a connection, from its head read to its
/// response's body read whole.
struct Busy {
    id: ConnId,
    tracker: Arc<Tracker>,
}

impl Busy {
    fn new(id: ConnId, tracker: Arc<Tracker>) -> Busy {
        tracker.start_request(id);
        Busy { id, tracker }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.tracker.end_request(self.id);
    }
}

/// A connection's socket, which tells whether it is full: whether its last
/// write could not be done because the client has not read what was sent
/// (set by hyper's writes, read by [`Tracker::close_oldest_idle`]).
struct Watched {
    stream: TcpStream,
    writing: Arc<AtomicBool>,
}

impl Watched {
    fn note<T>(&self, written: Poll<T>) -> Poll<T> {
        self.writing.store(written.is_pending(), Ordering::Relaxed);
        written
    }
}

impl AsyncRead for Watched {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Watched {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.note(written)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.note(written)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Takes the connection off the tracker when its task ends.
struct Forget {
    id: ConnId,
    tracker: Arc<Tracker>,
}

impl Drop for Forget {
    fn drop(&mut self) {
        self.tracker.forget(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_idle_the_longest_is_closed_first_and_busy_ones_never() {
        let t = Tracker::default();
        let (a, a_closed, _) = t.add(-1);
        let (b, _, _) = t.add(-1);
        let (c, _, _) = t.add(-1);
        t.start_request(a);
        t.start_request(b);
        t.end_request(b); // b is idle again, after c
        assert!(t.close_oldest_idle());
        assert_eq!((t.live(), t.sockets()), (2, 3), "c's socket is open until its task ends");
        assert!(!t.lock().conns.contains_key(&c), "c, idle since its accept, goes first");
        assert!(t.close_oldest_idle());
        assert!(!t.lock().conns.contains_key(&b));
        assert!(!t.close_oldest_idle(), "a has a request in progress");
        assert_eq!(t.live(), 1);
        t.end_request(a);
        assert!(t.close_oldest_idle());
        assert_eq!(t.live(), 0);
        // The notification waits for the task that has not listened yet.
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async { tokio::time::timeout(Duration::from_secs(5), a_closed.notified()).await.unwrap() });
        t.forget(a);
        t.forget(c);
        assert_eq!((t.live(), t.sockets()), (0, 1), "b's task has not ended");
        t.forget(b);
        assert_eq!(t.sockets(), 0);
    }

    #[test]
    fn a_connection_whose_socket_is_full_is_closed_after_the_other_idle_ones() {
        let t = Tracker::default();
        let (a, _, a_writing) = t.add(-1);
        let (b, _, _) = t.add(-1);
        a_writing.store(true, Ordering::Relaxed);
        assert!(t.close_oldest_idle());
        assert!(t.lock().conns.contains_key(&a) && !t.lock().conns.contains_key(&b), "b goes first");
        assert!(t.close_oldest_idle(), "then a, though its socket is full");
        assert_eq!(t.live(), 0);
    }

    #[test]
    fn the_default_cap_stays_under_the_file_limit() {
        let limits = ConnectionLimits::default();
        assert!(limits.max_connections >= 8 && limits.max_connections <= MAX_CONNECTIONS);
        if let Some(n) = open_files_limit() {
            assert!(limits.max_connections as u64 <= (n / 2).max(8));
        }
        assert_eq!(limits.head_timeout, HEAD_TIMEOUT);
    }
}
