//! A session with a process: started, its trace written to a file as it
//! arrives, stopped (with the rundown) when asked, when the process ends,
//! or when the heap walk it asked for is over.

use crate::port::Held;
use crate::protocol::{self, Collect, Provider};
use crate::watch::Watch;
use crate::Error;
use clrprof_control::{paths, process, trust};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// When to stop a session, and when to stop waiting for it to end.
///
/// Once a stop is due the runtime is asked to end the stream (it writes
/// its rundown first); a target that goes on sending past `grace` is cut
/// off, and so is one that sends more than `max_bytes`. What arrived is
/// kept; a cut trace has no end mark, so the readers report it as
/// truncated.
#[derive(Clone, Debug)]
pub struct Stop {
    /// Set (by a signal handler) to stop.
    pub flag: Arc<AtomicBool>,
    /// Stop after this long.
    pub after: Option<Duration>,
    /// Stop once the heap walk the session asked for is over.
    pub after_heap_walk: bool,
    /// Stop once a heap walk has begun and the stream has then been
    /// silent this long without its end: a runtime whose session buffer
    /// filled drops the events that do not fit, the walk's end among
    /// them, and sends nothing more (the trace is kept; its reader counts
    /// what was lost).
    pub walk_silence: Option<Duration>,
    /// How long the target has to end its stream once a stop is due.
    pub grace: Duration,
    /// The most bytes of trace written; the stream is cut there.
    pub max_bytes: Option<u64>,
}

/// How long a target has to end its stream once asked to stop.
pub const GRACE: Duration = Duration::from_secs(10);

/// The default cap on what one capture writes: 4 GiB.
pub const MAX_BYTES: u64 = 4 << 30;

impl Default for Stop {
    fn default() -> Stop {
        Stop { flag: Arc::default(), after: None, after_heap_walk: false, walk_silence: None, grace: GRACE, max_bytes: Some(MAX_BYTES) }
    }
}

/// Why a trace was cut short by clrprof (what arrived before is kept).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// The target went on sending for the grace time after it was asked
    /// to stop.
    Grace(Duration),
    /// The trace reached the cap on bytes.
    MaxBytes(u64),
}

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cut::Grace(d) => {
                write!(f, "the process did not end its trace within {} s of being asked to stop, so clrprof cut it off", d.as_secs_f64())
            }
            Cut::MaxBytes(n) => write!(f, "the trace reached the cap of {n} bytes (--max-bytes), so clrprof cut it off"),
        }
    }
}

/// What a session wrote.
#[derive(Clone, Debug, Default)]
pub struct Written {
    /// Bytes of trace.
    pub bytes: u64,
    /// Whether the session was stopped by us (with a rundown), rather
    /// than ended by the process.
    pub stopped: bool,
    /// GCs the trace holds (its `GC/Start` events, as it arrived; a GC
    /// already running when the session began is not one of them).
    pub gcs: u64,
    /// Whether a heap walk was read to its end.
    pub heap_walk_done: bool,
    /// A heap walk began and the stream then went silent without its end
    /// ([`Stop::walk_silence`]): its end was among the events lost.
    pub walk_went_silent: bool,
    /// Seconds from the session's start to its end.
    pub seconds: f64,
    /// Set when clrprof cut the trace short: it is incomplete.
    pub cut: Option<Cut>,
}

/// A running session: the stream the runtime writes the trace into.
pub struct Session {
    pid: u32,
    id: u64,
    stream: UnixStream,
    /// Where `StopTracing` goes.
    /// over a connection the runtime made to us.
    stopper: Stopper,
    started: Instant,
}

/// Buffers the runtime is asked for, MB: large, so that a heap walk or a
/// burst of allocations is not dropped while the file catches up.
pub const BUFFER_MB: u32 = 1024;

impl Session {
    /// Starts a session with process `pid`: its diagnostics socket is
    /// checked (owned by the process's user, answered by the process
    /// itself) before anything is sent.
    pub fn start(pid: u32, providers: &[Provider]) -> Result<Session, Error> {
        Session::start_with(pid, providers, true)
    }

    /// [`Session::start`], with or without the rundown at the session's
    /// end (every method's name: what a trace of stacks needs, and what a
    /// session of counters does not).
    pub fn start_with(pid: u32, providers: &[Provider], rundown: bool) -> Result<Session, Error> {
        Session::start_buffered(pid, providers, rundown, BUFFER_MB)
    }

    /// [`Session::start_with`], with the runtime's buffers for the session
    /// capped at `buffer_mb` MB: what the session may add to the process's
    /// memory while clrprof reads. Events that find them full are dropped
    /// by the runtime (the trace's sequence numbers say how many).
    pub fn start_buffered(pid: u32, providers: &[Provider], rundown: bool, buffer_mb: u32) -> Result<Session, Error> {
        let (p, rt) = process::attachable(pid)?;
        let collect = match rt.major() {
            Some(m) if m >= 5 => Collect::V2 { rundown },
            _ => Collect::V1,
        };
        let mut providers = providers.to_vec();
        if rundown && collect == Collect::V1 && !providers.iter().any(|p| p.name == crate::presets::RUNDOWN) {
            providers.extend(crate::presets::sampled_allocations(true).into_iter().filter(|p| p.name == crate::presets::RUNDOWN));
        }
        let socket = paths::diagnostics_socket_for(pid, p.uid)?;
        let stream = connect(&socket, pid, p.uid)?;
        let request = protocol::collect_request(collect, buffer_mb.max(1), &providers).map_err(|what| Error::BadReply {
            pid,
            command: "CollectTracing",
            what,
        })?;
        let mut s = Session { pid, id: 0, stream, stopper: Stopper::Socket(socket, p.uid), started: Instant::now() };
        s.id = s.send_collect(&request)?;
        Ok(s)
    }

    /// A session over a connection a runtime made to us (a program started
    /// with `DOTNET_DiagnosticPorts`): `request` is sent on it.
    /// `StopTracing` goes on the runtime's next connection, which the
    /// launch port holds.
    pub(crate) fn over(pid: u32, stream: UnixStream, request: &[u8], held: Arc<Held>) -> Result<Session, Error> {
        let mut s = Session { pid, id: 0, stream, stopper: Stopper::Held(held), started: Instant::now() };
        s.id = s.send_collect(request)?;
        Ok(s)
    }

    fn send_collect(&mut self, request: &[u8]) -> Result<u64, Error> {
        let pid = self.pid;
        let reply = exchange(&mut self.stream, request, pid, "CollectTracing")?;
        match reply {
            Ok(payload) if payload.len() >= 8 => {
                let mut id = [0u8; 8];
                id.copy_from_slice(&payload[..8]);
                Ok(u64::from_le_bytes(id))
            }
            Ok(payload) => Err(Error::BadReply {
                pid,
                command: "CollectTracing",
                what: format!("an OK of {} bytes, expected a session id", payload.len()),
            }),
            Err(hr) => Err(Error::Refused { pid, command: "CollectTracing", hresult: hr, message: protocol::describe(hr).into() }),
        }
    }

    /// The process.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Writes the trace to `out` as it arrives, until the process ends the
    /// stream; when `stop` says so, asks the runtime to stop (it then
    /// writes its rundown and ends the stream). A stream that goes on past
    /// `stop.grace` after that, or past `stop.max_bytes`, is cut
    /// ([`Written::cut`]). `progress` sees every chunk written.
    pub fn write_to(mut self, out: &mut impl Write, stop: &Stop, mut progress: impl FnMut(&Watch)) -> Result<Written, Error> {
        let pid = self.pid;
        let _ = self.stream.set_read_timeout(Some(Duration::from_millis(200)));
        let mut watch = Watch::new();
        let mut written = Written::default();
        let mut buf = vec![0u8; 1 << 20];
        // StopTracing is sent from a thread of its own: the runtime answers
        // it only after writing the rundown into the stream, which this
        // loop must keep reading meanwhile.
        let mut stopping: Option<std::thread::JoinHandle<Result<bool, Error>>> = None;
        let mut due_at: Option<Instant> = None;
        let mut last_data = Instant::now();
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    last_data = Instant::now();
                    let room = stop.max_bytes.map_or(n as u64, |m| m.saturating_sub(written.bytes));
                    let take = n.min(usize::try_from(room).unwrap_or(usize::MAX));
                    out.write_all(&buf[..take]).map_err(|e| Error::io("cannot write the trace of process", format!("{pid}"), e))?;
                    written.bytes += take as u64;
                    watch.feed(&buf[..take]);
                    progress(&watch);
                    if take < n {
                        written.cut = stop.max_bytes.map(Cut::MaxBytes);
                        if stopping.is_none() {
                            // Asked to stop all the same, so that a
                            // runtime ends its session.
                            stopping = Some(self.send_stop_later());
                        }
                        break;
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted
                    ) => {}
                // The process died: what arrived is written.
                Err(e) if matches!(e.kind(), std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe) => break,
                Err(e) => return Err(Error::io("cannot read the trace of process", format!("{pid}"), e)),
            }
            let silent = stop.walk_silence.is_some_and(|d| watch.node_batches > 0 && !watch.heap_walk_done() && last_data.elapsed() >= d);
            if silent && due_at.is_none() {
                written.walk_went_silent = true;
            }
            let due = stop.flag.load(Ordering::SeqCst)
                || stop.after.is_some_and(|d| self.started.elapsed() >= d)
                || (stop.after_heap_walk && watch.heap_walk_done())
                || silent;
            if due && due_at.is_none() {
                due_at = Some(Instant::now());
                stopping = Some(self.send_stop_later());
            }
            if due_at.is_some_and(|at| at.elapsed() >= stop.grace) {
                written.cut = Some(Cut::Grace(stop.grace));
                break;
            }
        }
        if written.cut.is_some() {
            let _ = self.stream.shutdown(std::net::Shutdown::Both);
        }
        if let Some(t) = stopping {
            // The answer to StopTracing is waited for within the grace
            // time only: a target that never answers holds up nothing.
            let until = due_at.unwrap_or_else(Instant::now) + stop.grace;
            while !t.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            if t.is_finished() {
                written.stopped = match t.join() {
                    Ok(Ok(stopped)) => stopped,
                    Ok(Err(e)) if written.cut.is_none() => return Err(e),
                    _ => false,
                };
            }
        }
        out.flush().map_err(|e| Error::io("cannot write the trace of process", format!("{pid}"), e))?;
        // The trace's GCs are its `GC/Start`s, as every reader counts
        // them: a GC in progress when the session began sends its
        // `GC/Stop` only, and is not one of the trace's.
        written.gcs = watch.gc_starts;
        written.heap_walk_done = watch.heap_walk_done();
        written.seconds = self.started.elapsed().as_secs_f64();
        Ok(written)
    }

    /// Sends `StopTracing` from a thread of its own.
    fn send_stop_later(&self) -> std::thread::JoinHandle<Result<bool, Error>> {
        let (pid, id, stopper) = (self.pid, self.id, self.stopper.clone());
        let stream = self.stream.try_clone().ok();
        std::thread::spawn(move || send_stop(pid, id, stopper, stream))
    }
}

/// Where `StopTracing` for a session goes.
#[derive(Clone)]
enum Stopper {
    /// A new connection to the process's diagnostics socket (checked).
    Socket(PathBuf, u32),
    /// The connection the runtime made to the launch port again, held
    /// there.
    Held(Arc<Held>),
}

/// How long a launched runtime has to connect to the port again.
const RECONNECT_WAIT: Duration = Duration::from_secs(5);

/// Sends `StopTracing` for session `id` on a connection of its own; false
/// when the process is gone already (its stream ends by itself). A
/// launched runtime that has not connected again gets its session's
/// stream closed on our side instead (`session`).
fn send_stop(pid: u32, id: u64, stopper: Stopper, session: Option<UnixStream>) -> Result<bool, Error> {
    let mut s = match stopper {
        Stopper::Socket(socket, owner) => match connect(&socket, pid, owner) {
            Ok(s) => s,
            Err(_) => return Ok(false),
        },
        Stopper::Held(held) => match held.take(pid, RECONNECT_WAIT) {
            Some(s) => s,
            None => {
                if let Some(s) = session {
                    let _ = s.shutdown(std::net::Shutdown::Write);
                }
                return Ok(false);
            }
        },
    };
    match exchange(&mut s, &protocol::stop_request(id), pid, "StopTracing")? {
        Ok(_) => Ok(true),
        Err(hr) => Err(Error::Refused { pid, command: "StopTracing", hresult: hr, message: protocol::describe(hr).into() }),
    }
}

/// Connects to a process's diagnostics socket after the trust checks.
fn connect(socket: &std::path::Path, pid: u32, owner: u32) -> Result<UnixStream, Error> {
    match trust::connect(socket, pid, owner) {
        Ok(s) => Ok(s),
        Err(trust::ConnectError::Refused(e)) => Err(e.into()),
        Err(trust::ConnectError::Absent(e)) => Err(Error::io("cannot connect to the diagnostics socket", socket, e)),
    }
}

/// How long a process has to answer a command, whole.
const ANSWER_WAIT: Duration = Duration::from_secs(30);

/// Sends a request and reads one reply, within [`ANSWER_WAIT`] in all
/// (a reply sent a byte at a time does not stretch it).
pub(crate) fn exchange(s: &mut UnixStream, request: &[u8], pid: u32, command: &'static str) -> Result<Result<Vec<u8>, u32>, Error> {
    let io = |what: &str, e| Error::io(format!("{command}: cannot {what} the diagnostics connection of process"), format!("{pid}"), e);
    let until = Instant::now() + ANSWER_WAIT;
    s.set_read_timeout(Some(ANSWER_WAIT)).map_err(|e| io("use", e))?;
    s.set_write_timeout(Some(ANSWER_WAIT)).map_err(|e| io("use", e))?;
    s.write_all(request).map_err(|e| io("write to", e))?;
    let mut reply = Vec::new();
    let mut byte = [0u8; 256];
    loop {
        if let Some(size) = protocol::reply_size(&reply) {
            if reply.len() >= size.max(protocol::HEADER) {
                break;
            }
        }
        // One byte at a time past the header: the trace follows the reply
        // on the same connection and must not be read here.
        let want = match protocol::reply_size(&reply) {
            Some(size) => size.max(protocol::HEADER) - reply.len(),
            None => 16 - reply.len(),
        };
        let take = want.min(byte.len());
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Error::BadReply { pid, command, what: format!("no whole answer within {} seconds", ANSWER_WAIT.as_secs()) });
        }
        s.set_read_timeout(Some(left)).map_err(|e| io("use", e))?;
        match s.read(&mut byte[..take]) {
            Ok(0) => {
                return Err(Error::BadReply { pid, command, what: format!("the connection closed after {} bytes of reply", reply.len()) })
            }
            Ok(n) => reply.extend_from_slice(&byte[..n]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return Err(Error::BadReply { pid, command, what: format!("no answer within {} seconds", ANSWER_WAIT.as_secs()) })
            }
            Err(e) => return Err(io("read from", e)),
        }
    }
    protocol::parse_reply(&reply).map_err(|what| Error::BadReply { pid, command, what })
}
