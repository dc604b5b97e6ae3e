//! Two cores, two stages: the simulation produces records, a writer thread
//! formats them.
//!
//! Formatting a line costs about as much as simulating the allocation it
//! reports, so the generator runs the format layer's [`LogWriter`] on a
//! second thread. The simulation appends compact operations to a
//! [`Batch`] (fixed-size records by value, lists and names in arenas
//! beside them); full batches go through a bounded channel to the writer
//! thread, which turns each operation back into a [`Record`] and calls
//! [`LogWriter::record`] (or its `type_def`/`function_def`/`module_load`/
//! `comment` helpers) in order, then sends the emptied batch back for
//! reuse. One producer, one consumer, in order: the bytes are the same as
//! writing directly.

use crate::format::records::{
    Alloc, AssemblyLoad, Call, FinalizerQueued, GcBoundary, GcCounts, GenerationRange, HandleCreated, HandleDestroyed,
    HeapObject, Moved, Root, Roots, StackDef, Survived, Tick,
};
use crate::format::{Address, FunctionId, List, LogWriter, ModuleId, Record, StackId, ThreadId, TypeId};
use std::io::{self, Write};
use std::ops::Range;
use std::sync::mpsc::{Receiver, SyncSender};

/// Operations per batch (a batch of 32-byte operations stays small enough
/// not to push the simulation's tables out of the cache).
pub const BATCH_OPS: usize = 4096;
/// Batches in flight between the threads.
pub const QUEUE: usize = 4;

/// A record to write, in 32 bytes: small records by value, the others as
/// indices into the batch's side tables and arenas.
#[derive(Clone, Copy, Debug)]
pub enum Op {
    /// `!`.
    Alloc {
        /// Thread.
        thread: ThreadId,
        /// Allocation stack.
        stack: StackId,
        /// Object address.
        address: u64,
    },
    /// `c`.
    Call(Call),
    /// `i`.
    Tick(u32),
    /// `u`.
    Moved(Moved),
    /// `v`.
    Survived(Survived),
    /// `l`.
    Finalizer(FinalizerQueued),
    /// `h`.
    HandleCreated(HandleCreated),
    /// `j`.
    HandleDestroyed(HandleDestroyed),
    /// `e`.
    Root(Root),
    /// `g`.
    GcCounts(GcCounts),
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
    /// `n`, `b`, `t`, `f`, `m` or `y`: an entry of `defs`.
    Def(u32),
}

/// A record with lists or names (rare, so kept out of [`Op`]).
#[derive(Clone, Debug)]
pub enum Def {
    /// `n`: frames in `funcs`.
    Stack {
        /// Stack id.
        id: StackId,
        /// The flag as written.
        flag: i32,
        /// Type and size of an allocation stack.
        alloc: Option<(TypeId, i32)>,
        /// The reference stack.
        reference: Option<StackId>,
        /// Frames (range of `funcs`).
        frames: Range<u32>,
    },
    /// `b`: ranges in `ranges`.
    Gc {
        /// Start (true) or end.
        is_start: bool,
        /// Induced.
        induced: bool,
        /// Condemned generation.
        condemned: i32,
        /// Generation ranges (range of `ranges`).
        ranges: Range<u32>,
    },
    /// `y`: name in `text`.
    Assembly {
        /// Loading thread.
        thread: ThreadId,
        /// Assembly id.
        assembly: u64,
        /// Name (range of `text`).
        name: Range<u32>,
    },
    /// `t`: name in `text`.
    Type {
        /// Type id.
        id: TypeId,
        /// Has a finalizer.
        finalizable: bool,
        /// Name (range of `text`).
        name: Range<u32>,
    },
    /// `f`: name and signature in `text`.
    Function {
        /// Function id.
        id: FunctionId,
        /// Name (range of `text`).
        name: Range<u32>,
        /// Signature (range of `text`).
        signature: Range<u32>,
        /// Code address.
        address: Address,
        /// Code size.
        size: u32,
        /// Module.
        module: ModuleId,
        /// Stack at the first call.
        stack: StackId,
    },
    /// `m`: path in `text`.
    Module {
        /// Module id.
        id: ModuleId,
        /// Path (range of `text`).
        path: Range<u32>,
        /// Load address.
        address: Address,
        /// Stack at load.
        stack: StackId,
    },
}

/// Operations and the side tables and arenas they refer to.
#[derive(Default)]
pub struct Batch {
    /// The operations, in log order.
    pub ops: Vec<Op>,
    /// Records with lists or names.
    pub defs: Vec<Def>,
    /// Stack frames.
    pub funcs: Vec<FunctionId>,
    /// Generation ranges.
    pub ranges: Vec<GenerationRange>,
    /// Addresses (references, roots).
    pub addrs: Vec<Address>,
    /// Names and texts.
    pub text: String,
}

fn span(start: usize, end: usize) -> Range<u32> {
    start as u32..end as u32
}

impl Batch {
    /// An empty batch with room for a full load.
    pub fn new() -> Batch {
        Batch { ops: Vec::with_capacity(BATCH_OPS + 64), ..Batch::default() }
    }

    /// Empties the batch, keeping its memory.
    pub fn clear(&mut self) {
        self.ops.clear();
        self.defs.clear();
        self.funcs.clear();
        self.ranges.clear();
        self.addrs.clear();
        self.text.clear();
    }

    /// Adds a record with lists or names; returns its operation.
    pub fn def(&mut self, d: Def) -> Op {
        self.defs.push(d);
        Op::Def((self.defs.len() - 1) as u32)
    }

    /// Copies generation ranges into the arena.
    pub fn ranges(&mut self, r: &[GenerationRange]) -> Range<u32> {
        let start = self.ranges.len();
        self.ranges.extend_from_slice(r);
        span(start, self.ranges.len())
    }

    /// Copies addresses into the arena.
    pub fn addrs(&mut self, a: &[Address]) -> (u32, u32) {
        let start = self.addrs.len();
        self.addrs.extend_from_slice(a);
        (start as u32, self.addrs.len() as u32)
    }

    /// Copies a text into the arena.
    pub fn text(&mut self, s: &str) -> Range<u32> {
        let start = self.text.len();
        self.text.push_str(s);
        span(start, self.text.len())
    }

    /// True when the batch should be sent.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.ops.len() >= BATCH_OPS || self.addrs.len() >= BATCH_OPS * 4
    }

    /// Writes every operation, in order.
    pub fn write_to<W: Write>(&self, w: &mut LogWriter<W>) -> io::Result<()> {
        for op in &self.ops {
            match *op {
                Op::Alloc { thread, stack, address } => {
                    w.record(&Record::Alloc(Alloc { thread: Some(thread), address: Address(address), stack }))?
                }
                Op::Call(c) => w.record(&Record::Call(c))?,
                Op::Tick(ms) => w.record(&Record::Tick(Tick { ms }))?,
                Op::Moved(m) => w.record(&Record::Moved(m))?,
                Op::Survived(v) => w.record(&Record::Survived(v))?,
                Op::Finalizer(l) => w.record(&Record::Finalizer(l))?,
                Op::HandleCreated(h) => w.record(&Record::HandleCreated(h))?,
                Op::HandleDestroyed(j) => w.record(&Record::HandleDestroyed(j))?,
                Op::Root(e) => w.record(&Record::Root(e))?,
                Op::GcCounts(g) => w.record(&Record::GcCounts(g))?,
                Op::Object { address, type_id, size, refs } => w.record(&Record::HeapObject(HeapObject {
                    address: Address(address),
                    type_id,
                    size,
                    refs: List::Items(&self.addrs[refs.0 as usize..refs.1 as usize]),
                }))?,
                Op::Roots(a) => w.record(&Record::Roots(Roots {
                    addresses: List::Items(&self.addrs[a.0 as usize..a.1 as usize]),
                }))?,
                Op::Comment(t) => w.comment(&self.text[t.0 as usize..t.1 as usize])?,
                Op::Def(k) => self.write_def(w, &self.defs[k as usize])?,
            }
        }
        Ok(())
    }

    fn write_def<W: Write>(&self, w: &mut LogWriter<W>, d: &Def) -> io::Result<()> {
        let r = |r: &Range<u32>| r.start as usize..r.end as usize;
        match d {
            Def::Stack { id, flag, alloc, reference, frames } => w.record(&Record::Stack(StackDef {
                id: *id,
                flag: *flag,
                alloc: *alloc,
                reference: *reference,
                frames: List::Items(&self.funcs[r(frames)]),
            })),
            Def::Gc { is_start, induced, condemned, ranges } => w.record(&Record::GcBoundary(GcBoundary {
                is_start: *is_start,
                induced: *induced,
                condemned: *condemned,
                ranges: List::Items(&self.ranges[r(ranges)]),
            })),
            Def::Assembly { thread, assembly, name } => w.record(&Record::Assembly(AssemblyLoad {
                thread: *thread,
                assembly: *assembly,
                name: self.text[r(name)].as_bytes(),
            })),
            Def::Type { id, finalizable, name } => w.type_def(*id, *finalizable, &self.text[r(name)]),
            Def::Function { id, name, signature, address, size, module, stack } => {
                w.function_def(*id, &self.text[r(name)], &self.text[r(signature)], *address, *size, *module, *stack)
            }
            Def::Module { id, path, address, stack } => w.module_load(*id, &self.text[r(path)], *address, *stack),
        }
    }
}

/// The writer thread's loop: writes batches until the channel closes;
/// returns the writer and the bytes written.
pub fn write_batches<W: Write>(
    mut w: LogWriter<W>,
    batches: Receiver<Batch>,
    recycle: SyncSender<Batch>,
) -> io::Result<(W, u64)> {
    for mut batch in batches {
        batch.write_to(&mut w)?;
        batch.clear();
        // The producer may have finished and stopped taking batches back.
        let _ = recycle.try_send(batch);
    }
    let bytes = w.bytes_written();
    Ok((w.into_inner()?, bytes))
}
