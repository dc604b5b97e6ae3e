//! The streaming client (the agent's destination) against scripted collectors (plain
//! sockets and the wire crate): what the collector acknowledged followed by
//! the spool is always every byte handed over, whether the collector goes
//! away, stops reading, or was never there; a clean end waits for the last
//! acknowledgement; a resume proves the key of the session's first
//! handshake, as the real collector requires. No .NET runtime needed.

use clrprof_stream::{Host, Identity, Spool, StreamConfig, Streamer};
use clrprof_wire::frame::{small_frame, HEADER};
use clrprof_wire::{handshake, FrameHeader, FrameKind, Hello, Nonce, Role, SessionKey, Token};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

fn token() -> Token {
    Token::from_bytes([0x42; 32])
}

/// What a scripted collector does after the handshake.
#[derive(Clone, Copy)]
enum Script {
    /// Stores and acknowledges everything, answers the end.
    Good,
    /// Acknowledges the first `n` bytes' whole frames, then closes.
    CloseAfter(u64),
    /// Never reads after the handshake.
    Stall,
    /// Closes right after the handshake.
    Barren,
}

/// A fresh server nonce per connection.
fn server_nonce() -> Nonce {
    static N: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(1);
    Nonce([N.fetch_add(1, std::sync::atomic::Ordering::Relaxed); 32])
}

/// Serves one connection on `l` by `script`; gives the agent's hello,
/// the bytes it stored (acknowledged as log offsets: a catch-up's start at
/// its `spool_from`) and whether it saw the end. As the collector does, a
/// new session (`stream`, `spooled`) sets `key` from its handshake, and a
/// resume must prove it (otherwise this panics, and the test's receiver
/// sees the collector gone).
fn serve_one(l: &TcpListener, script: Script, key: &mut Option<SessionKey>) -> (Hello, Vec<u8>, bool) {
    let (s, _) = l.accept().unwrap();
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    let server = server_nonce();
    w.write_all(handshake::challenge_line(&server).as_bytes()).unwrap();
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line).unwrap();
    let hello = handshake::parse_hello(&line, &token(), &server).unwrap();
    let client = handshake::client_nonce(&hello).unwrap();
    if hello.role == Role::Resume {
        let k = key.as_ref().expect("a resume before any session");
        handshake::verify_resume(&hello, k, &server).expect("the resume proves the session's key");
    } else {
        assert_eq!(hello.resume_mac, None);
        *key = Some(handshake::session_key(&token(), &client, &server, "s1"));
    }
    w.write_all(handshake::ok_line(&token(), &client, &server, "s1").as_bytes()).unwrap();
    let base = if hello.catch_up { hello.spool_from.unwrap_or(0) } else { 0 };
    let mut stored = Vec::new();
    let mut ended = false;
    match script {
        Script::Stall => std::thread::sleep(Duration::from_secs(30)),
        Script::Barren => return (hello, stored, ended),
        _ => {}
    }
    loop {
        let mut h = [0u8; HEADER];
        if r.read_exact(&mut h).is_err() {
            break;
        }
        let h = FrameHeader::parse(h).unwrap();
        let mut p = vec![0u8; h.len as usize];
        r.read_exact(&mut p).unwrap();
        match h.kind {
            FrameKind::Data => {
                if let Script::CloseAfter(n) = script {
                    if stored.len() as u64 + p.len() as u64 > n {
                        break;
                    }
                }
                stored.extend_from_slice(&p);
                let at = base + stored.len() as u64;
                w.write_all(&small_frame(FrameKind::Ack, &at.to_be_bytes())).unwrap();
            }
            FrameKind::End => {
                ended = true;
                break;
            }
            _ => {}
        }
    }
    (hello, stored, ended)
}

/// Runs one scripted collector connection; sends back the bytes it
/// acknowledged (as stored) and whether it saw the end.
fn collector(script: Script) -> (String, mpsc::Receiver<(Vec<u8>, bool)>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (_, stored, ended) = serve_one(&l, script, &mut None);
        tx.send((stored, ended)).unwrap();
    });
    (addr, rx)
}

/// A collector serving one connection per script, in turn; sends back
/// what each one saw.
fn collectors(scripts: Vec<Script>) -> (String, mpsc::Receiver<(Hello, Vec<u8>, bool)>) {
    collectors_on(TcpListener::bind("127.0.0.1:0").unwrap(), scripts)
}

fn collectors_on(l: TcpListener, scripts: Vec<Script>) -> (String, mpsc::Receiver<(Hello, Vec<u8>, bool)>) {
    let addr = l.local_addr().unwrap().to_string();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut key = None;
        for script in scripts {
            if tx.send(serve_one(&l, script, &mut key)).is_err() {
                return;
            }
        }
    });
    (addr, rx)
}

fn config(target: &str, name: &str, buffer: usize) -> StreamConfig {
    let dir = std::env::temp_dir().join(format!("clrprof-stream-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    StreamConfig {
        target: target.to_string(),
        tls: Default::default(),
        token: Some(token()),
        spool: Spool::At(dir.join("spool.log")),
        buffer_bytes: buffer,
        linger_ms: 5000,
        reconnect_ms: 60_000,
        content: Default::default(),
        speaker: "clrprof agent",
        host: Host::default(),
    }
}

fn identity() -> Identity {
    Identity { pid: std::process::id(), program: "stream-test".into(), runtime: "none".into() }
}

fn buffers(n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| (0..200).map(|j| format!("z buffer {i} line {j}\n")).collect::<String>().into_bytes()).collect()
}

fn spool_of(c: &StreamConfig) -> Vec<u8> {
    std::fs::read(c.spool.shown()).unwrap_or_default()
}

fn all(b: &[Vec<u8>]) -> Vec<u8> {
    b.concat()
}

/// Hands the buffers over, pausing every 50 (20 ms, then a poll, as the
/// writer thread does when idle) so that a collector closing mid-stream is
/// noticed while the log goes on.
fn write_pausing(s: &mut Streamer, b: &[Vec<u8>]) {
    for (i, x) in b.iter().enumerate() {
        s.write(x.clone());
        if i % 50 == 0 {
            std::thread::sleep(Duration::from_millis(20));
            s.poll();
        }
    }
}

#[test]
fn a_clean_stream_ends_with_everything_acknowledged_and_no_spool() {
    let (addr, done) = collector(Script::Good);
    let c = config(&addr, "good", 64 << 20);
    let mut s = Streamer::start(c.clone(), identity());
    let b = buffers(300);
    for x in &b {
        s.write(x.clone());
    }
    s.finish();
    let (stored, ended) = done.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(ended);
    assert_eq!(stored, all(&b));
    assert!(!c.spool.shown().exists(), "no spool for a clean stream");
}

#[test]
fn a_collector_going_away_leaves_part_plus_spool_equal_to_the_log() {
    let (addr, done) = collector(Script::CloseAfter(200_000));
    let c = config(&addr, "away", 64 << 20);
    let mut s = Streamer::start(c.clone(), identity());
    let b = buffers(300);
    write_pausing(&mut s, &b);
    s.finish();
    let (stored, ended) = done.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(!ended);
    assert!(!stored.is_empty() && stored.len() <= 200_000);
    // The spool starts where the agent's acknowledgements ended; the
    // collector may have stored more (acknowledgements still in flight)
    // and cuts its part back to that offset when the agent tells it.
    let spool = spool_of(&c);
    let whole = all(&b);
    let from = whole.len() - spool.len();
    assert!(from > 0 && from <= stored.len(), "spool from {from}, stored {}", stored.len());
    let mut joined = stored[..from].to_vec();
    joined.extend(spool);
    assert_eq!(joined, whole, "stored part (cut back) + spool = every byte, once");
}

#[test]
fn a_collector_that_stops_reading_sends_the_rest_to_the_spool_without_blocking() {
    let (addr, _done) = collector(Script::Stall);
    // 1 MB of retention: the socket buffers fill, then the spool takes over.
    let c = config(&addr, "stall", 1 << 20);
    let mut s = Streamer::start(c.clone(), identity());
    let b = buffers(2000);
    let start = std::time::Instant::now();
    for x in &b {
        s.write(x.clone());
    }
    let took = start.elapsed();
    // Nothing was acknowledged: the spool holds the whole log.
    s.poll();
    let spool = spool_of(&c);
    assert_eq!(spool, all(&b), "the spool starts at byte 0 (nothing acknowledged) and holds everything");
    assert!(took < Duration::from_secs(20), "writes never waited on the stalled collector ({took:?})");
}

#[test]
fn no_collector_at_start_spools_everything() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let c = config(&format!("127.0.0.1:{port}"), "none", 64 << 20);
    let mut s = Streamer::start(c.clone(), identity());
    std::thread::sleep(Duration::from_millis(200));
    let b = buffers(50);
    for x in &b {
        s.write(x.clone());
    }
    s.finish();
    assert_eq!(spool_of(&c), all(&b));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(c.spool.shown()).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "the spool is private (mode {mode:o})");
    // A token-less agent never connects: everything to the spool too.
    let mut c2 = config(&format!("127.0.0.1:{port}"), "notoken", 64 << 20);
    c2.token = None;
    let mut s = Streamer::start(c2.clone(), identity());
    std::thread::sleep(Duration::from_millis(100));
    for x in &b {
        s.write(x.clone());
    }
    s.finish();
    assert_eq!(spool_of(&c2), all(&b));
    let _ = TcpStream::connect(format!("127.0.0.1:{port}"));
}

#[test]
fn a_collector_back_after_a_break_is_caught_up_from_the_spool_and_gets_the_whole_log() {
    let (addr, seen) = collectors(vec![Script::CloseAfter(200_000), Script::Good]);
    let mut c = config(&addr, "catch-up", 64 << 20);
    c.reconnect_ms = 50;
    let mut s = Streamer::start(c.clone(), identity());
    let b = buffers(300);
    write_pausing(&mut s, &b);
    let (first, part, ended) = seen.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(!ended && !first.catch_up && first.role == Role::Stream);
    // More of the log while the catch-up runs: it follows the spool.
    let more = buffers(100);
    for x in &more {
        s.write(x.clone());
    }
    s.finish();
    let (again, rest, ended) = seen.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(ended, "the catch-up ends with the end of the log");
    assert_eq!((again.role, again.catch_up, again.session.as_deref()), (Role::Resume, true, Some("s1")));
    // It proved the key of the first handshake (checked by the scripted
    // collector, which answered it).
    assert!(first.resume_mac.is_none() && again.resume_mac.is_some());
    let from = again.spool_from.unwrap() as usize;
    let whole = [all(&b), all(&more)].concat();
    assert!(from > 0 && from <= part.len(), "spool from {from}, stored {}", part.len());
    // The collector, cutting its part back to the spool's start and
    // appending the catch-up, holds every byte once.
    assert_eq!([&part[..from], &rest[..]].concat(), whole);
    // The local spool is the same tail, kept.
    assert_eq!(spool_of(&c), &whole[from..]);
}

#[test]
fn a_collector_that_accepts_the_catch_up_but_stores_nothing_is_given_up() {
    use clrprof_stream::catch_up::MAX_BARREN;
    let mut scripts = vec![Script::CloseAfter(100_000)];
    scripts.extend(std::iter::repeat_n(Script::Barren, MAX_BARREN as usize + 3));
    let (addr, seen) = collectors(scripts);
    let mut c = config(&addr, "barren", 64 << 20);
    c.reconnect_ms = 20;
    let mut s = Streamer::start(c.clone(), identity());
    let b = buffers(300);
    write_pausing(&mut s, &b);
    let mut connections = 0;
    while seen.recv_timeout(Duration::from_secs(2)).is_ok() {
        connections += 1;
    }
    // The stream, then MAX_BARREN catch-ups that stored nothing; no more.
    assert_eq!(connections, 1 + MAX_BARREN as usize);
    s.finish();
    let whole = all(&b);
    let spool = spool_of(&c);
    assert!(whole.ends_with(&spool) && !spool.is_empty(), "the spool keeps the log's tail");
}

#[test]
fn a_collector_started_after_the_program_gets_the_whole_log_from_the_spool() {
    // A port nobody listens on yet.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut c = config(&format!("127.0.0.1:{port}"), "late-collector", 64 << 20);
    c.reconnect_ms = 50;
    let mut s = Streamer::start(c.clone(), identity());
    let b = buffers(200);
    for x in &b[..100] {
        s.write(x.clone());
    }
    std::thread::sleep(Duration::from_millis(200));
    s.poll();
    assert_eq!(spool_of(&c), all(&b[..100]), "spooled from the start");
    let (_, seen) = collectors_on(TcpListener::bind(("127.0.0.1", port)).unwrap(), vec![Script::Good]);
    for x in &b[100..] {
        s.write(x.clone());
    }
    s.finish();
    let (hello, stored, ended) = seen.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!((hello.role, hello.catch_up, hello.spool_from), (Role::Spooled, true, Some(0)));
    assert!(ended);
    assert_eq!(stored, all(&b), "the collector got the whole log from the spool");
}

#[test]
fn a_catch_up_from_a_spooled_start_that_breaks_resumes_with_that_sessions_key() {
    // No collector at start: the session is made by the `spooled` hello of
    // the first catch-up, whose handshake gives its key; that catch-up
    // breaks, and the next one resumes the session, proving that key (the
    // scripted collector checks it).
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut c = config(&format!("127.0.0.1:{port}"), "spooled-resume", 64 << 20);
    c.reconnect_ms = 50;
    let mut s = Streamer::start(c.clone(), identity());
    let b = buffers(300);
    for x in &b[..150] {
        s.write(x.clone());
    }
    std::thread::sleep(Duration::from_millis(200));
    s.poll();
    let (_, seen) = collectors_on(TcpListener::bind(("127.0.0.1", port)).unwrap(), vec![Script::CloseAfter(100_000), Script::Good]);
    let (first, _, ended) = seen.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(!ended);
    assert_eq!((first.role, first.catch_up, first.resume_mac.as_deref()), (Role::Spooled, true, None));
    for x in &b[150..] {
        s.write(x.clone());
    }
    s.finish();
    let (again, stored, ended) = seen.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!((again.role, again.session.as_deref(), again.spool_from), (Role::Resume, Some("s1"), Some(0)));
    assert!(again.resume_mac.is_some());
    assert!(ended);
    assert_eq!(stored, all(&b), "the resumed catch-up sent the whole log");
}
