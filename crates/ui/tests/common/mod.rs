//! A plain HTTP/1.1 client over `std::net::TcpStream` (the requests are
//! written by hand, so that a test can send what a browser never would:
//! another `Host`, none, half a head) and the server run on its own thread.

#![allow(dead_code)]

use axum::Router;
use clrprof_ui::{serve_connections, App, ConnectionLimits, LogSet, Token};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const TOKEN: &str = "0123456789abcdef0123456789abcdef";

/// How long a client waits for the server before the test fails (a bound
/// against hanging, not a measure).
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A server over no logs (the page and `/api/logs` answer).
pub fn app() -> App {
    App::new(Token::from_text(TOKEN), Arc::new(LogSet::from_models(Vec::new())))
}

/// A server on its own thread and runtime; stopped when dropped.
pub struct Server {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Serves `router(address bound)` on `listen` within `limits`; `None`
    /// when `listen` cannot be bound (no IPv6 on this machine).
    pub fn start(listen: &str, limits: ConnectionLimits, router: impl FnOnce(SocketAddr) -> Router) -> Option<Server> {
        let listener = std::net::TcpListener::bind(listen).ok()?;
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("address");
        let router = router(addr);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                serve_connections(listener, router, &limits, async {
                    let _ = stopped.await;
                })
                .await;
            });
        });
        Some(Server { addr, stop: Some(stop), thread: Some(thread) })
    }

    /// The App's routes as `clrprof ui` serves them, on 127.0.0.1.
    pub fn app(limits: ConnectionLimits) -> Server {
        let app = app();
        Server::start("127.0.0.1:0", limits, |addr| app.router_at(addr)).expect("bind 127.0.0.1")
    }

    /// `127.0.0.1:PORT`
    pub fn host(&self) -> String {
        self.addr.to_string()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A connection that gives up after [`PATIENCE`].
pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(PATIENCE)).expect("timeout");
    s
}

/// A GET request's text (`host: None`: no `Host` header, HTTP/1.0).
pub fn get_request(path: &str, host: Option<&str>, token: Option<&str>, close: bool) -> String {
    let mut r = match host {
        Some(h) => format!("GET {path} HTTP/1.1\r\nHost: {h}\r\n"),
        None => format!("GET {path} HTTP/1.0\r\n"),
    };
    if let Some(t) = token {
        r.push_str(&format!("x-clrprof-token: {t}\r\n"));
    }
    if close {
        r.push_str("Connection: close\r\n");
    }
    r.push_str("\r\n");
    r
}

/// A response: its status and body.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Response {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Reads one response (with a `content-length`) off `s`, leaving the
/// connection as it is.
pub fn read_response(s: &mut TcpStream) -> Response {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = s.read(&mut byte).unwrap_or_else(|e| panic!("reading a response's head: {e} (after {head:?})"));
        assert_eq!(n, 1, "the connection closed before a whole head: {:?}", String::from_utf8_lossy(&head));
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).expect("ASCII head");
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("no status in {head:?}"));
    let length: usize = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().expect("length")))
        .unwrap_or_else(|| panic!("no content-length in {head:?}"));
    let mut body = vec![0u8; length];
    s.read_exact(&mut body).expect("the body");
    Response { status, body }
}

/// How long a whole response may take to come at most before
/// [`read_response_whole`] fails the test: a bound against a server that
/// never sends it, far above what the slowest machine needs.
pub const WHOLE_RESPONSE_BOUND: Duration = Duration::from_secs(300);

/// Reads one response off `s` as [`read_response`] does, but waits for its
/// bytes however slowly they come (no read timeout: on a loaded machine a
/// large body can pause longer than [`PATIENCE`] between two reads without
/// anything being wrong). The connection closing ends the read as before;
/// a server that sends nothing more keeps it open, so after
/// [`WHOLE_RESPONSE_BOUND`] the socket is shut down from this side and the
/// test fails, saying so.
pub fn read_response_whole(s: &mut TcpStream) -> Response {
    s.set_read_timeout(None).expect("no read timeout");
    let watched = s.try_clone().expect("clone the socket");
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        let timed_out = finished.recv_timeout(WHOLE_RESPONSE_BOUND).is_err();
        if timed_out {
            let _ = watched.shutdown(std::net::Shutdown::Both);
        }
        timed_out
    });
    let response = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| read_response(s)));
    let _ = done.send(());
    let timed_out = watchdog.join().unwrap_or(false);
    assert!(!timed_out, "the response did not come whole within {WHOLE_RESPONSE_BOUND:?}");
    let response = response.unwrap_or_else(|e| std::panic::resume_unwind(e));
    s.set_read_timeout(Some(PATIENCE)).expect("timeout");
    response
}

/// One request on a new connection (`Connection: close`).
pub fn get(addr: SocketAddr, path: &str, host: Option<&str>, token: Option<&str>) -> Response {
    let mut s = connect(addr);
    s.write_all(get_request(path, host, token, true).as_bytes()).expect("send");
    read_response(&mut s)
}

/// Reads until the server closes `s` and gives what it sent meanwhile;
/// fails the test if it is still open after [`PATIENCE`].
pub fn wait_closed(s: &mut TcpStream) -> Vec<u8> {
    let start = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return got,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => panic!("still open after {:?} ({e}); received {:?}", start.elapsed(), String::from_utf8_lossy(&got)),
        }
    }
}

/// Whether the server has closed `s` (without waiting; `s` must have
/// nothing to read otherwise).
pub fn is_closed(s: &TcpStream) -> bool {
    s.set_nonblocking(true).expect("nonblocking");
    let mut buf = [0u8; 1];
    let closed = match (&*s).read(&mut buf) {
        Ok(0) => true,
        Ok(_) => panic!("unexpected bytes on an idle connection"),
        Err(e) if e.kind() == ErrorKind::WouldBlock => false,
        Err(_) => true,
    };
    s.set_nonblocking(false).expect("blocking");
    closed
}
