//! A fake agent (blocking sockets, the wire crate) and an in-process
//! collector, for the collector's tests.
#![allow(dead_code)]

use clrprof_collect::{Collector, Options};
use clrprof_wire::frame::{small_frame, HEADER};
use clrprof_wire::{handshake, FrameHeader, FrameKind, Hello, Nonce, Role, SessionKey, Token};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// A collector running on a thread of its own until dropped.
pub struct Running {
    pub target: String,
    pub token: Token,
    pub admin: PathBuf,
    pub dir: PathBuf,
    /// With TLS: the certificate's fingerprint.
    pub fingerprint: Option<clrprof_wire::tls::Fingerprint>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    pub fn start(opts: Options) -> Running {
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let dir = opts.dir.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            rt.block_on(async move {
                let c = Collector::bind(opts).await.unwrap();
                tx.send((c.target().to_string(), c.token_hex(), c.admin_path().to_path_buf(), c.tls().map(|t| t.0))).unwrap();
                c.serve(async move {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
            });
        });
        let (target, token, admin, fingerprint) = rx.recv().unwrap();
        Running { target, token: Token::from_hex(&token).unwrap(), admin, dir, fingerprint, stop: Some(stop), thread: Some(thread) }
    }

    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown();
    }
}

pub fn opts(dir: &Path) -> Options {
    Options { dir: dir.to_path_buf(), handshake_timeout: Duration::from_secs(2), ..Default::default() }
}

pub fn raw_connect(target: &str) -> Box<dyn Stream> {
    if let Some(p) = target.strip_prefix("unix:") {
        let s = std::os::unix::net::UnixStream::connect(p).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        Box::new(s)
    } else {
        let s = std::net::TcpStream::connect(target).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        Box::new(s)
    }
}

pub fn hello(role: Role, pid: u32, program: &str, nonce: &Nonce) -> Hello {
    Hello {
        role,
        nonce: clrprof_wire::token::to_hex(&nonce.0),
        pid,
        program: program.into(),
        runtime: "8.0.4".into(),
        session: None,
        spool: None,
        spool_from: None,
        catch_up: false,
        resume_mac: None,
        content: Default::default(),
    }
}

/// A connected fake agent.
pub struct Fake {
    pub r: BufReader<Box<dyn Stream>>,
    pub session: String,
    /// The session's key: derived from this handshake for a new session,
    /// the one given for a resume.
    pub key: SessionKey,
    pub acked: u64,
}

/// Reads the challenge; gives the reader and the server nonce.
pub fn challenge(target: &str) -> (BufReader<Box<dyn Stream>>, Nonce) {
    let mut r = BufReader::new(raw_connect(target));
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line).unwrap();
    let n = handshake::parse_challenge(&line).unwrap();
    (r, n)
}

/// After the handshake: the collector's answer line, or None when it
/// closed the connection.
pub fn answer(r: &mut BufReader<Box<dyn Stream>>) -> Option<Vec<u8>> {
    let mut line = Vec::new();
    match r.read_until(b'\n', &mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line),
    }
}

impl Fake {
    pub fn connect_as(target: &str, token: &Token, h: Hello) -> Result<Fake, String> {
        Fake::connect_with(target, token, h, None)
    }

    /// Connects with `h`; with `key`, the hello carries the resume proof
    /// made with it for this challenge.
    pub fn connect_with(target: &str, token: &Token, mut h: Hello, key: Option<&SessionKey>) -> Result<Fake, String> {
        let (mut r, server) = challenge(target);
        let client = Nonce([5; 32]);
        h.nonce = clrprof_wire::token::to_hex(&client.0);
        if let Some(k) = key {
            handshake::sign_resume(&mut h, k, &server).unwrap();
        }
        let line = handshake::hello_line(token, &server, &h).unwrap();
        r.get_mut().write_all(line.as_bytes()).unwrap();
        let ok = answer(&mut r).ok_or("closed")?;
        let session = handshake::parse_ok(&ok, token, &client, &server).map_err(|e| e.to_string())?;
        let key = key.cloned().unwrap_or_else(|| handshake::session_key(token, &client, &server, &session));
        Ok(Fake { r, session, key, acked: 0 })
    }

    /// Resumes `session` with its key (the genuine agent's resume).
    pub fn resume(target: &str, token: &Token, key: &SessionKey, h: Hello) -> Result<Fake, String> {
        Fake::connect_with(target, token, h, Some(key))
    }

    pub fn connect(target: &str, token: &Token, pid: u32, program: &str) -> Result<Fake, String> {
        Fake::connect_as(target, token, hello(Role::Stream, pid, program, &Nonce([0; 32])))
    }

    pub fn data(&mut self, bytes: &[u8]) {
        let w = self.r.get_mut();
        w.write_all(&FrameHeader::encode(FrameKind::Data, bytes.len() as u32)).unwrap();
        w.write_all(bytes).unwrap();
    }

    pub fn end(&mut self) {
        self.r.get_mut().write_all(&small_frame(FrameKind::End, b"")).unwrap();
    }

    pub fn reply(&mut self, text: &str) {
        self.r.get_mut().write_all(&small_frame(FrameKind::Reply, text.as_bytes())).unwrap();
    }

    /// The next frame from the collector (acks are also remembered).
    pub fn frame(&mut self) -> Option<(FrameKind, Vec<u8>)> {
        let mut h = [0u8; HEADER];
        self.r.read_exact(&mut h).ok()?;
        let h = FrameHeader::parse(h).unwrap();
        let mut p = vec![0u8; h.len as usize];
        self.r.read_exact(&mut p).ok()?;
        if h.kind == FrameKind::Ack {
            self.acked = u64::from_be_bytes(p[..8].try_into().unwrap());
        }
        Some((h.kind, p))
    }

    /// Reads frames until the collector has acknowledged `n` bytes.
    pub fn wait_acked(&mut self, n: u64) {
        while self.acked < n {
            self.frame().expect("the collector closed before acknowledging");
        }
    }

    /// Reads frames until a command comes; gives `(seq, text)`.
    pub fn next_command(&mut self) -> (u64, String) {
        loop {
            let (k, p) = self.frame().expect("closed while waiting for a command");
            if k == FrameKind::Command {
                let t = String::from_utf8(p).unwrap();
                let (seq, rest) = t.split_once(' ').unwrap();
                return (seq.parse().unwrap(), rest.to_string());
            }
        }
    }
}

/// Polls until `f` gives Some, for up to 30 s.
pub fn eventually<T>(mut f: impl FnMut() -> Option<T>) -> T {
    for _ in 0..3000 {
        if let Some(t) = f() {
            return t;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("timed out waiting");
}
