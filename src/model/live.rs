//! The live objects of the heap simulation, ordered by address.
//!
//! CLRProfiler keeps 16 bits for every 4-byte word of address space and
//! marks an object (of 12 bytes or more) by three header words at its
//! address. This store keeps only the objects: one entry per marked word,
//! keyed by the word index (`address >> 2`), holding what the header words
//! encode (stack row and allocation tick) plus the object's id.
//!
//! Entries are grouped by blocks of 16 KB of address space (4096 words); a
//! block is a small sorted array of 16-bit word offsets and headers:
//!
//! ```text
//! block id = word >> 12          blocks: [ keys: [0x004, 0x00a, 0x013, ...]  (u16, sorted)
//! offset   = word & 0xfff                  vals: [hdr,   hdr,   hdr,   ...] ] (12 bytes each)
//! index:   block id -> block     (a hash map behind a small cache of recent blocks)
//! nonempty: ordered set of the block ids that hold entries
//! ```
//!
//! An allocation finds its block in the cache (threads allocate in a few
//! regions at a time) and its place by a short search in at most a few
//! hundred entries, usually at the end, otherwise next to the block's hint
//! (where the last entry was placed in its middle, or where the last moved
//! run landed: see [`Block::lower_bound`]). There is no allocation per
//! object and no hashing per allocation; a block missing from the cache is
//! found by a cheap seeded hash ([`crate::hash`]). Searches that cross empty blocks use the
//! ordered set of nonempty blocks, so sparse 64-bit heaps cost nothing.
//!
//! The header-word details that matter on inconsistent logs (a clear that
//! hits the second or third word of a header, a header written over another
//! one's words) are applied by [`super::heap`].

use crate::hash::BlockHashState;
use std::cell::Cell;
use std::collections::{BTreeSet, HashMap};

const BLOCK_BITS: u32 = 12;
const OFFSET_MASK: u64 = (1 << BLOCK_BITS) - 1;
const CACHE: usize = 8;
const SPARE_BYTES: usize = 4 << 20;
/// An empty cache entry.
const NO_BLOCK: (u64, u32) = (u64::MAX, u32::MAX);

/// What the simulated heap holds for one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// The stack row, or `RAW | stack index` when damage left a stack index
    /// without a row (section 3.1 of `docs/src/reference-reader.md`).
    pub row: u32,
    /// The allocation tick index.
    pub tick: u32,
    /// The object's id.
    pub obj: u32,
    /// The size its stack had when it was placed (used while no stack is
    /// ever redefined; see [`super::stacks::StackTable::stable`]).
    pub size: u32,
}

/// Flag of [`Header::row`]: the value is a raw stack index.
pub(crate) const RAW: u32 = 1 << 31;

#[derive(Clone, Debug, Default)]
struct Block {
    keys: Vec<u16>,
    vals: Vec<Header>,
    /// Where the next search in the middle of the block will likely end:
    /// just after the last entry placed there, or where the last entries
    /// were taken out. Only a guess, checked before use (any value is
    /// safe).
    hint: u32,
}

/// How many entries [`Block::lower_bound`] steps over from its hint before
/// it searches the rest.
const HINT_STEPS: usize = 4;

impl Block {
    /// Index of the first key >= `off`.
    ///
    /// Appends (a key above the last) cost one comparison. Otherwise the
    /// search starts at the hint: an allocation context that fills the
    /// lower part of a block shared with another one places each object
    /// just after its previous one, and a GC's moves take runs out of one
    /// block and put them into another in address order, each one just
    /// after the previous one (measured on a `--preset medium` log: 99.99%
    /// of the `u` records land where the previous one ended). When the
    /// entry before the hint is below `off` and the answer lies within
    /// [`HINT_STEPS`] of it, no binary search is made; otherwise the binary
    /// search covers only the side of the hint where the answer lies.
    #[inline]
    fn lower_bound(&self, off: u16) -> usize {
        let n = self.keys.len();
        match self.keys.last() {
            Some(&l) if l < off => return n,
            None => return 0,
            _ => {}
        }
        // Here the last key is >= `off`: the answer is below `n`.
        let h = (self.hint as usize).min(n);
        if h > 0 && self.keys[h - 1] >= off {
            return self.keys[..h].partition_point(|&k| k < off);
        }
        // The answer is in h..n.
        let stop = (h + HINT_STEPS).min(n);
        for i in h..stop {
            if self.keys[i] >= off {
                return i;
            }
        }
        stop + self.keys[stop..].partition_point(|&k| k < off)
    }
}

/// The address-ordered store of live objects (see the module documentation).
#[derive(Clone, Debug)]
pub(crate) struct LiveObjects {
    blocks: Vec<Block>,
    ids: Vec<u64>,
    /// Block id -> slot (a cheap seeded hash: see [`crate::hash`]).
    index: HashMap<u64, u32, BlockHashState>,
    /// Slots of `blocks` that hold no block (recycled by `compact`).
    free: Vec<u32>,
    /// Arrays of blocks emptied by a GC, kept for the next blocks (up to
    /// `SPARE_BYTES`): gen 0 refills the same amount after every GC, and
    /// reusing arrays saves an allocation and several reallocations each.
    spare: Vec<Block>,
    spare_bytes: usize,
    /// How many entries a block that allocations start to fill gets at
    /// once: the mean capacity of the arrays the last GC emptied, rounded
    /// down to a power of two (at least 16), and no more than a block holds
    /// objects of the first one's size. Gen 0 fills its blocks as full as
    /// the blocks it filled before, so one allocation replaces the five or
    /// six reallocations of growing from 16 by doubling.
    refill: usize,
    nonempty: BTreeSet<u64>,
    /// Recently used blocks, `(block id, slot)`, the last hit first (no
    /// block id is `u64::MAX`: ids are word indexes shifted right).
    cache: [Cell<(u64, u32)>; CACHE],
    cache_next: Cell<usize>,
    len: usize,
    /// A buffer for runs moved across blocks (kept between uses).
    scratch: Vec<(u16, Header)>,
}

impl Default for LiveObjects {
    fn default() -> Self {
        LiveObjects {
            blocks: Vec::new(),
            ids: Vec::new(),
            index: HashMap::default(),
            free: Vec::new(),
            spare: Vec::new(),
            spare_bytes: 0,
            refill: 16,
            nonempty: BTreeSet::new(),
            cache: std::array::from_fn(|_| Cell::new(NO_BLOCK)),
            cache_next: Cell::new(1),
            len: 0,
            scratch: Vec::new(),
        }
    }
}

#[inline]
fn split(key: u64) -> (u64, u16) {
    (key >> BLOCK_BITS, (key & OFFSET_MASK) as u16)
}

#[inline]
fn join(block: u64, off: u16) -> u64 {
    (block << BLOCK_BITS) | off as u64
}

/// Makes `v[p..q]` `n` elements long (one move of the tail at most; the
/// new elements are `fill` until the caller writes them).
#[inline(always)]
fn replace_range<T: Copy>(v: &mut Vec<T>, p: usize, q: usize, n: usize, fill: T) {
    let len = v.len();
    if n > q - p {
        v.resize(len + n - (q - p), fill);
        v.copy_within(q..len, p + n);
    } else if n < q - p {
        v.copy_within(q..len, p + n);
        v.truncate(len - (q - p - n));
    }
}

/// Removes `v[a..e]` by one move of the tail (measured: `Vec::drain` and
/// `Vec::remove` cost 30-50 more instructions each, for the iterator and
/// its drop, on runs of one or two entries).
#[inline(always)]
fn cut<T: Copy>(v: &mut Vec<T>, a: usize, e: usize) {
    let len = v.len();
    v.copy_within(e..len, a);
    v.truncate(len - (e - a));
}

/// The outcome of [`LiveObjects::move_run`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RunMove {
    /// Nothing to move.
    Nothing,
    /// Moved: the moved entries are `at..at + n` of the block in `slot`,
    /// whose first word is `base`.
    Moved { slot: u32, base: u64, at: u32, n: u32 },
    /// A condition failed: nothing changed, the general rules apply.
    General,
}

/// The outcome of [`LiveObjects::place_fast`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placed {
    /// Inserted; nothing else was touched.
    Done,
    /// Something lies near: the caller applies the general rules.
    Slow,
}

impl LiveObjects {
    /// Number of objects.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The block with this id, if it exists.
    #[inline]
    fn find_block(&self, b: u64) -> Option<usize> {
        // Most lookups ask for the block of the previous one (measured:
        // copying and scanning the whole cache on every lookup was 7% of
        // a load's instructions).
        let (id, i) = self.cache[0].get();
        if id == b {
            return Some(i as usize);
        }
        // A GC's moves alternate between two blocks (where runs are taken
        // and where they land): the second entry is checked here too, and
        // swapped with the first as `find_block_further` would.
        let (id1, i1) = self.cache[1].get();
        if id1 == b {
            self.cache[1].set((id, i));
            self.cache[0].set((id1, i1));
            return Some(i1 as usize);
        }
        self.find_block_further(b)
    }

    #[inline(never)]
    fn find_block_further(&self, b: u64) -> Option<usize> {
        for k in 2..CACHE {
            let (id, i) = self.cache[k].get();
            if id == b {
                // The hit goes first; the first goes where the hit was.
                self.cache[k].set(self.cache[0].get());
                self.cache[0].set((id, i));
                return Some(i as usize);
            }
        }
        let i = *self.index.get(&b)?;
        self.remember(b, i);
        Some(i as usize)
    }

    /// Puts `(b, i)` first in the cache; the entry it displaces replaces
    /// the oldest of the others.
    #[inline]
    fn remember(&self, b: u64, i: u32) {
        let n = self.cache_next.get();
        self.cache[n].set(self.cache[0].get());
        self.cache[0].set((b, i));
        self.cache_next.set(if n + 1 >= CACHE { 1 } else { n + 1 });
    }

    #[inline]
    fn block_or_create(&mut self, b: u64) -> usize {
        if let Some(i) = self.find_block(b) {
            return i;
        }
        let i = match self.free.pop() {
            Some(i) => {
                self.ids[i as usize] = b;
                i
            }
            None => {
                self.blocks.push(Block::default());
                self.ids.push(b);
                self.blocks.len() as u32 - 1
            }
        };
        self.index.insert(b, i);
        self.remember(b, i);
        i as usize
    }

    /// Arrays for a block that is about to receive its first entry, with
    /// room for at least `want` entries.
    #[inline]
    fn fresh_arrays(&mut self, bi: usize, want: usize) {
        let blk = &mut self.blocks[bi];
        if blk.keys.capacity() == 0 {
            if let Some(b) = self.spare.pop() {
                self.spare_bytes -= Self::block_bytes(&b);
                *blk = b;
            }
        }
        if blk.keys.capacity() < want {
            blk.keys.reserve_exact(want);
            blk.vals.reserve_exact(want);
        }
    }

    fn block_bytes(b: &Block) -> usize {
        b.keys.capacity() * 2 + b.vals.capacity() * std::mem::size_of::<Header>()
    }

    /// The last entry of the nonempty block before block `b`.
    fn last_before_block(&self, b: u64) -> Option<(u64, Header)> {
        let pb = *self.nonempty.range(..b).next_back()?;
        let blk = &self.blocks[self.find_block(pb)?];
        let n = blk.keys.len();
        (n > 0).then(|| (join(pb, blk.keys[n - 1]), blk.vals[n - 1]))
    }

    /// The first entry of the nonempty block after block `b`.
    fn first_after_block(&self, b: u64) -> Option<(u64, Header)> {
        let nb = *self.nonempty.range(b.checked_add(1)?..).next()?;
        let blk = &self.blocks[self.find_block(nb)?];
        blk.keys.first().map(|&k| (join(nb, k), blk.vals[0]))
    }

    /// The entry at `key`.
    #[inline]
    pub(crate) fn get(&self, key: u64) -> Option<Header> {
        let (b, off) = split(key);
        let blk = &self.blocks[self.find_block(b)?];
        let i = blk.lower_bound(off);
        (i < blk.keys.len() && blk.keys[i] == off).then(|| blk.vals[i])
    }

    /// Replaces the header of the entry at `key`, if it exists.
    pub(crate) fn set(&mut self, key: u64, h: Header) {
        let (b, off) = split(key);
        let Some(bi) = self.find_block(b) else { return };
        let blk = &mut self.blocks[bi];
        let i = blk.lower_bound(off);
        if i < blk.keys.len() && blk.keys[i] == off {
            blk.vals[i] = h;
        }
    }

    /// The entry with the greatest key at most `key`.
    #[inline]
    pub(crate) fn find_le(&self, key: u64) -> Option<(u64, Header)> {
        let (b, off) = split(key);
        if let Some(bi) = self.find_block(b) {
            let blk = &self.blocks[bi];
            let i = blk.lower_bound(off + 1);
            if i > 0 {
                return Some((join(b, blk.keys[i - 1]), blk.vals[i - 1]));
            }
        }
        self.last_before_block(b)
    }

    /// The entry with the least key in `[lo, hi]` (both inclusive).
    #[inline]
    pub(crate) fn find_in(&self, lo: u64, hi: u64) -> Option<(u64, Header)> {
        if lo > hi {
            return None;
        }
        let (b, off) = split(lo);
        if let Some(bi) = self.find_block(b) {
            let blk = &self.blocks[bi];
            let i = blk.lower_bound(off);
            if i < blk.keys.len() {
                let k = join(b, blk.keys[i]);
                return (k <= hi).then_some((k, blk.vals[i]));
            }
        }
        if hi >> BLOCK_BITS == b {
            return None;
        }
        self.first_after_block(b).filter(|&(k, _)| k <= hi)
    }

    /// Inserts or replaces the entry at `key`; returns the replaced header.
    #[inline]
    pub(crate) fn insert(&mut self, key: u64, val: Header) -> Option<Header> {
        let (b, off) = split(key);
        let bi = self.block_or_create(b);
        let blk = &mut self.blocks[bi];
        let i = blk.lower_bound(off);
        if i < blk.keys.len() && blk.keys[i] == off {
            return Some(std::mem::replace(&mut blk.vals[i], val));
        }
        if blk.keys.is_empty() {
            self.nonempty.insert(b);
            self.fresh_arrays(bi, 16);
        }
        let blk = &mut self.blocks[bi];
        blk.keys.insert(i, off);
        blk.vals.insert(i, val);
        blk.hint = i as u32 + 1;
        self.len += 1;
        None
    }

    /// Inserts an object at `key` when nothing lies near it: no entry in
    /// `[key - 2, max(key + 2, clear_end - 1)]`, and (when `check_pred`) the
    /// entry before it satisfies `pred_clear`. Otherwise inserts nothing.
    #[inline]
    pub(crate) fn place_fast(
        &mut self,
        key: u64,
        clear_end: u64,
        check_pred: bool,
        pred_clear: impl FnOnce(u64, Header) -> bool,
        val: Header,
    ) -> Placed {
        let (b, off) = split(key);
        let bi = self.block_or_create(b);
        let blk = &self.blocks[bi];
        let i = blk.lower_bound(off);
        let n = blk.keys.len();
        let reach = clear_end.saturating_sub(1).max(key.saturating_add(2));
        let next = if i < n {
            Some(join(b, blk.keys[i]))
        } else if reach >> BLOCK_BITS == b {
            None // nothing further in this block, and the reach ends in it
        } else {
            self.first_after_block(b).map(|x| x.0)
        };
        if next.is_some_and(|k| k <= reach) {
            return Placed::Slow;
        }
        let prev = if i > 0 {
            Some((join(b, blk.keys[i - 1]), blk.vals[i - 1]))
        } else if check_pred || off < 2 {
            self.last_before_block(b)
        } else {
            None // only a predecessor within two words would matter
        };
        if let Some((pk, ph)) = prev {
            if pk.saturating_add(2) >= key || (check_pred && !pred_clear(pk, ph)) {
                return Placed::Slow;
            }
        }
        if n == 0 {
            self.nonempty.insert(b);
            // No more than a block of objects of this size would hold (a
            // large object's blocks hold one entry each).
            let words = clear_end.saturating_sub(key).max(3) as usize;
            let fit = ((1usize << BLOCK_BITS) / words).max(16);
            self.fresh_arrays(bi, self.refill.min(fit));
        }
        let blk = &mut self.blocks[bi];
        blk.keys.insert(i, off);
        blk.vals.insert(i, val);
        blk.hint = i as u32 + 1;
        self.len += 1;
        Placed::Done
    }

    /// Places an object at `key` over the entries that start in
    /// `[key, end)`: they are removed (`gone` is called for each, in key
    /// order) and the object takes their place. Only when `[key, end)` lies
    /// in one block, no removed entry holds a raw stack index, and the
    /// entry before `key` lies more than two words below it and satisfies
    /// `pred_clear`; otherwise changes nothing.
    #[inline]
    pub(crate) fn place_over(
        &mut self,
        key: u64,
        end: u64,
        pred_clear: impl FnOnce(u64, Header) -> bool,
        val: Header,
        mut gone: impl FnMut(u64, Header),
    ) -> Placed {
        let (b, off) = split(key);
        if end <= key || (end - 1) >> BLOCK_BITS != b {
            return Placed::Slow;
        }
        let Some(bi) = self.find_block(b) else { return Placed::Slow };
        let blk = &self.blocks[bi];
        let i = blk.lower_bound(off);
        let end_off = end - (b << BLOCK_BITS);
        let j = if end_off > OFFSET_MASK { blk.keys.len() } else { blk.lower_bound(end_off as u16) };
        if blk.vals[i..j].iter().any(|h| h.row & RAW != 0) {
            return Placed::Slow;
        }
        let prev = if i > 0 { Some((join(b, blk.keys[i - 1]), blk.vals[i - 1])) } else { self.last_before_block(b) };
        if let Some((pk, ph)) = prev {
            if pk.saturating_add(2) >= key || !pred_clear(pk, ph) {
                return Placed::Slow;
            }
        }
        if blk.keys.is_empty() {
            return Placed::Slow;
        }
        let blk = &mut self.blocks[bi];
        for t in i..j {
            gone(join(b, blk.keys[t]), blk.vals[t]);
        }
        if j > i {
            blk.keys[i] = off;
            blk.vals[i] = val;
            cut(&mut blk.keys, i + 1, j);
            cut(&mut blk.vals, i + 1, j);
            blk.hint = i as u32 + 1;
            self.len -= j - i - 1;
        } else {
            blk.keys.insert(i, off);
            blk.vals.insert(i, val);
            blk.hint = i as u32 + 1;
            self.len += 1;
        }
        Placed::Done
    }

    /// The entry before position `i` of block slot `bi` (block id `b`):
    /// the previous one in the block, or the last of the nonempty block
    /// before it.
    #[inline(always)]
    fn before(&self, bi: usize, b: u64, i: usize) -> Option<(u64, Header)> {
        let blk = &self.blocks[bi];
        if i > 0 {
            Some((join(b, blk.keys[i - 1]), blk.vals[i - 1]))
        } else {
            self.last_before_block(b)
        }
    }

    /// The moves of a `u` record in one step, when the general rules would
    /// move each object by their shortcuts (see `Heap::move_run`, which
    /// states the conditions): the entries with keys in `[lo, hi)` move by
    /// `delta` words. `pred_clear` says whether the entry before the
    /// destination ends at or before the key given; `gone(key, header,
    /// destination key, destination object)` is called, in key order, for
    /// each entry the moved objects erase. Changes nothing and returns
    /// [`RunMove::General`] when a condition fails.
    pub(crate) fn move_run(
        &mut self,
        lo: u64,
        hi: u64,
        delta: i64,
        pred_clear: impl FnOnce(u64, Header, u64) -> bool,
        mut gone: impl FnMut(u64, Header, u64, u32),
    ) -> RunMove {
        let (b, off) = split(lo);
        if hi <= lo || (hi - 1) >> BLOCK_BITS != b {
            return RunMove::General;
        }
        let Some(bi) = self.find_block(b) else { return RunMove::Nothing };
        let blk = &self.blocks[bi];
        let i = blk.lower_bound(off);
        let end_off = hi - join(b, 0);
        let mut j = i;
        while j < blk.keys.len() && (blk.keys[j] as u64) < end_off {
            j += 1;
        }
        if i == j {
            return RunMove::Nothing;
        }
        // The moved objects: well formed, apart.
        let mut reach = 0u64;
        for t in i..j {
            let (k, h) = (join(b, blk.keys[t]), &blk.vals[t]);
            if h.row & RAW != 0 || h.size < 12 || h.size > 1 << 30 || (t > i && k < reach) {
                return RunMove::General;
            }
            reach = k + (h.size as u64).div_ceil(4);
        }
        let k0 = join(b, blk.keys[i]);
        let n = j - i;
        // Nothing in the two words before the first, nothing else in the
        // last one's body.
        if k0 < 3 || self.before(bi, b, i).is_some_and(|(k, _)| k + 2 >= k0) {
            return RunMove::General;
        }
        let next = if j < blk.keys.len() {
            Some(join(b, blk.keys[j]))
        } else if (reach - 1) >> BLOCK_BITS == b {
            None
        } else {
            self.first_after_block(b).map(|x| x.0)
        };
        if next.is_some_and(|k| k < reach) {
            return RunMove::General;
        }
        // The destination: from two words before it to the end of the last
        // body, in one block.
        let (d0, dend) = if delta < 0 {
            let dw = delta.unsigned_abs();
            if k0 < dw + 3 {
                return RunMove::General;
            }
            (k0 - dw, reach - dw)
        } else {
            let uw = delta as u64;
            if uw >= 1 << 60 || reach >= 1 << 60 {
                return RunMove::General;
            }
            // (Wholly above the moved objects and the range: a destination
            // inside the range would be found and moved again.)
            if k0 + uw - 2 < reach || k0 + uw < hi {
                return RunMove::General;
            }
            (k0 + uw, reach + uw)
        };
        let (nb, woff) = split(d0 - 2);
        if (dend - 1) >> BLOCK_BITS != nb {
            return RunMove::General;
        }
        // Other entries there: only inside the moved objects' bodies (each
        // erases those starting in its body), none raw. (Moving down, the
        // moved objects themselves are not looked at.)
        let wend = if delta < 0 { dend.min(k0) } else { dend };
        let di = self.find_block(nb);
        let (p, q) = match di {
            Some(di) => {
                let dblk = &self.blocks[di];
                let p = dblk.lower_bound(woff);
                let mut q = p;
                let mut t = i;
                while q < dblk.keys.len() && join(nb, dblk.keys[q]) < wend {
                    let g = join(nb, dblk.keys[q]);
                    let d = |t: usize| join(b, blk.keys[t]).wrapping_add(delta as u64);
                    let c = |t: usize| (blk.vals[t].size as u64).div_ceil(4);
                    while t < j && d(t) + c(t) <= g {
                        t += 1;
                    }
                    if t == j || g < d(t) || dblk.vals[q].row & RAW != 0 {
                        return RunMove::General;
                    }
                    q += 1;
                }
                (p, q)
            }
            None => (0, 0),
        };
        // The entry before the destination once the first object is out.
        let pred = match di {
            Some(di) => self.before(di, nb, p),
            None => self.last_before_block(nb),
        };
        let pred = match pred {
            Some((k, _)) if k == k0 => self.before(bi, b, i),
            x => x,
        };
        if let Some((pk, ph)) = pred {
            if !pred_clear(pk, ph, d0) {
                return RunMove::General;
            }
        }
        // Apply: the erased entries die, the run leaves its block and
        // takes their place.
        if q > p {
            let Some(di) = di else { return RunMove::General };
            let blk = &self.blocks[bi];
            let dblk = &self.blocks[di];
            let mut t = i;
            for x in p..q {
                let g = join(nb, dblk.keys[x]);
                while join(b, blk.keys[t]).wrapping_add(delta as u64) + (blk.vals[t].size as u64).div_ceil(4) <= g {
                    t += 1;
                }
                gone(g, dblk.vals[x], join(b, blk.keys[t]).wrapping_add(delta as u64), blk.vals[t].obj);
            }
        }
        let mut run = std::mem::take(&mut self.scratch);
        run.clear();
        let shift = |k: u16| (join(b, k).wrapping_add(delta as u64) & OFFSET_MASK) as u16;
        let blk = &mut self.blocks[bi];
        run.extend(blk.keys[i..j].iter().zip(&blk.vals[i..j]).map(|(&k, &h)| (shift(k), h)));
        cut(&mut blk.keys, i, j);
        cut(&mut blk.vals, i, j);
        blk.hint = i as u32;
        let (p, q) = if nb == b && p >= j { (p - n, q - n) } else { (p, q) };
        if nb != b && self.blocks[bi].keys.is_empty() {
            self.nonempty.remove(&b);
        }
        let di = match di {
            Some(di) => di,
            None => self.block_or_create(nb),
        };
        if self.blocks[di].keys.is_empty() {
            self.nonempty.insert(nb);
            self.fresh_arrays(di, 16);
        }
        let dblk = &mut self.blocks[di];
        replace_range(&mut dblk.keys, p, q, n, run[0].0);
        replace_range(&mut dblk.vals, p, q, n, run[0].1);
        dblk.hint = (p + n) as u32;
        for (t, x) in run.iter().enumerate() {
            dblk.keys[p + t] = x.0;
            dblk.vals[p + t] = x.1;
        }
        self.len -= q - p;
        self.scratch = run;
        RunMove::Moved { slot: di as u32, base: join(nb, 0), at: p as u32, n: n as u32 }
    }

    /// The entries `at..at + n` of block slot `slot` (after [`RunMove::Moved`]).
    #[inline]
    pub(crate) fn slot_entries(&self, slot: u32, at: u32, n: u32) -> (&[u16], &[Header]) {
        let blk = &self.blocks[slot as usize];
        let r = at as usize..(at + n) as usize;
        (&blk.keys[r.clone()], &blk.vals[r])
    }

    /// Removes the entry at `key`.
    #[inline]
    pub(crate) fn remove(&mut self, key: u64) -> Option<Header> {
        let (b, off) = split(key);
        let bi = self.find_block(b)?;
        let blk = &mut self.blocks[bi];
        let i = blk.lower_bound(off);
        if i >= blk.keys.len() || blk.keys[i] != off {
            return None;
        }
        let v = blk.vals[i];
        cut(&mut blk.keys, i, i + 1);
        cut(&mut blk.vals, i, i + 1);
        blk.hint = i as u32;
        self.len -= 1;
        if blk.keys.is_empty() {
            self.nonempty.remove(&b);
        }
        Some(v)
    }

    /// Removes every entry with a key in `[lo, hi)`, calling `f` for each in
    /// key order.
    pub(crate) fn remove_range(&mut self, lo: u64, hi: u64, mut f: impl FnMut(u64, Header)) {
        if lo >= hi {
            return;
        }
        let (lb, loff) = split(lo);
        let (hb, hoff) = split(hi);
        // Fast path: within one block (no list of blocks to make).
        if lb == hb {
            self.drain_block(lb, Some(loff), Some(hoff), &mut f);
            return;
        }
        let touched: Vec<u64> = self.nonempty.range(lb..=hb).copied().collect();
        for b in touched {
            self.drain_block(b, (b == lb).then_some(loff), (b == hb).then_some(hoff), &mut f);
        }
    }

    /// Removes the entries of block `b` with offsets in `[lo, hi)` (`None`:
    /// from the start, to the end), calling `f` for each in key order.
    #[inline]
    fn drain_block(&mut self, b: u64, lo: Option<u16>, hi: Option<u16>, f: &mut impl FnMut(u64, Header)) {
        let Some(bi) = self.find_block(b) else { return };
        let blk = &mut self.blocks[bi];
        let a = lo.map_or(0, |o| blk.lower_bound(o));
        let e = hi.map_or(blk.keys.len(), |o| blk.lower_bound(o));
        if a >= e {
            return;
        }
        for j in a..e {
            f(join(b, blk.keys[j]), blk.vals[j]);
        }
        cut(&mut blk.keys, a, e);
        cut(&mut blk.vals, a, e);
        blk.hint = a as u32;
        self.len -= e - a;
        if blk.keys.is_empty() {
            self.nonempty.remove(&b);
        }
    }

    /// Gives back the memory of empty blocks and of blocks much larger than
    /// their contents (after a GC), so that memory follows the live objects,
    /// not the address space ever used.
    pub(crate) fn compact(&mut self) {
        let (mut emptied, mut emptied_cap) = (0usize, 0usize);
        for (i, blk) in self.blocks.iter_mut().enumerate() {
            if blk.keys.is_empty() {
                let id = self.ids[i];
                if id != u64::MAX {
                    self.index.remove(&id);
                    self.ids[i] = u64::MAX;
                    self.free.push(i as u32);
                    let arrays = std::mem::take(blk);
                    emptied += 1;
                    emptied_cap += arrays.keys.capacity();
                    let bytes = Self::block_bytes(&arrays);
                    if bytes > 0 && self.spare_bytes + bytes <= SPARE_BYTES {
                        self.spare_bytes += bytes;
                        self.spare.push(arrays);
                    }
                }
            } else if blk.keys.capacity() > 2 * blk.keys.len() + 16 {
                blk.keys.shrink_to_fit();
                blk.vals.shrink_to_fit();
            }
        }
        if let Some(mean) = emptied_cap.checked_div(emptied) {
            self.refill = 1 << mean.clamp(16, 1 << BLOCK_BITS).ilog2();
        }
        for c in &self.cache {
            c.set(NO_BLOCK);
        }
        self.index.shrink_to_fit();
    }

    /// Removes the object at `key` whose body spans `count` words, when
    /// nothing else lies in `[key - 2, key + count)`; otherwise removes
    /// nothing and returns `None`.
    #[inline]
    pub(crate) fn remove_alone(&mut self, key: u64, count: u64) -> Option<Header> {
        let (b, off) = split(key);
        let bi = self.find_block(b)?;
        let blk = &self.blocks[bi];
        let i = blk.lower_bound(off);
        if i >= blk.keys.len() || blk.keys[i] != off {
            return None;
        }
        let end = key.saturating_add(count.max(1));
        let next_near = if i + 1 < blk.keys.len() {
            join(b, blk.keys[i + 1]) < end
        } else if (end - 1) >> BLOCK_BITS == b {
            false
        } else {
            self.first_after_block(b).is_some_and(|(k, _)| k < end)
        };
        let prev_near = if i > 0 {
            join(b, blk.keys[i - 1]) + 2 >= key
        } else if off < 2 {
            self.last_before_block(b).is_some_and(|(k, _)| k + 2 >= key)
        } else {
            false
        };
        if next_near || prev_near {
            return None;
        }
        let blk = &mut self.blocks[bi];
        let v = blk.vals[i];
        cut(&mut blk.keys, i, i + 1);
        cut(&mut blk.vals, i, i + 1);
        blk.hint = i as u32;
        self.len -= 1;
        if blk.keys.is_empty() {
            self.nonempty.remove(&b);
        }
        Some(v)
    }

    /// Every entry in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, Header)> + '_ {
        self.nonempty.iter().flat_map(move |&b| {
            let blk = self.find_block(b).map(|i| &self.blocks[i]);
            blk.into_iter().flat_map(move |blk| blk.keys.iter().map(move |&k| join(b, k)).zip(blk.vals.iter().copied()))
        })
    }

    /// Bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.blocks.iter().map(|b| b.keys.capacity() * 2 + b.vals.capacity() * std::mem::size_of::<Header>()).sum::<usize>()
            + self.blocks.capacity() * std::mem::size_of::<Block>()
            + self.ids.capacity() * 8
            + self.index.capacity() * 16
            + self.free.capacity() * 4
            + self.spare_bytes
            + self.nonempty.len() * 24
            + self.scratch.capacity() * std::mem::size_of::<(u16, Header)>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn h(x: u32) -> Header {
        Header { row: x, tick: x, obj: x, size: 12 + (x % 8) * 4 }
    }

    /// Blocks that allocations start to fill after a GC get the capacity
    /// the GC's emptied blocks had, bounded by what objects of the first
    /// one's size can fill; moves and the general insertion start small.
    #[test]
    fn refilled_blocks_start_at_the_emptied_capacity() {
        let mut s = LiveObjects::default();
        // Fill two blocks with 300 objects of 4 words each, then empty them.
        for b in 0..2u64 {
            for j in 0..300u64 {
                let key = (b << BLOCK_BITS) + j * 4;
                assert_eq!(s.place_fast(key, key + 4, false, |_, _| true, h(j as u32)), Placed::Done);
            }
        }
        s.remove_range(0, 2 << BLOCK_BITS, |_, _| {});
        s.compact();
        // Grown from 16 by doubling, both arrays reached 512.
        assert_eq!(s.refill, 512);
        let cap = |s: &LiveObjects, b: u64| s.blocks[s.find_block(b).unwrap()].keys.capacity();
        // Spare arrays are reused first (they are larger than the refill).
        let key = 5 << BLOCK_BITS;
        assert_eq!(s.place_fast(key, key + 4, false, |_, _| true, h(1)), Placed::Done);
        assert!(cap(&s, 5) >= 512);
        s.spare.clear();
        s.spare_bytes = 0;
        // Small objects: the refill capacity at once.
        let key = 7 << BLOCK_BITS;
        assert_eq!(s.place_fast(key, key + 4, false, |_, _| true, h(2)), Placed::Done);
        assert_eq!(cap(&s, 7), 512);
        // A large object: no more than its block can hold.
        let key = 9 << BLOCK_BITS;
        assert_eq!(s.place_fast(key, key + 1000, false, |_, _| true, h(3)), Placed::Done);
        assert_eq!(cap(&s, 9), 16);
        // The general insertion starts small.
        assert_eq!(s.insert(11 << BLOCK_BITS, h(4)), None);
        assert_eq!(cap(&s, 11), 16);
    }

    #[test]
    fn lower_bound_with_any_hint() {
        // Every hint, right or wrong, gives the plain binary search's
        // answer, for sorted keys of every density and every probe. (Tried
        // broken: without the check of the entry before the hint, or with
        // the final search restarted at the hint instead of after the
        // steps, this test fails.)
        let mut next = crate::model::test_rng::xorshift(99);
        for round in 0..300u64 {
            let n = (next() % 40) as usize + (round as usize % 3) * 100;
            let gap = 1 + next() % 9;
            let mut keys: Vec<u16> = Vec::new();
            let mut k = (next() % 5) as u16;
            for _ in 0..n {
                keys.push(k);
                k = k.saturating_add(1 + (next() % gap) as u16);
            }
            keys.dedup();
            let vals = vec![h(0); keys.len()];
            let mut blk = Block { keys, vals, hint: 0 };
            for hint in 0..blk.keys.len() as u32 + 3 {
                blk.hint = hint;
                for off in 0..=k.saturating_add(2) {
                    let want = blk.keys.partition_point(|&x| x < off);
                    assert_eq!(blk.lower_bound(off), want, "hint {hint} off {off} keys {:?}", blk.keys);
                }
            }
        }
    }

    #[test]
    fn against_btreemap() {
        // A deterministic pseudo-random mix of operations over a few regions.
        let mut s = LiveObjects::default();
        let mut m: BTreeMap<u64, Header> = BTreeMap::new();
        let mut next = crate::model::test_rng::xorshift(12345);
        let mut cursors = [0u64, 50_000, 1 << 40, 7 << 50];
        for step in 0..300_000u32 {
            let r = next();
            let c = (r % 4) as usize;
            let key = match (r >> 2) % 3 {
                0 | 1 => {
                    cursors[c] += 1 + (r >> 8) % 40;
                    cursors[c]
                }
                _ => cursors[c].saturating_sub((r >> 8) % 30_000),
            };
            match (r >> 40) % 13 {
                0..=5 => assert_eq!(s.insert(key, h(step)), m.insert(key, h(step))),
                6 => assert_eq!(s.remove(key), m.remove(&key)),
                7 => {
                    let hi = key + (r >> 20) % 20_000;
                    let mut got = Vec::new();
                    s.remove_range(key, hi, |k, v| got.push((k, v)));
                    let want: Vec<_> = m.range(key..hi).map(|(&k, &v)| (k, v)).collect();
                    for (k, _) in &want {
                        m.remove(k);
                    }
                    assert_eq!(got, want);
                }
                8 => {
                    assert_eq!(s.find_le(key), m.range(..=key).next_back().map(|(&k, &v)| (k, v)));
                    let hi = key + (r >> 20) % 9000;
                    assert_eq!(s.find_in(key, hi), m.range(key..=hi).next().map(|(&k, &v)| (k, v)));
                }
                9 => {
                    let end = key + (r >> 20) % 10;
                    let before = m.range(..key).next_back().map(|(&k, &v)| (k, v));
                    let reach = end.saturating_sub(1).max(key + 2);
                    let near = m.range(key.saturating_sub(2)..=reach).next().is_some();
                    let pred_ok = (r >> 30) % 2 == 0;
                    let want = if near || (before.is_some() && !pred_ok) { Placed::Slow } else { Placed::Done };
                    let got = s.place_fast(key, end, true, |_, _| pred_ok, h(step));
                    assert_eq!(got, want, "key {key}");
                    if got == Placed::Done {
                        m.insert(key, h(step));
                    }
                }
                10 => {
                    // A run moved by up to 6000 words either way: when
                    // taken, the run lands shifted and exactly the entries
                    // reported erased are gone.
                    let hi = key + 1 + (r >> 20) % 300;
                    let delta = ((r >> 30) % 12_000) as i64 - 6000;
                    let pred_ok = (r >> 50) % 4 != 0;
                    let run: Vec<(u64, Header)> = m.range(key..hi).map(|(&k, &v)| (k, v)).collect();
                    let mut erased = Vec::new();
                    let got = s.move_run(key, hi, delta, |_, _, _| pred_ok, |k, v, _, _| erased.push((k, v)));
                    match got {
                        RunMove::Nothing => assert!(run.is_empty()),
                        RunMove::General => assert!(erased.is_empty()),
                        RunMove::Moved { slot, base, at, n } => {
                            for (k, v) in &erased {
                                assert_eq!(m.remove(k), Some(*v));
                            }
                            for (k, _) in &run {
                                m.remove(k);
                            }
                            let moved: Vec<(u64, Header)> = run.iter().map(|&(k, v)| ((k as i64 + delta) as u64, v)).collect();
                            for &(k, v) in &moved {
                                assert_eq!(m.insert(k, v), None);
                            }
                            let (ks, vs) = s.slot_entries(slot, at, n);
                            let landed: Vec<(u64, Header)> = ks.iter().map(|&k| base + k as u64).zip(vs.iter().copied()).collect();
                            assert_eq!(landed, moved);
                        }
                    }
                }
                _ => {
                    assert_eq!(s.get(key), m.get(&key).copied());
                    if step % 1000 == 0 {
                        s.compact();
                    }
                }
            }
            assert_eq!(s.len(), m.len());
        }
        assert!(s.iter().eq(m.iter().map(|(&k, &v)| (k, v))));
    }
}
