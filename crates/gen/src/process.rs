//! The simulated .NET process: the main loop that runs threads through the
//! program, allocates, collects, creates and destroys handles and writes
//! comments.
//!
//! Per allocation: maybe switch threads (threads run in bursts), make some
//! calls (a random walk on the call tree: return with a probability that
//! grows with depth, else call a callee, the first ones more often; half a
//! call per allocation on average without call logging), choose a type
//! from the allocating function's sites (or, rarely, a large array) and a
//! size, start a GC when one is due, then report the allocation and record
//! the object, or, when it will certainly be dead at the next GC, only
//! tally its death. Calls, allocations and handles go as events to the
//! profiler stage (`profiler.rs`), which owns stacks and definitions (it
//! jits functions and writes `c` lines); GC records are written here.
//! Memory is the live heap; nothing else grows with the log.

use super::calltree::Site;
use super::clock::Clock;
use super::dump::{self, DumpInputs};
use super::emit::Emitter;
use super::error::GenError;
use super::gc::{self, GcWork};
use super::handles::{HandleKind, Handles};
use super::heap::{Heap, Layout, Obj, CRITICAL, FINALIZABLE, PINNED};
use super::ids::Ids;
use super::lifetime::{LifetimeModel, FOREVER};
use super::names::COMPANY;
use super::options::GenOptions;
use super::program::Program;
use super::rng::{Chance, Geometric, Rng, Stream};
use super::schedule::Schedule;
use super::sizer::Sizer;
use super::threads::ThreadState;
use super::truth::{CallTruth, Ending, Params, ThreadTruth, Truth, TruthBuilder};
use super::types::{Finalizer, LARGE_EXCESS_MEAN, LARGE_OBJECT_BYTES};

/// The exceptions the runtime allocates before `Main`.
const STARTUP_EXCEPTIONS: [&str; 4] = [
    "System.OutOfMemoryException",
    "System.StackOverflowException",
    "System.ExecutionEngineException",
    "System.Threading.ThreadAbortException",
];

/// Mean allocations a thread makes before another thread runs.
const BURST_MEAN: f64 = 48.0;
/// Return probability at relative depth `d` is `d / (d + POP_HALF)`.
const POP_HALF: f64 = 5.0;
/// A thread's stack never grows beyond this many frames.
const MAX_FRAMES: usize = 200;

const PHASES: &[&str] = &[
    "warm-up complete, caches loaded",
    "steady state",
    "nightly batch started",
    "report generation",
    "cache flush",
    "batch finished",
];

/// The running process.
pub struct Process<'p> {
    opts: GenOptions,
    program: &'p Program,
    out: Emitter,
    rng: Rng,
    handle_rng: Rng,
    dump_rng: Rng,
    ids: Ids,
    threads: Vec<ThreadState>,
    current: usize,
    burst_left: u64,
    heap: Heap,
    schedule: Schedule,
    lifetimes: LifetimeModel,
    handles: Handles,
    clock: Clock,
    sizer: Sizer,
    truth: TruthBuilder,
    gc_work: GcWork,
    alloc_bytes: u64,
    seq: u32,
    walk: Geometric,
    burst: Geometric,
    pop_prob: [Chance; 64],
    p_large: Chance,
    min_object: u64,
    comment_at: Vec<u64>,
    next_comment: usize,
    object_type: Option<usize>,
}

impl<'p> Process<'p> {
    /// Sets up the process for `opts` running `program`; `rng` is the
    /// process stream (after the program drew its thread ids).
    pub fn new(opts: &GenOptions, program: &'p Program, rng: Rng, out: Emitter) -> Result<Process<'p>, GenError> {
        opts.validate()?;
        if opts.objects < 4 * opts.gcs as u64 {
            return Err(GenError::Options("--objects must be at least 4 times --gcs".into()));
        }
        let bits = opts.pointer_bits;
        let ptr = bits.bytes();
        let types = &program.types;
        let tree = &program.tree;
        let expected_large = LARGE_OBJECT_BYTES as f64 + LARGE_EXCESS_MEAN + ptr as f64;
        let p_large = if types.large_types().is_empty() {
            0.0
        } else {
            (opts.loh_fraction * opts.mean_size / expected_large).min(0.5)
        };
        let soh_target = ((opts.mean_size - p_large * expected_large) / (1.0 - p_large)).max(3.0 * ptr as f64);
        let expected_soh_bytes = opts.objects as f64 * (1.0 - p_large) * soh_target;
        let budget = ((expected_soh_bytes / (opts.gcs as f64 + 1.0)) as u64).max(64 * 1024);

        let threads: Vec<ThreadState> = program
            .threads
            .iter()
            .enumerate()
            .map(|(k, &id)| {
                let base = if k == 0 { tree.main_chain.len() } else { tree.worker_chain.len() };
                ThreadState::new(id, base)
            })
            .collect();
        let comment_at = (1..=opts.comments as u64).map(|k| k * opts.objects / (opts.comments as u64 + 1)).collect();
        let mut pop_prob = [Chance::new(0.0); 64];
        for (d, p) in pop_prob.iter_mut().enumerate() {
            *p = Chance::new(d as f64 / (d as f64 + POP_HALF));
        }
        // Without call logging the walk makes half a call per allocation
        // on average (functions allocate a few objects each); with it, the
        // requested number.
        let walk_mean = opts.calls_per_alloc;
        let object_type = types.find("System.Object");
        Ok(Process {
            out,
            handle_rng: Rng::stream(opts.seed, Stream::Handles),
            dump_rng: Rng::stream(opts.seed, Stream::Dumps),
            sizer: Sizer::new(types, soh_target),
            heap: Heap::new(Layout::new(bits), threads.len()),
            schedule: Schedule::new(opts, budget),
            lifetimes: LifetimeModel::new(budget),
            handles: Handles::new(opts.handles_per_million, bits),
            clock: Clock::new(opts.tick_start, opts.alloc_rate_mb_per_s),
            truth: TruthBuilder::new(types.len()),
            gc_work: GcWork::default(),
            ids: Ids::new(tree.functions.len(), types.len()),
            opts: opts.clone(),
            program,
            rng,
            threads,
            current: 0,
            burst_left: 0,
            alloc_bytes: 0,
            seq: 0,
            walk: Geometric::with_mean(walk_mean),
            burst: Geometric::with_mean(BURST_MEAN),
            pop_prob,
            p_large: Chance::new(p_large),
            min_object: 3 * ptr,
            comment_at,
            next_comment: 0,
            object_type,
        })
    }

    /// Runs the process to the end; returns the truth (without what only
    /// the profiler stage knows: bytes, line counts, stacks).
    pub fn run(mut self) -> Result<Truth, GenError> {
        self.startup()?;
        for i in self.seq as u64..self.opts.objects {
            self.step(i)?;
        }
        self.finish()
    }

    /// The runtime starts: `NATIVE FUNCTION`, mscorlib, the preallocated
    /// exceptions, then `Main` on the main thread.
    fn startup(&mut self) -> Result<(), GenError> {
        self.out.start()?;
        for name in STARTUP_EXCEPTIONS.iter().take(self.opts.objects as usize) {
            if let Some(ty) = self.program.types.find(name) {
                let size = self.program.types.size_of(ty, 0);
                self.allocate(0, ty, size, false, self.seq as u64)?;
            }
        }
        self.start_thread(0)?;
        self.current = 0;
        self.burst_left = self.rng.geometric(self.burst);
        Ok(())
    }

    fn start_thread(&mut self, t: usize) -> Result<(), GenError> {
        let tree = &self.program.tree;
        let chain = if t == 0 { &tree.main_chain } else { &tree.worker_chain };
        for &f in chain {
            self.enter(t, 0, f as usize)?;
        }
        self.threads[t].started = true;
        Ok(())
    }

    /// One allocation, with everything that happens before and after it.
    #[inline]
    fn step(&mut self, i: u64) -> Result<(), GenError> {
        if self.next_comment < self.comment_at.len() && self.comment_at[self.next_comment] <= i {
            self.comment()?;
        }
        if self.burst_left == 0 {
            self.switch_thread()?;
        } else {
            self.burst_left -= 1;
        }
        let t = self.current;
        let calls = if self.opts.calls { self.rng.geometric(self.walk) } else { self.rng.quarter_run() as u64 };
        for _ in 0..calls {
            self.call_once(t)?;
        }
        // Some functions allocate only now and then: walk on.
        for _ in 0..8 {
            let intensity = self.threads[t].top().map_or(1.0, |f| self.program.tree.intensity(f));
            if intensity >= 1.0 || self.rng.chance(intensity) {
                break;
            }
            self.call_once(t)?;
        }
        let large = self.rng.hit(self.p_large);
        let (ty, size) = if large {
            let candidates = self.program.types.large_types();
            let ty = candidates[self.rng.index(candidates.len())];
            (ty, self.program.types.large_size(&mut self.rng, ty))
        } else {
            let site = self.pick_site(t);
            let size = self.program.types.small_size(&mut self.rng, site.ty, self.sizer.scale() * site.factor);
            self.sizer.note(site.ty, site.factor, size);
            (site.ty, size)
        };
        if self.schedule.due(i) {
            self.collect()?;
        }
        self.allocate(t, ty, size, large, i)?;
        self.destroy_due_handles(t)
    }

    fn switch_thread(&mut self) -> Result<(), GenError> {
        let n = self.threads.len();
        if n > 1 {
            let mut t = self.rng.index(n - 1);
            if t >= self.current {
                t += 1;
            }
            self.current = t;
            if !self.threads[t].started {
                self.start_thread(t)?;
            }
        }
        self.burst_left = self.rng.geometric(self.burst);
        Ok(())
    }

    /// Returns from functions as the walk decides, then makes one call.
    #[inline]
    fn call_once(&mut self, t: usize) -> Result<(), GenError> {
        let mut pops: u16 = 0;
        // Each turn returns (the stack shrinks) or ends the walk.
        loop {
            let th = &self.threads[t];
            let Some(f) = th.top() else { break };
            let depth = th.depth_above_base();
            let callees = self.program.tree.callees(f);
            let pop = depth > 0
                && (callees.is_empty()
                    || th.frames.len() >= MAX_FRAMES
                    || self.rng.hit(self.pop_prob[depth.min(self.pop_prob.len() - 1)]));
            if pop {
                if self.threads[t].pop() {
                    pops += 1;
                }
                continue;
            }
            if callees.is_empty() {
                break;
            }
            // Call frequencies are skewed: a function calls its first callee
            // half the time, the next a quarter, and so on.
            let k = (self.rng.coin_run() as usize).min(callees.len() - 1);
            let g = callees[k];
            return self.enter(t, pops, g as usize);
        }
        // Only a root chain without callees ends here.
        if pops > 0 {
            self.out.leave(t, pops)?;
        }
        Ok(())
    }

    /// Calls function `f` on thread `t` after `pops` returns.
    #[inline]
    fn enter(&mut self, t: usize, pops: u16, f: usize) -> Result<(), GenError> {
        let id = self.ids.function(f)?;
        self.threads[t].push(f as u32, id);
        self.out.enter(t, pops, f, id)?;
        Ok(())
    }

    /// The site of the next small object: from the sites of the innermost
    /// frame that has any.
    #[inline]
    fn pick_site(&mut self, t: usize) -> Site {
        for fr in self.threads[t].frames.iter().rev() {
            if let Some(site) = self.program.tree.pick_site(fr.func, &mut self.rng) {
                return site;
            }
        }
        Site { ty: self.object_type.unwrap_or(0), factor: 1.0 }
    }

    /// Writes the tick, type and stack definitions and the `!` line (and
    /// the `h` line of a handle created for the object), and records the
    /// object: in its generation, or, when it will certainly be dead at the
    /// next GC, only in the truth's tally of deaths to come.
    #[inline]
    fn allocate(&mut self, t: usize, ty: usize, size: u64, large: bool, index: u64) -> Result<(), GenError> {
        let ms = self.clock.before_alloc(self.alloc_bytes, &mut self.out)?;
        let type_id = self.ids.type_id(ty);
        let (longevity, finalizer) = self.program.types.fate(ty);
        let life = self.lifetimes.draw(&mut self.rng, longevity);
        let mut death = if life == FOREVER { u64::MAX } else { self.alloc_bytes.saturating_add(life) };
        let mut flags = match finalizer {
            Finalizer::None => 0,
            Finalizer::Normal => FINALIZABLE,
            Finalizer::Critical => FINALIZABLE | CRITICAL,
        };
        // A handle created for this object decides part of its fate.
        let handle = if self.handles.roll(&mut self.handle_rng) {
            let plan = self.handles.plan(&mut self.handle_rng, self.alloc_bytes + size, self.schedule.budget());
            if plan.with_target && plan.kind != HandleKind::Weak {
                death = death.max(plan.destroy_at);
                if plan.kind == HandleKind::Pinned {
                    flags |= PINNED;
                }
            }
            Some(plan)
        } else {
            None
        };
        let born_gc = self.schedule.done().min(u16::MAX as u32) as u16;
        let alloc_ms = ms.min(u32::MAX as u64) as u32;
        let obj = |addr| Obj::new(addr, death, self.seq, size as u32, alloc_ms, ty, born_gc, flags);
        let addr = if large {
            let (addr, pos) = self.heap.place_large(size)?;
            self.heap.loh.insert(pos, obj(addr));
            addr
        } else {
            let addr = self.heap.alloc_small(t, size)?;
            let doomed = flags == 0
                && self.schedule.next_gc_clock_bound(self.alloc_bytes, index, self.min_object).is_some_and(|b| death <= b)
                && self.truth.doomed(ty, size, alloc_ms);
            if !doomed {
                self.heap.gen0.push(obj(addr));
            }
            addr
        };
        self.out.alloc(t, ty, type_id, size, addr)?;
        self.seq = self.seq.checked_add(1).ok_or(GenError::Limit("object"))?;
        self.alloc_bytes += size;
        self.schedule.note_alloc(size, large);
        self.truth.allocated(ty, size, large);
        if let Some(plan) = handle {
            let target = plan.with_target.then_some((self.seq - 1, addr));
            let h = self.handles.create(plan, target);
            self.out.handle_created(t, h.id.0, h.target_addr)?;
        }
        Ok(())
    }

    /// Destroys the handles that are due.
    #[inline]
    fn destroy_due_handles(&mut self, t: usize) -> Result<(), GenError> {
        while let Some(h) = self.handles.pop_due(self.alloc_bytes) {
            if h.kind == HandleKind::Pinned && h.target.is_some() {
                if let Some(o) = self.heap.find_mut(h.target_addr) {
                    o.set_flags(o.flags() & !PINNED);
                }
            }
            self.out.handle_destroyed(t, h.id.0)?;
        }
        Ok(())
    }

    fn comment(&mut self) -> Result<(), GenError> {
        let k = self.next_comment + 1;
        let text = format!(
            "{COMPANY} load test: checkpoint {k} of {}, {}",
            self.comment_at.len(),
            PHASES[self.next_comment % PHASES.len()]
        );
        self.next_comment += 1;
        self.out.comment(&text)?;
        self.clock.note_comment();
        self.truth.comment(self.clock.last(), &text);
        Ok(())
    }

    /// One GC, from plan to `g` line.
    fn collect(&mut self) -> Result<(), GenError> {
        let plan = self.schedule.plan(&mut self.rng);
        gc::start(&plan, &mut self.heap, &mut self.out, &mut self.clock, self.alloc_bytes, &mut self.truth, &mut self.gc_work)?;
        gc::relocate(&plan, &mut self.heap, &mut self.out, &mut self.truth, &mut self.gc_work)?;
        if plan.heap_dump {
            let index = self.clock.reader_index();
            let inputs = DumpInputs {
                heap: &self.heap,
                types: &self.program.types,
                ids: &self.ids,
                handles: &self.handles,
                threads: &self.threads,
                freachable: &self.gc_work.freachable,
            };
            let d = dump::write(&inputs, &mut self.dump_rng, &mut self.out)?;
            self.truth.dump(d, index, plan.number, self.clock.last());
        }
        let mut counts = self.schedule.counts();
        for c in &mut counts[..=plan.condemned as usize] {
            *c += 1;
        }
        self.gc_work.counts = counts;
        gc::finish(&plan, &self.heap, &mut self.out, &mut self.clock, self.alloc_bytes, &mut self.truth, &self.gc_work)?;
        self.schedule.finished(&plan, self.gc_work.into_gen1, self.gc_work.into_gen2);
        Ok(())
    }

    /// Flushes the log and assembles the truth.
    fn finish(self) -> Result<Truth, GenError> {
        let o = &self.opts;
        let params = Params {
            options: GenOptions { induced: o.effective_induced(), ..o.clone() },
            gen0_budget_bytes: self.schedule.budget(),
        };
        let ranges = self.heap.ranges();
        let mut per_gen = [(0u64, 0u64); 4];
        let types = &self.program.types;
        let mut alive_by_type = vec![(0u64, 0u64); types.len()];
        for (g, o) in self.heap.all() {
            per_gen[g as usize].0 += 1;
            per_gen[g as usize].1 += o.size as u64;
            alive_by_type[o.ty()].0 += 1;
            alive_by_type[o.ty()].1 += o.size as u64;
        }
        // ranges are in the order 3, 2, 1, 0.
        let generations = [
            (per_gen[0].0, per_gen[0].1, &ranges[3]),
            (per_gen[1].0, per_gen[1].1, &ranges[2]),
            (per_gen[2].0, per_gen[2].1, &ranges[1]),
            (per_gen[3].0, per_gen[3].1, &ranges[0]),
        ];
        let type_info = (0..types.len())
            .map(|t| {
                self.ids.known_type(t).map(|id| {
                    let s = types.spec(t);
                    (id.0, s.name.clone(), s.finalizer != Finalizer::None, s.finalizer == Finalizer::Critical)
                })
            })
            .collect();
        let started: Vec<i32> = self.threads.iter().filter(|t| t.started).map(|t| t.os.0).collect();
        let ending = Ending {
            params,
            generations,
            alive_by_type,
            type_info,
            by_condemned: self.schedule.by_condemned(),
            counts: self.schedule.counts(),
            handles: self.handles.stats(),
            calls: CallTruth { enabled: o.calls, c_lines: 0 },
            threads: ThreadTruth { count: started.len() as u64, ids: started },
            ticks: self.clock.stats(),
        };
        let truth = self.truth.finish(ending);
        self.out.finish()?;
        Ok(truth)
    }
}
