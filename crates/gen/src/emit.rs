//! The simulation's only way out: events and records go, in batches, to
//! the profiler stage (see `pipeline.rs`), which writes every line
//! through the format layer's [`LogWriter`](clrprof::format::LogWriter).
//! The GC records the simulation writes itself are counted here by kind.

use super::pipeline::{Batch, GcLine, Op};
use clrprof::format::records::{FinalizerQueued, GcCounts, GenerationRange, Moved, Root, Survived};
use clrprof::format::{Address, FunctionId, Kind, TypeId};
use std::io;
use std::sync::mpsc::{Receiver, SyncSender};

/// Sends operations to the profiler stage in batches.
pub struct Emitter {
    batch: Batch,
    tx: SyncSender<Batch>,
    recycle: Receiver<Batch>,
    counts: [u64; Kind::COUNT],
}

fn stopped() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the log writer stopped")
}

impl Emitter {
    /// An emitter sending full batches to `tx` and reusing the batches
    /// that come back on `recycle`.
    pub fn new(tx: SyncSender<Batch>, recycle: Receiver<Batch>) -> Emitter {
        Emitter { batch: Batch::new(), tx, recycle, counts: [0; Kind::COUNT] }
    }

    #[inline]
    fn push(&mut self, op: Op) -> io::Result<()> {
        self.batch.ops.push(op);
        if self.batch.is_full() {
            self.send()?;
        }
        Ok(())
    }

    #[inline]
    fn push_counted(&mut self, kind: Kind, op: Op) -> io::Result<()> {
        self.counts[kind.index()] += 1;
        self.push(op)
    }

    #[cold]
    fn send(&mut self) -> io::Result<()> {
        let next = self.recycle.try_recv().unwrap_or_else(|_| Batch::new());
        let full = std::mem::replace(&mut self.batch, next);
        self.tx.send(full).map_err(|_| stopped())
    }

    /// The runtime starts.
    pub fn start(&mut self) -> io::Result<()> {
        self.push(Op::Start)
    }

    /// Thread `thread` returns `pops` times, then calls function `func`
    /// (id `id`).
    #[inline]
    pub fn enter(&mut self, thread: usize, pops: u16, func: usize, id: FunctionId) -> io::Result<()> {
        self.push(Op::Enter { thread: thread as u32, func: func as u32, id, pops })
    }

    /// Thread `thread` returns `pops` times.
    pub fn leave(&mut self, thread: usize, pops: u16) -> io::Result<()> {
        self.push(Op::Return { thread: thread as u32, pops })
    }

    /// An object allocated on thread `thread`.
    #[inline]
    pub fn alloc(&mut self, thread: usize, ty: usize, type_id: TypeId, size: u64, address: u64) -> io::Result<()> {
        self.push(Op::Alloc { thread: thread as u32, ty: ty as u32, type_id, size: size as u32, address })
    }

    /// A handle created on thread `thread`.
    pub fn handle_created(&mut self, thread: usize, handle: u64, initial: u64) -> io::Result<()> {
        self.push(Op::HandleCreated { thread: thread as u32, handle, initial })
    }

    /// A handle destroyed on thread `thread`.
    pub fn handle_destroyed(&mut self, thread: usize, handle: u64) -> io::Result<()> {
        self.push(Op::HandleDestroyed { thread: thread as u32, handle })
    }

    /// Writes an `i` line.
    #[inline]
    pub fn tick(&mut self, ms: u32) -> io::Result<()> {
        self.push(Op::Tick(ms))
    }

    /// Writes a `u` line.
    #[inline]
    pub fn moved(&mut self, m: Moved) -> io::Result<()> {
        self.push_counted(Kind::Moved, Op::Moved(m))
    }

    /// Writes a `v` line.
    #[inline]
    pub fn survived(&mut self, v: Survived) -> io::Result<()> {
        self.push_counted(Kind::Survived, Op::Survived(v))
    }

    /// Writes an `l` line.
    pub fn finalizer(&mut self, l: FinalizerQueued) -> io::Result<()> {
        self.push_counted(Kind::Finalizer, Op::Finalizer(l))
    }

    /// Writes an `e` line.
    pub fn root(&mut self, e: Root) -> io::Result<()> {
        self.push_counted(Kind::Root, Op::Root(e))
    }

    /// Writes a `g` line.
    pub fn gc_counts(&mut self, g: GcCounts) -> io::Result<()> {
        self.push_counted(Kind::GcCounts, Op::GcCounts(g))
    }

    /// Writes a `b` line.
    pub fn gc_boundary(&mut self, is_start: bool, induced: bool, condemned: i32, ranges: &[GenerationRange]) -> io::Result<()> {
        let start = self.batch.ranges.len() as u32;
        self.batch.ranges.extend_from_slice(ranges);
        let ranges = start..self.batch.ranges.len() as u32;
        self.batch.gcs.push(GcLine { is_start, induced, condemned, ranges });
        let k = (self.batch.gcs.len() - 1) as u32;
        self.push_counted(Kind::GcBoundary, Op::Gc(k))
    }

    /// Writes an `o` line.
    pub fn heap_object(&mut self, address: Address, type_id: TypeId, size: u32, refs: &[Address]) -> io::Result<()> {
        let refs = self.batch.addrs(refs);
        self.push_counted(Kind::HeapObject, Op::Object { address: address.0, type_id, size, refs })
    }

    /// Writes an `r` line.
    pub fn roots(&mut self, addresses: &[Address]) -> io::Result<()> {
        let a = self.batch.addrs(addresses);
        self.push_counted(Kind::Roots, Op::Roots(a))
    }

    /// Writes a `z` line.
    pub fn comment(&mut self, text: &str) -> io::Result<()> {
        let t = self.batch.text(text);
        self.push_counted(Kind::Comment, Op::Comment(t))
    }

    /// Lines written so far of one of the kinds the simulation writes
    /// itself (`u`, `v`, `l`, `e`, `g`, `b`, `o`, `r`, `z`).
    pub fn count(&self, kind: Kind) -> u64 {
        self.counts[kind.index()]
    }

    /// Sends what is left; the profiler stage finishes when the emitter is
    /// dropped.
    pub fn finish(mut self) -> io::Result<()> {
        if !self.batch.ops.is_empty() {
            let full = std::mem::take(&mut self.batch);
            self.tx.send(full).map_err(|_| stopped())?;
        }
        Ok(())
    }
}
