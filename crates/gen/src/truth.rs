//! Ground truth: figures known exactly because the generator made them,
//! written beside the log as JSON (`FILE.truth.json`).
//!
//! Besides what happened (allocations, GCs, moves, deaths with their ages,
//! finalization, handles, dumps), `summary_as_clrprofiler` gives the 18
//! figures of CLRProfiler's Summary computed with its reader's arithmetic
//! (`FORMAT.md`, "What CLRProfiler's reader computes"): GC counts from the
//! live-object table; induced GCs and heap sizes only over GC starts whose
//! tick index is later than the previous counted start's (the tick-index
//! model is replayed exactly, see `reader_clock.rs`); heap bytes per
//! generation as the mean of that generation's range lengths on the start
//! lines of the counted GCs that condemned it (the large-object heap with
//! gen-2 GCs), or its size on the last `b` line when none did.

use super::clock::TickStats;
use super::handles::HandleStats;
use super::heap::{Obj, QUEUED};
use super::reader_clock::EventGate;
use super::schedule::GcPlan;
use clrprof::format::records::GenerationRange;
use clrprof::format::Kind;
use serde::Serialize;
use std::collections::BTreeMap;

/// The truth file's schema name.
pub const SCHEMA: &str = "clrprof-gen-truth/1";

/// Everything the generator knows about a log it wrote.
#[derive(Clone, Debug, Serialize)]
pub struct Truth {
    /// [`SCHEMA`].
    pub schema: String,
    /// Which generator wrote the log.
    pub generator: GeneratorInfo,
    /// The options used.
    pub params: Params,
    /// The log's size.
    pub log: LogInfo,
    /// Allocation totals.
    pub allocated: Allocated,
    /// Per-type figures, by type id.
    pub types: Vec<TypeTruth>,
    /// Garbage collections.
    pub gcs: GcsTruth,
    /// Objects moved by `u` lines.
    pub relocation: Relocation,
    /// Objects never reclaimed (alive at the end of the log).
    pub final_heap: FinalHeap,
    /// Finalization.
    pub finalization: Finalization,
    /// GC handles.
    pub handles: HandlesTruth,
    /// Heap dumps.
    pub heap_dumps: HeapDumps,
    /// User comments.
    pub comments: Comments,
    /// Stack definitions.
    pub stacks: StackTruth,
    /// Call logging.
    pub calls: CallTruth,
    /// Threads.
    pub threads: ThreadTruth,
    /// Ticks.
    pub ticks: TickStats,
    /// Reclaimed objects, summarized.
    pub deaths: Deaths,
    /// CLRProfiler's Summary figures for this log.
    pub summary_as_clrprofiler: ClrSummary,
}

/// Which generator wrote the log.
#[derive(Clone, Debug, Serialize)]
pub struct GeneratorInfo {
    /// `clrprof gen`.
    pub name: String,
    /// The crate version.
    pub version: String,
}

/// The options a log was generated with (induced GCs as run: raised to
/// the heap dumps), and the gen-0 budget derived from them.
#[derive(Clone, Debug, Serialize)]
pub struct Params {
    /// The options.
    #[serde(flatten)]
    pub options: super::GenOptions,
    /// The gen-0 budget derived from these.
    pub gen0_budget_bytes: u64,
}

/// The log's size.
#[derive(Clone, Debug, Serialize)]
pub struct LogInfo {
    /// Bytes.
    pub bytes: u64,
    /// Lines.
    pub lines: u64,
    /// Pointer width in bits.
    pub pointer_bits: u32,
    /// Lines per record letter.
    pub lines_by_kind: BTreeMap<String, u64>,
}

/// Allocation totals.
#[derive(Clone, Debug, Serialize)]
pub struct Allocated {
    /// Objects.
    pub objects: u64,
    /// Bytes.
    pub bytes: u64,
    /// Mean object size.
    pub mean_size: f64,
    /// Small objects.
    pub soh_objects: u64,
    /// Bytes of small objects.
    pub soh_bytes: u64,
    /// Large objects (85,000 bytes or more).
    pub loh_objects: u64,
    /// Bytes of large objects.
    pub loh_bytes: u64,
}

/// Figures of one type.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TypeTruth {
    /// Type id in the log.
    pub id: i32,
    /// Type name.
    pub name: String,
    /// Has a finalizer.
    pub finalizable: bool,
    /// The finalizer is critical.
    pub critical_finalizer: bool,
    /// Objects allocated.
    pub allocated_objects: u64,
    /// Bytes allocated.
    pub allocated_bytes: u64,
    /// Large objects allocated.
    pub loh_objects: u64,
    /// Bytes of large objects allocated.
    pub loh_bytes: u64,
    /// Object moves by `u` lines (an object moved twice counts twice).
    pub relocated_objects: u64,
    /// Bytes of those moves.
    pub relocated_bytes: u64,
    /// Objects queued for finalization (`l` lines).
    pub finalized_objects: u64,
    /// Of those, with a critical finalizer (`l 1`).
    pub critical_finalized_objects: u64,
    /// Objects reclaimed by a GC.
    pub reclaimed_objects: u64,
    /// Bytes reclaimed.
    pub reclaimed_bytes: u64,
    /// Objects never reclaimed.
    pub objects_at_end: u64,
    /// Bytes never reclaimed.
    pub bytes_at_end: u64,
}

/// Garbage collections.
#[derive(Clone, Debug, Serialize)]
pub struct GcsTruth {
    /// GCs.
    pub total: u32,
    /// GCs per condemned generation (0, 1, 2).
    pub by_condemned_generation: [u32; 3],
    /// Cumulative counts per generation, as `g` lines and CLRProfiler
    /// count them (a gen-2 GC also counts for gens 0 and 1).
    pub cumulative_per_generation: [u32; 3],
    /// Induced GCs.
    pub induced: u32,
    /// GCs with a heap dump.
    pub heap_dump_gcs: u32,
    /// The gen-0 budget in bytes.
    pub gen0_budget_bytes: u64,
    /// Every GC.
    pub list: Vec<GcTruth>,
}

/// One GC.
#[derive(Clone, Debug, Default, Serialize)]
pub struct GcTruth {
    /// 1-based number.
    pub index: u32,
    /// Condemned generation.
    pub condemned_generation: u8,
    /// Induced.
    pub induced: bool,
    /// Survivors compacted (else swept in place).
    pub compacting: bool,
    /// Carried a heap dump.
    pub heap_dump: bool,
    /// CLRProfiler's reader counts its start (tick index later than the
    /// previous counted start's).
    pub counted_by_clrprofiler: bool,
    /// Elapsed ms of the start tick.
    pub start_tick: u64,
    /// Elapsed ms of the end tick.
    pub end_tick: u64,
    /// Objects that survived (queued finalizable objects included).
    pub survived_objects: u64,
    /// Their bytes.
    pub survived_bytes: u64,
    /// Objects reclaimed.
    pub reclaimed_objects: u64,
    /// Their bytes.
    pub reclaimed_bytes: u64,
    /// Objects moved.
    pub relocated_objects: u64,
    /// Their bytes.
    pub relocated_bytes: u64,
    /// `u` lines.
    pub u_lines: u64,
    /// `v` lines.
    pub v_lines: u64,
    /// `l` lines.
    pub l_lines: u64,
    /// Ranges on the start line.
    pub ranges_before: Vec<RangeTruth>,
    /// Ranges on the end line.
    pub ranges_after: Vec<RangeTruth>,
}

/// A generation range of a `b` line.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RangeTruth {
    /// Start address (hex).
    pub start: String,
    /// Bytes in use.
    pub length: u64,
    /// Bytes reserved.
    pub reserved: u64,
    /// Generation (3: large-object heap).
    pub generation: i32,
}

impl RangeTruth {
    fn of(r: &GenerationRange) -> RangeTruth {
        RangeTruth { start: format!("{:#x}", r.start.0), length: r.length, reserved: r.reserved, generation: r.generation }
    }
}

/// Objects moved by `u` lines.
#[derive(Clone, Debug, Serialize)]
pub struct Relocation {
    /// Object moves.
    pub relocated_objects: u64,
    /// Bytes moved.
    pub relocated_bytes: u64,
    /// `u` lines.
    pub u_lines: u64,
    /// `v` lines.
    pub v_lines: u64,
}

/// Objects alive at the end of the log.
#[derive(Clone, Debug, Serialize)]
pub struct FinalHeap {
    /// Objects.
    pub objects: u64,
    /// Bytes.
    pub bytes: u64,
    /// Per generation (3: large-object heap), with the generation's range.
    pub generations: Vec<GenerationTruth>,
}

/// One generation at the end of the log.
#[derive(Clone, Debug, Serialize)]
pub struct GenerationTruth {
    /// Generation (3: large-object heap).
    pub generation: u8,
    /// Objects.
    pub objects: u64,
    /// Bytes.
    pub bytes: u64,
    /// Range start (hex).
    pub range_start: String,
    /// Range length.
    pub range_length: u64,
}

/// Finalization.
#[derive(Clone, Debug, Serialize)]
pub struct Finalization {
    /// Objects queued (`l` lines).
    pub queued_objects: u64,
    /// Of those, critical (`l 1`).
    pub queued_critical: u64,
    /// Queued objects reclaimed by a later GC.
    pub queued_then_reclaimed: u64,
}

/// GC handles.
#[derive(Clone, Debug, Serialize)]
pub struct HandlesTruth {
    /// Handles were generated.
    pub enabled: bool,
    /// The counts.
    #[serde(flatten)]
    pub stats: HandleStats,
}

/// Heap dumps.
#[derive(Clone, Debug, Serialize)]
pub struct HeapDumps {
    /// Dumps CLRProfiler counts.
    pub count: u64,
    /// Dumps written.
    pub written: u64,
    /// Every dump.
    pub list: Vec<DumpTruth>,
}

/// One heap dump.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DumpTruth {
    /// The GC it was written in.
    pub gc_index: u32,
    /// Elapsed ms of that GC's start tick.
    pub tick: u64,
    /// CLRProfiler counts it.
    pub counted_by_clrprofiler: bool,
    /// `o` lines (every live object).
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// `e` lines.
    pub e_lines: u64,
    /// References on `o` lines.
    pub references: u64,
    /// Roots by kind.
    pub root_kinds: RootCounts,
    /// `o` lines per type id, ascending by id.
    pub types: Vec<DumpTypeTruth>,
}

/// The objects of one type in a heap dump.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct DumpTypeTruth {
    /// The type id written on the `o` lines.
    pub id: i32,
    /// Objects.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// Roots of a heap dump by kind.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct RootCounts {
    /// Kind 0.
    pub other: u64,
    /// Kind 1.
    pub stack: u64,
    /// Kind 2.
    pub finalizer: u64,
    /// Kind 3.
    pub handle: u64,
}

/// User comments.
#[derive(Clone, Debug, Serialize)]
pub struct Comments {
    /// Comments CLRProfiler counts.
    pub count: u64,
    /// Every comment.
    pub list: Vec<CommentTruth>,
}

/// One comment.
#[derive(Clone, Debug, Serialize)]
pub struct CommentTruth {
    /// Elapsed ms of the last tick before it.
    pub tick: u64,
    /// Its text.
    pub text: String,
}

/// Stack definitions.
#[derive(Clone, Debug, Serialize)]
pub struct StackTruth {
    /// `n` lines.
    pub distinct_n_lines: u64,
    /// Allocation stacks.
    pub allocation_stacks: u64,
    /// Call stacks.
    pub call_stacks: u64,
    /// Distinct call paths.
    pub trie_nodes: u64,
}

/// Call logging.
#[derive(Clone, Debug, Serialize)]
pub struct CallTruth {
    /// `c` lines were written.
    pub enabled: bool,
    /// `c` lines.
    pub c_lines: u64,
}

/// Threads.
#[derive(Clone, Debug, Serialize)]
pub struct ThreadTruth {
    /// Threads that ran.
    pub count: u64,
    /// Their ids.
    pub ids: Vec<i32>,
}

/// Reclaimed objects, summarized.
#[derive(Clone, Debug, Serialize)]
pub struct Deaths {
    /// Objects reclaimed.
    pub objects: u64,
    /// Bytes reclaimed.
    pub bytes: u64,
    /// Sum of ages in ms.
    pub total_age_ms: u64,
    /// By the generation they were in (3: large-object heap).
    pub by_generation: Vec<GenerationCount>,
    /// By the number of GCs they survived.
    pub by_gcs_survived: Vec<SurvivalCount>,
    /// By age in ms, in power-of-two bins.
    pub age_ms_log2_histogram: Vec<AgeBin>,
}

/// Deaths in one generation.
#[derive(Clone, Debug, Serialize)]
pub struct GenerationCount {
    /// Generation (3: large-object heap).
    pub generation: u8,
    /// Objects.
    pub objects: u64,
    /// Bytes.
    pub bytes: u64,
}

/// Deaths after surviving a number of GCs.
#[derive(Clone, Debug, Serialize)]
pub struct SurvivalCount {
    /// GCs survived.
    pub gcs_survived: u32,
    /// Objects.
    pub objects: u64,
    /// Bytes.
    pub bytes: u64,
}

/// Deaths with an age in `[age_ms_min, age_ms_max_exclusive)`.
#[derive(Clone, Debug, Serialize)]
pub struct AgeBin {
    /// Lower bound.
    pub age_ms_min: u64,
    /// Upper bound (exclusive).
    pub age_ms_max_exclusive: u64,
    /// Objects.
    pub objects: u64,
    /// Bytes.
    pub bytes: u64,
}

/// The 18 figures of CLRProfiler's Summary (null where it shows
/// "Unknown"): what [`clrprof::query::summary()`] must answer on the log.
pub type ClrSummary = clrprof::query::Summary;

#[derive(Clone, Copy, Default)]
struct Tally {
    objects: u64,
    bytes: u64,
}

impl Tally {
    #[inline]
    fn add(&mut self, bytes: u64) {
        self.objects += 1;
        self.bytes += bytes;
    }
}

#[derive(Clone, Copy, Default)]
struct TypeTally {
    allocated: Tally,
    loh: Tally,
    relocated: Tally,
    finalized: u64,
    critical: u64,
    reclaimed: Tally,
}

/// Accumulates the truth while the log is written.
pub struct TruthBuilder {
    types: Vec<TypeTally>,
    soh: Tally,
    loh: Tally,
    relocated: Tally,
    queued: u64,
    queued_critical: u64,
    queued_then_reclaimed: u64,
    deaths: Tally,
    death_gen: [Tally; 4],
    death_gcs: Vec<Tally>,
    death_age: Vec<Tally>,
    total_age_ms: u64,
    gcs: Vec<GcTruth>,
    gc_lines: [u64; 3],
    gc_gate: EventGate,
    dump_gate: EventGate,
    counted_current: bool,
    induced_counted: u64,
    start_sizes: [u64; 4],
    cumulative: [u64; 4],
    gc_count: [u64; 4],
    last_sizes: [u64; 4],
    dumps: Vec<DumpTruth>,
    comments: Vec<CommentTruth>,
    doomed: Doomed,
}

/// Objects known at allocation to die at the next GC (never stored in the
/// heap): their count, bytes, and allocation ticks, so that their ages can
/// be settled when that GC's end tick is known.
#[derive(Default)]
struct Doomed {
    total: Tally,
    /// Base tick of `by_ms`.
    base_ms: u32,
    /// Count and bytes per allocation tick, from `base_ms`.
    by_ms: Vec<Tally>,
}

/// Ticks a [`Doomed`] table spans at most (beyond, objects are stored).
const DOOMED_SPAN_MS: u32 = 1 << 16;

fn sizes(ranges: &[GenerationRange]) -> [u64; 4] {
    let mut s = [0u64; 4];
    for r in ranges {
        if let Some(slot) = usize::try_from(r.generation).ok().and_then(|g| s.get_mut(g)) {
            *slot += r.length;
        }
    }
    s
}

impl TruthBuilder {
    /// Nothing recorded yet, for `types` catalog types.
    pub fn new(types: usize) -> TruthBuilder {
        TruthBuilder {
            types: vec![TypeTally::default(); types],
            soh: Tally::default(),
            loh: Tally::default(),
            relocated: Tally::default(),
            queued: 0,
            queued_critical: 0,
            queued_then_reclaimed: 0,
            deaths: Tally::default(),
            death_gen: [Tally::default(); 4],
            death_gcs: Vec::new(),
            death_age: Vec::new(),
            total_age_ms: 0,
            gcs: Vec::new(),
            gc_lines: [0; 3],
            gc_gate: EventGate::default(),
            dump_gate: EventGate::default(),
            counted_current: false,
            induced_counted: 0,
            start_sizes: [0; 4],
            cumulative: [0; 4],
            gc_count: [0; 4],
            last_sizes: [0; 4],
            dumps: Vec::new(),
            comments: Vec::new(),
            doomed: Doomed::default(),
        }
    }

    /// A small object that will certainly be reclaimed from generation 0
    /// by the next GC, allocated at tick `alloc_ms`. Returns false (and
    /// records nothing) when its tick is too far from the last GC for the
    /// table; the caller then stores the object.
    #[inline]
    pub fn doomed(&mut self, ty: usize, size: u64, alloc_ms: u32) -> bool {
        let d = &mut self.doomed;
        if d.by_ms.is_empty() {
            d.base_ms = alloc_ms;
        }
        let Some(k) = alloc_ms.checked_sub(d.base_ms).filter(|&k| k < DOOMED_SPAN_MS) else { return false };
        let k = k as usize;
        if d.by_ms.len() <= k {
            d.by_ms.resize(k + 1, Tally::default());
        }
        d.by_ms[k].add(size);
        d.total.add(size);
        self.types[ty].reclaimed.add(size);
        true
    }

    /// The doomed objects die in the GC being recorded (the last of
    /// `gcs`), at tick `t_end`: in generation 0, after surviving no GC.
    fn settle_doomed(&mut self, t_end: u64) {
        let d = std::mem::take(&mut self.doomed);
        if d.total.objects == 0 {
            return;
        }
        self.deaths.objects += d.total.objects;
        self.deaths.bytes += d.total.bytes;
        self.death_gen[0].objects += d.total.objects;
        self.death_gen[0].bytes += d.total.bytes;
        if self.death_gcs.is_empty() {
            self.death_gcs.push(Tally::default());
        }
        self.death_gcs[0].objects += d.total.objects;
        self.death_gcs[0].bytes += d.total.bytes;
        for (k, t) in d.by_ms.iter().enumerate().filter(|(_, t)| t.objects > 0) {
            let age = t_end.saturating_sub(d.base_ms as u64 + k as u64);
            self.total_age_ms += age * t.objects;
            let bin = (64 - age.leading_zeros()) as usize;
            if self.death_age.len() <= bin {
                self.death_age.resize(bin + 1, Tally::default());
            }
            self.death_age[bin].objects += t.objects;
            self.death_age[bin].bytes += t.bytes;
        }
        if let Some(g) = self.gcs.last_mut() {
            g.reclaimed_objects += d.total.objects;
            g.reclaimed_bytes += d.total.bytes;
        }
        // Keep the table's memory for the next GC.
        let mut by_ms = d.by_ms;
        by_ms.clear();
        self.doomed.by_ms = by_ms;
    }

    /// An allocation.
    #[inline]
    pub fn allocated(&mut self, ty: usize, size: u64, large: bool) {
        let t = &mut self.types[ty];
        t.allocated.add(size);
        if large {
            t.loh.add(size);
            self.loh.add(size);
        } else {
            self.soh.add(size);
        }
    }

    /// An object moved by a `u` line.
    #[inline]
    pub fn relocated(&mut self, o: &Obj) {
        self.types[o.ty()].relocated.add(o.size as u64);
        self.relocated.add(o.size as u64);
        if let Some(g) = self.gcs.last_mut() {
            g.relocated_objects += 1;
            g.relocated_bytes += o.size as u64;
        }
    }

    /// An object queued for finalization.
    pub fn finalized(&mut self, o: &Obj, critical: bool) {
        let t = &mut self.types[o.ty()];
        t.finalized += 1;
        self.queued += 1;
        if critical {
            t.critical += 1;
            self.queued_critical += 1;
        }
    }

    /// An object reclaimed in generation `gen` (3: large) by GC `gc_number`
    /// whose end tick is `t_end`.
    #[inline]
    pub fn reclaimed(&mut self, o: &Obj, gen: u8, gc_number: u32, t_end: u64) {
        let size = o.size as u64;
        self.types[o.ty()].reclaimed.add(size);
        self.deaths.add(size);
        self.death_gen[gen as usize & 3].add(size);
        let survived = (gc_number as usize).saturating_sub(1 + o.born_gc as usize);
        if self.death_gcs.len() <= survived {
            self.death_gcs.resize(survived + 1, Tally::default());
        }
        self.death_gcs[survived].add(size);
        let age = t_end.saturating_sub(o.alloc_ms as u64);
        self.total_age_ms += age;
        let bin = (64 - age.leading_zeros()) as usize;
        if self.death_age.len() <= bin {
            self.death_age.resize(bin + 1, Tally::default());
        }
        self.death_age[bin].add(size);
        if o.flags() & QUEUED != 0 {
            self.queued_then_reclaimed += 1;
        }
        if let Some(g) = self.gcs.last_mut() {
            g.reclaimed_objects += 1;
            g.reclaimed_bytes += size;
        }
    }

    /// A GC starts: `reader_index` is CLRProfiler's tick index at its
    /// `b 1` line; `lines` the `u`, `v`, `l` lines written so far.
    pub fn gc_start(&mut self, plan: &GcPlan, reader_index: u64, before: &[GenerationRange], t_start: u64, lines: [u64; 3]) {
        self.counted_current = self.gc_gate.offer(reader_index);
        if self.counted_current && plan.induced {
            self.induced_counted += 1;
        }
        self.start_sizes = sizes(before);
        self.gc_lines = lines;

        self.gcs.push(GcTruth {
            index: plan.number,
            condemned_generation: plan.condemned,
            induced: plan.induced,
            compacting: plan.compacting,
            heap_dump: plan.heap_dump,
            counted_by_clrprofiler: self.counted_current,
            start_tick: t_start,
            ranges_before: before.iter().map(RangeTruth::of).collect(),
            ..GcTruth::default()
        });
    }

    /// The GC ends.
    pub fn gc_end(&mut self, plan: &GcPlan, after: &[GenerationRange], t_end: u64, survived: (u64, u64), lines: [u64; 3]) {
        if self.counted_current {
            let limit = if plan.condemned >= 2 { 3 } else { plan.condemned as usize };
            for g in 0..=limit {
                self.cumulative[g] += self.start_sizes[g];
                self.gc_count[g] += 1;
            }
        }
        self.last_sizes = sizes(after);
        self.settle_doomed(t_end);
        let gc_lines = self.gc_lines;
        if let Some(g) = self.gcs.last_mut() {
            g.end_tick = t_end;
            g.survived_objects = survived.0;
            g.survived_bytes = survived.1;
            g.u_lines = lines[0] - gc_lines[0];
            g.v_lines = lines[1] - gc_lines[1];
            g.l_lines = lines[2] - gc_lines[2];
            g.ranges_after = after.iter().map(RangeTruth::of).collect();
        }
    }

    /// A heap dump was written; `reader_index` is CLRProfiler's tick index
    /// at its first `e` line.
    pub fn dump(&mut self, mut d: DumpTruth, reader_index: u64, gc_index: u32, tick: u64) {
        d.counted_by_clrprofiler = self.dump_gate.offer(reader_index);
        d.gc_index = gc_index;
        d.tick = tick;
        self.dumps.push(d);
    }

    /// A comment was written.
    pub fn comment(&mut self, tick: u64, text: &str) {
        self.comments.push(CommentTruth { tick, text: text.to_string() });
    }

    /// The summary as CLRProfiler computes it, given the final heap bytes,
    /// `g`-style GC counts and handle counts.
    fn summary(&self, final_heap_bytes: u64, counts: [u32; 3], handles: &HandleStats) -> ClrSummary {
        let known = self.gc_count[0] > 0;
        let with_handles = handles.created > 0;
        let heap = |g: usize| {
            if !known {
                None
            } else {
                Some(self.cumulative[g].checked_div(self.gc_count[g]).unwrap_or(self.last_sizes[g]))
            }
        };
        let if_known = |v: u64| {
            if known {
                Some(v)
            } else if with_handles {
                Some(0)
            } else {
                None
            }
        };
        let handle = |v: u64| if with_handles { Some(v) } else { None };
        ClrSummary {
            allocated_bytes: self.soh.bytes + self.loh.bytes,
            // The generator's logs never say they were recorded without
            // allocation events: every figure is CLRProfiler's.
            allocations_known: true,
            estimated: false,
            survivors_known: true,
            relocated_bytes: self.relocated.bytes,
            final_heap_bytes,
            gen0_collections: counts[0] as i64,
            gen1_collections: counts[1] as i64,
            gen2_collections: counts[2] as i64,
            induced_collections: if_known(self.induced_counted),
            gen0_heap_bytes: heap(0),
            gen1_heap_bytes: heap(1),
            gen2_heap_bytes: heap(2),
            loh_bytes: heap(3),
            objects_finalized: if_known(self.queued),
            critical_objects_finalized: if_known(self.queued_critical),
            handles_created: handle(handles.created),
            handles_destroyed: handle(handles.destroyed),
            handles_surviving: handle(handles.surviving),
            comments: self.comments.len() as u64,
            heap_dumps: self.dumps.iter().filter(|d| d.counted_by_clrprofiler).count() as u64,
        }
    }
}

/// What the process knows at the end, for [`TruthBuilder::finish`].
pub struct Ending<'a> {
    /// Parameters.
    pub params: Params,
    /// Objects left in each generation (3: large) with their range.
    pub generations: [(u64, u64, &'a GenerationRange); 4],
    /// Objects left per type.
    pub alive_by_type: Vec<(u64, u64)>,
    /// Type ids, names and finalizers, per catalog type (None: unused).
    pub type_info: Vec<Option<(i32, String, bool, bool)>>,
    /// GC counts by condemned generation.
    pub by_condemned: [u32; 3],
    /// Cumulative GC counts.
    pub counts: [u32; 3],
    /// Handle counts.
    pub handles: HandleStats,
    /// `c` lines (filled in by `Truth::attach_log`).
    pub calls: CallTruth,
    /// Threads.
    pub threads: ThreadTruth,
    /// Ticks.
    pub ticks: TickStats,
}

impl TruthBuilder {
    /// The finished truth.
    pub fn finish(self, end: Ending<'_>) -> Truth {
        let final_objects: u64 = end.generations.iter().map(|g| g.0).sum();
        let final_bytes: u64 = end.generations.iter().map(|g| g.1).sum();
        let summary = self.summary(final_bytes, end.counts, &end.handles);
        let mut types: Vec<TypeTruth> = Vec::new();
        for (k, info) in end.type_info.iter().enumerate() {
            let Some((id, name, finalizable, critical)) = info else { continue };
            let t = &self.types[k];
            let alive = end.alive_by_type.get(k).copied().unwrap_or((0, 0));
            types.push(TypeTruth {
                id: *id,
                name: name.clone(),
                finalizable: *finalizable,
                critical_finalizer: *critical,
                allocated_objects: t.allocated.objects,
                allocated_bytes: t.allocated.bytes,
                loh_objects: t.loh.objects,
                loh_bytes: t.loh.bytes,
                relocated_objects: t.relocated.objects,
                relocated_bytes: t.relocated.bytes,
                finalized_objects: t.finalized,
                critical_finalized_objects: t.critical,
                reclaimed_objects: t.reclaimed.objects,
                reclaimed_bytes: t.reclaimed.bytes,
                objects_at_end: alive.0,
                bytes_at_end: alive.1,
            });
        }
        types.sort_by_key(|t| t.id);
        let objects = self.soh.objects + self.loh.objects;
        let bytes = self.soh.bytes + self.loh.bytes;
        let handles_enabled = end.params.options.handles_per_million > 0.0;
        Truth {
            schema: SCHEMA.to_string(),
            generator: GeneratorInfo { name: "clrprof gen".to_string(), version: env!("CARGO_PKG_VERSION").to_string() },
            log: LogInfo { bytes: 0, lines: 0, pointer_bits: end.params.options.pointer_bits.bits(), lines_by_kind: BTreeMap::new() },
            gcs: GcsTruth {
                total: self.gcs.len() as u32,
                by_condemned_generation: end.by_condemned,
                cumulative_per_generation: end.counts,
                induced: self.gcs.iter().filter(|g| g.induced).count() as u32,
                heap_dump_gcs: self.gcs.iter().filter(|g| g.heap_dump).count() as u32,
                gen0_budget_bytes: end.params.gen0_budget_bytes,
                list: self.gcs,
            },
            params: end.params,
            allocated: Allocated {
                objects,
                bytes,
                mean_size: if objects > 0 { bytes as f64 / objects as f64 } else { 0.0 },
                soh_objects: self.soh.objects,
                soh_bytes: self.soh.bytes,
                loh_objects: self.loh.objects,
                loh_bytes: self.loh.bytes,
            },
            types,
            relocation: Relocation {
                relocated_objects: self.relocated.objects,
                relocated_bytes: self.relocated.bytes,
                u_lines: 0,
                v_lines: 0,
            },
            final_heap: FinalHeap {
                objects: final_objects,
                bytes: final_bytes,
                generations: [0u8, 1, 2, 3]
                    .iter()
                    .map(|&g| {
                        let (objects, bytes, range) = end.generations[g as usize];
                        GenerationTruth {
                            generation: g,
                            objects,
                            bytes,
                            range_start: format!("{:#x}", range.start.0),
                            range_length: range.length,
                        }
                    })
                    .collect(),
            },
            finalization: Finalization {
                queued_objects: self.queued,
                queued_critical: self.queued_critical,
                queued_then_reclaimed: self.queued_then_reclaimed,
            },
            handles: HandlesTruth { enabled: handles_enabled, stats: end.handles },
            heap_dumps: HeapDumps {
                count: summary.heap_dumps,
                written: self.dumps.len() as u64,
                list: self.dumps,
            },
            comments: Comments { count: self.comments.len() as u64, list: self.comments },
            stacks: StackTruth { distinct_n_lines: 0, allocation_stacks: 0, call_stacks: 0, trie_nodes: 0 },
            calls: end.calls,
            threads: end.threads,
            ticks: end.ticks,
            deaths: Deaths {
                objects: self.deaths.objects,
                bytes: self.deaths.bytes,
                total_age_ms: self.total_age_ms,
                by_generation: (0..4u8)
                    .map(|g| GenerationCount {
                        generation: g,
                        objects: self.death_gen[g as usize].objects,
                        bytes: self.death_gen[g as usize].bytes,
                    })
                    .collect(),
                by_gcs_survived: self
                    .death_gcs
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| t.objects > 0)
                    .map(|(k, t)| SurvivalCount { gcs_survived: k as u32, objects: t.objects, bytes: t.bytes })
                    .collect(),
                age_ms_log2_histogram: self
                    .death_age
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| t.objects > 0)
                    .map(|(b, t)| AgeBin {
                        age_ms_min: if b == 0 { 0 } else { 1u64 << (b - 1) },
                        age_ms_max_exclusive: 1u64 << b,
                        objects: t.objects,
                        bytes: t.bytes,
                    })
                    .collect(),
            },
            summary_as_clrprofiler: summary,
        }
    }
}

impl Truth {
    /// Fills in what only the profiler stage knows: the log's size, its
    /// lines by kind, and the stacks.
    pub(crate) fn attach_log(&mut self, bytes: u64, counts: &[u64; Kind::COUNT], stacks: StackTruth) {
        self.log.bytes = bytes;
        self.log.lines = counts.iter().sum();
        self.log.lines_by_kind = Kind::ALL
            .iter()
            .filter(|k| counts[k.index()] > 0)
            .map(|k| (k.letter().to_string(), counts[k.index()]))
            .collect();
        self.relocation.u_lines = counts[Kind::Moved.index()];
        self.relocation.v_lines = counts[Kind::Survived.index()];
        self.calls.c_lines = counts[Kind::Call.index()];
        self.stacks = stacks;
    }

    /// The truth as pretty-printed JSON.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string_pretty(self)
    }
}
