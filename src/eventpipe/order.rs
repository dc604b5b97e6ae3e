//! Time order across threads: the events of a sequence-point region
//! merged by timestamp.
//!
//! EventPipe orders events within a thread only. The runtime writes each
//! thread's buffered events in runs, one thread after another; the first
//! event of a run is marked "sorted": no event written after it is older.
//! So, as TraceEvent's `EventPipeEventSource` does:
//!
//! - every event waits in the queue of its capture thread (a thread's
//!   events are already in order);
//! - a sorted event at time `t` releases the queued events of every thread
//!   up to `t`, oldest first (equal times in file order), itself last;
//! - a sequence point, the end of the trace (or a read error) releases
//!   everything.
//!
//! ```text
//! file:  A1* A4 A7 | B2* B5 B8 | A9* ...     (* sorted: a run's first event)
//!        A1* releases A1; B2* releases B2; A9* releases A4 B5 A7 B8 A9
//! out:   A1 B2 A4 B5 A7 B8 A9 ...
//! ```
//!
//! Memory: the queued events, at most those of one sequence-point region
//! (the runtime writes a sequence point every few megabytes of events; in
//! practice far fewer wait, since each run's first event releases the
//! older ones). Past [`ReadOptions::max_pending`] queued events the queues
//! are released in timestamp order at once and [`Warning::OrderCap`] says
//! where: events after it may then be older than events before it.
//!
//! [`Warning::OrderCap`]: super::Warning::OrderCap

use super::event_header::EventHeader;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

/// The order in which [`super::NetTraceReader`] hands out events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// By timestamp across threads (within a thread, as written): the
    /// order in which the events happened. The default.
    #[default]
    Time,
    /// As the file stores them: each thread's events in order, threads in
    /// runs. Needs no queue.
    File,
}

/// How [`super::NetTraceReader::with_options`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    /// The order of the events.
    pub order: Order,
    /// With [`Order::Time`]: the most events that may wait to be merged
    /// (each takes about 150 bytes); past it they are released at once, in
    /// timestamp order, with a warning.
    pub max_pending: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions { order: Order::Time, max_pending: 1 << 20 }
    }
}

/// An event read and not yet handed out.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pending<'a> {
    pub offset: u64,
    pub header: EventHeader,
    pub payload: &'a [u8],
}

/// The per-thread queues and the merge.
#[derive(Debug, Default)]
pub(crate) struct Merge<'a> {
    /// One queue per capture thread, with the file position of each event
    /// (for ties).
    queues: Vec<VecDeque<(u64, Pending<'a>)>>,
    /// Capture thread -> its queue.
    index: HashMap<u64, usize>,
    /// The queue of the last event pushed (events come in runs).
    recent: Option<(u64, usize)>,
    /// Queues holding events.
    active: Vec<usize>,
    /// Events queued in all.
    pending: usize,
    /// Events pushed so far (the file position of the next one).
    pushed: u64,
    /// While releasing: events up to this time (inclusive) go out.
    release_to: Option<i64>,
    /// The merge heap while releasing with several active queues:
    /// (timestamp of the head, its file position, queue).
    heap: BinaryHeap<Reverse<(i64, u64, usize)>>,
    heap_built: bool,
}

impl<'a> Merge<'a> {
    /// Events waiting.
    pub fn pending(&self) -> usize {
        self.pending
    }

    /// Whether events are being released.
    pub fn releasing(&self) -> bool {
        self.release_to.is_some()
    }

    /// Queues an event. A sorted event starts a release up to its time
    /// (it is the oldest event not yet read: nothing older can follow).
    #[inline]
    pub fn push(&mut self, p: Pending<'a>) {
        let thread = p.header.capture_thread_index;
        let q = match self.recent {
            Some((t, q)) if t == thread => q,
            _ => {
                let q = match self.index.get(&thread) {
                    Some(&q) => q,
                    None => {
                        self.queues.push(VecDeque::new());
                        let q = self.queues.len() - 1;
                        self.index.insert(thread, q);
                        q
                    }
                };
                self.recent = Some((thread, q));
                q
            }
        };
        let Some(queue) = self.queues.get_mut(q) else { return };
        if queue.is_empty() {
            self.active.push(q);
        }
        let sorted = p.header.is_sorted;
        let ts = p.header.timestamp.0;
        queue.push_back((self.pushed, p));
        self.pushed += 1;
        self.pending += 1;
        if sorted {
            self.release(ts);
        }
    }

    /// Starts releasing the events up to `ts` (inclusive).
    pub fn release(&mut self, ts: i64) {
        self.release_to = Some(self.release_to.map_or(ts, |t| t.max(ts)));
        self.heap_built = false;
    }

    /// Starts releasing every queued event.
    pub fn release_all(&mut self) {
        self.release(i64::MAX);
    }

    /// The next event to hand out while releasing; `None` (and the
    /// release ends) when no queued event is due.
    #[inline]
    pub fn pop(&mut self) -> Option<Pending<'a>> {
        let to = self.release_to?;
        let found = if self.active.len() == 1 { self.pop_single(to) } else { self.pop_merged(to) };
        if found.is_none() {
            self.release_to = None;
            self.heap.clear();
            self.heap_built = false;
            if self.pending == 0 {
                // A region's burst does not stay allocated.
                for q in self.queues.iter_mut().filter(|q| q.capacity() > 4096) {
                    q.shrink_to(1024);
                }
            }
        }
        found
    }

    /// One thread has events: its queue's front, while due.
    #[inline]
    fn pop_single(&mut self, to: i64) -> Option<Pending<'a>> {
        let q = *self.active.first()?;
        let queue = self.queues.get_mut(q)?;
        if queue.front()?.1.header.timestamp.0 > to {
            return None;
        }
        let (_, p) = queue.pop_front()?;
        self.pending -= 1;
        if queue.is_empty() {
            self.active.clear();
        }
        // Another thread's events may be due too (a heap from here).
        self.heap_built = false;
        Some(p)
    }

    /// Several threads have events: the oldest head, from a heap built once
    /// per release.
    fn pop_merged(&mut self, to: i64) -> Option<Pending<'a>> {
        if !self.heap_built {
            self.heap.clear();
            for &q in &self.active {
                if let Some((order, p)) = self.queues.get(q).and_then(|x| x.front()) {
                    self.heap.push(Reverse((p.header.timestamp.0, *order, q)));
                }
            }
            self.heap_built = true;
        }
        let Reverse((ts, _, q)) = *self.heap.peek()?;
        if ts > to {
            return None;
        }
        self.heap.pop();
        let queue = self.queues.get_mut(q)?;
        let (_, p) = queue.pop_front()?;
        self.pending -= 1;
        match queue.front() {
            Some((order, next)) => self.heap.push(Reverse((next.header.timestamp.0, *order, q))),
            None => {
                self.active.retain(|&a| a != q);
                if self.active.len() == 1 {
                    // The single-queue path takes over; rebuild if needed.
                    self.heap_built = false;
                }
            }
        }
        Some(p)
    }

    /// Forgets the threads (their queues are empty): V6 thread tables
    /// flushed at a sequence point, where indexes start over.
    pub fn forget_threads(&mut self) {
        if self.pending == 0 {
            self.queues.clear();
            self.index.clear();
            self.active.clear();
            self.recent = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eventpipe::{ThreadId, Timestamp};

    fn ev(thread: u64, ts: i64, sorted: bool) -> Pending<'static> {
        let header = EventHeader {
            capture_thread: ThreadId(thread),
            capture_thread_index: thread,
            timestamp: Timestamp(ts),
            is_sorted: sorted,
            ..EventHeader::default()
        };
        Pending { offset: ts as u64, header, payload: &[] }
    }

    fn drain(m: &mut Merge<'_>, out: &mut Vec<(u64, i64)>) {
        while let Some(p) = m.pop() {
            out.push((p.header.capture_thread_index, p.header.timestamp.0));
        }
    }

    #[test]
    fn runs_of_threads_come_out_in_time_order() {
        let mut m = Merge::default();
        let mut out = Vec::new();
        for e in [ev(1, 1, true), ev(1, 4, false), ev(1, 7, false), ev(2, 2, true), ev(2, 5, false), ev(2, 8, false)] {
            m.push(e);
            drain(&mut m, &mut out);
        }
        // A sorted event releases everything up to its time only.
        assert_eq!(out, vec![(1, 1), (2, 2)]);
        m.push(ev(1, 9, true));
        drain(&mut m, &mut out);
        assert_eq!(out, vec![(1, 1), (2, 2), (1, 4), (2, 5), (1, 7), (2, 8), (1, 9)]);
        assert_eq!(m.pending(), 0);
    }

    #[test]
    fn equal_times_keep_file_order_and_release_all_empties() {
        let mut m = Merge::default();
        let mut out = Vec::new();
        for e in [ev(3, 10, false), ev(4, 10, false), ev(3, 12, false), ev(5, 3, false)] {
            m.push(e);
        }
        drain(&mut m, &mut out);
        assert!(out.is_empty(), "nothing is due before a sorted event");
        m.release_all();
        drain(&mut m, &mut out);
        assert_eq!(out, vec![(5, 3), (3, 10), (4, 10), (3, 12)]);
        m.forget_threads();
        m.push(ev(3, 1, true));
        drain(&mut m, &mut out);
        assert_eq!(out.last(), Some(&(3, 1)));
    }
}
