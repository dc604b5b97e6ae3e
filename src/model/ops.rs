//! The loader's compact record stream.
//!
//! The parsing threads turn each chunk of the log into a vector of [`Op`]s
//! that the simulation thread reads: the frequent records (allocations,
//! moves, ticks) in 24 bytes each, the `c` records of a run counted per
//! stack id ([`Op::Calls`]), every other record as an index into a side
//! vector of parsed records. The simulation thread reads what another core
//! wrote, so the fewer cache lines the better. Record offsets are kept only
//! for the side records and the calls; an error in another frequent record
//! finds its offset again by parsing its chunk once more.
//!
//! ## Calls, counted on the parsing side
//!
//! A call-logging log is mostly `c` lines, and all a `c` record does to the
//! model is to map its stack id to a row (making the row if the index has
//! none), add one to that row's call count, set `had_call_info` and count
//! as a record. So the parser counts the `c` records by stack id within a
//! *window* of the chunk, and hands the simulation one `Calls` op per id
//! and window. The ops of the ids first called between two side records
//! are pushed, in order of first call, before the second of them (or at
//! the window's end); their counts are written when the window ends. A
//! window ends at the chunk's end and at a side record that may create
//! the renumbering table (an `o` record, an `n` record of an
//! allocation-only stack: type and size, no frames); an `n` or `s` record
//! with id `k` only *closes* id `k` (its next call opens a new op). Other
//! side records (names, types, finalizers, GCs...) leave the window open.
//! The result is the same as applying the records one by one, because:
//!
//! - what a call reads is the renumbering table and the row of its stack
//!   index. Without the table, an id is its own index and the row of an
//!   index never changes once made. With it, a side record changes the
//!   index of its own id only (`n`/`s` with id `k` assign `k`; `o` assigns
//!   none), and it lengthens the table (an id past the old length failed
//!   before it, and the load stops at the first failure). Allocations,
//!   moves, ticks and the other side records only read the stack table;
//! - what a call writes (the calls histogram, a new undefined row,
//!   `had_call_info`, the record count) is read by nothing else in a
//!   window: an allocation of an index that has only a call's undefined
//!   row fails as if it had no row (`alloc_stack` takes defined slots
//!   only), moves read rows of objects (defined ones), `had_call_info` is
//!   set by allocations too, and an `n` record that makes or defines a row
//!   comes before or after the first call of that index in the ops as in
//!   the log;
//! - new rows are numbered in order of creation: an id's row is made, if
//!   at all, by its first call in the window, and the ops keep the order
//!   of first calls among themselves and with the side records;
//! - a call to `thread == -1` or `stack == -1` only counts as a record and
//!   sets `had_call_info`: all of them are counted under id -1;
//! - an error: a call fails (a negative id, or one past the renumbering
//!   table) or not by its id and the table's length alone; within a window
//!   the length only grows, so if an id's first call succeeds its later
//!   ones do too, and if it fails the load stops there. When the
//!   simulation stops at an op, [`Chunk::first_failure`] looks at the
//!   calls pushed after it before the next side record (checking them
//!   without side effects) and reports whichever failed first in the log,
//!   with its offset (each `Calls` op keeps its first call's offset).

use crate::format::{DumpState, FrequentVisitor, Parsed, Record, RecordReader};

/// One record, compact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// `!` (with a thread) or `a`.
    Alloc { address: u64, stack: i32, thread: i32, has_thread: bool },
    /// `u`.
    Moved { old: u64, new: u64, length: u32 },
    /// `v`.
    Survived { start: u64, length: u32 },
    /// `i`, with the offset of its line (the time table keeps it).
    Tick { ms: u32, offset: u64 },
    /// `count` `c` records of one run with stack id `stack` (-1: records
    /// that only count, with thread or stack -1); `first` is the offset of
    /// the first of them.
    Calls { stack: i32, count: u32, first: u64 },
    /// Any other record: its index in [`Chunk::rare`].
    Rare(u32),
}

/// Stack ids below this (plus one, for id -1) are counted in a dense table
/// (8 bytes each, grown to the largest id seen); larger and negative ones
/// in a hash map.
const DENSE_LIMIT: usize = 1 << 20;

/// The `c` records of the current window, counted by stack id (see the
/// module documentation).
///
/// A call adds one to its id's count; a count going from 0 to 1 makes the
/// call one that opens an op, noted (without a branch) in `firsts`. Before
/// each side record and at the window's end the noted calls become `Calls`
/// ops, in order, with a count of 0 (never the count of a finished op):
/// their counts are written when the window ends or the id is closed.
#[derive(Debug, Default)]
struct CallTally {
    /// Calls so far of each id's open op, by stack id plus one.
    counts: Vec<u32>,
    /// Ids that do not fit the dense table.
    sparse: std::collections::HashMap<i32, u32>,
    /// The calls that opened an op not pushed yet (the first `pending`;
    /// the vector is longer, so that the next one can always be written).
    firsts: Vec<(i32, u64)>,
    pending: usize,
    /// The ops pushed in the window.
    pushed: Vec<u32>,
    /// The largest count of one op.
    limit: u32,
}

thread_local! {
    /// Each parsing thread's tally (empty between chunks; its tables are
    /// kept so that they are allocated once per thread).
    static TALLY: std::cell::RefCell<CallTally> = std::cell::RefCell::new(CallTally::default());
}

impl CallTally {
    /// Counts a call with stack id `stack` (-1: a call that only counts).
    #[inline(always)]
    fn add(&mut self, stack: i32, offset: u64, ops: &mut Vec<Op>) {
        let i = (stack as u32).wrapping_add(1) as usize;
        if let Some(c) = self.counts.get_mut(i) {
            let n = *c;
            if n < self.limit {
                *c = n + 1;
                // Written always, kept when the count was 0 (the vector
                // has room for every id of the dense table past `pending`).
                if let Some(f) = self.firsts.get_mut(self.pending) {
                    *f = (stack, offset);
                    self.pending += (n == 0) as usize;
                    return;
                }
                *c = n;
            }
        }
        self.add_slow(stack, offset, ops);
    }

    /// The count of `stack`.
    #[inline(always)]
    fn slot(&mut self, stack: i32) -> &mut u32 {
        let i = (stack as u32).wrapping_add(1) as usize;
        if i < self.counts.len() {
            return &mut self.counts[i];
        }
        self.slot_slow(stack)
    }

    /// [`CallTally::slot`] for an id past the dense table as it is (which
    /// grows up to [`DENSE_LIMIT`]).
    #[cold]
    fn slot_slow(&mut self, stack: i32) -> &mut u32 {
        let i = (stack as u32).wrapping_add(1) as usize;
        if i < DENSE_LIMIT {
            if i >= self.counts.len() {
                self.counts.resize((i + 1).next_power_of_two().max(1 << 12), 0);
            }
            &mut self.counts[i]
        } else {
            self.sparse.entry(stack).or_insert(0)
        }
    }

    /// A call the fast path does not take: an id past the dense table, a
    /// full count, no room in `firsts`.
    #[cold]
    #[inline(never)]
    fn add_slow(&mut self, stack: i32, offset: u64, ops: &mut Vec<Op>) {
        if *self.slot(stack) >= self.limit {
            // Full: the count so far stays with its op.
            self.close(stack, ops);
        }
        let count = self.slot(stack);
        *count += 1;
        let opens = *count == 1;
        let room = self.pending + self.counts.len() + 1;
        if self.firsts.len() < room {
            self.firsts.resize(room, (0, 0));
        }
        if opens {
            self.firsts[self.pending] = (stack, offset);
            self.pending += 1;
        }
    }

    /// Pushes the ops of the calls that opened one, in order.
    #[inline]
    fn push_pending(&mut self, ops: &mut Vec<Op>) {
        let pending = std::mem::take(&mut self.pending);
        for &(stack, first) in self.firsts.iter().take(pending) {
            self.pushed.push(ops.len() as u32);
            ops.push(Op::Calls { stack, count: 0, first });
        }
    }

    /// Closes the op of `stack` if one is open (the pending ops pushed
    /// first): its count is written, and the next call opens a new op.
    #[cold]
    fn close(&mut self, stack: i32, ops: &mut Vec<Op>) {
        if *self.slot(stack) == 0 {
            return;
        }
        self.push_pending(ops);
        let n = std::mem::replace(self.slot(stack), 0);
        // The open op is the one of this id whose count is not written.
        for &k in self.pushed.iter().rev() {
            if let Some(Op::Calls { stack: s, count, .. }) = ops.get_mut(k as usize) {
                if *s == stack && *count == 0 {
                    *count = n;
                    return;
                }
            }
        }
    }

    /// Before a side record: pushes the pending ops, and closes the op of
    /// `close` if any.
    #[inline]
    fn side(&mut self, close: Option<i32>, ops: &mut Vec<Op>) {
        self.push_pending(ops);
        if let Some(stack) = close {
            self.close(stack, ops);
        }
    }

    /// Ends the window: pushes the pending ops and writes the counts of
    /// the open ones; every count is 0 again.
    #[inline]
    fn flush(&mut self, ops: &mut Vec<Op>) {
        self.push_pending(ops);
        let pushed = std::mem::take(&mut self.pushed);
        for &k in &pushed {
            if let Some(Op::Calls { stack, count, .. }) = ops.get_mut(k as usize) {
                if *count == 0 {
                    *count = std::mem::replace(self.slot(*stack), 0);
                }
            }
        }
        self.pushed = pushed;
        self.pushed.clear();
        self.sparse.clear();
    }
}

/// The ops of one chunk being filled: what [`RecordReader::read_frequent`]
/// hands over goes straight into them.
struct Filler<'c, 'a> {
    ops: &'c mut Vec<Op>,
    rare: &'c mut Vec<Parsed<'a>>,
    tally: &'c mut CallTally,
}

impl<'a> Filler<'_, 'a> {
    #[inline(always)]
    fn record(&mut self, p: Parsed<'a>) {
        let op = match p.record {
            Record::Alloc(a) => Op::Alloc {
                address: a.address.0,
                stack: a.stack.0,
                thread: a.thread.map_or(0, |t| t.0),
                has_thread: a.thread.is_some(),
            },
            Record::Moved(u) => Op::Moved { old: u.old.0, new: u.new.0, length: u.length },
            Record::Survived(v) => Op::Survived { start: v.start.0, length: v.length },
            Record::Tick(t) => Op::Tick { ms: t.ms, offset: p.offset },
            Record::Call(c) => return self.call(c.thread.0, c.stack.0, p.offset),
            _ => return self.side(p),
        };
        self.ops.push(op);
    }

    /// A side record: what it may change for the calls after it (see the
    /// module documentation), then its op.
    #[cold]
    fn side(&mut self, p: Parsed<'a>) {
        match &p.record {
            // May create the renumbering table (a duplicate
            // allocation-only stack, or an object needing a new type and
            // size): every id may map elsewhere after it.
            Record::Stack(n) if n.alloc.is_some() && n.frames.iter().next().is_none() => self.tally.flush(self.ops),
            Record::HeapObject(_) => self.tally.flush(self.ops),
            // May give its id a new index (and a longer table).
            Record::Stack(n) => self.tally.side(Some(n.id.0), self.ops),
            Record::StackOld(s) => self.tally.side(Some(s.id.0), self.ops),
            _ => self.tally.side(None, self.ops),
        }
        self.rare.push(p);
        self.ops.push(Op::Rare(self.rare.len() as u32 - 1));
    }
}

impl<'a> FrequentVisitor<'a> for Filler<'_, 'a> {
    #[inline(always)]
    fn visit(&mut self, p: Parsed<'a>) {
        self.record(p);
    }

    #[inline(always)]
    fn call(&mut self, thread: i32, stack: i32, offset: u64) {
        let stack = if thread == -1 { -1 } else { stack };
        self.tally.add(stack, offset, self.ops);
    }
}

/// The records of one chunk of the log.
#[derive(Debug, Default)]
pub(crate) struct Chunk<'a> {
    /// Where the chunk's first record starts.
    pub start: usize,
    /// The reader state the chunk was parsed with.
    pub state: DumpState,
    pub ops: Vec<Op>,
    pub rare: Vec<Parsed<'a>>,
    /// The largest count of one `Calls` op (`None`: `u32::MAX`; tests
    /// make it small).
    calls_per_op: Option<u32>,
}

impl<'a> Chunk<'a> {
    /// Fills the chunk from a reader (reusing its vectors).
    pub(crate) fn fill(&mut self, r: &mut RecordReader<'a>) {
        self.start = r.offset();
        self.state = r.initial_state();
        self.ops.clear();
        self.rare.clear();
        TALLY.with(|t| match t.try_borrow_mut() {
            Ok(mut t) => self.fill_with(r, &mut t),
            Err(_) => self.fill_with(r, &mut CallTally::default()),
        });
    }

    fn fill_with(&mut self, r: &mut RecordReader<'a>, tally: &mut CallTally) {
        tally.limit = self.calls_per_op.unwrap_or(u32::MAX);
        let mut f = Filler { ops: &mut self.ops, rare: &mut self.rare, tally };
        loop {
            r.read_frequent(&mut f);
            let Some(p) = r.next_record() else { break };
            f.record(p);
        }
        f.tally.flush(f.ops);
    }

    /// The offset of the record of op `k` (for an allocation, a move or a
    /// tick, parses the chunk again).
    #[cold]
    pub(crate) fn offset_of(&self, data: &'a [u8], k: usize) -> u64 {
        match self.ops.get(k) {
            Some(Op::Calls { first, .. }) => *first,
            Some(Op::Rare(i)) => self.rare.get(*i as usize).map_or(self.start as u64, |p| p.offset),
            _ => {
                // Every op but `Calls` is one record, in log order.
                let m = self.ops[..k.min(self.ops.len())].iter().filter(|o| !matches!(o, Op::Calls { .. })).count();
                RecordReader::range_with_state(data, self.start, data.len(), self.state)
                    .filter(|p| !matches!(p.record, Record::Call(_)))
                    .nth(m)
                    .map_or(self.start as u64, |p| p.offset)
            }
        }
    }

    /// The first record in the log that fails, when op `k` has failed with
    /// `problem` (see the module documentation): its offset, problem and
    /// kind letter. `check` tells whether a call with a given stack id
    /// fails, without changing anything.
    #[cold]
    pub(crate) fn first_failure<P>(
        &self,
        data: &'a [u8],
        k: usize,
        problem: P,
        kind: char,
        check: impl Fn(i32) -> Result<(), P>,
    ) -> (u64, P, char) {
        let mut first = (self.offset_of(data, k), problem, kind);
        if matches!(self.ops.get(k), Some(Op::Rare(_))) {
            return first;
        }
        for op in self.ops.iter().skip(k + 1) {
            match *op {
                Op::Rare(_) => break,
                Op::Calls { stack, first: at, .. } if at < first.0 => {
                    if let Err(p) = check(stack) {
                        first = (at, p, 'c');
                    }
                }
                _ => {}
            }
        }
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_are_small() {
        assert!(std::mem::size_of::<Op>() <= 24);
    }

    #[test]
    fn offsets_found_again() {
        let data = b"t 1 0 T\nn 1 1 1 16\nc 1 1\n! 5 0x1000 1\ni 7\nc 1 1\nu 0x1000 0x2000 16\n";
        let mut c = Chunk::default();
        let mut r = RecordReader::new(data);
        c.fill(&mut r);
        assert_eq!(c.ops.len(), 6);
        assert_eq!(c.rare.len(), 2);
        assert_eq!(c.offset_of(data, 2), 25);
        assert_eq!(c.ops[3], Op::Tick { ms: 7, offset: 38 });
        assert_eq!(c.offset_of(data, 4), 48);
        assert_eq!(c.ops[5], Op::Calls { stack: 1, count: 2, first: 19 });
        assert_eq!(c.offset_of(data, 5), 19);
    }

    /// The ops of `data` read as one chunk.
    fn ops_of(data: &[u8]) -> Vec<Op> {
        let mut c = Chunk::default();
        c.fill(&mut RecordReader::new(data));
        c.ops
    }

    #[test]
    fn calls_counted_per_window_where_each_id_first_comes() {
        let mut data = Vec::new();
        for (t, s) in [(1, 5), (1, 3), (-1, 9), (1, 5), (2, -1), (1, 300000), (1, -7), (1, 3)] {
            data.extend_from_slice(format!("c {t} {s}\n").as_bytes());
        }
        data.extend_from_slice(b"n 1 1 1 16\nc 1 3\n");
        let mut c = Chunk::default();
        c.fill(&mut RecordReader::new(&data));
        assert_eq!(
            c.ops,
            vec![
                Op::Calls { stack: 5, count: 2, first: 0 },
                Op::Calls { stack: 3, count: 2, first: 6 },
                Op::Calls { stack: -1, count: 2, first: 12 },
                Op::Calls { stack: 300000, count: 1, first: 32 },
                Op::Calls { stack: -7, count: 1, first: 43 },
                Op::Rare(0),
                Op::Calls { stack: 3, count: 1, first: 67 },
            ]
        );
        // The tally is empty again, and a second fill gives the same ops.
        let ops = c.ops.clone();
        c.fill(&mut RecordReader::new(&data));
        assert_eq!(c.ops, ops);
    }

    #[test]
    fn side_records_end_close_or_keep_the_window() {
        // Names, types, modules, finalizers, ticks, allocations: the
        // window goes on. Ids 1 and 3 before and after them.
        let data = b"c 1 1\nc 1 3\nf 9 F 1 0x10 1 0 0\nt 4 0 T\n! 1 0x10 2\nl 0 0x10\ni 5\nc 1 3\nc 1 1\n";
        let ops = ops_of(data);
        assert_eq!(ops[0], Op::Calls { stack: 1, count: 2, first: 0 });
        assert_eq!(ops[1], Op::Calls { stack: 3, count: 2, first: 6 });
        assert_eq!(ops.iter().filter(|o| matches!(o, Op::Calls { .. })).count(), 2);
        // A stack with frames closes its own id only.
        let data = b"c 1 1\nc 1 3\nn 3 0 1\nc 1 3\nc 1 1\ns 1 2\nc 1 1\n";
        assert_eq!(
            ops_of(data),
            vec![
                Op::Calls { stack: 1, count: 2, first: 0 },
                Op::Calls { stack: 3, count: 1, first: 6 },
                Op::Rare(0),
                Op::Calls { stack: 3, count: 1, first: 20 },
                Op::Rare(1),
                Op::Calls { stack: 1, count: 1, first: 38 },
            ]
        );
        // An allocation-only stack and an object end the window.
        for side in [&b"n 7 1 2 24\n"[..], b"o 0x10 2 24\n"] {
            let mut data = b"c 1 1\nc 1 3\n".to_vec();
            data.extend_from_slice(side);
            data.extend_from_slice(b"c 1 3\nc 1 1\n");
            let ops = ops_of(&data);
            assert_eq!(ops.len(), 5, "{:?}", String::from_utf8_lossy(side));
            assert_eq!(ops[3], Op::Calls { stack: 3, count: 1, first: 12 + side.len() as u64 });
            assert_eq!(ops[4], Op::Calls { stack: 1, count: 1, first: 18 + side.len() as u64 });
        }
    }

    #[test]
    fn full_counts_and_a_growing_table_keep_the_order() {
        // Ids in the dense table and past it, each called three times, and
        // a count limit of two.
        let ids: Vec<i32> = (0..10_000)
            .map(|k| match k % 3 {
                0 => (k * 7919) % 100_003 - 50,
                1 => (k * 7919) % 100_003 + super::DENSE_LIMIT as i32 - 5_000,
                _ => 200_000 + k,
            })
            .collect();
        let mut data = Vec::new();
        for round in 0..3 {
            for &id in &ids {
                data.extend_from_slice(format!("c {} {id}\n", 1 + round % 2).as_bytes());
            }
        }
        data.extend_from_slice(&[b'\n'; 100]);
        let mut c = Chunk::default();
        c.calls_per_op = Some(2);
        c.fill(&mut RecordReader::new(&data));
        // Per id: a full count of two (from its first call), then one
        // (from its third).
        let mut want = Vec::new();
        let offsets: Vec<u64> = RecordReader::new(&data).map(|p| p.offset).collect();
        for (k, &id) in ids.iter().enumerate() {
            want.push(Op::Calls { stack: id, count: 2, first: offsets[k] });
        }
        for (k, &id) in ids.iter().enumerate() {
            want.push(Op::Calls { stack: id, count: 1, first: offsets[2 * ids.len() + k] });
        }
        assert_eq!(c.ops, want);
        c.calls_per_op = None;
        c.fill(&mut RecordReader::new(&data));
        let want: Vec<Op> =
            ids.iter().enumerate().map(|(k, &id)| Op::Calls { stack: id, count: 3, first: offsets[k] }).collect();
        assert_eq!(c.ops, want);
    }
}
