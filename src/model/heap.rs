//! The heap simulation: CLRProfiler's live object table (section 3 of
//! `docs/src/reference-reader.md`).
//!
//! Objects are placed by allocations and moves, erased by overlapping
//! placements, and removed by GC removal passes over the interval table;
//! every change that crosses a 1 KB grain boundary goes to the sample table,
//! and every death to the allocation table's fates.
//!
//! The store ([`LiveObjects`]) holds one entry per object start; this module
//! applies the header-word rules on top of it: an object of 12 bytes or more
//! is three 16-bit words at its address, a clear works on word ranges and
//! can hit the second or third word of a header without its first, and a
//! header written 4 or 8 bytes after another overwrites that one's words.
//! Those cases only arise on inconsistent logs, and are reproduced exactly.

use super::allocations::AllocationTable;
use super::deferred::Outbox;
use super::error::Problem;
use super::histogram::StackCounts;
use super::ids::StackRef;
use super::intervals::{Interval, Intervals};
use super::live::{Header, LiveObjects, Placed, RunMove, RAW};
use super::stacks::StackTable;
use crate::format::TypeId;

/// An object as the reference's "get next object" returns it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Found {
    /// Its start (word-aligned).
    pub start: u64,
    pub size: u32,
    pub row: StackRef,
    pub header: Header,
}

/// What the simulation changes besides itself.
pub(crate) struct Effects<'a> {
    pub stacks: &'a StackTable,
    /// The sample table's changes (built off the simulation's thread).
    pub out: &'a mut Outbox,
    pub objects: &'a mut AllocationTable,
    /// The current tick index.
    pub tick: u32,
}

/// The live object table.
#[derive(Clone, Debug, Default)]
pub(crate) struct Heap {
    pub live: LiveObjects,
    pub intervals: Intervals,
    /// Collections as the live table counts them (Summary "Gen N
    /// collections").
    pub gc0: i32,
    pub gc1: i32,
    pub gc2: i32,
    pub gen1_limit: u32,
    pub gen2_limit: u32,
    /// GCs recorded so far (the index the next one gets).
    pub gcs: u32,
    /// True between a GC's first record (`b` start, `u`, `v`) and its end:
    /// objects erased then die at that GC.
    pub in_gc: bool,
    /// The stack row of every object relocated since the last GC end
    /// (appending costs no cache miss per move; counted per row at each GC
    /// end into `relocated_counts`).
    relocated: Vec<u32>,
    /// Relocations per stack row, up to the last GC end.
    relocated_counts: StackCounts,
    /// Tests: apply the general rules only (no shortcut).
    #[cfg(test)]
    pub general_only: bool,
    /// Tests: how often each shortcut was taken (see [`Shortcuts`]).
    #[cfg(test)]
    pub taken: Shortcuts,
}

/// Tests: how often the shortcuts were taken.
#[cfg(test)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Shortcuts {
    /// Objects moved by [`Heap::move_run`].
    pub moved_in_runs: usize,
    /// `u` records with objects left to the general rules.
    pub moves_general: usize,
}

/// The state a death is stamped with.
#[derive(Clone, Copy, Debug)]
struct Stamp {
    in_gc: bool,
    gcs: u32,
}

impl Stamp {
    /// [`Stamp::died`] for an object known to lie outside every
    /// large-object-heap range.
    #[inline]
    fn died_outside_loh(&self, fx: &mut Effects<'_>, h: Header) {
        if self.in_gc {
            fx.objects.died_at_gc(h.obj, self.gcs, false);
        } else {
            fx.objects.erased(h.obj, fx.tick, self.gcs, false);
        }
    }

    #[inline]
    fn died(&self, intervals: &Intervals, fx: &mut Effects<'_>, key: u64, h: Header) {
        let loh = intervals.generation_at(key << 2) == Some(3);
        if self.in_gc {
            fx.objects.died_at_gc(h.obj, self.gcs, loh);
        } else {
            fx.objects.erased(h.obj, fx.tick, self.gcs, loh);
        }
    }
}

#[inline]
fn words_of(index: u32, tick: u32) -> [u16; 3] {
    [0x8000 | (index & 0x7FFF) as u16, (((index >> 15) | ((tick & 0xFF) << 7)) & 0xFFFF) as u16, ((tick >> 8) & 0xFFFF) as u16]
}

impl Heap {
    pub(crate) fn new() -> Self {
        Heap::default()
    }

    /// Whether the shortcuts that equal the general rules on their cases
    /// are taken (always, but in the tests that compare them).
    #[inline(always)]
    fn shortcuts(&self) -> bool {
        #[cfg(test)]
        return !self.general_only;
        #[cfg(not(test))]
        true
    }

    fn index_of(stacks: &StackTable, h: &Header) -> u32 {
        if h.row & RAW != 0 {
            h.row & !RAW
        } else {
            stacks.stack_index(StackRef(h.row))
        }
    }

    /// Rewrites an entry's header words (damage by a clear or an overlapping
    /// header).
    #[cold]
    fn damage(&mut self, stacks: &StackTable, key: u64, f: impl FnOnce(&mut [u16; 3])) {
        let Some(h) = self.live.get(key) else { return };
        let mut w = words_of(Self::index_of(stacks, &h), h.tick);
        f(&mut w);
        let index = (w[0] & 0x7FFF) as u32 + (((w[1] & 0x7F) as u32) << 15);
        let tick = (w[1] >> 7) as u32 + ((w[2] as u32) << 8);
        let row = stacks.row_of(index).map_or(RAW | index, |r| r.0);
        let size = stacks.type_and_size(StackRef(row)).map_or(0, |(_, s)| s as u32);
        self.live.set(key, Header { row, tick, obj: h.obj, size });
    }

    /// Decodes an entry as the reference does (its stack must be readable).
    #[inline]
    fn decode(stacks: &StackTable, key: u64, h: Header) -> Result<Found, Problem> {
        if h.row & RAW == 0 && stacks.stable() {
            return Ok(Found { start: key << 2, size: h.size, row: StackRef(h.row), header: h });
        }
        let row = if h.row & RAW != 0 {
            match stacks.row_of(h.row & !RAW) {
                Some(r) => r,
                None => return Err(Problem::UndefinedStack { id: -1, index: (h.row & !RAW) as i64 }),
            }
        } else {
            StackRef(h.row)
        };
        let (_, size) = stacks.object_stack(row)?;
        Ok(Found { start: key << 2, size, row, header: h })
    }

    /// The reference's "get next object": the first object whose start word
    /// lies in `[a >> 2, b >> 2]`.
    #[inline]
    pub(crate) fn object_in(&self, stacks: &StackTable, a: u64, b: u64) -> Result<Option<Found>, Problem> {
        match self.live.find_in(a >> 2, b >> 2) {
            Some((k, h)) => Self::decode(stacks, k, h).map(Some),
            None => Ok(None),
        }
    }

    /// What a death is stamped with.
    #[inline]
    fn stamp(&self) -> Stamp {
        Stamp { in_gc: self.in_gc, gcs: self.gcs }
    }

    /// Records the death of the object whose entry at `key` disappears.
    #[inline]
    fn died(&self, fx: &mut Effects<'_>, key: u64, h: Header) {
        self.stamp().died(&self.intervals, fx, key, h);
    }

    /// Sets `count` words from word `wa` to zero.
    fn clear_words(&mut self, fx: &mut Effects<'_>, wa: u64, count: u64) {
        if count == 0 {
            return;
        }
        let wb = wa.saturating_add(count);
        let stamp = self.stamp();
        let intervals = &self.intervals;
        // No large-object range overlaps the cleared words (the usual case
        // of a GC's removal pass): every death is stamped "not LOH" without
        // looking the address up.
        let (lo, hi) = (wa.saturating_mul(4), wb.saturating_mul(4));
        if self.shortcuts() && !intervals.live.iter().any(|iv| iv.generation == 3 && iv.lo < hi && iv.hi > lo) {
            self.live.remove_range(wa, wb, |_, h| stamp.died_outside_loh(fx, h));
        } else {
            self.live.remove_range(wa, wb, |k, h| stamp.died(intervals, fx, k, h));
        }
        // Headers starting one or two words below lose words.
        if wa >= 1 && self.live.find_in(wa.saturating_sub(2), wa - 1).is_some() {
            if self.live.get(wa - 1).is_some() {
                self.damage(fx.stacks, wa - 1, |w| {
                    w[1] = 0;
                    if count >= 2 {
                        w[2] = 0;
                    }
                });
            }
            if wa >= 2 && self.live.get(wa - 2).is_some() {
                self.damage(fx.stacks, wa - 2, |w| w[2] = 0);
            }
        }
    }

    /// The reference's 32-bit clear.
    #[inline]
    fn clear32(&mut self, fx: &mut Effects<'_>, a: u64, n: u32) {
        let count = (n.wrapping_add(3) & 0xFFFF_FFFC) / 4;
        self.clear_words(fx, a >> 2, count as u64);
    }

    /// The reference's 64-bit clear: whole chunks of 2^32 - 1 bytes clear
    /// nothing; only the remainder is cleared.
    fn clear64(&mut self, fx: &mut Effects<'_>, a: u64, n: u64) {
        const CHUNK: u64 = 0xFFFF_FFFF;
        let k = n / CHUNK;
        let a = a.wrapping_add(k.wrapping_mul(CHUNK));
        self.clear32(fx, a, (n - k * CHUNK) as u32);
    }

    /// Writes an object's header words at `a`.
    fn write_header(&mut self, fx: &mut Effects<'_>, a: u64, h: Header) {
        let w = a >> 2;
        let lo = w.saturating_sub(2);
        let neighbours = self.live.find_in(lo, w.saturating_add(2));
        if let Some((first, _)) = neighbours {
            if first != w || self.live.find_in(w + 1, w.saturating_add(2)).is_some() {
                self.write_header_slow(fx, w, h);
                return;
            }
        }
        if let Some(old) = self.live.insert(w, h) {
            if old.obj != h.obj {
                self.died(fx, w, old);
            }
        }
    }

    #[cold]
    fn write_header_slow(&mut self, fx: &mut Effects<'_>, w: u64, h: Header) {
        let new = words_of(Self::index_of(fx.stacks, &h), h.tick);
        if w >= 2 && self.live.get(w - 2).is_some() {
            self.damage(fx.stacks, w - 2, |x| x[2] = new[0]);
        }
        if w >= 1 && self.live.get(w - 1).is_some() {
            self.damage(fx.stacks, w - 1, |x| {
                x[1] = new[0];
                x[2] = new[1];
            });
        }
        for k in [w + 1, w + 2] {
            if let Some(old) = self.live.remove(k) {
                self.died(fx, k, old);
            }
        }
        if let Some(old) = self.live.insert(w, h) {
            if old.obj != h.obj {
                self.died(fx, w, old);
            }
        }
    }

    /// Removes everything in `[a, a + n)` (section 3.6 `remove_objects`).
    fn remove_objects(&mut self, fx: &mut Effects<'_>, a: u64, n: u64) -> Result<(), Problem> {
        fx.out.free(a, a.wrapping_add(n), fx.tick)?;
        self.clear64(fx, a, n);
        Ok(())
    }

    /// Section 3.3 `note_allocation`: returns whether the allocation is an
    /// append at its interval's end.
    #[inline]
    fn note_allocation(&mut self, fx: &mut Effects<'_>, a: u64, size: u32) -> Result<bool, Problem> {
        let s = size.wrapping_add(3) & 0xFFFF_FFFC;
        let end = a.wrapping_add(s as u64);
        if self.shortcuts() && self.intervals.front_takes(a, end) {
            // The general rule below, for the front interval, when it is
            // the one chosen and nothing overlaps it.
            let front = self.intervals.live.len() - 1;
            let iv = &mut self.intervals.live[front];
            if a < iv.hi {
                if iv.had_relocations && iv.just_had_gc {
                    let hi = iv.hi;
                    self.remove_objects(fx, a, hi - a)?;
                    let iv = &mut self.intervals.live[front];
                    iv.hi = end;
                    iv.just_had_gc = false;
                }
                return Ok(false);
            }
            iv.hi = end;
            return Ok(true);
        }
        let Some(best) = self.intervals.best_for_allocation(a, end) else {
            self.intervals.live.push(Interval::new(a, end, -1));
            self.intervals.set_alloc_hint();
            return Ok(false);
        };
        let iv = &mut self.intervals.live[best];
        if a < iv.lo {
            iv.lo = a;
        }
        let mut appended = false;
        if a < iv.hi {
            if iv.had_relocations && iv.just_had_gc {
                let hi = iv.hi;
                self.remove_objects(fx, a, hi - a)?;
                let iv = &mut self.intervals.live[best];
                iv.hi = end;
                iv.just_had_gc = false;
            }
        } else {
            iv.hi = end;
            appended = true;
        }
        let front = self.intervals.move_to_front(best);
        self.intervals.absorb_one_overlap(front);
        self.intervals.set_alloc_hint();
        Ok(appended)
    }

    /// Section 3.4 `place`.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn place(
        &mut self,
        fx: &mut Effects<'_>,
        a: u64,
        row: StackRef,
        type_id: Option<TypeId>,
        size: u32,
        alloc_tick: u32,
        fresh: bool,
        obj: u32,
    ) -> Result<(), Problem> {
        let appended = if fresh { self.note_allocation(fx, a, size)? } else { false };
        if size >= 12 && self.shortcuts() {
            // Nothing near: no predecessor to erase, no header words to
            // damage, nothing in the body. One search.
            let w = a >> 2;
            let clear_end =
                if appended { 0 } else { (a.wrapping_add(12) >> 2).saturating_add(((size - 12).wrapping_add(3) & 0xFFFF_FFFC) as u64 / 4) };
            let stacks = fx.stacks;
            let header = Header { row: row.0, tick: alloc_tick, obj, size };
            let pred_clear =
                |k: u64, h: Header| Self::decode(stacks, k, h).is_ok_and(|o| o.start.checked_add(o.size as u64).is_some_and(|e| e <= a));
            if self.live.place_fast(w, clear_end, !appended, pred_clear, header) == Placed::Done {
                return Self::sample_insert(fx, a, size, alloc_tick, row, type_id);
            }
            // Objects (garbage, during a GC's moves) start inside its body:
            // with nothing near its start, they all die and it takes their
            // place, as the general rules below would do one by one.
            if !appended && w >= 3 && stacks.stable() && clear_end < u64::MAX {
                let stamp = self.stamp();
                let intervals = &self.intervals;
                let gone = |k: u64, old: Header| {
                    if k != w || old.obj != obj {
                        stamp.died(intervals, fx, k, old);
                    }
                };
                if self.live.place_over(w, clear_end, pred_clear, header, gone) == Placed::Done {
                    return Self::sample_insert(fx, a, size, alloc_tick, row, type_id);
                }
            }
        }
        if !appended {
            let p = self.live.find_le(a.wrapping_sub(4) >> 2).map_or(0, |(k, _)| k << 2);
            if let Some(o) = self.object_in(fx.stacks, p, a)? {
                if o.start < a && (o.start.wrapping_add(o.size as u64) > a || o.start.wrapping_add(12) > a) {
                    self.clear64(fx, o.start, a - o.start);
                }
            }
        }
        if size >= 12 {
            self.write_header(fx, a, Header { row: row.0, tick: alloc_tick, obj, size });
            if !appended {
                self.clear32(fx, a.wrapping_add(12), size - 12);
            }
        } else if fresh {
            fx.objects.untracked(obj);
        }
        Self::sample_insert(fx, a, size, alloc_tick, row, type_id)
    }

    /// The sample entries of an object placed at `a` (its type is read from
    /// the stack only when the object crosses a grain boundary).
    #[inline]
    fn sample_insert(
        fx: &mut Effects<'_>,
        a: u64,
        size: u32,
        alloc_tick: u32,
        row: StackRef,
        type_id: Option<TypeId>,
    ) -> Result<(), Problem> {
        let end = a.wrapping_add(size as u64);
        if a >> 10 == end >> 10 {
            return Ok(());
        }
        let t = type_id.or_else(|| fx.stacks.type_and_size(row).map(|t| t.0)).unwrap_or(TypeId(0));
        fx.out.insert(a, end, fx.tick, alloc_tick, t.0)
    }

    /// An allocation of object `obj` at `a`.
    #[inline]
    pub(crate) fn allocate(
        &mut self,
        fx: &mut Effects<'_>,
        a: u64,
        row: StackRef,
        type_id: TypeId,
        size: u32,
        obj: u32,
    ) -> Result<(), Problem> {
        self.place(fx, a, row, Some(type_id), size, fx.tick, true, obj)
    }

    /// A `u` (old != new) or `v` (old == new) record (section 3.5).
    pub(crate) fn move_range(&mut self, fx: &mut Effects<'_>, old: u64, new: u64, len: u32) -> Result<(), Problem> {
        self.in_gc = true;
        self.intervals.note_move(old, new, len);
        if old == new {
            return Ok(());
        }
        if self.shortcuts() && self.move_run(fx, old, new, len)? {
            return Ok(());
        }
        #[cfg(test)]
        {
            self.taken.moves_general += 1;
        }
        let end = old.wrapping_add(len as u64);
        let mut o = self.object_in(fx.stacks, old, end)?;
        while let Some(f) = o {
            if f.start >= end {
                break;
            }
            let next = f.start.wrapping_add(f.size as u64);
            fx.out.free(f.start, next, fx.tick)?;
            // The object itself moves: take it out before clearing its body
            // (in one step when nothing else lies there).
            let count = (f.size.wrapping_add(3) & 0xFFFF_FFFC) as u64 / 4;
            if !self.shortcuts() || self.live.remove_alone(f.start >> 2, count).is_none() {
                self.live.remove(f.start >> 2);
                self.clear32(fx, f.start, f.size);
            }
            let dest = new.wrapping_add(f.start.wrapping_sub(old));
            self.place(fx, dest, f.row, None, f.size, f.header.tick, false, f.header.obj)?;
            self.relocated.push(f.row.0);
            self.bound_relocations();
            o = self.object_in(fx.stacks, next, end)?;
        }
        Ok(())
    }

    /// The objects of a `u` record moved in one step, when the general rules
    /// (the loop of [`Heap::move_range`]) would take their shortcuts for
    /// every one of them: each object removed alone (`remove_alone`) and
    /// placed where nothing lies near (`place_fast`) or over entries that
    /// start inside its body (`place_over`, they die). That holds when the
    /// addresses are aligned, the stacks were never redefined, the moved
    /// entries lie in one store block, hold no raw stack index, span at
    /// least 12 bytes each and start at least three words and one body
    /// after the previous one; nothing lies in the two words before the
    /// first or inside the last one's body; the destination, from two words
    /// before it to the last object's last word, lies in one block and
    /// holds other entries only inside the moved objects' bodies, none raw
    /// (a move upwards must land wholly above the moved objects and the
    /// range); and the entry before the destination ends at or before it.
    /// Then the deaths, sample changes and relocation counts are the same,
    /// in the same order, and the store changes by one splice. Returns
    /// `false`, having changed nothing, when any condition fails.
    fn move_run(&mut self, fx: &mut Effects<'_>, old: u64, new: u64, len: u32) -> Result<bool, Problem> {
        if old & 3 != 0 || new & 3 != 0 || len == 0 || !fx.stacks.stable() {
            return Ok(false);
        }
        let Some(end) = old.checked_add(len as u64) else { return Ok(false) };
        let (lo, hi) = (old >> 2, ((end - 1) >> 2) + 1);
        let delta = if new < old { -(((old - new) >> 2) as i64) } else { ((new - old) >> 2) as i64 };
        if (new < old && old - new >= 1 << 60) || (new > old && new - old >= 1 << 60) {
            return Ok(false);
        }
        let stacks = fx.stacks;
        let pred_clear = |k: u64, h: Header, d0: u64| {
            Self::decode(stacks, k, h).is_ok_and(|o| o.start.checked_add(o.size as u64).is_some_and(|e| e <= d0 << 2))
        };
        let stamp = self.stamp();
        let intervals = &self.intervals;
        let gone = |k: u64, h: Header, d: u64, obj: u32| {
            if k != d || h.obj != obj {
                stamp.died(intervals, fx, k, h);
            }
        };
        let (slot, base, at, n) = match self.live.move_run(lo, hi, delta, pred_clear, gone) {
            RunMove::Nothing => return Ok(true),
            RunMove::General => return Ok(false),
            RunMove::Moved { slot, base, at, n } => (slot, base, at, n),
        };
        let (keys, vals) = self.live.slot_entries(slot, at, n);
        for (&off, h) in keys.iter().zip(vals) {
            let dest = (base + off as u64) << 2;
            let start = dest.wrapping_sub((delta << 2) as u64);
            fx.out.free(start, start + h.size as u64, fx.tick)?;
            Self::sample_insert(fx, dest, h.size, h.tick, StackRef(h.row), None)?;
            self.relocated.push(h.row);
        }
        self.bound_relocations();
        #[cfg(test)]
        {
            self.taken.moved_in_runs += n as usize;
        }
        Ok(true)
    }

    /// Section 3.6 `remove_range`, over the live intervals.
    fn remove_range(&mut self, fx: &mut Effects<'_>, lo: u64, hi: u64) -> Result<(), Problem> {
        self.intervals.alloc_hint = None;
        let mut i = self.intervals.live.len();
        while i > 0 {
            i -= 1;
            let iv = self.intervals.live[i];
            let a = lo.max(iv.lo);
            let b = hi.min(iv.hi);
            if a >= b {
                continue;
            }
            self.remove_objects(fx, a, b - a)?;
            if iv.hi == b {
                if iv.lo == a {
                    self.intervals.live.remove(i);
                } else {
                    self.intervals.live[i].hi = a;
                }
            }
        }
        Ok(())
    }

    /// Section 3.6 `interval_gc`.
    fn interval_gc(&mut self, fx: &mut Effects<'_>, simple: bool) -> Result<(), Problem> {
        self.intervals.alloc_hint = None;
        let iv = &mut self.intervals;
        if (simple && iv.null_relocations_seen) || !iv.pending.is_empty() {
            // Stored newest last; equal starts keep their relative order,
            // which does not change the sweep.
            let mut sorted = std::mem::take(&mut iv.update);
            sorted.sort_by_key(|r| r.lo);
            let mut cursor = 0u64;
            for r in &sorted {
                if cursor < r.lo {
                    self.remove_range(fx, cursor, r.lo)?;
                }
                if cursor < r.hi {
                    cursor = r.hi;
                }
            }
            self.remove_range(fx, cursor, u64::MAX)?;
            sorted.clear();
            self.intervals.update = sorted;
            if !self.intervals.pending.is_empty() {
                self.intervals.live = std::mem::take(&mut self.intervals.pending);
            }
            self.live.compact();
        } else {
            for iv in &mut iv.live {
                iv.just_had_gc = true;
            }
        }
        self.intervals.null_relocations_seen = false;
        Ok(())
    }

    /// Section 3.7 `record_gc`.
    pub(crate) fn record_gc(&mut self, fx: &mut Effects<'_>, generation: i32, simple: bool) -> Result<(), Problem> {
        self.in_gc = true;
        fx.out.gc_tick(generation, fx.tick);
        self.interval_gc(fx, simple)?;
        if generation >= 1 {
            self.gen2_limit = self.gen1_limit;
        }
        self.gen1_limit = fx.tick;
        self.gc0 = self.gc0.wrapping_add(1);
        if generation > 0 {
            self.gc1 = self.gc1.wrapping_add(1);
        }
        if generation > 1 {
            self.gc2 = self.gc2.wrapping_add(1);
        }
        self.flush_relocations();
        self.in_gc = false;
        self.gcs += 1;
        fx.objects.gc_ended(generation);
        Ok(())
    }

    /// Counts the relocations logged so far when there are many (moves
    /// within one GC are otherwise logged until its end, and a GC can move
    /// the same objects again and again).
    #[inline]
    fn bound_relocations(&mut self) {
        if self.relocated.len() >= 1 << 20 {
            self.flush_relocations();
        }
    }

    fn flush_relocations(&mut self) {
        for &r in &self.relocated {
            self.relocated_counts.add(StackRef(r));
        }
        self.relocated.clear();
    }

    /// Relocations per stack row so far, the heap left as it is (a
    /// growing log's model: see [`super::GrowingLog`]).
    pub(crate) fn relocations(&self) -> StackCounts {
        let mut counts = self.relocated_counts.clone();
        for &r in &self.relocated {
            counts.add(StackRef(r));
        }
        counts
    }

    /// Relocations per stack row (the histogram CLRProfiler keeps).
    pub(crate) fn take_relocations(&mut self) -> StackCounts {
        self.flush_relocations();
        self.relocated = Vec::new();
        std::mem::take(&mut self.relocated_counts)
    }

    /// Section 3.7 `record_gc_counts` (a `g` line with counts); returns the
    /// computed generation.
    pub(crate) fn record_gc_counts(&mut self, fx: &mut Effects<'_>, c: [i32; 3]) -> Result<i32, Problem> {
        let generation = if c[2] != self.gc2 {
            2
        } else if c[1] != self.gc1 {
            1
        } else {
            0
        };
        self.record_gc(fx, generation, false)?;
        self.gc0 = c[0];
        self.gc1 = c[1];
        self.gc2 = c[2];
        Ok(generation)
    }

    /// A GC start line: objects erased from now on die at this GC.
    pub(crate) fn gc_started(&mut self) {
        self.in_gc = true;
    }

    /// The object starting exactly at `a` (`l` and `o` records).
    pub(crate) fn object_at(&self, stacks: &StackTable, a: u64) -> Result<Option<Found>, Problem> {
        Ok(self.object_in(stacks, a, a)?.filter(|o| o.start == a))
    }

    /// Section 3.9: the final-heap walk. Calls `f` for each object counted.
    /// (The reference asks for the first object at or after the end of the
    /// previous one each time; walking the store in order and skipping the
    /// objects that start inside the previous one is the same.)
    pub(crate) fn final_walk(&self, stacks: &StackTable, mut f: impl FnMut(&Found)) -> Result<(), Problem> {
        let mut min_key = 0u64;
        for (k, h) in self.live.iter() {
            if k < min_key {
                continue;
            }
            let x = Self::decode(stacks, k, h)?;
            let Some(next) = x.start.checked_add(x.size as u64) else { break };
            f(&x);
            min_key = next >> 2;
        }
        Ok(())
    }

    /// Bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.live.heap_bytes() + self.intervals.heap_bytes() + self.relocated.capacity() * 4 + self.relocated_counts.heap_bytes()
    }
}
