//! `collect --tls` with the streaming client the agent and `record` use
//! (crate `clrprof-stream`): a session streamed whole over TLS; a client
//! that pins another certificate sends nothing (a recording TLS server
//! shows not one byte of the token handshake reached it); a client
//! without TLS is refused by a TLS collector; a collector beyond loopback
//! without TLS does not start unless told.

mod fake_agent;

use clrprof_collect::check::{check_token, TokenCheck};
use clrprof_collect::record::{self, SessionState};
use clrprof_collect::tls::TlsFiles;
use clrprof_collect::{Collector, ListenAddr, Options};
use clrprof_stream::{Host, Identity, Spool, StreamConfig, Streamer, Tls};
use clrprof_wire::tls::{Fingerprint, Trust};
use clrprof_wire::Token;
use fake_agent::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{mpsc, Arc};
use std::time::Duration;
use tokio_rustls::rustls;

fn tls_opts(dir: &Path) -> Options {
    Options { tls: Some(TlsFiles::default()), ..opts(dir) }
}

fn config(target: &str, tls: Tls, token: &Token, spool: &Path) -> StreamConfig {
    StreamConfig {
        target: target.to_string(),
        tls,
        token: Some(token.clone()),
        spool: Spool::At(spool.to_path_buf()),
        buffer_bytes: 64 << 20,
        linger_ms: 10_000,
        reconnect_ms: 60_000,
        content: Default::default(),
        speaker: "tls test",
        host: Host::default(),
    }
}

fn identity() -> Identity {
    Identity { pid: 4343, program: "tls-test".into(), runtime: "none".into() }
}

fn log(n: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for i in 0..n {
        writeln!(v, "z tls line {i} {}", "y".repeat(i % 70)).unwrap();
    }
    v
}

/// Files in the collector's folder other than its own (token, socket,
/// its TLS folder).
fn session_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !matches!(n.as_str(), "collector.token" | "collector.sock" | "tls") && !n.ends_with(".spool"))
        .collect()
}

#[test]
fn a_session_streams_whole_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let c = Running::start(tls_opts(dir.path()));
    let fingerprint = c.fingerprint.expect("a TLS collector has a fingerprint");
    let spool = dir.path().join("client.spool");
    let mut s = Streamer::start(config(&c.target, Tls::Verify(Trust::Fingerprint(fingerprint)), &c.token, &spool), identity());
    let data = log(60_000);
    for chunk in data.chunks(50_000) {
        s.write(chunk.to_vec());
        s.poll();
    }
    s.finish();
    let o = s.outcome();
    assert_eq!((o.spool.as_ref(), o.streamed, o.lost), (None, data.len() as u64, 0), "{o:?}");
    let session = o.session.expect("a session");
    let r = eventually(|| record::read(dir.path(), &session).ok().filter(|r| r.state != SessionState::Live));
    assert_eq!(r.state, SessionState::Ended, "{r:?}");
    assert_eq!(std::fs::read(record::log_path(dir.path(), &session)).unwrap(), data);
    // `record --target`'s check works over TLS too.
    let addr: ListenAddr = c.target.parse().unwrap();
    let tls = Tls::Verify(Trust::Fingerprint(fingerprint));
    assert_eq!(check_token(&addr, &tls, &c.token, Duration::from_secs(5)).unwrap(), TokenCheck::Accepted);
}

/// What a TLS server saw of one connection: whether the TLS handshake
/// succeeded, and every byte the client sent inside TLS.
#[derive(Debug)]
struct Seen {
    handshake: Result<(), String>,
    plaintext: Vec<u8>,
}

/// A TLS server with a certificate of its own that records what each
/// client sends inside TLS after the collector's challenge line.
fn recording_server() -> (String, Fingerprint, mpsc::Receiver<Seen>) {
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let fingerprint = Fingerprint::of(made.cert.der());
    let key = rustls::pki_types::PrivateKeyDer::try_from(made.key_pair.serialize_der()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(clrprof_wire::tls::provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![made.cert.der().clone()], key)
        .unwrap();
    let config = Arc::new(config);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let target = l.local_addr().unwrap().to_string();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for sock in l.incoming() {
            let mut sock = sock.unwrap();
            sock.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
            let mut conn = rustls::ServerConnection::new(Arc::clone(&config)).unwrap();
            let mut handshake = Ok(());
            while conn.is_handshaking() {
                if let Err(e) = conn.complete_io(&mut sock) {
                    handshake = Err(e.to_string());
                    break;
                }
            }
            let mut plaintext = Vec::new();
            if handshake.is_ok() {
                let mut tls = rustls::StreamOwned::new(conn, sock);
                let challenge = clrprof_wire::handshake::challenge_line(&clrprof_wire::Nonce([7; 32]));
                let _ = tls.write_all(challenge.as_bytes());
                let mut buf = [0u8; 4096];
                // Until the client closes or goes quiet.
                while let Ok(n) = tls.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    plaintext.extend_from_slice(&buf[..n]);
                }
            } else {
                // Whatever else the client might send: none of it is
                // inside TLS.
                let mut rest = Vec::new();
                let _ = sock.read_to_end(&mut rest);
            }
            if tx.send(Seen { handshake, plaintext }).is_err() {
                return;
            }
        }
    });
    (target, fingerprint, rx)
}

#[test]
fn a_wrong_fingerprint_is_refused_before_any_byte_of_the_handshake_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let (target, right, seen) = recording_server();
    let token = Token::from_bytes([0x42; 32]);
    let wrong = Fingerprint::of(b"some other certificate");
    let spool = dir.path().join("wrong.spool");
    let mut s = Streamer::start(config(&target, Tls::Verify(Trust::Fingerprint(wrong)), &token, &spool), identity());
    let data = log(1_000);
    s.write(data.clone());
    s.finish();
    let o = s.outcome();
    assert_eq!(o.session, None, "{o:?}");
    assert_eq!(std::fs::read(&spool).unwrap(), data, "everything is in the spool");
    // Every connection the client made (its first, its catch-up's) failed
    // at TLS, and nothing came inside.
    let got = seen.recv_timeout(Duration::from_secs(20)).unwrap();
    assert!(got.handshake.is_err(), "{got:?}");
    assert!(got.plaintext.is_empty(), "the server received {:?}", String::from_utf8_lossy(&got.plaintext));
    // `record --target`'s check: refused, naming the fingerprints.
    let addr: ListenAddr = target.parse().unwrap();
    match check_token(&addr, &Tls::Verify(Trust::Fingerprint(wrong)), &token, Duration::from_secs(5)).unwrap() {
        TokenCheck::Untrusted(why) => assert!(why.contains(&right.to_string()) && why.contains(&wrong.to_string()), "{why}"),
        other => panic!("{other:?}"),
    }
    // The same server with its right fingerprint receives the hello: the
    // recording sees what a client sends.
    let mut s =
        Streamer::start(config(&target, Tls::Verify(Trust::Fingerprint(right)), &token, &dir.path().join("right.spool")), identity());
    s.write(data);
    s.finish();
    let mut refused = 1;
    let got = loop {
        let got = seen.recv_timeout(Duration::from_secs(20)).unwrap();
        if got.handshake.is_ok() {
            break got;
        }
        assert!(got.plaintext.is_empty(), "{got:?}");
        refused += 1;
    };
    assert!(refused >= 2, "the stream's and the check's connections were refused");
    assert!(got.plaintext.starts_with(b"HELLO "), "{:?}", String::from_utf8_lossy(&got.plaintext));
}

#[test]
fn a_client_without_tls_is_refused_by_a_tls_collector() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = tls_opts(dir.path());
    o.handshake_timeout = Duration::from_millis(500);
    let c = Running::start(o);
    // The agent's client without TLS: it waits for a challenge that never
    // comes in clear, and spools.
    let spool = dir.path().join("plain.spool");
    let mut s = Streamer::start(config(&c.target, Tls::Plain, &c.token, &spool), identity());
    let data = log(1_000);
    s.write(data.clone());
    s.finish();
    let o = s.outcome();
    assert_eq!(o.session, None, "{o:?}");
    assert_eq!(std::fs::read(&spool).unwrap(), data);
    // `record --target`'s check without TLS: not accepted.
    let addr: ListenAddr = c.target.parse().unwrap();
    assert!(matches!(check_token(&addr, &Tls::Plain, &c.token, Duration::from_secs(5)), Ok(TokenCheck::Silent(_))));
    // A client that speaks first in clear (a HELLO line, an HTTP request)
    // is closed at the TLS handshake without a byte of the protocol.
    for first in [&b"HELLO x\n"[..], b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"] {
        let mut raw = std::net::TcpStream::connect(&c.target).unwrap();
        raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        raw.write_all(first).unwrap();
        let mut answer = Vec::new();
        let _ = BufReader::new(&raw).read_until(b'\n', &mut answer);
        assert!(!answer.starts_with(b"CLRPROF-COLLECT"), "{:?}", String::from_utf8_lossy(&answer));
    }
    assert_eq!(session_files(dir.path()), Vec::<String>::new());
}

#[test]
fn beyond_loopback_without_tls_the_collector_does_not_start_unless_told() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let anywhere: ListenAddr = "0.0.0.0:0".parse().unwrap();
    let o = Options { listen: anywhere.clone(), ..opts(dir.path()) };
    let e = rt.block_on(Collector::bind(o.clone())).err().expect("refused").to_string();
    assert!(e.contains("--tls") && e.contains("--plain-off-loopback"), "{e}");
    assert!(!dir.path().join("collector.token").exists(), "nothing made before the refusal");
    let told = Options { plain_off_loopback: true, ..o.clone() };
    assert!(rt.block_on(Collector::bind(told)).is_ok());
    let tls = Options { tls: Some(TlsFiles::default()), ..o };
    let c = rt.block_on(Collector::bind(tls)).unwrap();
    assert!(c.tls().is_some());
    // Loopback stays as it was: no TLS needed.
    let d2 = tempfile::tempdir().unwrap();
    assert!(rt.block_on(Collector::bind(opts(d2.path()))).is_ok());
}
