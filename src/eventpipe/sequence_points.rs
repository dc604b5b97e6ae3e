//! Sequence points (SPBlock) and dropped-event detection.
//!
//! ```text
//! <Timestamp:i64> <ThreadCount:i32> { <CaptureThreadId:i64> <SequenceNumber:u32> } * ThreadCount
//! ```
//! Every thread numbers the events it tries to write 1, 2, 3, ...: a gap
//! between two events of a capture thread, or a sequence point naming a
//! number above the thread's last event, counts events the runtime dropped.

use super::cursor::Cursor;
use super::error::{Error, Warning};
use super::ids::{ThreadId, Timestamp};
use std::collections::HashMap;

/// A sequence point: a time barrier and each thread's last sequence number.
#[derive(Debug, Clone, Copy)]
pub struct SequencePoint<'a> {
    /// Every event before it in the file happened before this time.
    pub timestamp: Timestamp,
    threads: &'a [u8],
    offset: u64,
}

impl<'a> SequencePoint<'a> {
    /// Reads an SPBlock body at trace offset `offset`.
    pub fn parse(body: &'a [u8], offset: u64) -> Result<Self, Error> {
        let mut c = Cursor::new(body, offset);
        let timestamp = Timestamp(c.u64("a sequence point's timestamp")? as i64);
        let at = c.offset();
        let n = c.u32("a sequence point's thread count")? as usize;
        if n.saturating_mul(12) > c.remaining() {
            return Err(Error::invalid(at, "a thread count that fits the sequence point", n as u64));
        }
        let threads = c.bytes(n * 12, "a sequence point's threads")?;
        Ok(SequencePoint { timestamp, threads, offset: at + 4 })
    }
    /// (capture thread, the sequence number of its last event so far).
    pub fn threads(&self) -> impl Iterator<Item = (ThreadId, u32)> + 'a {
        self.threads.chunks_exact(12).map(|t| {
            let mut id = [0u8; 8];
            id.copy_from_slice(&t[..8]);
            let mut seq = [0u8; 4];
            seq.copy_from_slice(&t[8..]);
            (ThreadId(u64::from_le_bytes(id)), u32::from_le_bytes(seq))
        })
    }
}

/// Each capture thread's last sequence number.
#[derive(Debug, Default)]
pub(crate) struct SequenceTracker {
    last: HashMap<ThreadId, u32>,
    /// Events dropped so far.
    pub(crate) lost: u64,
}

impl SequenceTracker {
    fn note(&mut self, thread: ThreadId, last_seen: u32, now: u32, offset: u64, warnings: &mut Vec<Warning>) {
        // A thread whose number restarts (its id reused by a new thread)
        // is not a loss; neither is a number going back.
        if last_seen == 0 || now <= last_seen {
            return;
        }
        let count = u64::from(now - last_seen);
        self.lost += count;
        warnings.push(Warning::LostEvents { thread, count, offset });
    }
    /// An event of `thread` numbered `seq` at `offset`.
    pub(crate) fn event(&mut self, thread: ThreadId, seq: u32, offset: u64, warnings: &mut Vec<Warning>) {
        let prev = self.last.insert(thread, seq);
        if let Some(last) = prev {
            if seq != 1 {
                self.note(thread, last, seq.wrapping_sub(1), offset, warnings);
            }
        }
    }
    /// A sequence point at `offset`.
    pub(crate) fn sequence_point(&mut self, sp: &SequencePoint<'_>, warnings: &mut Vec<Warning>) {
        for (thread, seq) in sp.threads() {
            if let Some(last) = self.last.insert(thread, seq) {
                self.note(thread, last, seq, sp.offset, warnings);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_are_counted() {
        let mut t = SequenceTracker::default();
        let mut w = Vec::new();
        let a = ThreadId(5);
        t.event(a, 1, 10, &mut w);
        t.event(a, 2, 20, &mut w);
        t.event(a, 5, 30, &mut w);
        assert_eq!(w, vec![Warning::LostEvents { thread: a, count: 2, offset: 30 }]);
        t.event(a, 1, 40, &mut w); // a new thread with the same id
        assert_eq!(t.lost, 2);
        let mut body = 99u64.to_le_bytes().to_vec();
        body.extend(1u32.to_le_bytes());
        body.extend(5u64.to_le_bytes());
        body.extend(4u32.to_le_bytes());
        let sp = SequencePoint::parse(&body, 100).unwrap();
        t.sequence_point(&sp, &mut w);
        assert_eq!(t.lost, 5);
        assert_eq!(w[1], Warning::LostEvents { thread: a, count: 3, offset: 112 });
        assert!(SequencePoint::parse(&body[..14], 0).is_err());
    }
}
