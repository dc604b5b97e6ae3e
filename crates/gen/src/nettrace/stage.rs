//! The tracing stage: what the runtime's EventPipe would write for the
//! simulated process, done on the generator's second thread in place of
//! the CLRProfiler profiler stage.
//!
//! It follows every thread's call path through the simulation's
//! operations (see `pipeline.rs`) and writes:
//!
//! - `Loader/ModuleLoad` when a module's first function is jitted, and
//!   `Method/LoadVerbose` when a function is first called (its code
//!   range names the stack frames that fall in it);
//! - `GC/AllocationTick` when a thread's allocations of one kind (small
//!   or large objects) since its last tick reach the sampling threshold
//!   (every object with a threshold of 0), with the thread's stack:
//!   instruction pointers inside the functions of the call path;
//! - `GC/Start`, `GC/Stop` and `GC/HeapStats` for every GC (generation
//!   sizes from the heap's ranges, promoted bytes from the survivors).
//!
//! Time runs with allocation (the options' allocation rate), never slower
//! than the simulation's millisecond ticks.

use super::events::{self, AllocationTick, HeapStats, MethodLoad, Payload};
use super::writer::{EventOut, KindDef, NetTraceWriter};
use super::NetTraceCounts;
use crate::error::GenError;
use crate::options::PointerBits;
use crate::pipeline::{Batch, Op};
use crate::program::Program;
use crate::types::LARGE_OBJECT_BYTES;
use clrprof::eventpipe::{MetadataId, ThreadId, Timestamp};
use clrprof::format::records::GenerationRange;
use std::io::Write;
use std::sync::mpsc::{Receiver, SyncSender};

/// Processors of the simulated machine.
pub const PROCESSORS: u32 = 4;

struct Thread {
    os: u64,
    /// Function indices of the call path, outermost first.
    funcs: Vec<u32>,
    /// Bytes since the last tick: small objects, large objects.
    since_tick: [u64; 2],
}

/// Addresses of the simulated runtime's structures.
struct Layout {
    code: u64,
    method_descs: u64,
    method_tables: u64,
}

impl Layout {
    fn new(bits: PointerBits) -> Self {
        match bits {
            PointerBits::Bits32 => Layout { code: 0x0561_0000, method_descs: 0x0480_0000, method_tables: 0x0520_0000 },
            PointerBits::Bits64 => {
                Layout { code: 0x7FFD_9A71_0000, method_descs: 0x7FFD_9B80_0000, method_tables: 0x7FFD_9C40_0000 }
            }
        }
    }
}

/// The event kinds, each defined at its first use.
#[derive(Default)]
struct Kinds {
    tick: Option<MetadataId>,
    gc_start: Option<MetadataId>,
    gc_stop: Option<MetadataId>,
    heap_stats: Option<MetadataId>,
    method: Option<MetadataId>,
    module: Option<MetadataId>,
}

fn kind<W: Write>(slot: &mut Option<MetadataId>, def: &KindDef, w: &mut NetTraceWriter<W>) -> MetadataId {
    *slot.get_or_insert_with(|| w.define(def))
}

/// The GC in progress.
#[derive(Default)]
struct GcState {
    count: u32,
    depth: u32,
    /// The generations' ranges when it started (to find a survivor's generation).
    before: Vec<GenerationRange>,
    promoted: [u64; 4],
    finalized: u64,
}

/// The tracing stage.
pub struct Tracer<'p, W: Write> {
    out: NetTraceWriter<W>,
    program: &'p Program,
    ptr: usize,
    tick_bytes: u64,
    layout: Layout,
    threads: Vec<Thread>,
    /// Code start of each function, 0 until jitted.
    code: Vec<u64>,
    code_cursor: u64,
    modules_loaded: Vec<bool>,
    kinds: Kinds,
    gc: GcState,
    handles: u32,
    /// The thread that allocated last (GCs happen on it).
    last_thread: usize,
    now_ns: f64,
    ns_per_byte: f64,
    start_ns: i64,
    ticks: Option<(u32, u64)>,
    frames: Vec<u64>,
    payload: Vec<u8>,
    counts: NetTraceCounts,
}

impl<'p, W: Write> Tracer<'p, W> {
    /// A stage writing to `out` for `program`; allocation ticks every
    /// `tick_bytes` per thread and kind (0: every object).
    pub fn new(out: NetTraceWriter<W>, program: &'p Program, bits: PointerBits, tick_bytes: u64, mb_per_s: f64, start_ns: i64) -> Self {
        let layout = Layout::new(bits);
        Tracer {
            out,
            program,
            ptr: bits.bytes() as usize,
            tick_bytes,
            code_cursor: layout.code,
            layout,
            threads: program.threads.iter().map(|t| Thread { os: t.0 as u64, funcs: Vec::new(), since_tick: [0; 2] }).collect(),
            code: vec![0; program.tree.functions.len()],
            modules_loaded: vec![false; program.tree.modules.len()],
            kinds: Kinds::default(),
            gc: GcState::default(),
            handles: 0,
            last_thread: 0,
            now_ns: 0.0,
            ns_per_byte: 1000.0 / mb_per_s.max(1e-3),
            start_ns,
            ticks: None,
            frames: Vec::new(),
            payload: Vec::new(),
            counts: NetTraceCounts::default(),
        }
    }

    /// Writes batches until the channel closes, returning each emptied
    /// batch for reuse; then finishes the trace.
    pub fn run(mut self, batches: Receiver<Batch>, recycle: SyncSender<Batch>) -> Result<(NetTraceWriter<W>, NetTraceCounts), GenError> {
        for mut batch in batches {
            self.write(&batch)?;
            batch.clear();
            let _ = recycle.try_send(batch);
        }
        Ok((self.out, self.counts))
    }

    fn timestamp(&self) -> Timestamp {
        Timestamp(self.start_ns + self.now_ns as i64)
    }

    fn processor(t: usize) -> u32 {
        t as u32 % PROCESSORS
    }

    fn emit(&mut self, kind: MetadataId, t: usize, with_stack: bool) -> Result<(), GenError> {
        self.now_ns += 1.0;
        let e = EventOut {
            kind,
            thread: ThreadId(self.threads[t].os),
            processor: Self::processor(t),
            timestamp: self.timestamp(),
            stack: if with_stack { &self.frames } else { &[] },
            payload: &self.payload,
        };
        self.out.event(&e)?;
        Ok(())
    }

    /// The thread's stack, innermost first, into `frames`: the leaf's
    /// instruction pointer depends on `site`, a caller's on its callee.
    fn stack(&mut self, t: usize, site: u64) {
        self.frames.clear();
        let funcs = &self.threads[t].funcs;
        let mut callee = None;
        for &f in funcs.iter().rev() {
            let size = u64::from(self.program.tree.functions[f as usize].code_size).max(2);
            let key = callee.map_or(site.wrapping_mul(0x9E37_79B9), |c: u32| u64::from(c).wrapping_mul(0x85EB_CA6B));
            self.frames.push(self.code[f as usize] + 1 + key % (size - 1));
            callee = Some(f);
        }
    }

    fn jit(&mut self, t: usize, f: usize) -> Result<(), GenError> {
        let program = self.program;
        let func = &program.tree.functions[f];
        let m = func.module;
        if !self.modules_loaded[m] {
            self.modules_loaded[m] = true;
            let module = &program.tree.modules[m];
            let id = kind(&mut self.kinds.module, &events::MODULE_LOAD, &mut self.out);
            let mut p = Payload::new(&mut self.payload, self.ptr);
            let assembly = self.layout.method_descs - 0x10_0000 + m as u64 * 0x1A8;
            events::module_load(&mut p, module.load_address, assembly, &module.path);
            self.emit(id, t, false)?;
            self.counts.module_loads += 1;
        }
        let start = self.code_cursor;
        self.code_cursor += (u64::from(func.code_size) + 15) & !15;
        self.code[f] = start;
        let (namespace, name) = func.name.rsplit_once("::").unwrap_or(("", func.name.as_str()));
        let load = MethodLoad {
            method_id: self.layout.method_descs + f as u64 * 0x28,
            module_id: program.tree.modules[m].load_address,
            start,
            size: func.code_size,
            token: 0x0600_0001 + f as u32,
            namespace,
            name,
            signature: &func.signature,
        };
        let id = kind(&mut self.kinds.method, &events::METHOD_LOAD_VERBOSE, &mut self.out);
        load.encode(&mut Payload::new(&mut self.payload, self.ptr));
        self.emit(id, t, false)?;
        self.counts.method_loads += 1;
        Ok(())
    }

    fn alloc(&mut self, t: usize, ty: usize, size: u64, address: u64) -> Result<(), GenError> {
        self.last_thread = t;
        self.now_ns += size as f64 * self.ns_per_byte;
        self.counts.objects += 1;
        self.counts.bytes += size;
        let large = size >= LARGE_OBJECT_BYTES;
        let k = usize::from(large);
        let th = &mut self.threads[t];
        th.since_tick[k] += size;
        if th.since_tick[k] < self.tick_bytes {
            return Ok(());
        }
        let amount = std::mem::take(&mut th.since_tick[k]);
        let program = self.program;
        let tick = AllocationTick {
            amount,
            large,
            type_id: self.layout.method_tables + ty as u64 * 0x40,
            type_name: &program.types.spec(ty).name,
            address,
            size,
        };
        let id = kind(&mut self.kinds.tick, &events::ALLOCATION_TICK, &mut self.out);
        tick.encode(&mut Payload::new(&mut self.payload, self.ptr));
        self.stack(t, ty as u64);
        self.emit(id, t, true)?;
        self.counts.allocation_ticks += 1;
        self.counts.ticked_bytes += amount;
        Ok(())
    }

    fn generation_of(&self, address: u64) -> usize {
        self.gc
            .before
            .iter()
            .find(|r| address >= r.start.0 && address - r.start.0 < r.length.max(r.reserved))
            .map_or(0, |r| r.generation.clamp(0, 3) as usize)
    }

    fn gc_boundary(&mut self, b: &Batch, k: u32) -> Result<(), GenError> {
        let g = &b.gcs[k as usize];
        let ranges = &b.ranges[g.ranges.start as usize..g.ranges.end as usize];
        let t = self.last_thread;
        self.now_ns += 50_000.0;
        if g.is_start {
            self.gc.count += 1;
            self.gc.depth = g.condemned.clamp(0, 2) as u32;
            self.gc.before.clear();
            self.gc.before.extend_from_slice(ranges);
            self.gc.promoted = [0; 4];
            self.gc.finalized = 0;
            let id = kind(&mut self.kinds.gc_start, &events::GC_START, &mut self.out);
            events::gc_start(&mut Payload::new(&mut self.payload, self.ptr), self.gc.count, self.gc.depth, g.induced);
            self.emit(id, t, false)?;
            self.counts.gc_starts += 1;
        } else {
            let id = kind(&mut self.kinds.gc_stop, &events::GC_STOP, &mut self.out);
            events::gc_stop(&mut Payload::new(&mut self.payload, self.ptr), self.gc.count, self.gc.depth);
            self.emit(id, t, false)?;
            self.counts.gc_stops += 1;
            let mut stats = HeapStats {
                promoted: self.gc.promoted,
                finalization_promoted_count: self.gc.finalized,
                handles: self.handles,
                ..HeapStats::default()
            };
            for r in ranges {
                stats.size[r.generation.clamp(0, 3) as usize] += r.length;
            }
            let id = kind(&mut self.kinds.heap_stats, &events::GC_HEAP_STATS, &mut self.out);
            stats.encode(&mut Payload::new(&mut self.payload, self.ptr));
            self.emit(id, t, false)?;
            self.counts.heap_stats += 1;
        }
        Ok(())
    }

    fn survivor(&mut self, address: u64, length: u32) {
        let g = self.generation_of(address);
        self.gc.promoted[g] += u64::from(length);
    }

    fn tick(&mut self, ms: u32) {
        let elapsed = match self.ticks {
            None => 0,
            Some((prev, elapsed)) => elapsed + u64::from(ms.wrapping_sub(prev)),
        };
        self.ticks = Some((ms, elapsed));
        self.now_ns = self.now_ns.max(elapsed as f64 * 1e6);
    }

    /// Writes the events of one batch.
    pub fn write(&mut self, b: &Batch) -> Result<(), GenError> {
        for op in &b.ops {
            match *op {
                Op::Enter { thread, func, pops, .. } => {
                    let t = thread as usize;
                    let th = &mut self.threads[t];
                    let keep = th.funcs.len().saturating_sub(pops as usize);
                    th.funcs.truncate(keep);
                    th.funcs.push(func);
                    if self.code[func as usize] == 0 {
                        self.jit(t, func as usize)?;
                    }
                }
                Op::Return { thread, pops } => {
                    let th = &mut self.threads[thread as usize];
                    let keep = th.funcs.len().saturating_sub(pops as usize);
                    th.funcs.truncate(keep);
                }
                Op::Alloc { thread, ty, size, address, .. } => self.alloc(thread as usize, ty as usize, u64::from(size), address)?,
                Op::HandleCreated { .. } => self.handles += 1,
                Op::HandleDestroyed { .. } => self.handles = self.handles.saturating_sub(1),
                Op::Tick(ms) => self.tick(ms),
                Op::Gc(k) => self.gc_boundary(b, k)?,
                Op::Moved(m) => self.survivor(m.old.0, m.length),
                Op::Survived(v) => self.survivor(v.start.0, v.length),
                Op::Finalizer(_) => self.gc.finalized += 1,
                // Heap dumps, roots, comments and the runtime's start
                // have no event here.
                Op::Start | Op::GcCounts(_) | Op::Root(_) | Op::Object { .. } | Op::Roots(_) | Op::Comment(_) => {}
            }
        }
        Ok(())
    }
}
