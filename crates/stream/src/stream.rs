//! Streaming the log to a collector (`CLRPROF_TARGET`), with a local spool
//! when the collector is away.
//!
//! ```text
//!  writer thread --buffers--> [retained: acked? | unacked | unsent]  (bounded)
//!        |                          |            ^
//!        |                    clrprof-net    clrprof-net-recv <-- A (stored), C (commands)
//!        |                     D frames -->  collector           R (replies) -->
//!        +--(collector away, or retained > CLRPROF_STREAM_BUFFER_MB)--> spool file
//! ```
//!
//! The writer thread never touches the network: it appends buffers to the
//! retained queue and returns. `clrprof-net` connects, does the handshake
//! and sends; `clrprof-net-recv` reads the collector's acknowledgements
//! (bytes stored) and commands. A buffer is dropped only once the
//! collector has said it is stored.
//!
//! When the connection fails (cannot connect, closed, a write error) or
//! the retained bytes would exceed the bound, the writer thread switches
//! to the spool for good: the spool starts with every byte the collector
//! has not acknowledged (from offset `acked`), then takes everything
//! after. A thread then tries to reach the collector again, tells it the
//! spool's path and start (the collector cuts its stored part back to
//! that offset, so the stored part followed by the spool is the log, byte
//! for byte) and sends it the spool, following it as it grows, until the
//! stored log is whole ([`crate::catch_up`]).
//!
//! Such a resume proves the session's own key ([`Session`]), which this
//! process derived at the session's first handshake and keeps in memory
//! with the stream's state: every profiled program holds the token, only
//! this one holds the key. The key lives as long as the process, and so
//! do the resumes (the catch-up thread, and the last word at the end of
//! the log); nothing resumes a session from another process.

use clrprof_wire::frame::{small_frame, HEADER, MAX_FRAME};
use clrprof_wire::{handshake, Command, FrameHeader, FrameKind, Hello, Nonce, Role, SessionKey, Token};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::catch_up::{CatchUp, Plan};
use crate::config::{Host, Spool, StreamConfig, Tls};
use crate::conn::{Conn, CONNECT_TIMEOUT};

/// How long the collector may take to answer the handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// Who this process is, for the handshake.
#[derive(Clone, Debug)]
pub struct Identity {
    /// The process id.
    pub pid: u32,
    /// The program's name.
    pub program: String,
    /// The runtime's version.
    pub runtime: String,
}

fn client_nonce() -> Nonce {
    // Fresh per handshake; uniqueness, not secrecy, is what the
    // collector's proof needs from it.
    let mut n = [0u8; 32];
    let mut f = File::open("/dev/urandom").ok();
    if f.as_mut().is_none_or(|f| f.read_exact(&mut n).is_err()) {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        n[..16].copy_from_slice(&t.to_le_bytes());
        n[16..20].copy_from_slice(&std::process::id().to_le_bytes());
    }
    Nonce(n)
}

/// The session the collector gave, and its key.
#[derive(Clone, Debug)]
pub struct Session {
    /// The session's name.
    pub name: String,
    /// The key derived at the session's first handshake (a `stream` or
    /// `spooled` hello), which a resume proves.
    pub key: SessionKey,
}

/// Connects and does the handshake; gives the session (for a resume,
/// `key`, which its hello proves) and the connection's reader (which may
/// hold bytes after the `OK` line).
fn open(
    target: &str,
    tls: &Tls,
    token: &Token,
    mut hello: Hello,
    key: Option<&SessionKey>,
) -> Result<(Session, Conn, BufReader<Conn>), String> {
    if hello.role == Role::Resume && key.is_none() {
        return Err("internal: a resume without the session's key".into());
    }
    let conn = Conn::connect(target, tls, CONNECT_TIMEOUT, HANDSHAKE_TIMEOUT)?;
    let mut reader = BufReader::new(conn.try_clone().map_err(|e| format!("socket: {e}"))?);
    let mut w = conn;
    let mut line = Vec::new();
    // A collector started with --tls says nothing until TLS is up.
    let hint = if *tls == Tls::Plain { "; one started with --tls needs CLRPROF_TLS_FINGERPRINT or CLRPROF_TLS_CA" } else { "" };
    let read_line = |r: &mut BufReader<Conn>, line: &mut Vec<u8>| {
        line.clear();
        match r.by_ref().take(handshake::MAX_LINE as u64).read_until(b'\n', line) {
            Ok(0) => Err(format!("the collector closed the connection (wrong token?{hint})")),
            Ok(_) => Ok(()),
            Err(e) => Err(format!("no answer from the collector: {e}{hint}")),
        }
    };
    read_line(&mut reader, &mut line)?;
    let server = handshake::parse_challenge(&line).map_err(|e| format!("{target} is not a clrprof collector: {e}"))?;
    let client = client_nonce();
    hello.nonce = clrprof_wire::token::to_hex(&client.0);
    if let (Role::Resume, Some(k)) = (hello.role, key) {
        handshake::sign_resume(&mut hello, k, &server).map_err(|e| e.to_string())?;
    }
    let h = handshake::hello_line(token, &server, &hello).map_err(|e| e.to_string())?;
    w.write_all(h.as_bytes()).map_err(|e| format!("cannot send the handshake: {e}"))?;
    read_line(&mut reader, &mut line)?;
    let name = handshake::parse_ok(&line, token, &client, &server)
        .map_err(|e| format!("the collector at {target} did not prove it knows the token: {e}"))?;
    let key = match (hello.role, key) {
        (Role::Resume, Some(k)) => k.clone(),
        _ => handshake::session_key(token, &client, &server, &name),
    };
    reader.get_ref().set_read_timeout(None);
    Ok((Session { name, key }, w, reader))
}

/// What the writer thread (or the catch-up thread) and the two network
/// threads share.
#[derive(Default)]
pub(crate) struct State {
    /// Log bytes not yet known to be stored, oldest first.
    queue: VecDeque<Arc<Vec<u8>>>,
    /// Log offset of the first byte of `queue[0]`.
    pub base: u64,
    /// Log offset after the last byte handed to the stream.
    pub end: u64,
    /// Log offset up to which bytes were written to the socket.
    sent: u64,
    /// Log offset up to which bytes are being written (the collector may
    /// acknowledge them before the write returns).
    sending: u64,
    /// Log offset up to which the collector has stored the log.
    pub acked: u64,
    /// Command replies to send.
    replies: VecDeque<Vec<u8>>,
    /// Why the stream cannot go on.
    pub failed: Option<String>,
    /// The writer thread gave up the stream (spool or done).
    stop: bool,
    /// Send an `E` frame once everything is sent.
    pub finishing: bool,
    /// The `E` frame is being sent or was sent.
    pub end_sent: bool,
    /// The session the collector gave, with its key.
    session: Option<Session>,
    /// A handle to shut the connection down.
    conn: Option<Conn>,
}

impl State {
    /// A stream whose first byte is at log offset `at` (a catch-up sends
    /// the spool, which starts there).
    pub(crate) fn at(at: u64) -> State {
        State { base: at, end: at, sent: at, sending: at, acked: at, ..State::default() }
    }
}

/// A stream's shared state and the condition variable its threads wait on.
pub(crate) struct Net {
    state: Mutex<State>,
    pub cv: Condvar,
    /// Runs the collector's commands.
    host: Host,
}

impl Net {
    pub(crate) fn new(state: State, host: Host) -> Arc<Net> {
        Arc::new(Net { state: Mutex::new(state), cv: Condvar::new(), host })
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until the handshake is done (the session) or failed.
    pub(crate) fn wait_session(&self) -> Option<Session> {
        let mut s = self.lock();
        loop {
            if let Some(n) = &s.session {
                return Some(n.clone());
            }
            if s.failed.is_some() || s.stop {
                return None;
            }
            s = match self.cv.wait(s) {
                Ok(g) => g,
                Err(e) => e.into_inner(),
            };
        }
    }

    /// Hands a buffer of log bytes to the stream (the caller keeps within
    /// the bound).
    pub(crate) fn push(&self, buf: Vec<u8>) {
        let mut s = self.lock();
        s.end += buf.len() as u64;
        s.queue.push_back(Arc::new(buf));
        self.cv.notify_all();
    }

    /// The end of the log: the `E` frame goes once everything is sent.
    pub(crate) fn finish(&self) {
        self.lock().finishing = true;
        self.cv.notify_all();
    }

    /// Stops the stream and shuts its connection down.
    pub(crate) fn close(&self) {
        let mut s = self.lock();
        s.stop = true;
        if let Some(c) = s.conn.take() {
            c.shutdown();
        }
        self.cv.notify_all();
    }

    fn fail(&self, why: String) {
        let mut s = self.lock();
        if s.failed.is_none() && !s.stop {
            s.failed = Some(why);
        }
        self.cv.notify_all();
    }
}

/// The streaming destination, owned by the writer thread.
pub struct Streamer {
    net: Arc<Net>,
    config: StreamConfig,
    identity: Identity,
    spool: Option<(File, PathBuf)>,
    /// The stream was given up (for the spool, or for nothing when the
    /// spool could not be created).
    switched: bool,
    /// Bytes lost because the spool could not be created or written
    /// (reported on standard error and in the status).
    lost: u64,
    /// The thread that sends the spool once the collector answers again.
    catch: Option<Arc<CatchUp>>,
    /// The log offset the spool starts at, once switched.
    spooled_from: Option<u64>,
    /// At the end, whether a catch-up stored the whole log.
    caught_up: bool,
    /// Why the spool could not be made.
    spool_error: Option<String>,
}

/// How a stream ended, for a client to report ([`Streamer::outcome`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The collector's name for the session, if it accepted one.
    pub session: Option<String>,
    /// The spool file the stream went on in, and the log offset it starts
    /// at; `None` when the collector took everything directly.
    pub spool: Option<(PathBuf, u64)>,
    /// With a spool: whether the collector was caught up from it before
    /// the end (its stored log is whole).
    pub caught_up: bool,
    /// Bytes neither stored nor spooled (the spool could not be written).
    pub lost: u64,
    /// Bytes the collector confirmed it stored from this connection:
    /// everything when the stream never switched to the spool, else the
    /// offset at which it switched (a catch-up's bytes are not counted).
    pub streamed: u64,
    /// Why the spool could not be made, when it could not.
    pub spool_error: Option<String>,
}

impl Streamer {
    /// Starts connecting (on the `clrprof-net` thread; this returns at
    /// once). Buffers handed over meanwhile are kept, within the bound.
    pub fn start(config: StreamConfig, identity: Identity) -> Streamer {
        let net = Net::new(State::default(), config.host);
        let theirs = Arc::clone(&net);
        let hello = Hello {
            role: Role::Stream,
            nonce: String::new(),
            pid: identity.pid,
            program: identity.program.clone(),
            runtime: identity.runtime.clone(),
            session: None,
            spool: None,
            spool_from: None,
            catch_up: false,
            resume_mac: None,
            content: config.content,
        };
        let target = config.target.clone();
        let tls = config.tls.clone();
        let token = config.token.clone();
        let spawned = std::thread::Builder::new()
            .name("clrprof-net".into())
            .spawn(move || crate::guard((), || send_main(&theirs, &target, &tls, token.as_ref(), hello, None)));
        if let Err(e) = spawned {
            net.fail(format!("cannot start the network thread: {e}"));
        }
        Streamer {
            net,
            config,
            identity,
            spool: None,
            switched: false,
            lost: 0,
            catch: None,
            spooled_from: None,
            caught_up: false,
            spool_error: None,
        }
    }

    /// Takes a buffer of whole lines.
    pub fn write(&mut self, buf: Vec<u8>) {
        if !self.switched {
            let mut s = self.net.lock();
            let over = (s.end - s.base) as usize + buf.len() > self.config.buffer_bytes;
            if s.failed.is_none() && !s.stop && !over {
                s.end += buf.len() as u64;
                s.queue.push_back(Arc::new(buf));
                self.net.cv.notify_all();
                return;
            }
            let why = s.failed.clone().or_else(|| s.stop.then(|| "log lines after the end of the log".to_string())).unwrap_or_else(|| {
                format!("the collector is behind by more than {} MB (CLRPROF_STREAM_BUFFER_MB)", self.config.buffer_bytes >> 20)
            });
            drop(s);
            self.switch_to_spool(&why, true);
        }
        self.spool_write(&buf);
        if let Some(c) = &self.catch {
            c.wrote();
        }
    }

    /// Called when the writer thread is idle: notices a broken stream.
    pub fn poll(&mut self) {
        if !self.switched {
            let failed = self.net.lock().failed.clone();
            if let Some(why) = failed {
                self.switch_to_spool(&why, true);
            }
        }
    }

    /// Waits (at most `limit`) until what was handed over is written to the
    /// socket: the process may end right after (an exception is thrown).
    pub fn wait_sent(&mut self, limit: Duration) {
        let deadline = Instant::now() + limit;
        let mut s = self.net.lock();
        while !self.switched && s.sent < s.end && s.failed.is_none() && !s.stop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            s = match self.net.cv.wait_timeout(s, left) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        }
    }

    /// The end of the log (shutdown): sends the end and waits up to
    /// `CLRPROF_STREAM_LINGER_MS` for the collector to confirm it has
    /// stored everything; otherwise the unconfirmed rest goes to the spool
    /// and the collector is told (one attempt). When spooling, a catch-up
    /// under way gets as long to be stored whole.
    pub fn finish(&mut self) {
        if self.switched {
            if let Some((f, _)) = &mut self.spool {
                let _ = f.flush();
            }
            if let Some(c) = &self.catch {
                self.caught_up = c.finish(Duration::from_millis(self.config.linger_ms));
            }
            return;
        }
        let deadline = Instant::now() + Duration::from_millis(self.config.linger_ms);
        let mut s = self.net.lock();
        s.finishing = true;
        self.net.cv.notify_all();
        while !(s.end_sent && s.acked >= s.end) && s.failed.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            s = match self.net.cv.wait_timeout(s, left) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        }
        if s.end_sent && s.acked >= s.end {
            s.stop = true;
            if let Some(c) = s.conn.take() {
                c.shutdown();
            }
            return;
        }
        let why = s.failed.clone().unwrap_or_else(|| format!("the collector did not confirm the end within {} ms", self.config.linger_ms));
        drop(s);
        // The program ends: no time to catch up.
        self.switch_to_spool(&why, false);
        if let Some((f, _)) = &mut self.spool {
            let _ = f.flush();
        }
        if let (Some((hello, key)), Some(token)) = (self.resume_hello(), &self.config.token) {
            if open(&self.config.target, &self.config.tls, token, hello, key.as_ref()).is_ok() {
                (self.config.host.status)(&self.spool_note("told_collector=yes"));
            }
        }
    }

    /// How the stream went (after [`Streamer::finish`]: how it ended).
    pub fn outcome(&self) -> Outcome {
        let (session, acked) = {
            let s = self.net.lock();
            (s.session.as_ref().map(|x| x.name.clone()), s.acked)
        };
        let spool = match (&self.spool, self.spooled_from) {
            (Some((_, p)), Some(from)) => Some((p.clone(), from)),
            _ => None,
        };
        Outcome {
            session,
            spool,
            caught_up: self.caught_up,
            lost: self.lost,
            streamed: self.spooled_from.unwrap_or(acked),
            spool_error: self.spool_error.clone(),
        }
    }

    fn spool_write(&mut self, bytes: &[u8]) {
        match &mut self.spool {
            Some((f, p)) if self.lost == 0 => {
                if let Err(e) = f.write_all(bytes) {
                    eprintln!("{}: cannot write the spool {}: {e}; the rest of the log is lost", self.config.speaker, p.display());
                    self.lost += bytes.len() as u64;
                    if let Some(c) = &self.catch {
                        c.broken();
                    }
                }
            }
            _ => self.lost += bytes.len() as u64,
        }
    }

    fn spool_note(&self, extra: &str) -> String {
        let s = self.net.lock();
        let path = self.spool.as_ref().map(|(_, p)| p.display().to_string()).unwrap_or_default();
        let mut note = format!("spooling_to={path} spooling_from={}", s.acked);
        if let Some(n) = &s.session {
            note.push_str(&format!(" session={}", n.name));
        }
        if !extra.is_empty() {
            note.push(' ');
            note.push_str(extra);
        }
        note
    }

    /// Switches to the spool for good; with `catch_up`, a thread then
    /// tries the collector and sends it the spool (see [`crate::catch_up`]).
    fn switch_to_spool(&mut self, why: &str, catch_up: bool) {
        self.switched = true;
        let (tail, from, conn) = {
            let mut s = self.net.lock();
            s.stop = true;
            self.net.cv.notify_all();
            let skip = (s.acked - s.base) as usize;
            let queue = std::mem::take(&mut s.queue);
            (queue, (s.acked, skip), s.conn.take())
        };
        if let Some(c) = conn {
            c.shutdown();
        }
        let (acked, mut skip) = from;
        self.spooled_from = Some(acked);
        match create_spool(&self.config.spool) {
            Ok((f, p, note)) => {
                if let Some(n) = note {
                    eprintln!("{}: {n}", self.config.speaker);
                }
                self.spool = Some((f, p));
            }
            Err(e) => {
                let shown = self.config.spool.shown();
                eprintln!("{}: cannot create the spool {}: {e}; the rest of the log is lost", self.config.speaker, shown.display());
                (self.config.host.status)(&format!("spool_failed={e}"));
                self.spool_error = Some(format!("cannot create the spool {}: {e}", shown.display()));
            }
        }
        for b in tail {
            let part = &b[skip.min(b.len())..];
            skip = skip.saturating_sub(b.len());
            self.spool_write(part);
        }
        match &self.spool {
            Some((_, p)) => eprintln!(
                "{}: streaming to {} stopped ({why}); the log goes on in {} from byte {acked}",
                self.config.speaker,
                self.config.target,
                p.display()
            ),
            None => eprintln!(
                "{}: streaming to {} stopped ({why}) at byte {acked}, and there is no spool: everything from byte {acked} on is lost",
                self.config.speaker, self.config.target
            ),
        }
        (self.config.host.status)(&format!("{} because={why}", self.spool_note("")));
        if !catch_up || self.lost > 0 {
            return;
        }
        if let (Some((mut hello, key)), Some(token), Some((_, spool))) = (self.resume_hello(), self.config.token.clone(), &self.spool) {
            hello.catch_up = true;
            self.catch = Some(CatchUp::start(Plan {
                spool: spool.clone(),
                from: acked,
                hello,
                key,
                target: self.config.target.clone(),
                tls: self.config.tls.clone(),
                token,
                period: Duration::from_millis(self.config.reconnect_ms),
                bound: self.config.buffer_bytes,
                note: self.spool_note(""),
                because: why.to_string(),
                host: self.config.host,
            }));
        }
    }

    /// The hello that tells the collector about the spool, and the key its
    /// resume proves (none for `spooled`: a new session).
    fn resume_hello(&self) -> Option<(Hello, Option<SessionKey>)> {
        let s = self.net.lock();
        let (_, path) = self.spool.as_ref()?;
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        let hello = Hello {
            role: if s.session.is_some() { Role::Resume } else { Role::Spooled },
            nonce: String::new(),
            pid: self.identity.pid,
            program: self.identity.program.clone(),
            runtime: self.identity.runtime.clone(),
            session: s.session.as_ref().map(|x| x.name.clone()),
            spool: Some(path.display().to_string()),
            spool_from: Some(s.acked),
            catch_up: false,
            resume_mac: None,
            content: self.config.content,
        };
        let key = s.session.as_ref().map(|x| x.key.clone());
        Some((hello, key))
    }
}

/// Creates the spool file, never over an existing file or through a link
/// (`.1`, `.2`, ... are tried after the name itself), mode 0600 less the
/// umask (`clrprof_files`). A [`Spool::Private`] spool goes into the
/// user's private temporary folder, made or checked and held open
/// ([`clrprof_files::user_temp_dir`]); the third value says why another
/// private folder was used when that one was refused. Returns the path
/// used.
fn create_spool(spool: &Spool) -> std::io::Result<(File, PathBuf, Option<String>)> {
    let numbered = |name: &str, n: u32| if n == 0 { name.to_string() } else { format!("{name}.{n}") };
    let taken = || std::io::Error::new(std::io::ErrorKind::AlreadyExists, "1000 spool files of that name exist");
    match spool {
        Spool::At(path) => {
            for n in 0..1000 {
                let mut candidate = path.clone().into_os_string();
                if n > 0 {
                    candidate.push(format!(".{n}"));
                }
                let candidate = PathBuf::from(candidate);
                match clrprof_files::create_new(&candidate) {
                    Ok(f) => return Ok((f, candidate, None)),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e),
                }
            }
            Err(taken())
        }
        Spool::Private(name) => {
            let (dir, note) = clrprof_files::user_temp_dir()?;
            for n in 0..1000 {
                let candidate = numbered(name, n);
                match dir.create_file(&candidate) {
                    Ok(f) => return Ok((f, dir.shown(&candidate), note)),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e),
                }
            }
            Err(taken())
        }
    }
}

/// `clrprof-net`: connect (a resume proving `key`), then send what the
/// writer hands over.
pub(crate) fn send_main(net: &Arc<Net>, target: &str, tls: &Tls, token: Option<&Token>, hello: Hello, key: Option<SessionKey>) {
    let Some(token) = token else {
        net.fail("CLRPROF_TOKEN is missing or is not 64 hex digits".into());
        return;
    };
    let (session, mut w, reader) = match open(target, tls, token, hello, key.as_ref()) {
        Ok(x) => x,
        Err(e) => {
            net.fail(e);
            return;
        }
    };
    {
        let mut s = net.lock();
        if s.stop {
            w.shutdown();
            return;
        }
        s.session = Some(session);
        s.conn = w.try_clone().ok();
        net.cv.notify_all();
    }
    let theirs = Arc::clone(net);
    if let Err(e) =
        std::thread::Builder::new().name("clrprof-net-recv".into()).spawn(move || crate::guard((), || recv_main(&theirs, reader)))
    {
        net.fail(format!("cannot start the network thread: {e}"));
        return;
    }
    loop {
        enum Job {
            Reply(Vec<u8>),
            Data(Arc<Vec<u8>>),
            End,
        }
        let job = {
            let mut s = net.lock();
            loop {
                if s.stop || s.failed.is_some() {
                    return;
                }
                if let Some(r) = s.replies.pop_front() {
                    break Job::Reply(r);
                }
                if s.sent < s.end {
                    // `sent` is always at a buffer's start.
                    let mut at = s.base;
                    let mut found = None;
                    for b in &s.queue {
                        if at == s.sent {
                            found = Some(Arc::clone(b));
                            break;
                        }
                        at += b.len() as u64;
                    }
                    match found {
                        Some(b) => {
                            s.sending = s.sent + b.len() as u64;
                            break Job::Data(b);
                        }
                        None => {
                            s.failed = Some("internal: the send position is not at a buffer".into());
                            return;
                        }
                    }
                }
                if s.finishing && !s.end_sent {
                    // Marked before the write: the collector may answer
                    // (last acknowledgement, close) before it returns.
                    s.end_sent = true;
                    break Job::End;
                }
                s = match net.cv.wait(s) {
                    Ok(g) => g,
                    Err(e) => e.into_inner(),
                };
            }
        };
        let result = match &job {
            Job::Reply(r) => w.write_all(r),
            Job::End => w.write_all(&small_frame(FrameKind::End, b"")),
            Job::Data(b) => b.chunks(MAX_FRAME as usize).try_for_each(|part| {
                w.write_all(&FrameHeader::encode(FrameKind::Data, part.len() as u32))?;
                w.write_all(part)
            }),
        };
        if let Err(e) = result {
            net.fail(format!("the connection broke: {e}"));
            return;
        }
        let mut s = net.lock();
        match job {
            Job::Data(b) => s.sent += b.len() as u64,
            Job::End | Job::Reply(_) => {}
        }
        net.cv.notify_all();
    }
}

/// `clrprof-net-recv`: acknowledgements and commands from the collector.
fn recv_main(net: &Arc<Net>, mut r: BufReader<Conn>) {
    loop {
        let mut h = [0u8; HEADER];
        let header = r.read_exact(&mut h).map_err(|e| e.to_string()).and_then(|_| FrameHeader::parse(h).map_err(|e| e.to_string()));
        let header = match header {
            Ok(h) => h,
            Err(e) => {
                let s = net.lock();
                let clean = s.end_sent && s.acked >= s.end;
                drop(s);
                if !clean {
                    net.fail(format!("the collector closed the connection ({e})"));
                }
                return;
            }
        };
        let mut payload = vec![0u8; header.len as usize];
        if let Err(e) = r.read_exact(&mut payload) {
            net.fail(format!("the collector closed the connection ({e})"));
            return;
        }
        match header.kind {
            FrameKind::Ack if payload.len() == 8 => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&payload);
                let stored = u64::from_be_bytes(b);
                let mut s = net.lock();
                if stored > s.sent.max(s.sending) {
                    drop(s);
                    net.fail("the collector acknowledged bytes never sent".into());
                    return;
                }
                s.acked = s.acked.max(stored);
                while let Some(front) = s.queue.front() {
                    let len = front.len() as u64;
                    if s.base + len > s.acked {
                        break;
                    }
                    s.base += len;
                    s.queue.pop_front();
                }
                net.cv.notify_all();
            }
            FrameKind::Command => {
                let text = String::from_utf8_lossy(&payload).into_owned();
                let (seq, cmd) = text.split_once(' ').unwrap_or((&text, ""));
                let answer = match Command::parse(cmd) {
                    Ok(c) => (net.host.command)(&c),
                    Err(e) => Err(e.to_string()),
                };
                let reply = match answer {
                    Ok(t) => format!("{seq} {t}"),
                    Err(e) => format!("{seq} error {e}"),
                };
                let mut s = net.lock();
                s.replies.push_back(small_frame(FrameKind::Reply, reply.as_bytes()));
                net.cv.notify_all();
            }
            _ => {
                net.fail(format!("protocol error: the collector sent a {:?} frame", header.kind));
                return;
            }
        }
    }
}
