//! Two cores, two stages: the simulation produces events, the profiler
//! stage turns them into log lines.
//!
//! Like CLRProfiler, which runs inside the process it profiles, the
//! generator splits the work: the simulation (threads, calls, allocation,
//! the heap, GCs) runs on the calling thread and reports *events* (a
//! function entered, an object allocated, a handle created) together with
//! the GC records it writes itself; a second thread plays the profiler: it
//! interns call paths and stacks, writes the definitions (`n`, `f`, `m`,
//! `y`, `t`) before their first use, and formats every line through the
//! format layer's [`LogWriter`](clrprof::format::LogWriter). Events travel
//! in [`Batch`]es of 32-byte [`Op`]s through a bounded channel and come
//! back empty for reuse. One producer, one consumer, in order: the bytes
//! are exactly those a single thread would write.

use clrprof::format::records::{FinalizerQueued, GcCounts, GenerationRange, Moved, Root, Survived};
use clrprof::format::{Address, FunctionId, TypeId};
use std::ops::Range;

/// Operations per batch (a batch of 32-byte operations stays small enough
/// not to push the simulation's tables out of the cache).
pub const BATCH_OPS: usize = 16384;
/// Batches in flight between the threads.
pub const QUEUE: usize = 4;

/// One event or record, in 32 bytes. `thread` is an index into the
/// program's threads.
#[derive(Clone, Copy, Debug)]
pub enum Op {
    /// The runtime starts: `f 0 NATIVE FUNCTION`, and module 0 loads on
    /// the main thread with the empty stack.
    Start,
    /// A thread returns from its `pops` innermost functions, then calls
    /// function `func` (id `id`): jitted on first use, a `c` line with
    /// call logging.
    Enter {
        /// Thread index.
        thread: u32,
        /// Function index in the program.
        func: u32,
        /// Its id.
        id: FunctionId,
        /// Returns before the call.
        pops: u16,
    },
    /// A thread returns from its `pops` innermost functions.
    Return {
        /// Thread index.
        thread: u32,
        /// Returns.
        pops: u16,
    },
    /// `!`: an object allocated on a thread (its type's `t` line and its
    /// stack's `n` line first, when new).
    Alloc {
        /// Thread index.
        thread: u32,
        /// Type index in the program.
        ty: u32,
        /// Type id.
        type_id: TypeId,
        /// Size in bytes.
        size: u32,
        /// Address.
        address: u64,
    },
    /// `h`: a handle created on a thread (the stack is the thread's).
    HandleCreated {
        /// Thread index.
        thread: u32,
        /// Handle id.
        handle: u64,
        /// The object it refers to (0: none).
        initial: u64,
    },
    /// `j`: a handle destroyed on a thread.
    HandleDestroyed {
        /// Thread index.
        thread: u32,
        /// Handle id.
        handle: u64,
    },
    /// `i`.
    Tick(u32),
    /// `u`.
    Moved(Moved),
    /// `v`.
    Survived(Survived),
    /// `l`.
    Finalizer(FinalizerQueued),
    /// `e`.
    Root(Root),
    /// `g`.
    GcCounts(GcCounts),
    /// `b`: an entry of the batch's `gcs`.
    Gc(u32),
    /// `o`: references in `addrs`.
    Object {
        /// The object.
        address: u64,
        /// Its type.
        type_id: TypeId,
        /// Its size.
        size: u32,
        /// Referenced objects (range of `addrs`).
        refs: (u32, u32),
    },
    /// `r`: roots in `addrs`.
    Roots((u32, u32)),
    /// `z`: text in `text`.
    Comment((u32, u32)),
}

/// A `b` line.
#[derive(Clone, Debug)]
pub struct GcLine {
    /// Start (true) or end.
    pub is_start: bool,
    /// Induced.
    pub induced: bool,
    /// Condemned generation.
    pub condemned: i32,
    /// Generation ranges (range of `ranges`).
    pub ranges: Range<u32>,
}

/// Operations and the side tables and arenas they refer to.
#[derive(Default)]
pub struct Batch {
    /// The operations, in log order.
    pub ops: Vec<Op>,
    /// `b` lines.
    pub gcs: Vec<GcLine>,
    /// Generation ranges.
    pub ranges: Vec<GenerationRange>,
    /// Addresses (references, roots).
    pub addrs: Vec<Address>,
    /// Texts.
    pub text: String,
}

impl Batch {
    /// An empty batch with room for a full load.
    pub fn new() -> Batch {
        Batch { ops: Vec::with_capacity(BATCH_OPS + 64), ..Batch::default() }
    }

    /// Empties the batch, keeping its memory.
    pub fn clear(&mut self) {
        self.ops.clear();
        self.gcs.clear();
        self.ranges.clear();
        self.addrs.clear();
        self.text.clear();
    }

    /// Copies addresses into the arena.
    pub fn addrs(&mut self, a: &[Address]) -> (u32, u32) {
        let start = self.addrs.len();
        self.addrs.extend_from_slice(a);
        (start as u32, self.addrs.len() as u32)
    }

    /// Copies a text into the arena.
    pub fn text(&mut self, s: &str) -> (u32, u32) {
        let start = self.text.len();
        self.text.push_str(s);
        (start as u32, self.text.len() as u32)
    }

    /// True when the batch should be sent.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.ops.len() >= BATCH_OPS || self.addrs.len() >= BATCH_OPS * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_stay_small() {
        assert!(std::mem::size_of::<Op>() <= 32, "{}", std::mem::size_of::<Op>());
    }
}
