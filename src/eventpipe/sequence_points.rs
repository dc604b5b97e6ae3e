//! Sequence points (SPBlock) and dropped-event detection.
//!
//! ```text
//! <Timestamp:i64> <ThreadCount:i32> { <CaptureThreadId:i64> <SequenceNumber:u32> } * ThreadCount
//! V6: <Timestamp:u64> <Flags:u32> <ThreadCount:u32> { <ThreadIndex:var64> <SequenceNumber:var32> } * ThreadCount
//!     flags: 1 flush the thread table (after the checks), 2 flush the metadata
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
    /// V6 flags (0 before V6): see [`Self::flushes_threads`] and
    /// [`Self::flushes_metadata`].
    pub flags: u32,
    threads: &'a [u8],
    count: usize,
    v6: bool,
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
        Ok(SequencePoint { timestamp, flags: 0, threads, count: n, v6: false, offset: at + 4 })
    }
    /// Reads a V6 SequencePointBlock body at trace offset `offset`.
    pub fn parse_v6(body: &'a [u8], offset: u64) -> Result<Self, Error> {
        let mut c = Cursor::new(body, offset);
        let timestamp = Timestamp(c.u64("a sequence point's timestamp")? as i64);
        let flags = c.u32("a sequence point's flags")?;
        let at = c.offset();
        let n = c.u32("a sequence point's thread count")? as usize;
        if n > c.remaining() / 2 {
            return Err(Error::invalid(at, "a thread count that fits the sequence point", n as u64));
        }
        let start = c.pos();
        for _ in 0..n {
            c.varu64("a thread index")?;
            c.varu32("a sequence number")?;
        }
        let threads = &body[start..c.pos()];
        Ok(SequencePoint { timestamp, flags, threads, count: n, v6: true, offset: at + 4 })
    }
    /// V6: the thread table is forgotten after this sequence point.
    pub fn flushes_threads(&self) -> bool {
        self.flags & 1 != 0
    }
    /// V6: the metadata (event kinds) is forgotten after this sequence point.
    pub fn flushes_metadata(&self) -> bool {
        self.flags & 2 != 0
    }
    /// (capture thread, the sequence number of its last event so far); in
    /// V6 the thread is its index in the thread table.
    pub fn threads(&self) -> impl Iterator<Item = (ThreadId, u32)> + 'a {
        let v6 = self.v6;
        let mut c = Cursor::new(self.threads, self.offset);
        let fixed = self.threads.chunks_exact(12);
        let mut fixed = if v6 { None } else { Some(fixed) };
        (0..self.count).map_while(move |_| match &mut fixed {
            Some(chunks) => chunks.next().map(|t| {
                let mut id = [0u8; 8];
                id.copy_from_slice(&t[..8]);
                let mut seq = [0u8; 4];
                seq.copy_from_slice(&t[8..]);
                (ThreadId(u64::from_le_bytes(id)), u32::from_le_bytes(seq))
            }),
            // Checked when parsed.
            None => Some((ThreadId(c.varu64("a thread index").ok()?), c.varu32("a sequence number").ok()?)),
        })
    }
}

/// Each capture thread's last sequence number.
///
/// The numbers live in `slots`; `index` finds a thread's slot. Events come
/// in runs of one capture thread (a thread's buffer is written out at
/// once), so the slot of the previous event is tried first: most events
/// cost a comparison, not a hash lookup.
#[derive(Debug, Default)]
pub(crate) struct SequenceTracker {
    slots: Vec<(ThreadId, u32)>,
    index: HashMap<ThreadId, usize>,
    /// The slot of the last thread looked up (checked before use).
    recent: usize,
    /// V6: threads are declared (numbering from 0) and never reused, so a
    /// first event numbered above 1 is a loss.
    v6: bool,
    /// Events dropped so far.
    pub(crate) lost: u64,
}

impl SequenceTracker {
    /// A tracker for V6 thread indexes.
    pub(crate) fn v6() -> Self {
        SequenceTracker { v6: true, ..Self::default() }
    }
    /// The slot of `thread`, if it has one.
    #[inline]
    fn slot(&mut self, thread: ThreadId) -> Option<usize> {
        if self.slots.get(self.recent).is_some_and(|s| s.0 == thread) {
            return Some(self.recent);
        }
        let i = *self.index.get(&thread)?;
        self.recent = i;
        Some(i)
    }
    /// Sets `thread`'s last number to `seq`; returns the one it replaces.
    #[inline]
    fn set(&mut self, thread: ThreadId, seq: u32) -> Option<u32> {
        if let Some(i) = self.slot(thread) {
            if let Some(s) = self.slots.get_mut(i) {
                return Some(std::mem::replace(&mut s.1, seq));
            }
        }
        self.recent = self.slots.len();
        self.index.insert(thread, self.slots.len());
        self.slots.push((thread, seq));
        None
    }
    /// V6: a thread index is defined; its first event is numbered 1.
    pub(crate) fn introduce(&mut self, thread: ThreadId) {
        if self.slot(thread).is_none() {
            self.set(thread, 0);
        }
    }
    /// V6: a thread index is retired.
    pub(crate) fn remove(&mut self, thread: ThreadId) {
        let Some(i) = self.index.remove(&thread) else { return };
        self.slots.swap_remove(i);
        if let Some(moved) = self.slots.get(i) {
            self.index.insert(moved.0, i);
        }
    }
    /// V6: the thread table is flushed.
    pub(crate) fn clear(&mut self) {
        self.slots.clear();
        self.index.clear();
    }
    fn note(&mut self, thread: ThreadId, last_seen: u32, now: u32, offset: u64, warnings: &mut Vec<Warning>) {
        // Before V6, a thread whose number restarts (its id reused by a
        // new thread) is not a loss; neither is a number going back.
        if (last_seen == 0 && !self.v6) || now <= last_seen {
            return;
        }
        let count = u64::from(now - last_seen);
        self.lost += count;
        warnings.push(Warning::LostEvents { thread, count, offset });
    }
    /// An event of `thread` numbered `seq` at `offset`.
    #[inline]
    pub(crate) fn event(&mut self, thread: ThreadId, seq: u32, offset: u64, warnings: &mut Vec<Warning>) {
        let prev = self.set(thread, seq);
        if let Some(last) = prev {
            // The common case, the next number, is no loss.
            if last.wrapping_add(1) != seq && (seq != 1 || self.v6) {
                self.note(thread, last, seq.wrapping_sub(1), offset, warnings);
            }
        }
    }
    /// A sequence point at `offset`.
    pub(crate) fn sequence_point(&mut self, sp: &SequencePoint<'_>, warnings: &mut Vec<Warning>) {
        for (thread, seq) in sp.threads() {
            self.checkpoint(thread, seq, sp.offset, warnings);
        }
    }
    /// `thread`'s last event so far is numbered `seq` (a sequence point, a
    /// V6 RemoveThreadBlock at `offset`).
    pub(crate) fn checkpoint(&mut self, thread: ThreadId, seq: u32, offset: u64, warnings: &mut Vec<Warning>) {
        if let Some(last) = self.set(thread, seq) {
            self.note(thread, last, seq, offset, warnings);
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

    #[test]
    fn v6_threads_count_from_their_declaration() {
        let mut t = SequenceTracker::v6();
        let mut w = Vec::new();
        let a = ThreadId(0);
        t.introduce(a);
        t.event(a, 3, 10, &mut w); // 1 and 2 were dropped
        assert_eq!(w, vec![Warning::LostEvents { thread: a, count: 2, offset: 10 }]);
        let mut body = 7u64.to_le_bytes().to_vec();
        body.extend(3u32.to_le_bytes());
        body.extend(2u32.to_le_bytes());
        body.extend([0, 5, 0x80, 0x01, 1]);
        let sp = SequencePoint::parse_v6(&body, 100).unwrap();
        assert!(sp.flushes_threads() && sp.flushes_metadata());
        assert_eq!(sp.threads().collect::<Vec<_>>(), vec![(a, 5), (ThreadId(128), 1)]);
        t.sequence_point(&sp, &mut w);
        assert_eq!((t.lost, w.len()), (4, 2));
        assert!(SequencePoint::parse_v6(&body[..body.len() - 1], 0).is_err());
    }

    #[test]
    fn removed_threads_leave_the_others_counted() {
        let mut t = SequenceTracker::v6();
        let mut w = Vec::new();
        let (a, b, c) = (ThreadId(1), ThreadId(2), ThreadId(3));
        for x in [a, b, c] {
            t.introduce(x);
        }
        t.event(a, 1, 0, &mut w);
        t.event(c, 1, 0, &mut w);
        t.event(b, 1, 0, &mut w);
        t.remove(a); // c moves into a's slot
        t.event(c, 2, 0, &mut w);
        t.event(b, 2, 0, &mut w);
        t.event(c, 4, 9, &mut w);
        assert_eq!(w, vec![Warning::LostEvents { thread: c, count: 1, offset: 9 }]);
        t.introduce(a); // a new thread with the index: numbered from 1 again
        t.event(a, 1, 0, &mut w);
        t.remove(c);
        t.remove(c);
        t.event(b, 3, 0, &mut w);
        assert_eq!(t.lost, 1);
        t.clear();
        t.event(b, 1, 0, &mut w);
        assert_eq!((t.lost, w.len()), (1, 1));
    }
}
