//! The sample table: the history of every 1 KB grain of address space.
//!
//! CLRProfiler records, for each 1 KB grain, a chain of entries
//! `(type, change tick, allocation tick, previous entry)`, newest first
//! (type 0 with allocation tick 0 is "free"). Entries are made when an
//! allocation, a move or a removal crosses a grain boundary (section 4 of
//! `docs/src/reference-reader.md`), and never freed. On large logs this is the
//! biggest table of all, so it is packed.
//!
//! # Layout
//!
//! Samples are numbered in creation order ([`SampleId`]). They are encoded
//! in groups of [`GROUP`] samples into chunks of 16-bit words; a directory
//! gives the word offset of every group. A record is decoded relative to
//! the record before it in its group (`P`; for the first record of a group,
//! `P` is type 0, ticks 0 and no previous sample):
//!
//! ```text
//! run form (1 word):     1 nnnnnnnnnnnnnnn
//!     n + 1 samples, each with P's type and ticks and prev = P.prev + 1
//!     (or no prev when P has none): a removal or a large object over
//!     consecutive grains.
//! record form:           0 pp aa c tttttttttt  [prev] [alloc] [change] [type]
//!     pp  prev:   0 none, 1 = P.prev + 1, 2 = i - prev in 1 word,
//!                 3 = i - prev in 2 words
//!     aa  alloc:  0 = change tick, 1 = 0 (free), 2 = P.alloc, 3 = 2 words
//!     c   change: 0 = P.change, 1 = a varint (15 bits per word, high bit
//!                 continues) of the zigzagged difference to P.change follows
//!     t   type:   0-1021 inline, 1022 = P.type, 1023 = 2 words follow
//! ```
//!
//! `prev` is an index delta, never a pointer; the record is rebuilt on
//! demand from the words. A sample is found in constant time: the group's
//! offset from the directory, then at most `GROUP - 1` records decoded.
//! Groups never straddle chunks.
//!
//! The newest sample of each grain is kept in a two-level grain index (the
//! starting point of a grain's chain), and the GC tick list beside it.

use super::error::Problem;
use super::ids::{SampleId, TickIndex};
use crate::format::TypeId;
use std::collections::HashMap;

/// Samples per group of the directory.
pub const GROUP: usize = 32;
const CHUNK_WORDS: usize = 1 << 16;
const MAX_RECORD_WORDS: usize = 1 + 2 + 2 + 3 + 2;
const MAX_GROUP_WORDS: usize = GROUP * MAX_RECORD_WORDS;
const GRAIN_SHIFT: u32 = 10;
const BLOCK_BITS: u32 = 8;
const BLOCK: usize = 1 << BLOCK_BITS;
/// Most grain steps one range may record (2^28 KB = 256 GB of address space).
const MAX_STEPS: u64 = 1 << 28;

/// One entry of the address history.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Sample {
    /// The type that occupies the grain from `change` on (0: free).
    pub type_id: TypeId,
    /// When the grain changed.
    pub change: TickIndex,
    /// When the occupying object was allocated (0 when free).
    pub alloc: TickIndex,
    /// The grain's previous entry.
    pub prev: Option<SampleId>,
}

impl Sample {
    /// Whether the entry marks the grain free.
    pub fn is_free(&self) -> bool {
        self.type_id.0 == 0 && self.alloc.0 == 0
    }
}

const START: Sample = Sample { type_id: TypeId(0), change: TickIndex(0), alloc: TickIndex(0), prev: None };

fn predicted(p: &Sample) -> Option<SampleId> {
    p.prev.map(|s| SampleId(s.0.wrapping_add(1)))
}

// ---------------------------------------------------------------- encoding

/// Packed samples (see the module documentation).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct PackedSamples {
    chunks: Vec<Vec<u16>>,
    groups: Vec<u32>,
    len: u32,
    // Encoder state.
    last: Sample,
    run: u16,
}

impl PackedSamples {
    /// An empty table.
    pub fn new() -> Self {
        PackedSamples { last: START, ..Default::default() }
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// True when there is no sample.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn chunk(&mut self) -> &mut Vec<u16> {
        // `push` always leaves a chunk in place.
        let n = self.chunks.len();
        &mut self.chunks[n - 1]
    }

    fn flush_run(&mut self) {
        if self.run > 0 {
            let w = 0x8000 | (self.run - 1);
            self.chunk().push(w);
            self.run = 0;
        }
    }

    /// Appends a sample; returns its id.
    pub fn push(&mut self, s: Sample) -> Result<SampleId, Problem> {
        let i = self.len;
        if i == u32::MAX {
            return Err(Problem::TooMany { what: "samples" });
        }
        if i as usize % GROUP == 0 {
            self.flush_run();
            let room = self.chunks.last().map_or(0, |c| CHUNK_WORDS - c.len());
            if room < MAX_GROUP_WORDS {
                if self.chunks.len() >= (u32::MAX as usize / CHUNK_WORDS) {
                    return Err(Problem::TooMany { what: "sample words" });
                }
                self.chunks.push(Vec::with_capacity(CHUNK_WORDS));
            }
            let c = self.chunks.len() - 1;
            self.groups.push((c * CHUNK_WORDS + self.chunks[c].len()) as u32);
            self.last = START;
        } else if s.type_id == self.last.type_id
            && s.change == self.last.change
            && s.alloc == self.last.alloc
            && s.prev == predicted(&self.last)
        {
            self.run += 1;
            self.last = s;
            self.len += 1;
            return Ok(SampleId(i));
        }
        self.flush_run();
        let p = self.last;
        let mut ext = [0u16; MAX_RECORD_WORDS];
        let mut n = 1;
        let prev_mode: u16 = match s.prev {
            None => 0,
            Some(q) if Some(q) == predicted(&p) => 1,
            Some(q) => {
                let d = i.wrapping_sub(q.0);
                if d <= 0xFFFF {
                    ext[n] = d as u16;
                    n += 1;
                    2
                } else {
                    ext[n] = (d >> 16) as u16;
                    ext[n + 1] = d as u16;
                    n += 2;
                    3
                }
            }
        };
        let alloc_mode: u16 = if s.alloc == s.change {
            0
        } else if s.alloc.0 == 0 {
            1
        } else if s.alloc == p.alloc {
            2
        } else {
            ext[n] = (s.alloc.0 >> 16) as u16;
            ext[n + 1] = s.alloc.0 as u16;
            n += 2;
            3
        };
        let change_bit: u16 = if s.change == p.change {
            0
        } else {
            let d = s.change.0 as i64 - p.change.0 as i64;
            let mut z = ((d << 1) ^ (d >> 63)) as u64;
            loop {
                let low = (z & 0x7FFF) as u16;
                z >>= 15;
                if z == 0 {
                    ext[n] = low;
                    n += 1;
                    break;
                }
                ext[n] = low | 0x8000;
                n += 1;
            }
            1
        };
        let type_code: u16 = match s.type_id.0 {
            t @ 0..=1021 => t as u16,
            t if t == p.type_id.0 => 1022,
            t => {
                ext[n] = ((t as u32) >> 16) as u16;
                ext[n + 1] = t as u16;
                n += 2;
                1023
            }
        };
        ext[0] = (prev_mode << 13) | (alloc_mode << 11) | (change_bit << 10) | type_code;
        self.chunk().extend_from_slice(&ext[..n]);
        self.last = s;
        self.len += 1;
        Ok(SampleId(i))
    }

    /// Ends encoding (writes a pending run).
    pub fn finish(&mut self) {
        self.flush_run();
        for c in &mut self.chunks {
            c.shrink_to_fit();
        }
        self.groups.shrink_to_fit();
        self.chunks.shrink_to_fit();
    }

    fn group_words(&self, g: usize) -> &[u16] {
        let off = self.groups[g] as usize;
        let c = &self.chunks[off / CHUNK_WORDS];
        &c[off % CHUNK_WORDS..]
    }

    /// The sample with this id (`None` beyond the table). The table must be
    /// finished (or the id must not be in a pending run).
    pub fn get(&self, id: SampleId) -> Option<Sample> {
        if id.0 >= self.len {
            return None;
        }
        let g = id.index() / GROUP;
        let mut d = GroupDecoder::new(self.group_words(g), (g * GROUP) as u32);
        let want = id.index() % GROUP;
        let mut k = 0;
        loop {
            let s = d.next()?;
            if k == want {
                return Some(s);
            }
            k += 1;
        }
    }

    /// Every sample in id order.
    pub fn iter(&self) -> impl Iterator<Item = (SampleId, Sample)> + '_ {
        let groups = self.groups.len();
        let len = self.len as usize;
        (0..groups).flat_map(move |g| {
            let first = g * GROUP;
            let count = GROUP.min(len - first);
            let mut d = GroupDecoder::new(self.group_words(g), first as u32);
            (0..count).map_while(move |k| d.next().map(|s| (SampleId((first + k) as u32), s)))
        })
    }

    /// The samples with ids in `range`, in id order (decoding starts at
    /// the group holding `range.start`), so that parts of the table can be
    /// read in parallel.
    pub fn iter_range(&self, range: std::ops::Range<SampleId>) -> impl Iterator<Item = (SampleId, Sample)> + '_ {
        let len = self.len as usize;
        let end = (range.end.0 as usize).min(len);
        let start = (range.start.0 as usize).min(end);
        let first_group = start / GROUP;
        (first_group..end.div_ceil(GROUP))
            .flat_map(move |g| {
                let first = g * GROUP;
                let count = GROUP.min(len - first);
                let mut d = GroupDecoder::new(self.group_words(g), first as u32);
                (0..count).map_while(move |k| d.next().map(|s| (SampleId((first + k) as u32), s)))
            })
            .skip(start - first_group * GROUP)
            .take(end - start)
    }

    /// Bytes held by the words and the directory.
    pub fn heap_bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.capacity() * 2).sum::<usize>() + self.groups.capacity() * 4
    }
}

/// Decodes the records of one group in order.
struct GroupDecoder<'a> {
    words: &'a [u16],
    pos: usize,
    index: u32,
    last: Sample,
    run_left: u16,
}

impl<'a> GroupDecoder<'a> {
    fn new(words: &'a [u16], first: u32) -> Self {
        GroupDecoder { words, pos: 0, index: first, last: START, run_left: 0 }
    }

    #[inline]
    fn word(&mut self) -> Option<u16> {
        let w = *self.words.get(self.pos)?;
        self.pos += 1;
        Some(w)
    }

    #[inline]
    fn next(&mut self) -> Option<Sample> {
        let i = self.index;
        if self.run_left > 0 {
            self.run_left -= 1;
        } else {
            let h = self.word()?;
            if h & 0x8000 != 0 {
                self.run_left = h & 0x7FFF;
            } else {
                let p = self.last;
                let prev = match (h >> 13) & 3 {
                    0 => None,
                    1 => predicted(&p),
                    2 => Some(SampleId(i.wrapping_sub(self.word()? as u32))),
                    _ => {
                        let hi = self.word()? as u32;
                        let lo = self.word()? as u32;
                        Some(SampleId(i.wrapping_sub((hi << 16) | lo)))
                    }
                };
                let alloc_mode = (h >> 11) & 3;
                let alloc_explicit = if alloc_mode == 3 {
                    let hi = self.word()? as u32;
                    let lo = self.word()? as u32;
                    Some((hi << 16) | lo)
                } else {
                    None
                };
                let change = if h & 0x400 != 0 {
                    let mut z: u64 = 0;
                    let mut shift = 0;
                    loop {
                        let w = self.word()?;
                        z |= ((w & 0x7FFF) as u64) << shift;
                        shift += 15;
                        if w & 0x8000 == 0 || shift > 60 {
                            break;
                        }
                    }
                    let d = ((z >> 1) as i64) ^ -((z & 1) as i64);
                    TickIndex((p.change.0 as i64 + d) as u32)
                } else {
                    p.change
                };
                let alloc = match alloc_mode {
                    0 => change,
                    1 => TickIndex(0),
                    2 => p.alloc,
                    _ => TickIndex(alloc_explicit.unwrap_or(0)),
                };
                let type_id = match h & 0x3FF {
                    1022 => p.type_id,
                    1023 => {
                        let hi = self.word()? as u32;
                        let lo = self.word()? as u32;
                        TypeId(((hi << 16) | lo) as i32)
                    }
                    t => TypeId(t as i32),
                };
                self.last = Sample { type_id, change, alloc, prev };
                self.index = i.wrapping_add(1);
                return Some(self.last);
            }
        }
        // A run element.
        let p = self.last;
        self.last = Sample { prev: predicted(&p), ..p };
        self.index = i.wrapping_add(1);
        Some(self.last)
    }
}

// ---------------------------------------------------------------- grains

/// Newest sample per grain, in blocks of 256 grains (256 KB of address space).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct GrainIndex {
    blocks: HashMap<u64, u32>,
    newest: Vec<Box<[u32]>>,
    // Build-time only: type and allocation tick of the newest entry.
    types: Vec<Box<[i32]>>,
    allocs: Vec<Box<[u32]>>,
    cache: Option<(u64, u32)>,
    slots_used: u64,
}

impl GrainIndex {
    #[inline]
    fn block(&mut self, b: u64) -> usize {
        if let Some((k, v)) = self.cache {
            if k == b {
                return v as usize;
            }
        }
        let n = self.newest.len() as u32;
        let v = *self.blocks.entry(b).or_insert(n);
        if v == n {
            self.newest.push(vec![0u32; BLOCK].into_boxed_slice());
            self.types.push(vec![0i32; BLOCK].into_boxed_slice());
            self.allocs.push(vec![0u32; BLOCK].into_boxed_slice());
        }
        self.cache = Some((b, v));
        v as usize
    }

    /// The newest sample of the grain holding `address`.
    pub fn newest(&self, address: u64) -> Option<SampleId> {
        let grain = address >> GRAIN_SHIFT;
        let b = *self.blocks.get(&(grain >> BLOCK_BITS))? as usize;
        let v = self.newest[b][(grain as usize) & (BLOCK - 1)];
        (v != 0).then(|| SampleId(v - 1))
    }

    /// The grains (as address of their first byte) that have a history, in
    /// no particular order.
    pub fn grains(&self) -> impl Iterator<Item = (u64, SampleId)> + '_ {
        self.blocks.iter().flat_map(move |(&b, &i)| {
            self.newest[i as usize]
                .iter()
                .enumerate()
                .filter(|(_, &v)| v != 0)
                .map(move |(k, &v)| (((b << BLOCK_BITS) | k as u64) << GRAIN_SHIFT, SampleId(v - 1)))
        })
    }

    /// Like [`GrainIndex::grains`], in ascending address order (the blocks
    /// are sorted; no per-grain sorting).
    pub fn grains_in_order(&self) -> impl Iterator<Item = (u64, SampleId)> + '_ {
        let mut blocks: Vec<(u64, u32)> = self.blocks.iter().map(|(&b, &i)| (b, i)).collect();
        blocks.sort_unstable();
        blocks.into_iter().flat_map(move |(b, i)| {
            self.newest[i as usize]
                .iter()
                .enumerate()
                .filter(|(_, &v)| v != 0)
                .map(move |(k, &v)| (((b << BLOCK_BITS) | k as u64) << GRAIN_SHIFT, SampleId(v - 1)))
        })
    }

    /// Grains with at least one sample.
    pub fn slots_used(&self) -> u64 {
        self.slots_used
    }

    fn finish(&mut self) {
        self.types = Vec::new();
        self.allocs = Vec::new();
        self.cache = None;
        self.blocks.shrink_to_fit();
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        let per_block = BLOCK * 4 + if self.types.is_empty() { 0 } else { BLOCK * 8 };
        self.newest.len() * per_block + self.blocks.capacity() * 16
    }
}

// ---------------------------------------------------------------- the table

/// The sample table: packed samples, the grain index and the GC tick list.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct SampleTable {
    samples: PackedSamples,
    grains: GrainIndex,
    gc_ticks: Vec<(i32, TickIndex)>,
    last_change: TickIndex,
    /// The most bytes the packed samples and the grain index may take while
    /// the log loads (see [`crate::limits::history_bytes`]; 0: no cap).
    #[serde(skip)]
    limit: u64,
    /// Grain blocks and sample chunks when the size was last checked.
    #[serde(skip)]
    checked: (usize, usize),
}

impl SampleTable {
    pub(crate) fn new() -> Self {
        SampleTable { samples: PackedSamples::new(), ..Default::default() }
    }

    /// Section 4.2 `record_change` (made by [`super::deferred::Recorder`]
    /// for the ranges that cross a grain boundary).
    pub(crate) fn record_change(&mut self, start: u64, end: u64, change: u32, alloc: u32, type_id: i32) -> Result<(), Problem> {
        self.last_change = TickIndex(change);
        if end <= start {
            return Ok(());
        }
        Self::check_range(start, end)?;
        let mut g = start;
        loop {
            let grain = g >> GRAIN_SHIFT;
            let b = self.grains.block(grain >> BLOCK_BITS);
            if self.grains.newest.len() != self.checked.0 {
                self.check_limit()?;
            }
            let k = (grain as usize) & (BLOCK - 1);
            let newest = self.grains.newest[b][k];
            if newest == 0 || self.grains.types[b][k] != type_id || self.grains.allocs[b][k] != alloc {
                let prev = (newest != 0).then(|| SampleId(newest - 1));
                let id =
                    self.samples.push(Sample { type_id: TypeId(type_id), change: TickIndex(change), alloc: TickIndex(alloc), prev })?;
                if self.samples.chunks.len() != self.checked.1 {
                    self.check_limit()?;
                }
                if newest == 0 {
                    self.grains.slots_used += 1;
                }
                self.grains.newest[b][k] = id.0 + 1;
                self.grains.types[b][k] = type_id;
                self.grains.allocs[b][k] = alloc;
            }
            match g.checked_add(1024) {
                Some(n) if n < end => g = n,
                _ => break,
            }
        }
        Ok(())
    }

    /// Raises the most bytes the table may take while the log loads (see
    /// [`crate::limits::history_bytes`]).
    pub(crate) fn allow(&mut self, bytes: u64) {
        self.limit = self.limit.max(bytes);
    }

    /// The memory rule's share: called when the grain index or the packed
    /// samples grew by a block or a chunk.
    #[cold]
    fn check_limit(&mut self) -> Result<(), Problem> {
        self.checked = (self.grains.newest.len(), self.samples.chunks.len());
        let bytes = self.heap_bytes() as u64;
        if self.limit > 0 && bytes > self.limit {
            return Err(Problem::OverMemoryRule {
                what: "bytes of address history (objects over that much address space)",
                count: bytes,
                limit: self.limit,
            });
        }
        Ok(())
    }

    /// Whether a change of `[start, end)` makes samples (it crosses a grain
    /// boundary).
    #[inline]
    pub(crate) fn crosses_grain(start: u64, end: u64) -> bool {
        start >> GRAIN_SHIFT != end >> GRAIN_SHIFT
    }

    /// The reference's limit on one change: at most 2^28 grains.
    #[inline]
    pub(crate) fn check_range(start: u64, end: u64) -> Result<(), Problem> {
        if end > start && (end - start).div_ceil(1024) > MAX_STEPS {
            return Err(Problem::RangeTooLarge { bytes: end - start });
        }
        Ok(())
    }

    /// A GC: its generation (as read or computed) and tick.
    pub(crate) fn gc_tick(&mut self, generation: i32, tick: u32) {
        self.last_change = TickIndex(tick);
        self.gc_ticks.push((generation, TickIndex(tick)));
    }

    pub(crate) fn finish(&mut self) {
        self.samples.finish();
        self.grains.finish();
        self.gc_ticks.shrink_to_fit();
    }

    /// The packed samples.
    pub fn samples(&self) -> &PackedSamples {
        &self.samples
    }

    /// Number of samples (CLRProfiler's `sample_objects_created`).
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// True when no sample was made.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// A sample by id.
    pub fn get(&self, id: SampleId) -> Option<Sample> {
        self.samples.get(id)
    }

    /// The grain index.
    pub fn grains(&self) -> &GrainIndex {
        &self.grains
    }

    /// The history of the grain holding `address`, newest first.
    pub fn history(&self, address: u64) -> impl Iterator<Item = (SampleId, Sample)> + '_ {
        let mut next = self.grains.newest(address);
        std::iter::from_fn(move || {
            let id = next?;
            let s = self.samples.get(id)?;
            next = s.prev;
            Some((id, s))
        })
    }

    /// The GC tick list, oldest first: (generation, tick).
    pub fn gc_ticks(&self) -> &[(i32, TickIndex)] {
        &self.gc_ticks
    }

    /// The change tick of the last recorded change or GC ("now" for the
    /// Time Line).
    pub fn last_change(&self) -> TickIndex {
        self.last_change
    }

    /// CLRProfiler's second-level tables (32 MB of address space each).
    pub fn reader_second_level_tables(&self) -> u64 {
        let mut set: Vec<u32> = self.grains.grains().map(|(a, _)| (a >> 25) as u32).collect();
        set.sort_unstable();
        set.dedup();
        set.len() as u64
    }

    /// CLRProfiler's first-level length: 64, doubled until every 32 MB
    /// index fits.
    pub fn reader_master_length(&self) -> u64 {
        let max = self.grains.grains().map(|(a, _)| (a >> 25) as u32 as u64).max().unwrap_or(0);
        let mut len = 64u64;
        while len <= max {
            len *= 2;
        }
        len
    }

    /// Bytes held by the packed samples alone.
    pub fn packed_bytes(&self) -> usize {
        self.samples.heap_bytes()
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.samples.heap_bytes() + self.grains.heap_bytes() + self.gc_ticks.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_forms() {
        let mut p = PackedSamples::new();
        let mut want = Vec::new();
        let push = |p: &mut PackedSamples, want: &mut Vec<Sample>, s: Sample| {
            p.push(s).unwrap();
            want.push(s);
        };
        for i in 0..300u32 {
            let s = Sample {
                type_id: TypeId(if i % 7 == 0 { 5000 + i as i32 } else { (i % 3) as i32 }),
                change: TickIndex(i / 5 + if i % 11 == 0 { 1_000_000 } else { 0 }),
                alloc: TickIndex(if i % 3 == 0 { 0 } else { i / 7 }),
                prev: if i % 4 == 0 { None } else { Some(SampleId(i / 2)) },
            };
            push(&mut p, &mut want, s);
        }
        // A run.
        let base = Sample { type_id: TypeId(0), change: TickIndex(9), alloc: TickIndex(0), prev: Some(SampleId(3)) };
        for k in 0..200u32 {
            push(&mut p, &mut want, Sample { prev: Some(SampleId(3 + k)), ..base });
        }
        p.finish();
        for (i, s) in want.iter().enumerate() {
            assert_eq!(p.get(SampleId(i as u32)), Some(*s), "sample {i}");
        }
        let all: Vec<_> = p.iter().map(|(_, s)| s).collect();
        assert_eq!(all, want);
        for (a, b) in [(0, 0), (0, 500), (5, 37), (31, 33), (64, 64), (100, 999), (499, 500)] {
            let part: Vec<_> = p.iter_range(SampleId(a)..SampleId(b)).collect();
            let end = (b as usize).min(want.len());
            assert_eq!(part.len(), end - a as usize, "{a}..{b}");
            for (id, s) in part {
                assert_eq!(s, want[id.index()], "{a}..{b}: sample {}", id.0);
            }
        }
        assert_eq!(p.get(SampleId(want.len() as u32)), None);
    }
}
