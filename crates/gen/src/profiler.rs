//! The profiler stage: what CLRProfiler's profiler does inside the
//! process, done on the generator's second thread.
//!
//! It receives the simulation's events in order (see `pipeline.rs`),
//! keeps each thread's call path as a node of the stack trie, interns
//! stacks (`stacks.rs`) with each thread's last stack as the reference for
//! prefix compression, writes definitions before their first use
//! (`loader.rs`), and formats every line through the format layer's
//! [`LogWriter`].
//!
//! A batch is handled in windows of [`WINDOW`] operations, each in two
//! passes. The first follows every thread's call path through the window,
//! noting the node of each event and asking the CPU to fetch the
//! allocation-stack slot each allocation will look up; the second writes
//! the lines. The lookups, which would otherwise wait for memory one after
//! another, then find their data in cache (windows are small enough that
//! the fetched lines are still there; measured at the `seed` scale).

use super::error::GenError;
use super::loader::Loader;
use super::pipeline::{Batch, Op};
use super::program::Program;
use super::stacks::{Latest, StackTable, ROOT};
use super::truth::StackTruth;
use clrprof::format::records::{Alloc, Call, GcBoundary, HandleCreated, HandleDestroyed, HeapObject, Roots, Tick};
use clrprof::format::{Address, HandleId, Kind, List, LogWriter, Record, Style, ThreadId};
use std::io::Write;
use std::sync::mpsc::{Receiver, SyncSender};

/// Operations located (and prefetched) before they are written.
const WINDOW: usize = 1024;

/// A thread as the profiler sees it.
struct Thread {
    os: ThreadId,
    /// Trie nodes of the thread's call path, outermost first.
    nodes: Vec<u32>,
    /// The stack the thread used last.
    latest: Option<Latest>,
}

impl Thread {
    #[inline]
    fn node(&self) -> u32 {
        self.nodes.last().copied().unwrap_or(ROOT)
    }
}

/// What the profiler stage reports when the log is complete.
pub struct ProfilerReport<W> {
    /// The underlying writer, flushed.
    pub writer: W,
    /// Bytes written.
    pub bytes: u64,
    /// Lines written per kind.
    pub counts: [u64; Kind::COUNT],
    /// Stack definitions.
    pub stacks: StackTruth,
}

/// The profiler stage.
pub struct Profiler<'p, W: Write> {
    out: LogWriter<W>,
    program: &'p Program,
    calls: bool,
    stacks: StackTable,
    loader: Loader,
    threads: Vec<Thread>,
    /// The node of each operation of the current batch (first pass).
    at: Vec<u32>,
}

impl<'p, W: Write> Profiler<'p, W> {
    /// A profiler writing to `out` for `program`; `calls` turns on call
    /// logging.
    pub fn new(out: W, style: Style, program: &'p Program, calls: bool, bits: super::options::PointerBits) -> Self {
        Profiler {
            out: LogWriter::new(out, style),
            program,
            calls,
            stacks: StackTable::new(),
            loader: Loader::new(program, bits),
            threads: program.threads.iter().map(|&os| Thread { os, nodes: Vec::new(), latest: None }).collect(),
            at: Vec::new(),
        }
    }

    /// Writes batches until the channel closes, returning each emptied
    /// batch for reuse.
    pub fn run(mut self, batches: Receiver<Batch>, recycle: SyncSender<Batch>) -> Result<ProfilerReport<W>, GenError> {
        for mut batch in batches {
            self.write(&batch)?;
            batch.clear();
            // The simulation may have finished and stopped taking batches.
            let _ = recycle.try_send(batch);
        }
        let bytes = self.out.bytes_written();
        let counts = self.out.record_counts();
        let stacks = StackTruth {
            distinct_n_lines: counts[Kind::Stack.index()],
            allocation_stacks: self.stacks.allocation_stacks(),
            call_stacks: self.stacks.call_stacks(),
            trie_nodes: self.stacks.trie_nodes(),
        };
        Ok(ProfilerReport { writer: self.out.into_inner()?, bytes, counts, stacks })
    }

    /// Follows the threads' call paths through some operations: the node of
    /// each, in `at`; prefetches allocation-stack slots.
    fn locate(&mut self, ops: &[Op]) -> Result<(), GenError> {
        self.at.clear();
        for op in ops {
            let node = match *op {
                Op::Enter { thread, id, pops, .. } => {
                    let th = &mut self.threads[thread as usize];
                    let keep = th.nodes.len().saturating_sub(pops as usize);
                    th.nodes.truncate(keep);
                    let child = self.stacks.child(th.node(), id)?;
                    th.nodes.push(child);
                    child
                }
                Op::Return { thread, pops } => {
                    let th = &mut self.threads[thread as usize];
                    let keep = th.nodes.len().saturating_sub(pops as usize);
                    th.nodes.truncate(keep);
                    th.node()
                }
                Op::Alloc { thread, ty, size, .. } => {
                    let node = self.threads[thread as usize].node();
                    self.stacks.prefetch_alloc(node, ty, size);
                    node
                }
                Op::HandleCreated { thread, .. } | Op::HandleDestroyed { thread, .. } => {
                    self.threads[thread as usize].node()
                }
                _ => ROOT,
            };
            self.at.push(node);
        }
        Ok(())
    }

    /// Writes one batch.
    pub fn write(&mut self, b: &Batch) -> Result<(), GenError> {
        for start in (0..b.ops.len()).step_by(WINDOW) {
            let ops = &b.ops[start..(start + WINDOW).min(b.ops.len())];
            self.locate(ops)?;
            self.write_window(b, ops)?;
        }
        Ok(())
    }

    /// Writes the lines of some operations of a batch, located.
    fn write_window(&mut self, b: &Batch, ops: &[Op]) -> Result<(), GenError> {
        for (k, op) in ops.iter().enumerate() {
            let node = self.at[k];
            match *op {
                Op::Alloc { thread, ty, type_id, size, address } => {
                    self.loader.define_type(ty as usize, type_id, self.program, &mut self.out)?;
                    let th = &mut self.threads[thread as usize];
                    let stack = self.stacks.alloc_stack(node, ty, type_id, size, &mut th.latest, &mut self.out)?;
                    self.out.record(&Record::Alloc(Alloc { thread: Some(th.os), address: Address(address), stack }))?;
                }
                Op::Enter { thread, func, id, .. } => {
                    let th = &mut self.threads[thread as usize];
                    if !self.loader.jitted(func as usize) {
                        let caller = self.stacks.parent(node);
                        let caller = self.stacks.call_stack(caller, &mut th.latest, &mut self.out)?;
                        self.loader.jit(func as usize, id, self.program, th.os, caller, &mut self.out)?;
                    }
                    if self.calls {
                        let stack = self.stacks.call_stack(node, &mut th.latest, &mut self.out)?;
                        self.out.record(&Record::Call(Call { thread: th.os, stack }))?;
                    }
                }
                Op::Return { .. } => {}
                Op::Tick(ms) => self.out.record(&Record::Tick(Tick { ms }))?,
                Op::Moved(m) => self.out.record(&Record::Moved(m))?,
                Op::Survived(v) => self.out.record(&Record::Survived(v))?,
                Op::Finalizer(l) => self.out.record(&Record::Finalizer(l))?,
                Op::Root(e) => self.out.record(&Record::Root(e))?,
                Op::GcCounts(g) => self.out.record(&Record::GcCounts(g))?,
                Op::Gc(k) => {
                    let g = &b.gcs[k as usize];
                    let ranges = &b.ranges[g.ranges.start as usize..g.ranges.end as usize];
                    self.out.record(&Record::GcBoundary(GcBoundary {
                        is_start: g.is_start,
                        induced: g.induced,
                        condemned: g.condemned,
                        ranges: List::Items(ranges),
                    }))?;
                }
                Op::Object { address, type_id, size, refs } => self.out.record(&Record::HeapObject(HeapObject {
                    address: Address(address),
                    type_id,
                    size,
                    refs: List::Items(&b.addrs[refs.0 as usize..refs.1 as usize]),
                }))?,
                Op::Roots(a) => self.out.record(&Record::Roots(Roots {
                    addresses: List::Items(&b.addrs[a.0 as usize..a.1 as usize]),
                }))?,
                Op::Comment(t) => self.out.comment(&b.text[t.0 as usize..t.1 as usize])?,
                Op::HandleCreated { thread, handle, initial } => {
                    let th = &mut self.threads[thread as usize];
                    let stack = self.stacks.call_stack(node, &mut th.latest, &mut self.out)?;
                    self.out.record(&Record::HandleCreated(HandleCreated {
                        thread: th.os,
                        handle: HandleId(handle),
                        initial: Address(initial),
                        stack,
                    }))?;
                }
                Op::HandleDestroyed { thread, handle } => {
                    let th = &mut self.threads[thread as usize];
                    let stack = self.stacks.call_stack(node, &mut th.latest, &mut self.out)?;
                    self.out.record(&Record::HandleDestroyed(HandleDestroyed {
                        thread: th.os,
                        handle: HandleId(handle),
                        stack,
                    }))?;
                }
                Op::Start => {
                    self.loader.native_function(&mut self.out)?;
                    let th = &mut self.threads[0];
                    let stack = self.stacks.call_stack(ROOT, &mut th.latest, &mut self.out)?;
                    self.loader.ensure_module(0, self.program, th.os, stack, &mut self.out)?;
                }
            }
        }
        Ok(())
    }
}
