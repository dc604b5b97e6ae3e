//! StackBlocks: interned stacks, referred to by [`StackId`] from events.
//!
//! ```text
//! <FirstId:i32> <Count:i32> { <Size:i32> <Size bytes: Size/PointerSize instruction pointers> } * Count
//! ```
//! Ids run on from `FirstId`. An event may refer only to stacks written
//! since the last sequence point, so the reader keeps only those (as
//! ranges of the input, not copies).

use super::cursor::Cursor;
use super::error::Error;
use super::ids::StackId;

/// A stack: its instruction pointers, innermost first, borrowed from the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stack<'a> {
    bytes: &'a [u8],
    pointer_size: u32,
}

impl<'a> Stack<'a> {
    pub(crate) fn new(bytes: &'a [u8], pointer_size: u32) -> Self {
        Stack { bytes, pointer_size }
    }
    /// An empty stack.
    pub fn empty() -> Self {
        Stack { bytes: &[], pointer_size: 8 }
    }
    /// How many frames.
    #[inline]
    pub fn len(&self) -> usize {
        self.bytes.len() / self.pointer_size as usize
    }
    /// No frame.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The stack's bytes (its instruction pointers), borrowed from the
    /// trace: two events whose stacks are the same bytes of the trace
    /// have the same stack.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }
    /// The instruction pointers, innermost (the event's site) first.
    pub fn frames(&self) -> impl Iterator<Item = u64> + 'a {
        let p = self.pointer_size as usize;
        self.bytes.chunks_exact(p).map(move |c| {
            let mut b = [0u8; 8];
            b[..p].copy_from_slice(c);
            u64::from_le_bytes(b)
        })
    }
}

/// The stacks of the current sequence-point region, as ranges of the input.
#[derive(Debug, Default)]
pub(crate) struct StackCache {
    first: u32,
    ranges: Vec<(usize, usize)>,
}

impl StackCache {
    /// Adds the stacks of a block whose body starts at input index `body_start`.
    pub(crate) fn add_block(&mut self, body: &[u8], body_start: usize, body_offset: u64) -> Result<(), Error> {
        let mut c = Cursor::new(body, body_offset);
        let first = c.u32("a stack block's first id")?;
        let at = c.offset();
        let count = c.u32("a stack block's stack count")? as usize;
        if count > c.remaining() / 4 {
            return Err(Error::invalid(at, "a stack count that fits the block", count as u64));
        }
        if first != self.first.wrapping_add(self.ranges.len() as u32) {
            self.ranges.clear();
            self.first = first;
        }
        self.ranges.reserve(count);
        for _ in 0..count {
            let size = c.u32("a stack's size")? as usize;
            let start = body_start + c.pos();
            c.skip(size, "a stack's frames")?;
            self.ranges.push((start, size));
        }
        Ok(())
    }
    /// Forgets every stack (at a sequence point).
    pub(crate) fn clear(&mut self) {
        self.first = self.first.wrapping_add(self.ranges.len() as u32);
        self.ranges.clear();
    }
    /// The range of a stack, if it is in the current region.
    pub(crate) fn get(&self, id: StackId) -> Option<(usize, usize)> {
        let i = id.0.wrapping_sub(self.first) as usize;
        self.ranges.get(i).copied()
    }
}
