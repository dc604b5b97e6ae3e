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
//! as a record. So the parser counts the `c` records of each *run* (the
//! records between two side records, within a chunk) by stack id, and
//! hands the simulation one `Calls` op per distinct id, in the order of the
//! ids' first occurrences, at the end of the run (before the side record
//! that ends it). The result is the same as applying the records one by
//! one, because:
//!
//! - what a call reads (the renumbering table and the row of each stack
//!   index) changes only in side records (`n`, `s`, `o`); allocations,
//!   moves and ticks only read the stack table;
//! - what a call writes (the calls histogram, a new undefined row,
//!   `had_call_info`, the record count) is read by nothing else in a run:
//!   an allocation of an index that has only a call's undefined row fails
//!   as if it had no row (`alloc_stack` takes defined slots only), moves
//!   read rows of objects (defined ones), and `had_call_info` is set by
//!   allocations too;
//! - new rows are numbered in order of creation, and the ids' first
//!   occurrences keep that order among the calls; between the calls and
//!   the side records (which also make rows) the order is kept by ending
//!   the run there;
//! - a call to `thread == -1` or `stack == -1` only counts as a record and
//!   sets `had_call_info`: all of them are counted under id -1;
//! - an error: a call fails (a negative id, or one past the renumbering
//!   table) or not by its id alone, within a run. When the simulation
//!   stops at an op, [`Chunk::first_failure`] looks at the run's calls that
//!   come after it in the stream but before it in the log (checking them
//!   without side effects) and reports whichever failed first in the log,
//!   with its offset (each `Calls` op keeps its id's first offset).

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

/// How a call's stack is known to the tally: the bytes of its decimal
/// digits as read (top byte zero, see [`FrequentVisitor::call_digits`]), or
/// a number (tagged in the top bit). One stack can have both keys in a
/// run (`c 1 5` and `c 1 05`, or a line read by another path): it then
/// gets two ops, which the simulation adds up like one.
#[inline(always)]
fn number_key(stack: i32) -> u64 {
    1 << 63 | stack as u32 as u64
}

/// The key of the calls that only count (thread or stack -1).
const SKIP: u64 = 1 << 63 | u32::MAX as u64;

#[inline(always)]
fn stack_of(key: u64) -> i32 {
    if key >> 63 == 1 {
        key as u32 as i32
    } else {
        crate::format::call_digits_value(key)
    }
}

/// The `c` records of the current run, counted by stack: an
/// open-addressing table of (key, count) pairs (count 0 marks an empty
/// slot), and the keys in order of first occurrence.
#[derive(Debug)]
struct CallTally {
    /// A power of two long (or empty before the first call).
    slots: Vec<(u64, u32)>,
    /// Slot and first offset of each key, in order of first occurrence.
    entries: Vec<(u32, u64)>,
    /// Counts that reached [`CallTally::limit`]: entry, count, first offset.
    full: Vec<(u32, u32, u64)>,
    /// The largest count of one op.
    limit: u32,
}

impl Default for CallTally {
    fn default() -> Self {
        CallTally { slots: Vec::new(), entries: Vec::new(), full: Vec::new(), limit: u32::MAX }
    }
}

/// Slots of a new [`CallTally`] (64 KB).
const INITIAL_SLOTS: usize = 1 << 12;

#[inline(always)]
fn slot_of(key: u64, mask: usize) -> usize {
    // Fibonacci hashing: the high bits of the product are well mixed.
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize & mask
}

impl CallTally {
    /// Counts a call.
    #[inline(always)]
    fn add(&mut self, key: u64, offset: u64) {
        let mask = self.slots.len().wrapping_sub(1);
        let mut h = slot_of(key, mask);
        while let Some(s) = self.slots.get_mut(h) {
            if s.0 == key && s.1 != 0 && s.1 < self.limit {
                s.1 += 1;
                return;
            }
            if s.1 == 0 || s.0 == key {
                break;
            }
            h = (h + 1) & mask;
        }
        self.add_slow(key, offset);
    }

    /// A call whose key is new in the run, or whose count is full.
    #[inline(never)]
    fn add_slow(&mut self, key: u64, offset: u64) {
        if self.slots.is_empty() {
            self.slots = vec![(0, 0); INITIAL_SLOTS];
        } else if 2 * (self.entries.len() + 1) > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut h = slot_of(key, mask);
        loop {
            let s = self.slots[h];
            if s.1 == 0 {
                self.slots[h] = (key, 1);
                self.entries.push((h as u32, offset));
                return;
            }
            if s.0 == key {
                if s.1 < self.limit {
                    self.slots[h].1 += 1;
                } else {
                    // The count so far becomes an op of its own.
                    if let Some(k) = self.entries.iter().position(|e| e.0 == h as u32) {
                        let first = std::mem::replace(&mut self.entries[k].1, offset);
                        self.full.push((k as u32, s.1, first));
                    }
                    self.slots[h].1 = 1;
                }
                return;
            }
            h = (h + 1) & mask;
        }
    }

    /// Doubles the table.
    #[cold]
    fn grow(&mut self) {
        let n = 2 * self.slots.len();
        let old = std::mem::replace(&mut self.slots, vec![(0, 0); n]);
        let mask = self.slots.len() - 1;
        for e in &mut self.entries {
            let s = old[e.0 as usize];
            let mut h = slot_of(s.0, mask);
            while self.slots[h].1 != 0 {
                h = (h + 1) & mask;
            }
            self.slots[h] = s;
            e.0 = h as u32;
        }
    }

    /// Ends the run: one op per key (and per full count), in order of first
    /// occurrence; the table is empty again.
    #[inline]
    fn flush(&mut self, ops: &mut Vec<Op>) {
        if self.entries.is_empty() {
            return;
        }
        for (k, &(h, first)) in self.entries.iter().enumerate() {
            let Some(s) = self.slots.get_mut(h as usize) else { continue };
            let stack = stack_of(s.0);
            if !self.full.is_empty() {
                for &(_, count, first) in self.full.iter().filter(|f| f.0 == k as u32) {
                    ops.push(Op::Calls { stack, count, first });
                }
            }
            ops.push(Op::Calls { stack, count: s.1, first });
            *s = (0, 0);
        }
        self.entries.clear();
        self.full.clear();
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
            _ => {
                self.tally.flush(self.ops);
                self.rare.push(p);
                Op::Rare(self.rare.len() as u32 - 1)
            }
        };
        self.ops.push(op);
    }
}

impl<'a> FrequentVisitor<'a> for Filler<'_, 'a> {
    #[inline(always)]
    fn visit(&mut self, p: Parsed<'a>) {
        self.record(p);
    }

    #[inline(always)]
    fn call(&mut self, thread: i32, stack: i32, offset: u64) {
        let key = if thread == -1 { SKIP } else { number_key(stack) };
        self.tally.add(key, offset);
    }

    #[inline(always)]
    fn call_digits(&mut self, thread: i32, digits: u64, offset: u64) {
        let key = if thread == -1 { SKIP } else { digits };
        self.tally.add(key, offset);
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
    tally: CallTally,
}

impl<'a> Chunk<'a> {
    /// Fills the chunk from a reader (reusing its vectors).
    pub(crate) fn fill(&mut self, r: &mut RecordReader<'a>) {
        self.start = r.offset();
        self.state = r.initial_state();
        self.ops.clear();
        self.rare.clear();
        let mut f = Filler { ops: &mut self.ops, rare: &mut self.rare, tally: &mut self.tally };
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

    #[test]
    fn calls_counted_per_run_in_first_occurrence_order() {
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
    fn full_counts_and_a_growing_table_keep_the_order() {
        // More ids than the first table holds, each called three times, and
        // a count limit of two.
        let ids: Vec<i32> = (0..10_000).map(|k| (k * 7919) % 100_003 - 50).collect();
        let mut data = Vec::new();
        for round in 0..3 {
            for &id in &ids {
                data.extend_from_slice(format!("c {} {id}\n", 1 + round % 2).as_bytes());
            }
        }
        data.extend_from_slice(&[b'\n'; 100]);
        let mut c = Chunk::default();
        c.tally.limit = 2;
        c.fill(&mut RecordReader::new(&data));
        // Per id: a full count of two (from its first call), then one.
        let mut want = Vec::new();
        let offsets: Vec<u64> = RecordReader::new(&data).map(|p| p.offset).collect();
        for (k, &id) in ids.iter().enumerate() {
            want.push(Op::Calls { stack: id, count: 2, first: offsets[k] });
            want.push(Op::Calls { stack: id, count: 1, first: offsets[2 * ids.len() + k] });
        }
        assert_eq!(c.ops, want);
        c.tally.limit = u32::MAX;
        c.fill(&mut RecordReader::new(&data));
        let want: Vec<Op> =
            ids.iter().enumerate().map(|(k, &id)| Op::Calls { stack: id, count: 3, first: offsets[k] }).collect();
        assert_eq!(c.ops, want);
    }
}
