//! The interval table: the address ranges the heap simulation believes to be
//! heap (section 3.3 of `docs/src/reference-reader.md`).
//!
//! Three lists, each ordered newest first (order decides ties): `live`, the
//! ranges believed to be heap now; `pending`, the ranges of the current `b`
//! end line; `update`, the ranges reported live during the current GC. The
//! lists are stored reversed (the front is the last element) so that adding
//! at the front is a push.

/// Allocations up to this far beyond an interval extend it.
pub(crate) const GAP: u64 = 1 << 20;

/// One address range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Interval {
    pub lo: u64,
    pub hi: u64,
    /// The generation of a `b` end line's range; -1 otherwise.
    pub generation: i32,
    pub had_relocations: bool,
    pub just_had_gc: bool,
}

impl Interval {
    pub(crate) fn new(lo: u64, hi: u64, generation: i32) -> Self {
        Interval { lo, hi, generation, had_relocations: false, just_had_gc: false }
    }
}

/// The three lists and the "null relocation" flag.
#[derive(Clone, Debug, Default)]
pub(crate) struct Intervals {
    /// Reversed: `live[len - 1]` is the front.
    pub live: Vec<Interval>,
    pub pending: Vec<Interval>,
    pub update: Vec<Interval>,
    pub null_relocations_seen: bool,
    /// `Some(next_lo)` while the front interval overlaps no other and no
    /// other starts in `(front.lo, next_lo)`: then an allocation starting
    /// in `[front.lo, front.hi + GAP]` and ending by `next_lo` belongs to
    /// the front, and changes nothing else (see
    /// [`Intervals::front_takes`]). Cleared by every other change.
    pub alloc_hint: Option<u64>,
}

impl Intervals {
    /// The live interval an allocation at `a` ending at `end` belongs to:
    /// the one with the greatest `lo` among those it overlaps or follows
    /// within [`GAP`]; the first in list order wins ties.
    #[inline]
    pub(crate) fn best_for_allocation(&self, a: u64, end: u64) -> Option<usize> {
        let mut best: Option<usize> = None;
        for i in (0..self.live.len()).rev() {
            let iv = &self.live[i];
            if iv.lo < end && a <= iv.hi.wrapping_add(GAP) && best.map_or(true, |b| iv.lo > self.live[b].lo) {
                best = Some(i);
            }
        }
        best
    }

    /// Whether the allocation `[a, end)` goes to the front interval without
    /// a search (the hint holds, and the general rule would pick the front
    /// and merge nothing into it).
    #[inline]
    pub(crate) fn front_takes(&self, a: u64, end: u64) -> bool {
        match (self.alloc_hint, self.live.last()) {
            (Some(next_lo), Some(iv)) => iv.lo <= a && iv.lo < end && a <= iv.hi.wrapping_add(GAP) && end <= next_lo,
            _ => false,
        }
    }

    /// Sets [`Intervals::alloc_hint`] for the front interval as it is.
    pub(crate) fn set_alloc_hint(&mut self) {
        self.alloc_hint = None;
        let Some((x, others)) = self.live.split_last() else { return };
        let mut next_lo = u64::MAX;
        for iv in others {
            if iv.hi > x.lo && iv.lo < x.hi {
                return;
            }
            if iv.lo > x.lo {
                next_lo = next_lo.min(iv.lo);
            }
        }
        self.alloc_hint = Some(next_lo);
    }

    /// Moves interval `i` to the front; returns its new position.
    #[inline]
    pub(crate) fn move_to_front(&mut self, i: usize) -> usize {
        let last = self.live.len() - 1;
        if i != last {
            let iv = self.live.remove(i);
            self.live.push(iv);
        }
        last
    }

    /// Merges into interval `x` the first other interval (list order) that
    /// overlaps it, if any. Returns `x`'s position afterwards.
    #[inline]
    pub(crate) fn absorb_one_overlap(&mut self, x: usize) -> usize {
        let (lo, hi) = (self.live[x].lo, self.live[x].hi);
        let found = (0..self.live.len()).rev().find(|&i| i != x && self.live[i].hi > lo && self.live[i].lo < hi);
        match found {
            Some(o) => {
                let other = self.live[o];
                let iv = &mut self.live[x];
                iv.lo = iv.lo.min(other.lo);
                iv.hi = iv.hi.max(other.hi);
                self.live.remove(o);
                if o < x {
                    x - 1
                } else {
                    x
                }
            }
            None => x,
        }
    }

    /// A `u` (old != new) or `v` (old == new) record: section 3.3 `note_move`.
    pub(crate) fn note_move(&mut self, old: u64, new: u64, len: u32) {
        self.alloc_hint = None;
        if old == new {
            self.null_relocations_seen = true;
        }
        let end = new.wrapping_add(len as u64);
        match self.update.last_mut() {
            Some(u) if u.hi == new => u.hi = end,
            _ => self.update.push(Interval::new(new, end, -1)),
        }
        for iv in &mut self.live {
            if iv.lo <= old && old < iv.hi {
                iv.had_relocations = true;
            }
        }
        let mut best: Option<usize> = None;
        for i in (0..self.live.len()).rev() {
            let iv = &self.live[i];
            if iv.lo <= end && new <= iv.hi.wrapping_add(GAP) && best.map_or(true, |b| iv.lo > self.live[b].lo) {
                best = Some(i);
            }
        }
        match best {
            Some(b) => {
                let iv = &mut self.live[b];
                iv.hi = iv.hi.max(end);
                iv.lo = iv.lo.min(new);
                self.absorb_one_overlap(b);
            }
            None => self.live.push(Interval::new(new, end, -1)),
        }
    }

    /// An older generation's range on a `b` start line.
    pub(crate) fn preserve(&mut self, start: u64, len: u64) {
        let end = start.wrapping_add(len);
        match self.update.last_mut() {
            Some(u) if u.hi == start => u.hi = end,
            _ => self.update.push(Interval::new(start, end, -1)),
        }
    }

    /// A range on a `b` end line.
    pub(crate) fn generation_range(&mut self, start: u64, len: u64, generation: i32) {
        self.pending.push(Interval::new(start, start.wrapping_add(len), generation));
    }

    /// The generation of the first live interval (list order) holding `a`,
    /// if it came from a `b` end line.
    #[inline]
    pub(crate) fn generation_at(&self, a: u64) -> Option<i32> {
        self.live.iter().rev().find(|iv| iv.lo <= a && a < iv.hi).map(|iv| iv.generation).filter(|&g| g >= 0)
    }

    /// Bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        (self.live.capacity() + self.pending.capacity() + self.update.capacity()) * std::mem::size_of::<Interval>()
    }
}
