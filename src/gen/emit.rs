//! The simulation's only way out: every line becomes an operation for the
//! writer thread (see `pipeline.rs`), which writes it through the format
//! layer's [`LogWriter`](crate::format::LogWriter). Lines are counted by
//! kind on the way.

use super::pipeline::{Batch, Def, Op};
use crate::format::records::{AssemblyLoad, Call, GenerationRange, StackDef};
use crate::format::{Address, FunctionId, Kind, ModuleId, Record, StackId, ThreadId, TypeId};
use std::io;
use std::sync::mpsc::{Receiver, SyncSender};

/// Sends records to the writer thread in batches, counting them by kind.
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
    fn push(&mut self, kind: Kind, op: Op) -> io::Result<()> {
        self.counts[kind.index()] += 1;
        self.batch.ops.push(op);
        if self.batch.is_full() {
            self.send()?;
        }
        Ok(())
    }

    #[cold]
    fn send(&mut self) -> io::Result<()> {
        let next = self.recycle.try_recv().unwrap_or_else(|_| Batch::new());
        let full = std::mem::replace(&mut self.batch, next);
        self.tx.send(full).map_err(|_| stopped())
    }

    /// Writes a small record (`c`, `u`, `v`, `l`, `h`, `j`, `e`, `g`;
    /// others are ignored: they have their own methods).
    #[inline]
    pub fn record(&mut self, r: Record<'static>) -> io::Result<()> {
        let op = match r {
            Record::Call(c) => Op::Call(c),
            Record::Moved(m) => Op::Moved(m),
            Record::Survived(v) => Op::Survived(v),
            Record::Finalizer(l) => Op::Finalizer(l),
            Record::HandleCreated(h) => Op::HandleCreated(h),
            Record::HandleDestroyed(j) => Op::HandleDestroyed(j),
            Record::Root(e) => Op::Root(e),
            Record::GcCounts(g) => Op::GcCounts(g),
            Record::Alloc(a) => Op::Alloc { thread: a.thread.unwrap_or(ThreadId(0)), stack: a.stack, address: a.address.0 },
            Record::Tick(t) => Op::Tick(t.ms),
            _ => return Ok(()),
        };
        self.push(r.kind(), op)
    }

    /// Writes an `!` line.
    #[inline]
    pub fn alloc(&mut self, thread: ThreadId, address: u64, stack: StackId) -> io::Result<()> {
        self.push(Kind::Alloc, Op::Alloc { thread, stack, address })
    }

    /// Writes a `c` line.
    #[inline]
    pub fn call(&mut self, thread: ThreadId, stack: StackId) -> io::Result<()> {
        self.push(Kind::Call, Op::Call(Call { thread, stack }))
    }

    /// Writes an `i` line.
    #[inline]
    pub fn tick(&mut self, ms: u32) -> io::Result<()> {
        self.push(Kind::Tick, Op::Tick(ms))
    }

    /// Writes an `n` line.
    pub fn stack_def(&mut self, def: &StackDef<'_>) -> io::Result<()> {
        let start = self.batch.funcs.len();
        self.batch.funcs.extend(def.frames.iter());
        let frames = start as u32..self.batch.funcs.len() as u32;
        let op =
            self.batch.def(Def::Stack { id: def.id, flag: def.flag, alloc: def.alloc, reference: def.reference, frames });
        self.push(Kind::Stack, op)
    }

    /// Writes a `b` line.
    pub fn gc_boundary(&mut self, is_start: bool, induced: bool, condemned: i32, ranges: &[GenerationRange]) -> io::Result<()> {
        let ranges = self.batch.ranges(ranges);
        let op = self.batch.def(Def::Gc { is_start, induced, condemned, ranges });
        self.push(Kind::GcBoundary, op)
    }

    /// Writes an `o` line.
    pub fn heap_object(&mut self, address: Address, type_id: TypeId, size: u32, refs: &[Address]) -> io::Result<()> {
        let refs = self.batch.addrs(refs);
        self.push(Kind::HeapObject, Op::Object { address: address.0, type_id, size, refs })
    }

    /// Writes an `r` line.
    pub fn roots(&mut self, addresses: &[Address]) -> io::Result<()> {
        let a = self.batch.addrs(addresses);
        self.push(Kind::Roots, Op::Roots(a))
    }

    /// Writes a `y` line.
    pub fn assembly(&mut self, load: &AssemblyLoad<'_>) -> io::Result<()> {
        let name = self.batch.text(&String::from_utf8_lossy(load.name));
        let op = self.batch.def(Def::Assembly { thread: load.thread, assembly: load.assembly, name });
        self.push(Kind::Assembly, op)
    }

    /// Writes a `t` line.
    pub fn type_def(&mut self, id: TypeId, finalizable: bool, name: &str) -> io::Result<()> {
        let name = self.batch.text(name);
        let op = self.batch.def(Def::Type { id, finalizable, name });
        self.push(Kind::Type, op)
    }

    /// Writes an `f` line.
    #[allow(clippy::too_many_arguments)]
    pub fn function_def(
        &mut self,
        id: FunctionId,
        name: &str,
        signature: &str,
        address: Address,
        size: u32,
        module: ModuleId,
        stack: StackId,
    ) -> io::Result<()> {
        let name = self.batch.text(name);
        let signature = self.batch.text(signature);
        let op = self.batch.def(Def::Function { id, name, signature, address, size, module, stack });
        self.push(Kind::Function, op)
    }

    /// Writes an `m` line.
    pub fn module_load(&mut self, id: ModuleId, path: &str, address: Address, stack: StackId) -> io::Result<()> {
        let path = self.batch.text(path);
        let op = self.batch.def(Def::Module { id, path, address, stack });
        self.push(Kind::Module, op)
    }

    /// Writes a `z` line.
    pub fn comment(&mut self, text: &str) -> io::Result<()> {
        let t = self.batch.text(text);
        self.push(Kind::Comment, Op::Comment((t.start, t.end)))
    }

    /// Lines written of one kind.
    pub fn count(&self, kind: Kind) -> u64 {
        self.counts[kind.index()]
    }

    /// Sends what is left; the writer thread finishes when the emitter is
    /// dropped.
    pub fn finish(mut self) -> io::Result<()> {
        if !self.batch.ops.is_empty() {
            let full = std::mem::take(&mut self.batch);
            self.tx.send(full).map_err(|_| stopped())?;
        }
        Ok(())
    }
}

/// Runs `f` with an emitter and returns the text it wrote (for tests).
#[cfg(test)]
pub fn capture(style: crate::format::Style, f: impl FnOnce(&mut Emitter)) -> String {
    use super::pipeline::{write_batches, QUEUE};
    use crate::format::LogWriter;
    use std::sync::mpsc::sync_channel;
    let (tx, rx) = sync_channel(QUEUE);
    let (rtx, rrx) = sync_channel(QUEUE);
    let bytes = std::thread::scope(|s| {
        let writer = s.spawn(move || write_batches(LogWriter::new(Vec::new(), style), rx, rtx));
        let mut e = Emitter::new(tx, rrx);
        f(&mut e);
        e.finish().unwrap();
        writer.join().unwrap().unwrap().0
    });
    String::from_utf8(bytes).unwrap()
}
