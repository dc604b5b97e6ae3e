//! The server over real sockets: the `Host` check of a loopback server,
//! the head deadline that closes idle and half-sent connections, and the
//! cap that closes the connection idle the longest, never one whose
//! response is in progress. (`held_connections.rs`: the same against
//! thousands of connections, the server in another process.)

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::routing::get as route;
use axum::Router;
use clrprof_ui::{ConnectionLimits, HEAD_TIMEOUT};
use common::*;
use std::io::Write;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use tower::ServiceExt;

#[test]
fn a_loopback_server_answers_only_requests_naming_its_address() {
    let server = Server::app(ConnectionLimits::default());
    let port = server.addr.port();
    for host in [server.host(), format!("localhost:{port}"), format!("LOCALHOST:{port}")] {
        let r = get(server.addr, "/api/logs", Some(&host), Some(TOKEN));
        assert_eq!(r.status, 200, "Host: {host}: {}", r.text());
    }
    for host in ["evil.example".to_string(), format!("evil.example:{port}"), "127.0.0.1".into(), format!("127.0.0.1:{}", port ^ 1), format!("[::1]:{port}")] {
        let r = get(server.addr, "/api/logs", Some(&host), Some(TOKEN));
        assert_eq!(r.status, 403, "Host: {host} with the token");
        assert!(r.text().contains("Host header") && r.text().contains(&format!("localhost:{port}")), "{}", r.text());
    }
    // The Host check comes first: without the token, the same refusal.
    let r = get(server.addr, "/", Some("evil.example"), None);
    assert_eq!(r.status, 403);
    assert!(r.text().contains("Host header"), "{}", r.text());
    // Without the token, but naming the server: the token's refusal.
    let r = get(server.addr, "/", Some(&server.host()), None);
    assert_eq!(r.status, 403);
    assert!(r.text().contains("token"), "{}", r.text());
    // HTTP/1.0 without Host: refused on loopback.
    let r = get(server.addr, "/api/logs", None, Some(TOKEN));
    assert_eq!(r.status, 403, "no Host");
    // Two Host headers, or a target naming another host.
    let mut s = connect(server.addr);
    let two = format!("GET /api/logs HTTP/1.1\r\nHost: {}\r\nHost: evil.example\r\nx-clrprof-token: {TOKEN}\r\nConnection: close\r\n\r\n", server.host());
    s.write_all(two.as_bytes()).expect("send");
    let r = read_response(&mut s);
    assert!(r.status == 403 || r.status == 400, "two Host headers: {}", r.status);
    let r = get(server.addr, "http://evil.example/api/logs", Some(&server.host()), Some(TOKEN));
    assert_eq!(r.status, 403, "absolute target naming another host");
    let r = get(server.addr, &format!("http://localhost:{port}/api/logs"), Some(&server.host()), Some(TOKEN));
    assert_eq!(r.status, 200, "absolute target naming the server");
}

#[test]
fn a_server_on_ipv6_loopback_answers_its_address_and_localhost() {
    let app = app();
    let Some(server) = Server::start("[::1]:0", ConnectionLimits::default(), |addr| app.router_at(addr)) else {
        eprintln!("skipped: [::1] cannot be bound here");
        return;
    };
    let port = server.addr.port();
    assert_eq!(server.host(), format!("[::1]:{port}"));
    for host in [server.host(), format!("localhost:{port}")] {
        assert_eq!(get(server.addr, "/api/logs", Some(&host), Some(TOKEN)).status, 200, "{host}");
    }
    for host in [format!("127.0.0.1:{port}"), "evil.example".into(), "[::1]".into()] {
        assert_eq!(get(server.addr, "/api/logs", Some(&host), Some(TOKEN)).status, 403, "{host}");
    }
}

#[tokio::test]
async fn a_server_on_another_address_answers_any_host_with_the_token() {
    // No socket: bound to 0.0.0.0 the server would be reachable from the
    // network; the router for that address is all that is tested.
    let router = app().router_at("0.0.0.0:8765".parse().expect("address"));
    let request = |token: Option<&str>| {
        let mut r = Request::builder().uri("/api/logs").header("host", "evil.example");
        if let Some(t) = token {
            r = r.header("x-clrprof-token", t);
        }
        r.body(Body::empty()).expect("request")
    };
    assert_eq!(router.clone().oneshot(request(Some(TOKEN))).await.expect("response").status(), StatusCode::OK);
    assert_eq!(router.oneshot(request(None)).await.expect("response").status(), StatusCode::FORBIDDEN);
}

#[test]
fn idle_and_half_sent_connections_are_closed_after_the_head_timeout() {
    assert_eq!(ConnectionLimits::default().head_timeout, HEAD_TIMEOUT);
    assert_eq!(HEAD_TIMEOUT, Duration::from_secs(10));
    let timeout = Duration::from_millis(500);
    let server = Server::app(ConnectionLimits { head_timeout: timeout, ..ConnectionLimits::default() });
    let start = Instant::now();
    // Sends nothing.
    let mut silent = connect(server.addr);
    // Sends half a head, then nothing.
    let mut half = connect(server.addr);
    let request = get_request("/api/logs", Some(&server.host()), Some(TOKEN), false);
    half.write_all(&request.as_bytes()[..request.len() - 2]).expect("send");
    // A request answered, then nothing (keep-alive).
    let mut kept = connect(server.addr);
    kept.write_all(request.as_bytes()).expect("send");
    assert_eq!(read_response(&mut kept).status, 200);

    let got = wait_closed(&mut silent);
    // The server cannot close before the deadline (a lower bound only);
    // `wait_closed` fails the test if it is still open after 20 s.
    assert!(start.elapsed() >= timeout, "closed after {:?}", start.elapsed());
    eprintln!("silent connection: closed after {:?}, sent {:?}", start.elapsed(), String::from_utf8_lossy(&got));
    let got = wait_closed(&mut half);
    assert!(start.elapsed() >= timeout);
    eprintln!("half-sent head: closed after {:?}, sent {:?}", start.elapsed(), String::from_utf8_lossy(&got));
    let got = wait_closed(&mut kept);
    assert!(got.is_empty(), "nothing after the response: {:?}", String::from_utf8_lossy(&got));
    assert!(start.elapsed() >= timeout);
    eprintln!("idle keep-alive connection: closed after {:?}", start.elapsed());
    // The server goes on answering.
    assert_eq!(get(server.addr, "/api/logs", Some(&server.host()), Some(TOKEN)).status, 200);
}

/// A router with `/fast` and `/slow`: `/slow` says it started, waits to be
/// let go, then answers `SLOW_BODY` bytes.
struct Slow {
    started: mpsc::Receiver<()>,
    release: Arc<tokio::sync::Notify>,
}

const SLOW_BODY: usize = 64 << 20;

fn slow_router() -> (Router, Slow) {
    let (started_tx, started) = mpsc::channel();
    let started_tx = Arc::new(Mutex::new(started_tx));
    let release = Arc::new(tokio::sync::Notify::new());
    let r = release.clone();
    let router = Router::new().route("/fast", route(|| async { "fast" })).route(
        "/slow",
        route(move || {
            let (started_tx, release) = (started_tx.clone(), r.clone());
            async move {
                let _ = started_tx.lock().map(|t| t.send(()));
                release.notified().await;
                vec![b'x'; SLOW_BODY]
            }
        }),
    );
    (router, Slow { started, release })
}

#[test]
fn at_the_cap_a_new_connection_closes_the_one_idle_the_longest_and_never_a_response_in_progress() {
    let (router, slow) = slow_router();
    let limits = ConnectionLimits { max_connections: 4, ..ConnectionLimits::default() };
    let server = Server::start("127.0.0.1:0", limits, |_| router).expect("bind");
    let host = server.host();
    let fast = get_request("/fast", Some(&host), None, false);

    // A request in progress, and three idle connections: the cap.
    let mut s = connect(server.addr);
    s.write_all(get_request("/slow", Some(&host), None, false).as_bytes()).expect("send");
    slow.started.recv_timeout(PATIENCE).expect("/slow started");
    let idle: Vec<_> = (0..3).map(|_| connect(server.addr)).collect();
    // A new connection closes the one idle the longest, not the busy one.
    let r = get(server.addr, "/fast", Some(&host), None);
    assert_eq!((r.status, r.text().as_str()), (200, "fast"));
    assert!(wait_closed(&mut idle[0].try_clone().expect("clone")).is_empty(), "the oldest idle connection is closed");
    assert!(!is_closed(&idle[1]) && !is_closed(&idle[2]), "one was enough");

    // The response starts, larger than the sockets' buffers, and the client
    // does not read it yet: the connection is idle (its body handed to
    // hyper) but its socket is full. Connections opened after that are
    // closed before it, though it went idle first.
    slow.release.notify_one();
    let mut first = [0u8; 1];
    s.peek(&mut first).expect("the response starts");
    let mut kept = Vec::new();
    for i in 0..12 {
        let mut c = connect(server.addr);
        c.write_all(fast.as_bytes()).expect("send");
        let r = read_response(&mut c);
        assert_eq!(r.status, 200, "connection {i}");
        kept.push(c);
    }
    // Each new connection closed an older idle one: the cap holds. (The
    // server closes them as it accepts the next ones; on a loaded machine
    // the last close may come a moment after the last answer.)
    let waited = std::time::Instant::now();
    let closed = loop {
        let closed = kept.iter().filter(|c| is_closed(c)).count();
        if closed >= kept.len() - 3 || waited.elapsed() > PATIENCE {
            break closed;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(closed >= kept.len() - 3, "{closed} of {} closed", kept.len());
    // The response in progress arrives whole (read as it comes, however
    // slowly: on a loaded machine the server's threads may wait their
    // turn longer than a read timeout).
    let r = read_response_whole(&mut s);
    assert_eq!(r.status, 200);
    assert_eq!(r.body.len(), SLOW_BODY);
    assert!(r.body.iter().all(|&b| b == b'x'));
}

#[test]
fn when_every_connection_has_a_request_in_progress_a_new_one_is_closed() {
    let (router, slow) = slow_router();
    let limits = ConnectionLimits { max_connections: 1, ..ConnectionLimits::default() };
    let server = Server::start("127.0.0.1:0", limits, |_| router).expect("bind");
    let host = server.host();
    let mut s = connect(server.addr);
    s.write_all(get_request("/slow", Some(&host), None, true).as_bytes()).expect("send");
    slow.started.recv_timeout(PATIENCE).expect("/slow started");
    let mut refused = connect(server.addr);
    let _ = refused.write_all(get_request("/fast", Some(&host), None, true).as_bytes());
    assert!(wait_closed(&mut refused).is_empty(), "closed without an answer");
    slow.release.notify_one();
    let r = read_response_whole(&mut s);
    assert_eq!((r.status, r.body.len()), (200, SLOW_BODY));
    // Once the response is sent, a new connection is answered again.
    assert_eq!(get(server.addr, "/fast", Some(&host), None).status, 200);
}
