//! The log file behind a writer thread.
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

use clrprof::format::{write_record, Record, Style};
use std::fs::File;
use std::io::Write;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex};

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
    tx: Option<SyncSender<Vec<u8>>>,
    shared: Shared,
    sent: u64,
}

fn lock(m: &Mutex<Progress>) -> std::sync::MutexGuard<'_, Progress> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Sink {
    /// Starts the writer thread for `file`.
    pub fn new(file: File, style: Style) -> Result<Sink, String> {
        let (tx, rx) = sync_channel::<Vec<u8>>(IN_FLIGHT);
        let shared: Shared = Arc::default();
        let theirs = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("clrprof-writer".into())
            .spawn(move || crate::guard((), || write_loop(file, rx, theirs)))
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

    #[inline]
    fn maybe_hand_over(&mut self) {
        if self.buf.len() >= HAND_OVER_AT {
            self.flush();
        }
    }

    /// Hands what is buffered to the writer thread.
    pub fn flush(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let Some(tx) = &self.tx else {
            self.buf.clear();
            return;
        };
        let fresh = lock(&self.shared.0).spare.pop().unwrap_or_else(|| Vec::with_capacity(HAND_OVER_AT + (64 << 10)));
        let full = std::mem::replace(&mut self.buf, fresh);
        if tx.send(full).is_ok() {
            self.sent += 1;
        }
    }

    /// Hands over what is buffered and waits until the writer has written
    /// everything handed over so far.
    pub fn flush_sync(&mut self) {
        self.flush();
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

fn write_loop(mut file: File, rx: Receiver<Vec<u8>>, shared: Shared) {
    let (m, cv) = &*shared;
    while let Ok(mut buf) = rx.recv() {
        // A failed write loses this buffer only; the log stays whole
        // lines because buffers hold whole lines.
        let _ = file.write_all(&buf);
        buf.clear();
        let mut p = lock(m);
        p.written += 1;
        if p.spare.len() < 2 {
            p.spare.push(buf);
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
