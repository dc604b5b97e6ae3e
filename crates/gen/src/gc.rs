//! One garbage collection, written as CLRProfiler's profiler writes it:
//!
//! ```text
//! i <start>          a fresh tick
//! b 1 <induced> <condemned> <ranges before>
//! l ...              finalizable objects found unreachable (old addresses)
//! u / v ...          survivors moved (compaction) or kept in place
//! e / r / o ...      a heap dump, when planned (new addresses)
//! i <end>
//! b 0 0 <condemned> <ranges after>
//! g <gen0> <gen1> <gen2>
//! ```
//!
//! The log stays *heap-consistent* for CLRProfiler's reader, which treats
//! every object of a condemned generation that no `u` destination or `v`
//! range covers as dead, keeps the older generations' ranges from the start
//! line (for gen-0 and gen-1 GCs), and replaces its intervals by the end
//! line's ranges:
//!
//! - every survivor of a condemned generation is in exactly one `u`/`v`
//!   range; runs of adjacent survivors with the same displacement share one
//!   line (a "plug");
//! - survivors slide down in address order (destination <= source, each
//!   line after the previous one), so replaying the `u` lines in order never
//!   overwrites a survivor not yet moved; pinned objects stay where they
//!   are (`v`), the rest compact around them;
//! - the end line's ranges cover every object left, and older generations
//!   lie inside their start-line ranges.
//!
//! A finalizable object found unreachable is queued (`l`) instead of
//! reclaimed: it survives this GC and dies at the next one that condemns
//! it, as in the CLR.

use super::clock::Clock;
use super::emit::Emitter;
use super::error::GenError;
use super::heap::{Heap, Obj, CRITICAL, FINALIZABLE, PINNED, QUEUED};
use super::schedule::GcPlan;
use super::truth::TruthBuilder;
use clrprof::format::records::{FinalizerQueued, GcCounts, Moved, Survived};
use clrprof::format::{Address, Kind};
use std::io;

/// Condemned bytes a GC processes per millisecond of pause.
const PAUSE_BYTES_PER_MS: u64 = 2_000_000;
/// The longest `u`/`v` range written (lengths are 32-bit in the format).
const MAX_PLUG: u64 = 1 << 30;

/// `u`, `v` and `l` lines written so far.
fn gc_lines(out: &Emitter) -> [u64; 3] {
    [out.count(Kind::Moved), out.count(Kind::Survived), out.count(Kind::Finalizer)]
}

/// State carried between the phases of one GC (reused across GCs).
#[derive(Default)]
pub struct GcWork {
    /// Generation-0 survivors, sorted by address.
    promoted: Vec<Obj>,
    /// Sequence numbers of objects queued for finalization in this GC.
    pub freachable: Vec<u32>,
    /// Elapsed ms of the end tick.
    pub t_end: u64,
    /// Bytes promoted into generation 1.
    pub into_gen1: u64,
    /// Bytes promoted into generation 2.
    pub into_gen2: u64,
    /// Survivors.
    pub survived: (u64, u64),
    /// Cumulative GC counts after this GC (for its `g` line).
    pub counts: [u32; 3],
}

/// Phase 1: the start tick and `b 1` line, `l` lines, and the split of
/// every condemned generation into survivors and the dead.
pub fn start(
    plan: &GcPlan,
    heap: &mut Heap,
    out: &mut Emitter,
    clock: &mut Clock,
    alloc_bytes: u64,
    truth: &mut TruthBuilder,
    work: &mut GcWork,
) -> Result<(), GenError> {
    let t_start = clock.fresh(clock.now(alloc_bytes), out)?;
    let before = heap.ranges();
    truth.gc_start(plan, clock.reader_index(), &before, t_start, gc_lines(out));
    out.gc_boundary(true, plan.induced, plan.condemned as i32, &before)?;
    let condemned_bytes: u64 = before
        .iter()
        .filter(|r| r.generation <= plan.condemned as i32 || (plan.condemned == 2 && r.generation == 3))
        .map(|r| r.length)
        .sum();
    work.t_end = t_start + 1 + condemned_bytes / PAUSE_BYTES_PER_MS;
    work.freachable.clear();
    work.promoted.clear();
    work.survived = (0, 0);
    heap.reset_contexts();

    let mut sorter = Sorter { plan, alloc_bytes, t_end: work.t_end, out, truth, work };
    if plan.condemned == 2 {
        sorter.retain(&mut heap.gen2, 2)?;
    }
    if plan.condemned >= 1 {
        sorter.retain(&mut heap.gen1, 1)?;
    }
    for mut o in heap.gen0.drain(..) {
        if sorter.survives(&mut o, 0)? {
            sorter.work.promoted.push(o);
        }
    }
    if plan.condemned == 2 {
        sorter.retain(&mut heap.loh, 3)?;
    }
    work.promoted.sort_unstable_by_key(|o| o.addr);
    Ok(())
}

/// Decides, object by object, who survives.
struct Sorter<'a> {
    plan: &'a GcPlan,
    alloc_bytes: u64,
    t_end: u64,
    out: &'a mut Emitter,
    truth: &'a mut TruthBuilder,
    work: &'a mut GcWork,
}

impl Sorter<'_> {
    /// Whether `o` (in generation `gen`, 3 = large) survives; queues it for
    /// finalization or records its death.
    #[inline]
    fn survives(&mut self, o: &mut Obj, gen: u8) -> io::Result<bool> {
        if o.death > self.alloc_bytes {
            self.work.survived.0 += 1;
            self.work.survived.1 += o.size as u64;
            return Ok(true);
        }
        if o.flags() & FINALIZABLE != 0 {
            let critical = o.flags() & CRITICAL != 0;
            self.out.finalizer(FinalizerQueued { critical, address: Address(o.addr) })?;
            o.set_flags((o.flags() & !FINALIZABLE) | QUEUED);
            self.truth.finalized(o, critical);
            self.work.freachable.push(o.seq);
            self.work.survived.0 += 1;
            self.work.survived.1 += o.size as u64;
            return Ok(true);
        }
        self.truth.reclaimed(o, gen, self.plan.number, self.t_end);
        Ok(false)
    }

    /// Keeps the survivors of an address-ordered generation, in order.
    fn retain(&mut self, v: &mut Vec<Obj>, gen: u8) -> io::Result<()> {
        let mut kept = 0;
        for i in 0..v.len() {
            let mut o = v[i];
            if self.survives(&mut o, gen)? {
                v[kept] = o;
                kept += 1;
            }
        }
        v.truncate(kept);
        Ok(())
    }
}

/// Places survivors one by one and writes the `u`/`v` lines.
struct Plugs {
    cursor: u64,
    compacting: bool,
    /// Current plug: source, destination, length.
    plug: Option<(u64, u64, u64)>,
}

impl Plugs {
    fn new(cursor: u64, compacting: bool) -> Plugs {
        Plugs { cursor, compacting, plug: None }
    }

    #[inline]
    fn place(&mut self, o: &mut Obj, out: &mut Emitter, truth: &mut TruthBuilder) -> io::Result<()> {
        let size = o.size as u64;
        let dst = if self.compacting && o.flags() & PINNED == 0 { self.cursor } else { o.addr };
        debug_assert!(dst <= o.addr && dst >= self.cursor);
        match &mut self.plug {
            Some((src, d, len)) if *src + *len == o.addr && *d + *len == dst && *len + size <= MAX_PLUG => {
                *len += size;
            }
            _ => {
                self.flush(out)?;
                self.plug = Some((o.addr, dst, size));
            }
        }
        if dst != o.addr {
            truth.relocated(o);
            o.addr = dst;
        }
        self.cursor = dst + size;
        Ok(())
    }

    fn flush(&mut self, out: &mut Emitter) -> io::Result<()> {
        if let Some((src, dst, len)) = self.plug.take() {
            if src != dst {
                out.moved(Moved { old: Address(src), new: Address(dst), length: len as u32 })?;
            } else {
                out.survived(Survived { start: Address(src), length: len as u32 })?;
            }
        }
        Ok(())
    }
}

/// Phase 2: moves the survivors (`u`/`v` lines), promotes them and moves
/// the generation boundaries; sweeps the large-object heap on a gen-2 GC.
pub fn relocate(
    plan: &GcPlan,
    heap: &mut Heap,
    out: &mut Emitter,
    truth: &mut TruthBuilder,
    work: &mut GcWork,
) -> Result<(), GenError> {
    let old_gen0_start = heap.gen0_start;
    let old_alloc_ptr = heap.alloc_ptr;
    let bytes = |v: &[Obj]| v.iter().map(|o| o.size as u64).sum::<u64>();
    let start = match plan.condemned {
        0 => heap.gen0_start,
        1 => heap.gen1_start,
        _ => heap.layout.soh_base,
    };
    let mut plugs = Plugs::new(start, plan.compacting);
    work.into_gen1 = 0;
    work.into_gen2 = 0;
    // Generations 2 and 1 (when condemned) end up in generation 2.
    if plan.condemned == 2 {
        for o in heap.gen2.iter_mut() {
            plugs.place(o, out, truth)?;
        }
    }
    if plan.condemned >= 1 {
        for o in heap.gen1.iter_mut() {
            plugs.place(o, out, truth)?;
        }
        work.into_gen2 = bytes(&heap.gen1);
        let gen1 = std::mem::take(&mut heap.gen1);
        heap.gen2.extend_from_slice(&gen1);
        heap.gen1 = gen1;
        heap.gen1.clear();
        heap.gen1_start = if plan.compacting { plugs.cursor } else { old_gen0_start };
    }
    // Generation 0 survivors end up in generation 1.
    for o in work.promoted.iter_mut() {
        plugs.place(o, out, truth)?;
    }
    plugs.flush(out)?;
    work.into_gen1 = bytes(&work.promoted);
    heap.gen1.extend_from_slice(&work.promoted);
    work.promoted.clear();
    let end = if plan.compacting { plugs.cursor } else { old_alloc_ptr };
    heap.gen0_start = end;
    heap.alloc_ptr = end;
    // The large-object heap never moves.
    if plan.condemned == 2 {
        let mut loh = Plugs::new(heap.layout.loh_base, false);
        for o in heap.loh.iter_mut() {
            loh.place(o, out, truth)?;
        }
        loh.flush(out)?;
    }
    Ok(())
}

/// Phase 3: the end tick, `b 0` and `g` lines.
pub fn finish(
    plan: &GcPlan,
    heap: &Heap,
    out: &mut Emitter,
    clock: &mut Clock,
    alloc_bytes: u64,
    truth: &mut TruthBuilder,
    work: &GcWork,
) -> Result<(), GenError> {
    let counts = work.counts;
    let t_end = clock.fresh(work.t_end, out)?;
    clock.hold_until(alloc_bytes, t_end);
    let after = heap.ranges();
    out.gc_boundary(false, false, plan.condemned as i32, &after)?;
    out.gc_counts(GcCounts { gen0: counts[0] as i32, gen1: counts[1] as i32, gen2: counts[2] as i32 })?;
    truth.gc_end(plan, &after, t_end, work.survived, gc_lines(out));
    Ok(())
}
