//! Every sampled object followed through every GC by the runtime's moved
//! and surviving ranges: alive, dead at a GC (in a generation), or
//! unknown.
//!
//! What the runtime reports for a GC (`GC/GenerationRange`,
//! `GC/BulkMovedObjectRanges`, `GC/BulkSurvivingObjectRanges`; see the
//! guide's EventPipe chapter, "Survival"):
//!
//! - at its start, the memory of each generation: on segments (CoreCLR
//!   3.1 to .NET 6) a range per generation per segment, generation 0's
//!   reaching to its segment's end; on regions (.NET 7 and later) a range
//!   per region. Generation 3 is the large object heap (the pinned object
//!   heap is counted with it: both are collected by gen-2 GCs only);
//! - while it runs, every surviving plug of the memory it condemned: moved
//!   ranges when it compacts (a plug that stays put is a range moved by 0),
//!   surviving ranges when it sweeps; a background GC reports at its end
//!   every run of objects its sweeps left, in every generation (below).
//!
//! So at the GC's end a sampled object is:
//!
//! - **alive**, at its new address, when a reported range holds its
//!   whole body (its start and its size, when the runtime gave the size;
//!   its start and the smallest object, three pointers, when not). A
//!   range can end inside the next object: a plug's last bytes hold the
//!   following gap's header and, after a pinned plug, saved words; a
//!   dead object partly covered so is not a survivor. On CoreCLR 3.1 the
//!   ticks carry no size, but its reports leave none partly covered: a
//!   plug's range ends where its last object ends (`walk_plug` in its
//!   `gc.cpp` gives back the 24 bytes a pinned plug's saved header
//!   took), and a background GC's runs end at a free object (the guide
//!   gives the measured figures);
//! - **alive** where it was when the memory it lies in belongs to a
//!   generation the GC did not condemn (older than the condemned one; the
//!   large object heap below gen 2);
//! - **dead**, in the generation of its memory, when it lies in condemned
//!   memory and the GC reported its survivors (any range at all) but none
//!   holds it. A background GC condemns generation 2 and the large object
//!   heap, but its report covers every generation: at its end it walks
//!   every object its sweeps left, on segments in every segment of
//!   generation 2 (the ephemeral one, with generations 0 and 1, among
//!   them) and of the large object heap, after it swept generations 0 and
//!   1 too (`background_ephemeral_sweep` in the runtime's `gc.cpp`: their
//!   dead objects become free space the program allocates into at once),
//!   on regions in every region. So an object of any generation that a
//!   background GC's report leaves out is dead. (Taking generations 0 and
//!   1 as untouched kept swept objects followed at their old address,
//!   where new objects then came to lie: the next GC's plugs over those
//!   kept 10-16% of a type the program keeps none of alive on CoreCLR
//!   3.1.) A foreground GC can run inside a background one (`GC/Start`
//!   `Type` 2, before the background GC's report): the background GC is
//!   set aside, the foreground GC judged, then the background GC's report
//!   (after the foreground GC's moves) at its own `GC/Stop`, its deaths
//!   numbered with it (closing it at the foreground GC's start made its
//!   large objects unknown: 10% of a never-kept large array on .NET 8);
//! - **unknown** otherwise: in condemned memory of a GC that reported no
//!   survivors (the keyword was off, the events were lost, or a GC began
//!   before the previous one's report came), in condemned memory of a GC
//!   not closed by its `GC/Stop` that no range holds (the trace ended
//!   inside it, or a `GC/Start` came first: its report may be cut short),
//!   or in memory no generation range of the GC's start covered. An
//!   unknown object stays unknown
//!   (nothing later can say when it died); it is never counted as dead or
//!   alive after that GC.
//!
//! An object made during a background GC, before its report, is judged
//! by that report (the importer hands it over at once): the GC swept it
//! when it was dead, and on .NET 8 a large array of the same size took
//! its place before the next GC's report, which then read as the sampled
//! one's survival (0.7% of a never-kept large array's samples).
//!
//! A background GC's report cannot vouch for every object it holds: its
//! sweeps free the dead objects of generations 0 and 1, the program
//! allocates into that memory while the GC still runs, and the report,
//! a walk of the heap at the GC's end, holds the new objects where the
//! dead ones were. Where memory of generation 0 or 1 was seen taken again
//! during the GC (a sample, or a foreground GC's move into memory that
//! GC did not condemn, well below the end of what that memory held), an
//! object made before, within a tick's worth of those landings, held by
//! no foreground GC inside the background one (alive then, so reachable
//! when the background GC began, so not swept by it), whose report run
//! has the shape of an allocation context laid over it (a kilobyte or
//! more, from the object on, as on .NET 8, or ending just past it, as on
//! CoreCLR 3.1), stays followed but doubtful: dead if a later GC leaves
//! it out (dead whichever object it was), unknown if still held at the
//! end. (Taking the report's word kept 7-13% of a never-kept type alive
//! on .NET 8 in a third of the matrix's captures, and up to 6% on 3.1.)
//!
//! A new sample placed where a followed object lies proves that object
//! gone: it was freed at a GC the reports did not show, and becomes
//! unknown too ([`Survival::overwritten`]).

use super::followed::{Entry, Followed};
use crate::import::SampledFate;
use std::collections::HashSet;

/// The bytes of an object of `size` bytes (0: unknown) that a range must
/// hold to keep it: the whole object when the size is known, but for a
/// large object (the runtime's `ObjectSize` of a large-object-heap
/// allocation counts up to 4 pointers of padding its ranges do not);
/// the smallest object when it is not.
pub(super) fn body(size: u64, min_object: u64) -> u64 {
    match size {
        0 => min_object,
        s if s >= LARGE_OBJECT => s - 4 * (min_object / 3),
        s => s,
    }
}

/// The size from which objects go to the large object heap.
const LARGE_OBJECT: u64 = 85_000;

/// The most a program allocates on a heap between two allocation ticks:
/// the runtime's 100 KB and the allocation context (8 KB) the crossing
/// object opens, with room to spare.
const TICK_REACH: u64 = 110 * 1024;

/// How far below the highest allocation context so far a tick's object
/// may land without the memory having been freed and taken again: two
/// contexts (threads racing for contexts put ticks one context out of
/// order, 8 KB, on CoreCLR 3.1).
const REUSE_SLACK: u64 = 16 * 1024;

/// The most bytes a suspect run begins before its object (seen: 0 to 32).
const RUN_LEAD: u64 = 64;

/// The most bytes a suspect run reaches past its object's start (seen on
/// CoreCLR 3.1: 150 to 250).
const RUN_TAIL: u64 = 512;

/// The least length of a suspect run: new objects fill an allocation
/// context (8 KB; seen 1,536 for one still being filled).
const RUN_MIN: u64 = 1024;

/// How a GC's report of survivors covers the heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Collected {
    /// A blocking GC: it reports the survivors of the generations it
    /// condemned.
    Blocking,
    /// A background GC: it condemned generation 2 and the large object
    /// heap, and its report covers every generation.
    Background,
}

/// A background GC set aside while a foreground GC runs inside it (the
/// log closes it at the foreground GC's start; its report comes after
/// the foreground GC's): judged at its own `GC/Stop`, with its number.
struct SetAside {
    gc: u32,
    condemned: u32,
    memory: Vec<Memory>,
}

/// A generation range at a GC's start: `[lo, hi)`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Memory {
    pub lo: u64,
    pub hi: u64,
    /// The end of the objects in it at the GC's start (`lo` for memory
    /// that held none then: a range of a background GC's end). Below it,
    /// an object made during a background GC lies in memory that GC
    /// swept ([`Survival::background_started`]).
    pub in_use: u64,
    /// 0-2, 3 for the large (and pinned) object heap.
    pub generation: u32,
}

/// The sampled objects followed so far and their fates.
pub(super) struct Survival {
    /// The objects believed alive, by address.
    alive: Followed,
    /// Each sample's fate, in sample order.
    fates: Vec<SampledFate>,
    /// The current GC's reported ranges: (old, new, length).
    reported: Vec<(u64, u64, u64)>,
    /// Objects found under a new sample (they had died unseen).
    pub overwritten: u64,
    /// GCs that condemned followed objects and reported no survivors.
    pub silent_gcs: u64,
    /// GCs ended so far.
    gcs_ended: u32,
    /// The smallest object: three pointers.
    min_object: u64,
    /// A background GC waiting for its report.
    aside: Option<SetAside>,
    /// The first sample made since the last GC's end.
    first_since_gc: u32,
    /// The background GC in progress, from its start to its report.
    background: Option<Background>,
    /// Objects a background GC's report held that it cannot tell from
    /// objects made after its sweep: (sample, that GC). Unknown if still
    /// followed at the end.
    doubtful: Vec<(u32, u32)>,
}

/// What is known of a background GC's sweeps before its report: the
/// program allocates into the memory of generations 0 and 1 that they
/// freed, and the report (a walk of every object at the GC's end)
/// cannot tell those new objects from the old ones it held.
struct Background {
    /// Its number.
    gc: u32,
    /// The first sample made during it.
    first_sample: u32,
    /// Where objects came to lie during it: the samples made, and where
    /// foreground GCs inside it moved objects to in memory they did not
    /// condemn (generation 1 for a gen-0 GC).
    /// In the order they came: (address, the next sample's number then).
    landed: Vec<(u64, u32)>,
    /// The samples a foreground GC inside it held (sorted once it is
    /// judged): alive then, so reachable when it began, so not swept by
    /// it.
    vouched: Vec<u32>,
}

impl Default for Survival {
    fn default() -> Self {
        Survival::new(8)
    }
}

impl Survival {
    /// A trace whose pointers are `pointer_size` bytes.
    pub fn new(pointer_size: u32) -> Survival {
        Survival {
            alive: Followed::default(),
            fates: Vec::new(),
            reported: Vec::new(),
            overwritten: 0,
            silent_gcs: 0,
            gcs_ended: 0,
            min_object: 3 * u64::from(pointer_size.clamp(4, 8)),
            aside: None,
            first_since_gc: 0,
            background: None,
            doubtful: Vec::new(),
        }
    }

    /// A sampled allocation (the next sample) at `address`, of `size`
    /// bytes (0 when the runtime did not say).
    pub fn allocated(&mut self, address: u64, size: u64) {
        let sample = self.fates.len() as u32;
        if address == 0 {
            // No address: nothing can follow it past the next GC.
            self.fates.push(SampledFate::Unknown { gc: self.gcs_ended });
            return;
        }
        self.fates.push(SampledFate::Alive);
        if let Some(b) = self.background.as_mut() {
            b.landed.push((address, sample));
        }
        // A followed object whose body holds the new one's start is gone.
        // Objects do not overlap: only the nearest one below can hold it.
        if let Some(f) = self.alive.at_or_below(address) {
            let end = if f.size == 0 { f.addr + 1 } else { f.addr.saturating_add(f.size) };
            if address < end {
                self.alive.remove(f.addr);
                self.overwritten += 1;
                // Made since the last GC's end, with a background GC in
                // progress: only that GC can have freed it (seen on .NET 8:
                // the program's large arrays, dropped before or while a
                // background GC ran, had their memory taken by new ones
                // before its report: a third of one type's samples were
                // unknown).
                let fate = match &self.background {
                    Some(b) if f.sample >= self.first_since_gc.min(b.first_sample) => {
                        SampledFate::Died { gc: b.gc, generation: if f.size >= LARGE_OBJECT { 3 } else { 0 } }
                    }
                    _ => SampledFate::Unknown { gc: self.last_gc() },
                };
                self.set(f.sample, fate);
            }
        }
        self.alive.insert(Entry { addr: address, size, sample });
    }

    /// The GC before now (the one an overwritten object may have died
    /// at), numbered as the model numbers GCs.
    fn last_gc(&self) -> u32 {
        self.gcs_ended.saturating_sub(1)
    }

    fn set(&mut self, sample: u32, fate: SampledFate) {
        if let Some(f) = self.fates.get_mut(sample as usize) {
            *f = fate;
        }
    }

    /// Ranges of survivors of the current GC: `(old, new, length)`.
    pub fn reported(&mut self, ranges: impl Iterator<Item = (u64, u64, u64)>) {
        self.reported.extend(ranges.filter(|r| r.2 > 0));
    }

    /// The end of GC number `gc` (0-based, as the model numbers them),
    /// which condemned generations up to `condemned` and reported as
    /// `collected` says (its whole report when `finished`: closed by its
    /// `GC/Stop`), with the generation ranges of its start.
    pub fn gc_ended(&mut self, gc: u32, condemned: u32, collected: Collected, finished: bool, memory: &[Memory]) {
        self.gcs_ended = self.gcs_ended.max(gc + 1);
        self.first_since_gc = self.fates.len() as u32;
        let mut reported = std::mem::take(&mut self.reported);
        reported.sort_unstable_by_key(|r| r.0);
        // A plug can come in pieces (one range per event's buffer, per
        // object run): adjacent ranges moved by the same distance are one.
        let mut merged: Vec<(u64, u64, u64)> = Vec::with_capacity(reported.len());
        for &(old, new, length) in &reported {
            match merged.last_mut() {
                Some(m) if old <= m.0.saturating_add(m.2) && new.wrapping_sub(old) == m.1.wrapping_sub(m.0) => {
                    m.2 = m.2.max(old.saturating_add(length) - m.0);
                }
                _ => merged.push((old, new, length)),
            }
        }
        reported.clear();
        reported.extend(merged);
        let any_report = !reported.is_empty();
        let condemns = |generation: u32| match (collected, generation) {
            (Collected::Background, _) => true,
            (Collected::Blocking, 3) => condemned >= 2,
            (Collected::Blocking, g) => g <= condemned,
        };
        // Every followed object: covered by a reported range (moved or
        // stayed), or decided by the memory it lies in. Objects in no
        // reported range are looked at through the memory ranges only (a
        // GC of generation 0 leaves the old generations' objects alone).
        // All of them in address order, each decided once (`gone`).
        let all = self.alive.take_sorted();
        let mut gone = vec![false; all.len()];
        // The positions of the objects in `[lo, hi)`.
        let within = |lo: u64, hi: u64| all.partition_point(|e| e.addr < lo)..all.partition_point(|e| e.addr < hi);
        let mut moved: Vec<Entry> = Vec::new();
        // For each moved one: where it lay in its range, and the range's
        // length (a background GC's, for `doubt`).
        let judged_by_background = collected == Collected::Background && self.background.is_some();
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for &(old, new, length) in &reported {
            let end = old.saturating_add(length);
            for k in within(old, end) {
                let e = all[k];
                if !gone[k] && e.addr.saturating_add(body(e.size, self.min_object)) <= end {
                    gone[k] = true;
                    moved.push(Entry { addr: new.wrapping_add(e.addr - old), ..e });
                    if judged_by_background {
                        runs.push((e.addr - old, length));
                    }
                }
            }
        }
        match (self.background.as_mut(), collected) {
            (Some(b), Collected::Blocking) => {
                // A foreground GC inside the background one: what it held,
                // and where it moved objects to in memory it left alone.
                b.vouched.extend(moved.iter().map(|e| e.sample));
                // The memory it left alone, by start, with the highest end
                // so far: an address lies in some range when that end,
                // over the ranges starting at or below it, passes it.
                let mut alone: Vec<(u64, u64)> = memory.iter().filter(|m| !condemns(m.generation)).map(|m| (m.lo, m.hi)).collect();
                alone.sort_unstable();
                let mut reach = 0;
                for r in &mut alone {
                    reach = reach.max(r.1);
                    r.1 = reach;
                }
                let untouched = |a: u64| {
                    let i = alone.partition_point(|r| r.0 <= a);
                    i > 0 && a < alone[i - 1].1
                };
                let next = self.fates.len() as u32;
                b.landed.extend(reported.iter().filter(|r| r.0 != r.1 && untouched(r.1)).map(|r| (r.1, next)));
            }
            (Some(_), Collected::Background) => {
                if let Some(b) = self.background.take() {
                    self.doubt(gc, b, memory, &moved, &runs);
                }
            }
            _ => {}
        }
        let mut silent = false;
        for m in memory.iter().filter(|m| condemns(m.generation)) {
            for k in within(m.lo, m.hi) {
                if std::mem::replace(&mut gone[k], true) {
                    continue;
                }
                silent |= !any_report;
                let fate = if any_report && finished {
                    SampledFate::Died { gc, generation: m.generation.min(3) as u8 }
                } else {
                    SampledFate::Unknown { gc }
                };
                self.set(all[k].sample, fate);
            }
        }
        // Objects in memory no range of the GC's start covered: the GC
        // may have condemned them or not (when the trace has no ranges at
        // all, every uncovered object is such).
        let mut covered: Vec<(u64, u64)> = memory.iter().map(|m| (m.lo, m.hi)).collect();
        covered.sort_unstable();
        let mut outside: Vec<std::ops::Range<usize>> = Vec::new();
        let mut from = 0u64;
        for (lo, hi) in covered {
            if lo > from {
                outside.push(within(from, lo));
            }
            from = from.max(hi);
        }
        outside.push(all.partition_point(|e| e.addr < from)..all.len());
        for k in outside.into_iter().flatten() {
            if !std::mem::replace(&mut gone[k], true) {
                self.set(all[k].sample, SampledFate::Unknown { gc });
            }
        }
        self.silent_gcs += u64::from(silent);
        // The objects left where they were, then the moved ones at their
        // new addresses, in the order they were found: one moved onto
        // another's address takes its place.
        let mut next: Vec<Entry> = all.iter().zip(&gone).filter(|(_, &g)| !g).map(|(e, _)| *e).collect();
        let kept = next.len();
        next.extend(moved);
        if kept < next.len() {
            // Stable: at one address, the order of arrival is kept.
            next.sort_by_key(|e| e.addr);
            let mut placed: Vec<Entry> = Vec::with_capacity(next.len());
            for e in next {
                match placed.last_mut() {
                    Some(last) if last.addr == e.addr => {
                        // Two objects moved to one address: the reports
                        // contradict each other; neither can be told apart now.
                        self.overwritten += 1;
                        let old = std::mem::replace(last, e);
                        self.set(old.sample, SampledFate::Unknown { gc });
                    }
                    _ => placed.push(e),
                }
            }
            next = placed;
        }
        self.alive.rebuild(&next);
        reported.clear();
        self.reported = reported;
    }

    /// Background GC number `gc`, which condemned up to `condemned`, set
    /// aside before its report (a foreground GC started inside it): its
    /// report, when it comes, is taken at [`Survival::set_aside_ended`].
    /// One set aside before is ended unfinished.
    pub fn set_aside(&mut self, gc: u32, condemned: u32, memory: &[Memory]) {
        self.set_aside_ended(false);
        self.gcs_ended = self.gcs_ended.max(gc + 1);
        self.aside = Some(SetAside { gc, condemned, memory: memory.to_vec() });
    }

    /// Whether a background GC is set aside.
    pub fn has_set_aside(&self) -> bool {
        self.aside.is_some()
    }

    /// The end of the background GC set aside (by its `GC/Stop` when
    /// `finished`), with the ranges reported since the last GC's end.
    pub fn set_aside_ended(&mut self, finished: bool) {
        if let Some(a) = self.aside.take() {
            self.gc_ended(a.gc, a.condemned, Collected::Background, finished, &a.memory);
        }
    }

    /// A background GC began: until its report, note where the program's
    /// new objects land.
    /// `gc` is its number.
    pub fn background_started(&mut self, gc: u32) {
        self.background = Some(Background { gc, first_sample: self.fates.len() as u32, landed: Vec::new(), vouched: Vec::new() });
    }

    /// The objects background GC `gc`'s report held (`kept`, at their
    /// addresses) that it cannot vouch for: made before it, held by no
    /// foreground GC inside it, in memory of generation 0 or 1 where
    /// objects came to lie during it below the
    /// end of what that memory held at its start, up to a tick's worth
    /// above the highest of them. Its sweeps freed that memory and the
    /// program allocated into it before the report: an old object the
    /// report seems to hold may be dead, a new one in its place. (Seen
    /// on .NET 8: a never-kept type's samples, 7-13% of them, held so by
    /// a kept type's 8 KB allocation contexts laid where they had been.)
    fn doubt(&mut self, gc: u32, b: Background, memory: &[Memory], kept: &[Entry], runs: &[(u64, u64)]) {
        let Background { landed, mut vouched, .. } = b;
        vouched.sort_unstable();
        // Per memory range (the first of each start, those of the GC's
        // start first): where objects landed more than `REUSE_SLACK`
        // below the end of what it held, that end rising with each new
        // one (a tick's object opens an allocation context, and fresh
        // contexts are handed out upwards: one well below the highest so
        // far was carved from freed memory; threads racing for contexts
        // put ticks one or two contexts out of order). The program fills
        // freed memory upwards and allocates at most a tick's worth
        // between two samples, so what it laid in freed memory lies
        // within a tick's worth of those landings. Further below, what a
        // tick's worth of allocation before the first landing filled may
        // be spread over more memory, but holds as few dead samples: at
        // most about one, expected, which is left to the report's word.
        // (lo, hi, the first sample made after reuse began there.)
        // The landings by address (their positions in `landed`, which is
        // in the order they came).
        let mut by_address: Vec<u32> = (0..landed.len() as u32).collect();
        by_address.sort_unstable_by_key(|&i| (landed[i as usize].0, i));
        let mut seen: HashSet<u64> = HashSet::new();
        let mut reused: Vec<(u64, u64, u32)> = Vec::new();
        let mut inside: Vec<u32> = Vec::new();
        for m in memory.iter().filter(|m| m.generation <= 1 && m.lo < m.hi) {
            if !seen.insert(m.lo) {
                continue;
            }
            let at = |a: u64| by_address.partition_point(|&i| landed[i as usize].0 < a);
            inside.clear();
            inside.extend_from_slice(&by_address[at(m.lo)..at(m.hi)]);
            inside.sort_unstable();
            let mut end = m.in_use.max(m.lo);
            let mut first: Option<u32> = None;
            let (mut lowest, mut highest) = (u64::MAX, 0u64);
            for &(a, next) in inside.iter().map(|&i| &landed[i as usize]) {
                if a.saturating_add(REUSE_SLACK) < end {
                    first.get_or_insert(next);
                    lowest = lowest.min(a);
                    highest = highest.max(a);
                }
                end = end.max(a + 1);
            }
            if let Some(first) = first {
                reused.push((lowest.saturating_sub(TICK_REACH).max(m.lo), m.hi.min(highest.saturating_add(TICK_REACH)), first));
            }
        }
        if reused.is_empty() {
            return;
        }
        reused.sort_unstable();
        // Only a run that begins at the object (or a few words before it)
        // and is at least a kilobyte long: an allocation context laid
        // where the object's own had begun (a tick's object opens its
        // context, and the sweep leaves the freed memory in pieces from
        // there). A true survivor's run starts there only when what lay
        // before it died, and then runs on for a kilobyte only when the
        // next dozens of objects all lived; seen on CoreCLR 3.1, doubting
        // every object in reach made up to 18% of a half-kept type's
        // samples unknown for about one false survivor.
        let suspect = |&(offset, length): &(u64, u64)| length >= RUN_MIN && (offset <= RUN_LEAD || length - offset <= RUN_TAIL);
        for (e, _) in kept.iter().zip(runs).filter(|(e, r)| suspect(r) && vouched.binary_search(&e.sample).is_err()) {
            let i = reused.partition_point(|r| r.0 <= e.addr);
            if i > 0 && e.addr < reused[i - 1].1 && e.sample < reused[i - 1].2 {
                self.doubtful.push((e.sample, gc));
            }
        }
    }

    /// The fates, in sample order (objects still followed are alive,
    /// those a background GC could not vouch for unknown).
    pub fn finish(mut self) -> Vec<SampledFate> {
        for (sample, gc) in std::mem::take(&mut self.doubtful) {
            if self.fates.get(sample as usize) == Some(&SampledFate::Alive) {
                self.set(sample, SampledFate::Unknown { gc });
            }
        }
        self.fates
    }

    /// Samples whose fate is unknown.
    pub fn unknown(&self) -> u64 {
        self.fates.iter().filter(|f| matches!(f, SampledFate::Unknown { .. })).count() as u64 + self.doubtful_alive()
    }

    /// Samples still followed that a background GC's report could not
    /// vouch for (unknown at the end).
    pub fn doubtful_alive(&self) -> u64 {
        let mut doubtful: Vec<u32> =
            self.doubtful.iter().map(|d| d.0).filter(|&s| self.fates.get(s as usize) == Some(&SampledFate::Alive)).collect();
        doubtful.sort_unstable();
        doubtful.dedup();
        doubtful.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GEN0: Memory = Memory { lo: 0x1000, hi: 0x2000, in_use: 0x2000, generation: 0 };
    const GEN1: Memory = Memory { lo: 0x2000, hi: 0x3000, in_use: 0x3000, generation: 1 };
    const LOH: Memory = Memory { lo: 0x8000, hi: 0x9000, in_use: 0x9000, generation: 3 };

    #[test]
    fn covered_moves_uncovered_dies_old_memory_stays() {
        let mut s = Survival::default();
        s.allocated(0x1100, 24); // moved
        s.allocated(0x1200, 24); // dead
        s.allocated(0x2100, 24); // gen 1: not condemned by a gen-0 GC
        s.allocated(0x8100, 90_000); // LOH: not condemned
        s.reported([(0x1100, 0x2500, 24)].into_iter());
        s.gc_ended(0, 0, Collected::Blocking, true, &[GEN0, GEN1, LOH]);
        // A gen-2 GC: the moved object reported again, at its new address.
        s.reported([(0x2500, 0x2500, 24)].into_iter());
        s.gc_ended(1, 2, Collected::Blocking, true, &[GEN0, GEN1, LOH]);
        assert_eq!(
            s.finish(),
            vec![
                SampledFate::Alive,
                SampledFate::Died { gc: 0, generation: 0 },
                SampledFate::Died { gc: 1, generation: 1 },
                SampledFate::Died { gc: 1, generation: 3 },
            ]
        );
    }

    #[test]
    fn silence_is_unknown_not_death() {
        let mut s = Survival::default();
        s.allocated(0x1100, 24);
        s.allocated(0x2100, 24);
        // No range reported: the gen-0 object is unknown, the gen-1 one
        // was not condemned.
        s.gc_ended(0, 0, Collected::Blocking, true, &[GEN0, GEN1]);
        // Outside every range of the GC's start: unknown.
        s.allocated(0x5000, 24);
        s.reported([(0x2100, 0x2100, 24)].into_iter());
        s.gc_ended(1, 0, Collected::Blocking, true, &[GEN0, GEN1]);
        assert_eq!(s.unknown(), 2);
        assert_eq!(s.finish(), vec![SampledFate::Unknown { gc: 0 }, SampledFate::Alive, SampledFate::Unknown { gc: 1 }]);
    }

    /// A tracker following two samples in gen 0 (`GEN0`) and two in the
    /// gen-2 memory it gives.
    fn two_in_gen0_two_in_gen2() -> (Survival, Memory) {
        let mut s = Survival::default();
        for a in [0x1100, 0x1200, 0x4100, 0x4200] {
            s.allocated(a, 24);
        }
        (s, Memory { lo: 0x4000, hi: 0x5000, in_use: 0x5000, generation: 2 })
    }

    #[test]
    fn a_background_gc_reports_every_generation() {
        // Swept by the background GC (CoreCLR 3.1's ephemeral sweep): not
        // in its report, dead in gen 0; reported: alive.
        let (mut s, gen2) = two_in_gen0_two_in_gen2();
        s.reported([(0x1200, 0x1200, 24), (0x4200, 0x4200, 24)].into_iter());
        s.gc_ended(0, 2, Collected::Background, true, &[GEN0, gen2]);
        assert_eq!(
            s.finish(),
            vec![
                SampledFate::Died { gc: 0, generation: 0 },
                SampledFate::Alive,
                SampledFate::Died { gc: 0, generation: 2 },
                SampledFate::Alive,
            ]
        );
    }

    #[test]
    fn a_background_gc_set_aside_is_judged_after_the_foreground_gc_inside_it() {
        let (mut s, gen2) = two_in_gen0_two_in_gen2();
        // GC 0, background, set aside; GC 1, a gen-0 foreground GC inside
        // it, moves one gen-0 object into gen 1 and frees the other.
        s.set_aside(0, 2, &[GEN0, GEN1, gen2]);
        s.reported([(0x1100, 0x2100, 24)].into_iter());
        s.gc_ended(1, 0, Collected::Blocking, true, &[GEN0, GEN1, gen2]);
        // Made after the foreground GC, before the background GC's report.
        s.allocated(0x1300, 24);
        // The background GC's report: the moved object, one of gen 2.
        s.reported([(0x2100, 0x2100, 24), (0x4200, 0x4200, 24)].into_iter());
        s.set_aside_ended(true);
        assert!(!s.has_set_aside());
        assert_eq!(
            s.finish(),
            vec![
                SampledFate::Alive,
                SampledFate::Died { gc: 1, generation: 0 },
                SampledFate::Died { gc: 0, generation: 2 },
                SampledFate::Alive,
                SampledFate::Died { gc: 0, generation: 0 },
            ]
        );
    }

    #[test]
    fn a_background_gc_that_reported_nothing_leaves_every_generation_unknown() {
        let mut s = Survival::default();
        let gen2 = Memory { lo: 0x4000, hi: 0x5000, in_use: 0x5000, generation: 2 };
        s.allocated(0x1100, 24);
        s.allocated(0x4100, 24);
        s.set_aside(0, 2, &[GEN0, gen2]);
        // The trace ends before its report.
        s.set_aside_ended(false);
        assert_eq!(s.finish(), vec![SampledFate::Unknown { gc: 0 }, SampledFate::Unknown { gc: 0 }]);
    }

    /// Generation 0 of a background GC's start, holding objects up to
    /// 0x40000; three samples made before it, at 0x11000, 0x30000 and
    /// 0x3f000; the GC started.
    fn three_before_a_background_gc() -> (Survival, Memory) {
        let gen0 = Memory { lo: 0x10000, hi: 0x50000, in_use: 0x40000, generation: 0 };
        let mut s = Survival::default();
        for a in [0x11000, 0x30000, 0x3f000] {
            s.allocated(a, 32);
        }
        s.background_started(0);
        (s, gen0)
    }

    #[test]
    fn a_background_gc_cannot_vouch_for_old_objects_where_new_ones_landed() {
        let (mut s, gen0) = three_before_a_background_gc();
        // Made during it in the memory it swept: the program allocates
        // into the freed memory from its low end, a tick's worth (110 KB)
        // past its last sample at most.
        s.allocated(0x20000, 64);
        // Runs shaped like allocation contexts laid over them: one from
        // the object on (as on .NET 8), one ending just past it (as on
        // CoreCLR 3.1); the third object lies beyond the reach.
        let held = [(0x11000, 0x11000, 0x2000), (0x20000, 0x20000, 64), (0x3f000, 0x3f000, 32)];
        s.reported(held.into_iter().chain([(0x2e020, 0x2e020, 0x2000)]));
        s.gc_ended(0, 2, Collected::Background, true, &[gen0]);
        assert_eq!(s.unknown(), 2);
        // The next GC leaves the one at 0x30000 out: dead, whichever
        // object lay there. The one at 0x3f000 lies beyond the reach.
        s.reported(held.into_iter());
        s.gc_ended(1, 0, Collected::Blocking, true, &[gen0]);
        assert_eq!(s.unknown(), 1);
        assert_eq!(
            s.finish(),
            vec![SampledFate::Unknown { gc: 0 }, SampledFate::Died { gc: 1, generation: 0 }, SampledFate::Alive, SampledFate::Alive]
        );
    }

    #[test]
    fn runs_shaped_like_survivors_keep_the_reports_word() {
        // Old objects in reach of a landing in swept memory, each inside a
        // run that neither starts at it nor ends just past it, or shorter
        // than a kilobyte: survivors among survivors.
        let (mut s, gen0) = three_before_a_background_gc();
        s.allocated(0x20000, 64);
        s.reported([(0x10f00, 0x10f00, 0x2000), (0x2ff00, 0x2ff00, 0x200), (0x3f000, 0x3f000, 32), (0x20000, 0x20000, 64)].into_iter());
        s.gc_ended(0, 2, Collected::Background, true, &[gen0]);
        assert_eq!(s.unknown(), 0);
        assert!(s.finish().iter().all(|f| *f == SampledFate::Alive));
    }

    #[test]
    fn objects_made_during_a_background_gc_are_doubted_once_memory_below_them_is_taken_again() {
        // Generation 0 held nothing at the start. Made during the GC, in
        // fresh memory, upwards: 0x11000, 0x30000; then one at 0x10800,
        // below the highest so far: carved from swept memory. What was
        // made before it, in reach, is doubted; what came after is not.
        let gen0 = Memory { lo: 0x10000, hi: 0x100000, in_use: 0x10000, generation: 0 };
        let mut s = Survival::default();
        s.background_started(0);
        for a in [0x11000, 0x30000, 0x10800, 0x31000] {
            s.allocated(a, 32);
        }
        s.reported([(0x11000, 0x11000, 0x2000), (0x30000, 0x30000, 0x2000), (0x10800, 0x10800, 32)].into_iter());
        s.gc_ended(0, 2, Collected::Background, true, &[gen0]);
        assert_eq!(
            s.finish(),
            vec![SampledFate::Unknown { gc: 0 }, SampledFate::Alive, SampledFate::Alive, SampledFate::Alive],
            "0x30000 lies beyond 110 KB above 0x10800"
        );
    }

    #[test]
    fn a_background_gc_vouches_where_nothing_new_landed_in_swept_memory() {
        // New objects only above what generation 0 held at the start, in
        // generation 2, or none at all: every old object the report holds
        // is alive.
        for landed in [Some(0x40100), Some(0x4100), None] {
            let (mut s, gen0) = three_before_a_background_gc();
            let gen2 = Memory { lo: 0x4000, hi: 0x5000, in_use: 0x5000, generation: 2 };
            if let Some(a) = landed {
                s.allocated(a, 64);
            }
            s.reported([(0x11000, 0x11000, 32), (0x30000, 0x30000, 32), (0x3f000, 0x3f000, 32), (0x4000, 0x4000, 0x1000)].into_iter());
            s.reported([(0x40000, 0x40000, 0x1000)].into_iter());
            s.gc_ended(0, 2, Collected::Background, true, &[gen0, gen2]);
            assert_eq!(s.unknown(), 0, "{landed:?}");
            assert!(s.finish().iter().all(|f| *f == SampledFate::Alive), "{landed:?}");
        }
    }

    #[test]
    fn a_foreground_gc_inside_a_background_one_vouches_for_what_it_held() {
        let gen0 = Memory { lo: 0x10000, hi: 0x50000, in_use: 0x40000, generation: 0 };
        let gen1 = Memory { lo: 0x60000, hi: 0x100000, in_use: 0x100000, generation: 1 };
        let mut s = Survival::default();
        s.allocated(0x11000, 32); // gen 0: held by the foreground GC
        s.allocated(0x61000, 32); // gen 1: left alone by it
        s.allocated(0xa0000, 32); // gen 1, above the reach of what lands
        s.set_aside(0, 2, &[gen0, gen1]);
        s.background_started(0);
        // GC 1, gen 0, inside: compacts gen 0 (within its own memory: no
        // sign of reuse) and promotes into generation 1's swept memory.
        s.reported([(0x11000, 0x12000, 32), (0x20000, 0x60800, 0x800)].into_iter());
        s.gc_ended(1, 0, Collected::Blocking, true, &[gen0, gen1]);
        // A sample in gen 0 below its old end; the background GC's report
        // holds all three.
        s.allocated(0x13000, 32);
        s.reported(
            [(0x12000, 0x12000, 0x2000), (0x14000, 0x14000, 32), (0x61000, 0x61000, 0x2000), (0xa0000, 0xa0000, 0x2000)].into_iter(),
        );
        s.set_aside_ended(true);
        assert_eq!(s.finish(), vec![SampledFate::Alive, SampledFate::Unknown { gc: 0 }, SampledFate::Alive, SampledFate::Alive]);
    }

    #[test]
    fn an_object_made_since_the_last_gc_and_overwritten_in_a_background_gc_died_in_it() {
        let gen0 = Memory { lo: 0x10000, hi: 0x50000, in_use: 0x40000, generation: 0 };
        let loh = Memory { lo: 0x100000, hi: 0x200000, in_use: 0x200000, generation: 3 };
        let mut s = Survival::default();
        // Kept by GC 0; then a large array made after it.
        s.allocated(0x11000, 32);
        s.reported([(0x11000, 0x11000, 32)].into_iter());
        s.gc_ended(0, 0, Collected::Blocking, true, &[gen0, loh]);
        s.allocated(0x100000, 160_024);
        // GC 1, background: a large array made during it, then one over
        // each large array and one over the object GC 0 kept (it may
        // have died at GC 0's successors or before: not known).
        s.background_started(1);
        s.allocated(0x140000, 160_024);
        s.allocated(0x100000, 160_024);
        s.allocated(0x140000, 160_024);
        s.allocated(0x11000, 32);
        assert_eq!(s.overwritten, 3);
        s.reported([(0x100000, 0x100000, 160_024), (0x140000, 0x140000, 160_024), (0x11000, 0x11000, 32)].into_iter());
        s.gc_ended(1, 2, Collected::Background, true, &[gen0, loh]);
        assert_eq!(
            s.finish(),
            vec![
                SampledFate::Unknown { gc: 0 },
                SampledFate::Died { gc: 1, generation: 3 },
                SampledFate::Died { gc: 1, generation: 3 },
                SampledFate::Alive,
                SampledFate::Alive,
                SampledFate::Alive,
            ]
        );
    }

    #[test]
    fn a_sample_over_a_followed_object_makes_it_unknown() {
        let mut s = Survival::default();
        s.allocated(0x1100, 64);
        s.reported([(0x1100, 0x1100, 64)].into_iter());
        s.gc_ended(0, 0, Collected::Blocking, true, &[GEN0]);
        s.allocated(0x1120, 24);
        assert_eq!(s.overwritten, 1);
        assert_eq!(s.finish(), vec![SampledFate::Unknown { gc: 0 }, SampledFate::Alive]);
    }

    #[test]
    fn a_range_that_ends_inside_an_object_does_not_keep_it() {
        let mut s = Survival::default();
        // The range ends 8 bytes into the 136-byte object (the next gap's
        // header): the object is dead.
        s.allocated(0x1100, 136);
        // Size unknown (CoreCLR 3.1): its first three pointers must lie in
        // the range.
        s.allocated(0x1400, 0);
        s.reported([(0x10a0, 0x10a0, 0x68), (0x1300, 0x1300, 0x110)].into_iter());
        s.gc_ended(0, 0, Collected::Blocking, true, &[GEN0]);
        assert_eq!(s.finish(), vec![SampledFate::Died { gc: 0, generation: 0 }, SampledFate::Died { gc: 0, generation: 0 }]);
    }

    #[test]
    fn a_gc_not_closed_by_its_stop_kills_nothing() {
        let mut s = Survival::default();
        s.allocated(0x1100, 24);
        s.allocated(0x1200, 24);
        // The trace ended inside the GC, after one range of its report.
        s.reported([(0x1100, 0x1100, 24)].into_iter());
        s.gc_ended(0, 0, Collected::Blocking, false, &[GEN0]);
        assert_eq!(s.finish(), vec![SampledFate::Alive, SampledFate::Unknown { gc: 0 }]);
    }

    /// Random samples, reports and GCs (clustered addresses, so that
    /// samples land on followed objects; ranges that overlap; memory
    /// that leaves gaps) against the tracker as first written: the same
    /// fates and counts after every step.
    #[test]
    fn agrees_with_the_first_tracker() {
        use super::super::survival_oracle::Oracle;
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let (mut overwritten, mut died, mut alive) = (0, 0, 0);
        for trace in 0..30u32 {
            let mut s = Survival::new(if trace % 2 == 0 { 8 } else { 4 });
            let mut o = Oracle::new(if trace % 2 == 0 { 8 } else { 4 });
            let span = 0x400 << (trace % 10);
            for gc in 0..25u32 {
                for _ in 0..(next() % 400) {
                    let r = next();
                    let address = if r % 50 == 0 { 0 } else { 0x1_0000 + (r >> 8) % span / 8 * 8 };
                    let size = match (r >> 4) % 4 {
                        0 => 0,
                        1 => 24 + (r >> 20) % 200,
                        2 => 90_000,
                        _ => 24,
                    };
                    s.allocated(address, size);
                    o.allocated(address, size);
                }
                let ranges: Vec<(u64, u64, u64)> = (0..next() % 6)
                    .map(|_| {
                        let r = next();
                        let old = 0x1_0000 + (r >> 8) % span;
                        let new = if r % 3 == 0 { old } else { 0x1_0000 + (r >> 24) % span };
                        (old, new, (r >> 40) % (span / 2))
                    })
                    .collect();
                s.reported(ranges.iter().copied());
                o.reported(ranges.iter().copied());
                let memory: Vec<Memory> = (0..next() % 5)
                    .map(|_| {
                        let r = next();
                        let lo = 0x1_0000 + (r >> 8) % span;
                        Memory { lo, hi: lo + (r >> 32) % span, in_use: lo + (r >> 32) % span, generation: (r % 4) as u32 }
                    })
                    .collect();
                let condemned = (next() % 3) as u32;
                let collected = if next() % 4 == 0 { Collected::Background } else { Collected::Blocking };
                let finished = next() % 8 != 0;
                s.gc_ended(gc, condemned, collected, finished, &memory);
                o.gc_ended(gc, condemned, collected, finished, &memory);
                assert_eq!(
                    (s.overwritten, s.silent_gcs, s.unknown()),
                    (o.overwritten, o.silent_gcs, o.unknown()),
                    "trace {trace}, GC {gc}"
                );
                assert_eq!(s.fates, o.fates(), "trace {trace}, GC {gc}");
            }
            overwritten += s.overwritten;
            died += s.fates.iter().filter(|f| matches!(f, SampledFate::Died { .. })).count();
            alive += s.fates.iter().filter(|f| matches!(f, SampledFate::Alive)).count();
        }
        // Every way of ending was taken.
        assert!(overwritten > 100 && died > 100 && alive > 100, "{overwritten} overwritten, {died} died, {alive} alive");
    }
}
