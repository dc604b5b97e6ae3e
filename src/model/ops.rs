//! The loader's compact record stream.
//!
//! The parsing threads turn each chunk of the log into a vector of [`Op`]s
//! that the simulation thread reads: the frequent records (allocations,
//! moves, ticks, calls) in 24 bytes each, every other record as an index
//! into a side vector of parsed records. The simulation thread reads what
//! another core wrote, so the fewer cache lines the better. Record offsets
//! are kept only for the side records; an error in a frequent record finds
//! its offset again by parsing its chunk once more.

use crate::format::{DumpState, Parsed, Record, RecordReader};

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
    /// `c`.
    Call { thread: i32, stack: i32 },
    /// Any other record: its index in [`Chunk::rare`].
    Rare(u32),
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
}

impl<'a> Chunk<'a> {
    /// Fills the chunk from a reader (reusing its vectors).
    pub(crate) fn fill(&mut self, r: &mut RecordReader<'a>) {
        self.start = r.offset();
        self.state = r.initial_state();
        self.ops.clear();
        self.rare.clear();
        for p in r {
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
                Record::Call(c) => Op::Call { thread: c.thread.0, stack: c.stack.0 },
                _ => {
                    self.rare.push(p);
                    Op::Rare(self.rare.len() as u32 - 1)
                }
            };
            self.ops.push(op);
        }
    }

    /// The offset of the `k`-th record of the chunk (parses it again).
    pub(crate) fn offset_of(&self, data: &'a [u8], k: usize) -> u64 {
        let r = RecordReader::range_with_state(data, self.start, data.len(), self.state);
        r.take(k + 1).last().map_or(self.start as u64, |p| p.offset)
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
        let data = b"t 1 0 T\nn 1 1 1 16\n! 5 0x1000 1\ni 7\nu 0x1000 0x2000 16\n";
        let mut c = Chunk::default();
        let mut r = RecordReader::new(data);
        c.fill(&mut r);
        assert_eq!(c.ops.len(), 5);
        assert_eq!(c.rare.len(), 2);
        assert_eq!(c.offset_of(data, 2), 19);
        assert_eq!(c.ops[3], Op::Tick { ms: 7, offset: 32 });
    }
}
