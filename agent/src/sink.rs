//! The log file (or the stream to a collector) behind a writer thread.
//!
//! Drains format and merge lines into a [`Sink`]'s buffer; a full buffer,
//! or a flush, hands it to the `clrprof-writer` thread, which writes it to
//! the file while the program runs on. Copying the log into the kernel's
//! page cache was the largest single cost of the agent on the program's
//! own threads (about a quarter of the time of an allocation-heavy run);
//! on a machine with a spare core it now overlaps with the program.
//!
//! ```text
//!  drain --lines--> Sink.buf --(full / flush)--> channel --> writer thread --> File
//!                      ^                                         |
//!                      +------------- emptied buffers -----------+
//! ```
//!
//! Buffers are written in the order they were handed over (one thread, one
//! FIFO channel), so the log keeps the order of the drains. A *synchronous*
//! flush waits until the writer has written everything handed over so far:
//! it is used where the process may end without warning (an exception is
//! thrown; shutdown). The channel is bounded: a writer that falls behind
//! makes the drain wait instead of growing memory.
//!
//! With `CLRPROF_TARGET` set the writer thread hands buffers to a
//! [`Streamer`] instead of a file: that never waits on the network (see
//! [`clrprof_stream::stream`]), so the drains never wait on it either. A
//! synchronous flush then waits until the buffers are written to the
//! socket, for at most [`SYNC_NET_WAIT`]; [`Sink::finish`] ends the log.

use clrprof_stream::Streamer;
use clrprof::format::{write_record, Record, Style};
use std::fs::File;
use std::io::Write;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How long a synchronous flush waits for the network (streaming only).
pub const SYNC_NET_WAIT: Duration = Duration::from_millis(100);
/// How often an idle writer thread looks at the stream's health.
const POLL: Duration = Duration::from_millis(250);

/// Where the writer thread puts the log.
pub enum Destination {
    /// A local file.
    File(File),
    /// A collector, with a spool file for when it is away.
    Stream(Box<Streamer>),
}

/// What the writer thread is handed.
enum Msg {
    /// Whole lines; `true` for a synchronous flush.
    Lines(Vec<u8>, bool),
    /// The end of the log.
    Finish,
}

/// Hand the buffer over once it holds this much.
const HAND_OVER_AT: usize = 1 << 20;
/// Buffers in flight before a drain waits for the writer.
const IN_FLIGHT: usize = 4;

/// What the writer thread has done, for synchronous flushes.
#[derive(Default)]
struct Progress {
    /// Buffers written (or failed) so far.
    written: u64,
    /// Emptied buffers for reuse.
    spare: Vec<Vec<u8>>,
}

/// The shared part: progress and a condition variable to wait on it.
type Shared = Arc<(Mutex<Progress>, Condvar)>;

/// A buffered log file written by a thread of its own.
pub struct Sink {
    buf: Vec<u8>,
    style: Style,
    /// `None` for a sink that discards what it is given.
    tx: Option<SyncSender<Msg>>,
    shared: Shared,
    sent: u64,
}

fn lock(m: &Mutex<Progress>) -> std::sync::MutexGuard<'_, Progress> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Sink {
    /// Starts the writer thread for `file`.
    pub fn new(file: File, style: Style) -> Result<Sink, String> {
        Sink::to(Destination::File(file), style)
    }

    /// Starts the writer thread for `dest`.
    pub fn to(dest: Destination, style: Style) -> Result<Sink, String> {
        let (tx, rx) = sync_channel::<Msg>(IN_FLIGHT);
        let shared: Shared = Arc::default();
        let theirs = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("clrprof-writer".into())
            .spawn(move || crate::guard((), || write_loop(dest, rx, theirs)))
            .map_err(|e| format!("cannot start the writer thread: {e}"))?;
        Ok(Sink { buf: Vec::with_capacity(HAND_OVER_AT + (64 << 10)), style, tx: Some(tx), shared, sent: 0 })
    }

    /// A sink with no file: what it is given is dropped at each flush (an
    /// agent attached only to take heap dumps into files of their own has
    /// no log).
    pub fn discard(style: Style) -> Sink {
        Sink { buf: Vec::new(), style, tx: None, shared: Arc::default(), sent: 0 }
    }

    /// True when this sink writes to a file.
    pub fn has_file(&self) -> bool {
        self.tx.is_some()
    }

    /// Appends formatted lines.
    #[inline]
    pub fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        self.maybe_hand_over();
    }

    /// Appends a record.
    #[inline]
    pub fn record(&mut self, r: &Record<'_>) {
        write_record(&mut self.buf, r, self.style);
        self.maybe_hand_over();
    }

    /// The buffer, for a caller formatting lines into it directly (then
    /// [`Sink::maybe_hand_over`]).
    #[inline]
    pub(crate) fn buffer(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// Hands the buffer over once it is full.
    #[inline]
    pub(crate) fn maybe_hand_over(&mut self) {
        if self.buf.len() >= HAND_OVER_AT {
            self.flush();
        }
    }

    /// Hands what is buffered to the writer thread.
    pub fn flush(&mut self) {
        self.hand_over(false);
    }

    fn hand_over(&mut self, sync: bool) {
        let Some(tx) = &self.tx else {
            self.buf.clear();
            return;
        };
        if self.buf.is_empty() {
            if sync && tx.send(Msg::Lines(Vec::new(), true)).is_ok() {
                self.sent += 1;
            }
            return;
        }
        let Some(tx) = &self.tx else {
            self.buf.clear();
            return;
        };
        let fresh = lock(&self.shared.0).spare.pop().unwrap_or_else(|| Vec::with_capacity(HAND_OVER_AT + (64 << 10)));
        let full = std::mem::replace(&mut self.buf, fresh);
        if tx.send(Msg::Lines(full, sync)).is_ok() {
            self.sent += 1;
        }
    }

    /// Hands over what is buffered and waits until the writer has written
    /// everything handed over so far.
    pub fn flush_sync(&mut self) {
        self.hand_over(true);
        self.wait();
    }

    /// Ends the log: hands over what is buffered, then (streaming) sends
    /// the end and waits for the collector to confirm it (bounded; the
    /// rest goes to the spool otherwise).
    pub fn finish(&mut self) {
        self.hand_over(false);
        if self.tx.as_ref().is_some_and(|tx| tx.send(Msg::Finish).is_ok()) {
            self.sent += 1;
        }
        self.wait();
    }

    fn wait(&mut self) {
        let (m, cv) = &*self.shared;
        let mut p = lock(m);
        while p.written < self.sent {
            p = match cv.wait(p) {
                Ok(p) => p,
                Err(e) => e.into_inner(),
            };
        }
    }
}

fn write_loop(mut dest: Destination, rx: Receiver<Msg>, shared: Shared) {
    let (m, cv) = &*shared;
    let mut failed = false;
    loop {
        let msg = match rx.recv_timeout(POLL) {
            Ok(msg) => msg,
            Err(RecvTimeoutError::Timeout) => {
                if let Destination::Stream(s) = &mut dest {
                    s.poll();
                }
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => break,
        };
        let spare = match (msg, &mut dest) {
            (Msg::Lines(mut buf, _), Destination::File(file)) => {
                // A failed write loses this buffer only; the log stays
                // whole lines because buffers hold whole lines. The first
                // failure is said on standard error and in the status.
                if let Err(e) = file.write_all(&buf) {
                    if !failed {
                        failed = true;
                        eprintln!("clrprof agent: writing the log failed: {e}; the log is incomplete");
                        crate::status::amend(&format!("write_error={}", e.to_string().replace(' ', "_")));
                    }
                }
                buf.clear();
                Some(buf)
            }
            (Msg::Lines(buf, sync), Destination::Stream(s)) => {
                if !buf.is_empty() {
                    s.write(buf);
                }
                if sync {
                    s.wait_sent(SYNC_NET_WAIT);
                }
                None
            }
            (Msg::Finish, Destination::File(_)) => None,
            (Msg::Finish, Destination::Stream(s)) => {
                s.finish();
                None
            }
        };
        let mut p = lock(m);
        p.written += 1;
        if let Some(buf) = spare {
            if p.spare.len() < 2 {
                p.spare.push(buf);
            }
        }
        cv.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clrprof::format::records::Tick;

    #[test]
    fn writes_in_order_and_waits_on_sync_flush() {
        let dir = std::env::temp_dir().join(format!("clrprof-sink-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.log");
        let mut sink = Sink::new(File::create(&path).unwrap(), Style::BITS64).unwrap();
        let mut want = Vec::new();
        for ms in 0..300_000u32 {
            sink.record(&Record::Tick(Tick { ms }));
            want.extend_from_slice(format!("i {ms}\n").as_bytes());
            if ms % 70_000 == 0 {
                sink.flush();
            }
        }
        sink.raw(b"z end\n");
        want.extend_from_slice(b"z end\n");
        sink.flush_sync();
        assert_eq!(std::fs::read(&path).unwrap(), want);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
