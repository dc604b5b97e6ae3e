//! Allocated objects as columns, and what became of each.
//!
//! One row per applied `!`/`a` record, in log order ([`ObjectId`]):
//!
//! ```text
//! column    storage                                        bytes per object
//! stack     StackRef, 1-4 bytes (widened on demand)        1-4
//! thread    runs of (first object, thread)                 ~0.1
//! address   varint deltas from the same thread's previous  ~1.3
//!           object, in blocks of 256 objects
//! tick      runs of (first object, tick index)             ~0
//! fate      exceptions to a default, sorted by id          ~0.7
//! ```
//!
//! Addresses: within a block of [`ADDRESS_BLOCK`] objects, an object's
//! address is coded relative to the previous object of the same thread in
//! the block (bump allocation makes that difference the previous object's
//! size), as a varint of `delta / 4` with a tag bit, or as a signed varint
//! of the difference to the previous object of any thread when it goes
//! backwards or is not a multiple of 4. A block's offset into the byte
//! stream is kept, so an address is found by decoding at most 255 varints.
//!
//! Fates: most objects die at the first GC after their allocation, in
//! generation 0, and objects allocated after the last GC are still alive at
//! the end. Those are the defaults; only objects whose fate differs
//! (survivors, objects under 12 bytes, objects erased outside a GC) are
//! stored, as `(object, code)` pairs sorted by object.

use super::ids::{GcIndex, ObjectId, StackRef, ThreadRef, TickIndex};

/// A column of unsigned integers stored in 1 to 4 bytes each, widened (the
/// whole column re-encoded) the first time a value needs more.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct UintColumn {
    width: u8,
    bytes: Vec<u8>,
}

impl Default for UintColumn {
    fn default() -> Self {
        UintColumn { width: 1, bytes: Vec::new() }
    }
}

fn width_of(v: u32) -> u8 {
    match v {
        0..=0xFF => 1,
        0x100..=0xFFFF => 2,
        0x1_0000..=0xFF_FFFF => 3,
        _ => 4,
    }
}

impl UintColumn {
    #[inline]
    pub(crate) fn push(&mut self, v: u32) {
        let w = width_of(v);
        if w > self.width {
            self.widen(w);
        }
        let b = v.to_le_bytes();
        match self.width {
            1 => self.bytes.push(b[0]),
            2 => self.bytes.extend_from_slice(&[b[0], b[1]]),
            3 => self.bytes.extend_from_slice(&[b[0], b[1], b[2]]),
            _ => self.bytes.extend_from_slice(&b),
        }
    }

    #[cold]
    fn widen(&mut self, w: u8) {
        let n = self.len();
        let mut out = Vec::with_capacity((n + n / 4 + 16) * w as usize);
        for i in 0..n {
            let b = self.get(i).to_le_bytes();
            out.extend_from_slice(&b[..w as usize]);
        }
        self.bytes = out;
        self.width = w;
    }

    #[inline]
    pub(crate) fn get(&self, i: usize) -> u32 {
        // One fixed-size read per width (a copy of a run-time length would
        // be a call to `memcpy`).
        let b = &self.bytes;
        match self.width {
            1 => b[i] as u32,
            2 => u16::from_le_bytes([b[2 * i], b[2 * i + 1]]) as u32,
            3 => u32::from_le_bytes([b[3 * i], b[3 * i + 1], b[3 * i + 2], 0]),
            _ => u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.bytes.len() / self.width as usize
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
    }

    pub(crate) fn shrink(&mut self) {
        self.bytes.shrink_to_fit();
    }
}

/// Runs of equal values over object ids: `(first object, value)`.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Runs {
    runs: Vec<(u32, u32)>,
}

impl Runs {
    #[inline]
    pub(crate) fn push(&mut self, obj: u32, v: u32) {
        match self.runs.last() {
            Some(&(_, last)) if last == v => {}
            _ => self.runs.push((obj, v)),
        }
    }

    pub(crate) fn get(&self, obj: u32) -> u32 {
        let k = self.runs.partition_point(|&(first, _)| first <= obj);
        if k == 0 {
            0
        } else {
            self.runs[k - 1].1
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.runs.capacity() * 8
    }

    pub(crate) fn shrink(&mut self) {
        self.runs.shrink_to_fit();
    }
}

/// Sequential reading of [`Runs`].
struct RunCursor<'a> {
    runs: &'a [(u32, u32)],
    k: usize,
}

impl<'a> RunCursor<'a> {
    fn at(runs: &'a Runs, obj: u32) -> Self {
        let k = runs.runs.partition_point(|&(first, _)| first <= obj);
        RunCursor { runs: &runs.runs, k: k.saturating_sub(1) }
    }

    #[inline]
    fn next(&mut self, obj: u32) -> u32 {
        while self.k + 1 < self.runs.len() && self.runs[self.k + 1].0 <= obj {
            self.k += 1;
        }
        match self.runs.get(self.k) {
            Some(&(first, v)) if first <= obj => v,
            _ => 0,
        }
    }
}

/// One object's allocation columns (see [`AllocationTable::rows`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectRow {
    /// The object.
    pub id: ObjectId,
    /// Its allocation stack.
    pub stack: StackRef,
    /// The allocating thread.
    pub thread: ThreadRef,
    /// When it was allocated.
    pub tick: TickIndex,
}

/// Objects per block of the address column.
pub const ADDRESS_BLOCK: usize = 256;

/// Addresses as varint deltas (see the module documentation).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct AddressColumn {
    bytes: Vec<u8>,
    blocks: Vec<u32>,
    len: usize,
    // Encoder state of the current block: (thread, last address).
    last: Vec<(u32, u64)>,
    prev_any: u64,
}

#[inline]
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    if v < 0x80 {
        out.push(v as u8);
        return;
    }
    let mut buf = [0u8; 10];
    let mut n = 0;
    while v >= 0x80 {
        buf[n] = (v as u8) | 0x80;
        v >>= 7;
        n += 1;
    }
    buf[n] = v as u8;
    // A copy of a fixed size is two moves; one of a run-time length would
    // be a call to `memcpy` (measured: 1.3% of a load).
    let len = out.len();
    out.extend_from_slice(&buf);
    out.truncate(len + n + 1);
}

#[inline]
fn get_varint(b: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    while let Some(&x) = b.get(*pos) {
        *pos += 1;
        v |= ((x & 0x7F) as u64) << shift;
        shift += 7;
        if x & 0x80 == 0 || shift >= 64 {
            break;
        }
    }
    v
}

/// Decoding state over one block.
struct AddressCursor {
    last: Vec<(u32, u64)>,
    prev_any: u64,
    pos: usize,
}

impl AddressCursor {
    #[inline]
    fn next(&mut self, bytes: &[u8], thread: u32) -> u64 {
        let v = get_varint(bytes, &mut self.pos);
        let a = if v & 1 == 0 {
            let base = self.last.iter().find(|e| e.0 == thread).map_or(self.prev_any, |e| e.1);
            base.wrapping_add((v >> 1) << 2)
        } else {
            let z = v >> 1;
            let d = ((z >> 1) as i64) ^ -((z & 1) as i64);
            self.prev_any.wrapping_add(d as u64)
        };
        match self.last.iter_mut().find(|e| e.0 == thread) {
            Some(e) => e.1 = a,
            None => self.last.push((thread, a)),
        }
        self.prev_any = a;
        a
    }
}

impl AddressColumn {
    #[inline]
    pub(crate) fn push(&mut self, thread: u32, a: u64) {
        if self.len % ADDRESS_BLOCK == 0 {
            self.blocks.push(self.bytes.len() as u32);
            self.last.clear();
            self.prev_any = 0;
        }
        let slot = self.last.iter().position(|e| e.0 == thread);
        let base = slot.map_or(self.prev_any, |i| self.last[i].1);
        let d = a.wrapping_sub(base);
        if d % 4 == 0 && d < (1 << 60) {
            put_varint(&mut self.bytes, (d >> 2) << 1);
        } else {
            let d = a.wrapping_sub(self.prev_any) as i64;
            let z = ((d << 1) ^ (d >> 63)) as u64;
            put_varint(&mut self.bytes, (z << 1) | 1);
        }
        match slot {
            Some(i) => self.last[i].1 = a,
            None => self.last.push((thread, a)),
        }
        self.prev_any = a;
        self.len += 1;
    }

    fn cursor(&self, block: usize) -> AddressCursor {
        AddressCursor { last: Vec::new(), prev_any: 0, pos: self.blocks[block] as usize }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.blocks.capacity() * 4
    }

    pub(crate) fn shrink(&mut self) {
        self.bytes.shrink_to_fit();
        self.blocks.shrink_to_fit();
        self.last = Vec::new();
    }
}

/// What became of an object.
///
/// Generations (`generation` fields and [`AllocationTable::generation`]):
/// 3 when the object lay in a large-object-heap range of a `b` line
/// (CLRProfiler's interval rule); otherwise by promotion: 0 at allocation,
/// one more (up to 2) at each GC it survived whose condemned generation
/// included it. This equals the generator's ground truth on the reference
/// logs. For a trace's sampled objects, the fates are the importer's
/// (followed by the runtime's moved and surviving ranges) and a reclaimed
/// object's generation is that of the memory it lay in, as the runtime
/// reported it at the GC's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Fate {
    /// Removed by a GC: by its removal pass (not covered by a `u`/`v` range
    /// or a preserved generation), or overwritten while that GC moved
    /// objects. When the log ends inside a GC, objects erased by its moves
    /// died at it, and it has no entry in the GC table.
    DiedAtGc {
        /// The GC.
        gc: GcIndex,
        /// The object's generation when it died.
        generation: u8,
    },
    /// Erased outside a GC: a later allocation overlapped it, or the
    /// allocation-after-GC rule removed it (section 3.6 of
    /// `docs/src/reference-reader.md`).
    Erased {
        /// When.
        tick: TickIndex,
        /// GCs completed before.
        gcs_before: u32,
        /// Its generation then.
        generation: u8,
    },
    /// Still in the simulated heap at the end of the log.
    Alive,
    /// Smaller than 12 bytes: CLRProfiler's heap simulation never holds it.
    Untracked,
    /// A sampled object of a trace, alive until GC `gc` began, after which
    /// nothing the runtime reported says whether it lived (it lay in
    /// memory that GC condemned without reporting its survivors): neither
    /// dead nor alive from that GC's end on.
    Unknown {
        /// The GC that left it unknown.
        gc: GcIndex,
    },
}

const KIND_GC: u32 = 0;
const KIND_ERASED: u32 = 1;
const KIND_ALIVE: u32 = 2;
const KIND_UNTRACKED: u32 = 3;
const PAYLOAD: u32 = (1 << 28) - 1;

fn encode(kind: u32, generation: u8, payload: u32) -> u32 {
    (kind << 30) | ((generation as u32 & 3) << 28) | (payload & PAYLOAD)
}

/// The generation, by promotion, of an object allocated after `born` GCs
/// and alive until just before GC `until`, given each GC's condemned
/// generation.
fn promote(condemned: &[i8], born: u32, until: u32) -> u8 {
    let mut g = 0i8;
    for &c in condemned.get(born as usize..until as usize).unwrap_or(&[]) {
        if g <= c {
            g = (g + 1).min(2);
        }
    }
    g as u8
}

/// [`promote`] as a table of every `(born, until)` when there are few GCs.
struct Promotions<'a> {
    condemned: &'a [i8],
    table: Vec<u8>,
    side: usize,
}

impl<'a> Promotions<'a> {
    const MAX_GCS: usize = 256;

    fn new(condemned: &'a [i8]) -> Self {
        let n = condemned.len();
        if n > Self::MAX_GCS {
            return Promotions { condemned, table: Vec::new(), side: 0 };
        }
        let side = n + 1;
        let mut table = vec![0u8; side * side];
        for born in 0..n {
            let mut g = 0i8;
            for (k, &c) in condemned.iter().enumerate().skip(born) {
                if g <= c {
                    g = (g + 1).min(2);
                }
                table[born * side + k + 1] = g as u8;
            }
        }
        Promotions { condemned, table, side }
    }

    #[inline]
    fn get(&self, born: u32, until: u32) -> u8 {
        let (b, u) = (born as usize, until as usize);
        if b < self.side && u < self.side && b <= u {
            self.table[b * self.side + u]
        } else {
            promote(self.condemned, born, until)
        }
    }
}

/// The allocation table.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct AllocationTable {
    stacks: UintColumn,
    threads: Runs,
    addresses: AddressColumn,
    ticks: Runs,
    /// Objects allocated before each GC ended (index = GC).
    before_gc: Vec<u32>,
    /// The condemned generation of each GC.
    condemned: Vec<i8>,
    /// `(object, code)`, sorted by object after `finish`.
    exceptions: Vec<(u32, u32)>,
    /// GCs completed before an object was erased outside a GC.
    erased_gcs: Vec<(u32, u32)>,
    len: u32,
    /// The fates were set by a trace's importer
    /// ([`AllocationTable::set_imported_fates`]): the stored generation of
    /// an object reclaimed by a GC is the runtime's, not the promotion
    /// model's.
    #[serde(default)]
    explicit_generations: bool,
    /// A trace's importer is to give the fates
    /// ([`AllocationTable::fates_to_come`]): the simulation's are not
    /// recorded.
    #[serde(skip)]
    fates_to_come: bool,
}

impl AllocationTable {
    pub(crate) fn new() -> Self {
        AllocationTable::default()
    }

    /// Appends an allocation; returns its id.
    #[inline]
    pub(crate) fn push(&mut self, stack: StackRef, thread: ThreadRef, address: u64, tick: TickIndex) -> Option<ObjectId> {
        let id = self.len;
        if id == u32::MAX {
            return None;
        }
        self.stacks.push(stack.0);
        self.threads.push(id, thread.0);
        self.addresses.push(thread.0, address);
        self.ticks.push(id, tick.0);
        self.len += 1;
        Some(ObjectId(id))
    }

    /// Counts one more object without writing its columns (the builder's
    /// side: the columns are written by [`super::deferred::Recorder`] and
    /// adopted at the end); returns its id.
    #[inline]
    pub(crate) fn count_one(&mut self) -> Option<ObjectId> {
        let id = self.len;
        if id == u32::MAX {
            return None;
        }
        self.len += 1;
        Some(ObjectId(id))
    }

    /// Takes the columns of `other` (which wrote the same objects' columns).
    pub(crate) fn adopt_columns(&mut self, other: &mut AllocationTable) {
        debug_assert_eq!(self.len, other.len);
        self.stacks = std::mem::take(&mut other.stacks);
        self.threads = std::mem::take(&mut other.threads);
        self.addresses = std::mem::take(&mut other.addresses);
        self.ticks = std::mem::take(&mut other.ticks);
    }

    /// Marks the end of a GC condemning `generation` (every object
    /// allocated so far was allocated before it).
    pub(crate) fn gc_ended(&mut self, generation: i32) {
        self.before_gc.push(self.len);
        self.condemned.push(generation.clamp(-1, 3) as i8);
    }

    /// The number of GCs completed before object `obj` was allocated.
    #[inline]
    pub fn gcs_before(&self, obj: ObjectId) -> u32 {
        let n = self.before_gc.len();
        // Most questions are about objects allocated since the last GC.
        if n == 0 || obj.0 >= self.before_gc[n - 1] {
            return n as u32;
        }
        self.before_gc.partition_point(|&b| b <= obj.0) as u32
    }

    /// The fate code an object has when nothing was recorded for it: alive
    /// when no GC ended after its allocation, else dead at the first GC
    /// after it, in generation 0.
    #[inline]
    fn default_code(&self, obj: u32) -> u32 {
        let born = self.gcs_before(ObjectId(obj));
        if born as usize == self.before_gc.len() {
            encode(KIND_ALIVE, 0, 0)
        } else {
            encode(KIND_GC, 0, born)
        }
    }

    /// Records that `obj` died at GC `gc` (`loh`: in a large-object-heap
    /// range). A GC is under way, so the default for objects born before it
    /// is "dies at the first GC".
    #[inline]
    pub(crate) fn died_at_gc(&mut self, obj: u32, gc: u32, loh: bool) {
        if !self.fates_to_come && (loh || gc != self.gcs_before(ObjectId(obj))) {
            self.exceptions.push((obj, encode(KIND_GC, if loh { 3 } else { 0 }, gc)));
        }
    }

    /// Records that `obj` was erased outside a GC.
    pub(crate) fn erased(&mut self, obj: u32, tick: u32, gcs_before: u32, loh: bool) {
        if self.fates_to_come {
            return;
        }
        self.exceptions.push((obj, encode(KIND_ERASED, if loh { 3 } else { 0 }, tick)));
        self.erased_gcs.push((obj, gcs_before));
    }

    /// Records that `obj` is alive at the end (called after the last GC).
    pub(crate) fn alive(&mut self, obj: u32) {
        if !self.fates_to_come && (self.gcs_before(ObjectId(obj)) as usize) < self.before_gc.len() {
            self.exceptions.push((obj, encode(KIND_ALIVE, 0, 0)));
        }
    }

    /// Replaces every fate with those a trace's importer decided from the
    /// runtime's reports (one per object, in id order; GCs numbered as the
    /// GC table numbers them).
    pub(crate) fn set_imported_fates(&mut self, fates: &[crate::import::SampledFate]) {
        use crate::import::SampledFate;
        self.exceptions.clear();
        self.erased_gcs.clear();
        self.fates_to_come = false;
        self.explicit_generations = true;
        for (i, f) in fates.iter().enumerate().take(self.len as usize) {
            let obj = i as u32;
            let code = match *f {
                SampledFate::Alive => encode(KIND_ALIVE, 0, 0),
                SampledFate::Died { gc, generation } => encode(KIND_GC, generation.min(3), gc),
                SampledFate::Unknown { gc } => encode(KIND_UNTRACKED, 1, gc),
            };
            if code != self.default_code(obj) {
                self.exceptions.push((obj, code));
            }
        }
        self.exceptions.shrink_to_fit();
        self.erased_gcs.shrink_to_fit();
    }

    /// Records that `obj` is under 12 bytes.
    pub(crate) fn untracked(&mut self, obj: u32) {
        self.exceptions.push((obj, encode(KIND_UNTRACKED, 0, 0)));
    }

    /// A trace's importer is to give the fates
    /// ([`AllocationTable::set_imported_fates`]): the simulation's are
    /// not recorded (one per sampled object: as much memory as the
    /// samples' columns, and a sort, for fates that are replaced).
    pub(crate) fn fates_to_come(&mut self) {
        self.fates_to_come = true;
    }

    /// Whether the simulation's fates were recorded (not so when a
    /// trace's importer was to give them and did not: every object then
    /// has the default fate, dead at the first GC after it).
    pub(crate) fn settle_fates(&mut self) -> bool {
        !std::mem::take(&mut self.fates_to_come)
    }

    fn sort_fates(&mut self) {
        self.exceptions.sort_unstable_by_key(|e| e.0);
        // Each object has one stored fate at most (it leaves the simulated
        // heap once); the unit tests (random logs among them) check it.
        #[cfg(test)]
        assert!(self.exceptions.windows(2).all(|w| w[0].0 != w[1].0), "an object with two stored fates");
        self.exceptions.shrink_to_fit();
        self.erased_gcs.sort_unstable_by_key(|e| e.0);
        self.erased_gcs.shrink_to_fit();
    }

    pub(crate) fn finish(&mut self) {
        self.sort_fates();
        self.stacks.shrink();
        self.threads.shrink();
        self.addresses.shrink();
        self.ticks.shrink();
        self.before_gc.shrink_to_fit();
        self.condemned.shrink_to_fit();
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// True when nothing was allocated.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The allocation stack of an object.
    #[inline]
    pub fn stack(&self, obj: ObjectId) -> StackRef {
        StackRef(self.stacks.get(obj.index()))
    }

    /// The allocating thread.
    #[inline]
    pub fn thread(&self, obj: ObjectId) -> ThreadRef {
        ThreadRef(self.threads.get(obj.0))
    }

    /// The address it was allocated at (decodes up to 255 addresses; use
    /// [`AllocationTable::addresses`] to read many in order).
    pub fn address(&self, obj: ObjectId) -> u64 {
        let i = obj.index();
        if i >= self.len() {
            return 0;
        }
        let block = i / ADDRESS_BLOCK;
        let first = block * ADDRESS_BLOCK;
        let mut c = self.addresses.cursor(block);
        let mut a = 0;
        for k in first..=i {
            a = c.next(&self.addresses.bytes, self.threads.get(k as u32));
        }
        a
    }

    /// Every object's address, in id order.
    pub fn addresses(&self) -> impl Iterator<Item = u64> + '_ {
        self.addresses_in(ObjectId(0)..ObjectId(self.len))
    }

    /// Like [`AllocationTable::addresses`], over a range of ids (the
    /// addresses before the range in its first block are decoded and
    /// skipped).
    pub fn addresses_in(&self, range: std::ops::Range<ObjectId>) -> impl Iterator<Item = u64> + '_ {
        let end = range.end.index().min(self.len());
        let start = range.start.index().min(end);
        let first = start - start % ADDRESS_BLOCK;
        let mut c = AddressCursor { last: Vec::new(), prev_any: 0, pos: 0 };
        let runs = &self.threads.runs;
        let mut run = runs.partition_point(|r| r.0 as usize <= first).saturating_sub(1);
        (first..end)
            .map(move |i| {
                if i % ADDRESS_BLOCK == 0 {
                    c = self.addresses.cursor(i / ADDRESS_BLOCK);
                }
                while run + 1 < runs.len() && runs[run + 1].0 as usize <= i {
                    run += 1;
                }
                let t = runs.get(run).filter(|r| r.0 as usize <= i).map_or(0, |r| r.1);
                c.next(&self.addresses.bytes, t)
            })
            .skip(start - first)
    }

    /// When it was allocated.
    #[inline]
    pub fn tick(&self, obj: ObjectId) -> TickIndex {
        TickIndex(self.ticks.get(obj.0))
    }

    fn code(&self, obj: ObjectId) -> u32 {
        match self.exceptions.binary_search_by_key(&obj.0, |e| e.0) {
            Ok(k) => self.exceptions[k].1,
            Err(_) => self.default_code(obj.0),
        }
    }

    /// The generation of an object that lived from its allocation to just
    /// before GC `until` (by promotion; see [`Fate`]).
    fn promoted(&self, obj: ObjectId, until: u32) -> u8 {
        promote(&self.condemned, self.gcs_before(obj), until)
    }

    /// What became of it.
    pub fn fate(&self, obj: ObjectId) -> Fate {
        self.decode(obj, self.code(obj), |until| self.promoted(obj, until))
    }

    /// The fate a stored code says, with `promoted(until)` the object's
    /// generation just before GC `until`.
    #[inline]
    fn decode(&self, obj: ObjectId, c: u32, promoted: impl Fn(u32) -> u8) -> Fate {
        let bits = ((c >> 28) & 3) as u8;
        let loh = bits == 3;
        match c >> 30 {
            KIND_GC => {
                let gc = c & PAYLOAD;
                let generation = if self.explicit_generations || loh { bits } else { promoted(gc) };
                Fate::DiedAtGc { gc: GcIndex(gc), generation }
            }
            KIND_ERASED => {
                let gcs_before = match self.erased_gcs.binary_search_by_key(&obj.0, |e| e.0) {
                    Ok(k) => self.erased_gcs[k].1,
                    Err(_) => 0,
                };
                let generation = if loh { 3 } else { promoted(gcs_before) };
                Fate::Erased { tick: TickIndex(c & PAYLOAD), gcs_before, generation }
            }
            KIND_ALIVE => Fate::Alive,
            _ if bits == 1 => Fate::Unknown { gc: GcIndex(c & PAYLOAD) },
            _ => Fate::Untracked,
        }
    }

    /// The generation an object died in, or is in at the end of the log
    /// (`None` for objects under 12 bytes).
    pub fn generation(&self, obj: ObjectId) -> Option<u8> {
        match self.fate(obj) {
            Fate::DiedAtGc { generation, .. } | Fate::Erased { generation, .. } => Some(generation),
            Fate::Alive => Some(self.promoted(obj, self.before_gc.len() as u32)),
            Fate::Untracked | Fate::Unknown { .. } => None,
        }
    }

    /// How many GCs the object survived (GCs that ended while it was in the
    /// simulated heap; for an untracked object, `None`).
    pub fn gcs_survived(&self, obj: ObjectId) -> Option<u32> {
        let born = self.gcs_before(obj);
        match self.fate(obj) {
            Fate::DiedAtGc { gc, .. } => Some(gc.0.saturating_sub(born)),
            Fate::Erased { gcs_before, .. } => Some(gcs_before.saturating_sub(born)),
            Fate::Alive => Some((self.before_gc.len() as u32).saturating_sub(born)),
            Fate::Untracked | Fate::Unknown { .. } => None,
        }
    }

    /// Every object's stack, thread and tick, in id order (O(1) per object,
    /// where [`AllocationTable::thread`] and [`AllocationTable::tick`]
    /// search).
    pub fn rows(&self) -> impl Iterator<Item = ObjectRow> + '_ {
        self.rows_in(ObjectId(0)..ObjectId(self.len))
    }

    /// Like [`AllocationTable::rows`], over a range of ids.
    pub fn rows_in(&self, range: std::ops::Range<ObjectId>) -> impl Iterator<Item = ObjectRow> + '_ {
        let end = range.end.0.min(self.len);
        let start = range.start.0.min(end);
        let mut threads = RunCursor::at(&self.threads, start);
        let mut ticks = RunCursor::at(&self.ticks, start);
        (start..end).map(move |i| ObjectRow {
            id: ObjectId(i),
            stack: StackRef(self.stacks.get(i as usize)),
            thread: ThreadRef(threads.next(i)),
            tick: TickIndex(ticks.next(i)),
        })
    }

    /// Every object's fate, in id order: what [`AllocationTable::fate`] gives,
    /// without a search per object.
    pub fn fates(&self) -> impl Iterator<Item = Fate> + '_ {
        self.fates_in(ObjectId(0)..ObjectId(self.len))
    }

    /// Like [`AllocationTable::fates`], over a range of ids (one search to
    /// start, then O(1) per object).
    pub fn fates_in(&self, range: std::ops::Range<ObjectId>) -> impl Iterator<Item = Fate> + '_ {
        let end = range.end.0.min(self.len);
        let start = range.start.0.min(end);
        let mut exception = self.exceptions.partition_point(|e| e.0 < start);
        let mut born = self.before_gc.partition_point(|&b| b <= start);
        let table = Promotions::new(&self.condemned);
        (start..end).map(move |i| {
            while born < self.before_gc.len() && self.before_gc[born] <= i {
                born += 1;
            }
            while exception < self.exceptions.len() && self.exceptions[exception].0 < i {
                exception += 1;
            }
            match self.exceptions.get(exception) {
                Some(&(o, c)) if o == i => self.decode(ObjectId(i), c, |until| table.get(born as u32, until)),
                _ if born == self.before_gc.len() => Fate::Alive,
                _ => Fate::DiedAtGc { gc: GcIndex(born as u32), generation: 0 },
            }
        })
    }

    /// Calls `f` with every object's row and fate over a range of ids, in id
    /// order: what zipping [`AllocationTable::rows_in`] and
    /// [`AllocationTable::fates_in`] gives, in one loop (faster: the
    /// cursors stay in registers).
    #[inline]
    pub fn for_each_in(&self, range: std::ops::Range<ObjectId>, mut f: impl FnMut(ObjectRow, Fate)) {
        let end = range.end.0.min(self.len);
        let start = range.start.0.min(end);
        let mut threads = RunCursor::at(&self.threads, start);
        let mut ticks = RunCursor::at(&self.ticks, start);
        let mut exception = self.exceptions.partition_point(|e| e.0 < start);
        let mut born = self.before_gc.partition_point(|&b| b <= start);
        let table = Promotions::new(&self.condemned);
        let gcs = self.before_gc.len();
        for i in start..end {
            while born < gcs && self.before_gc[born] <= i {
                born += 1;
            }
            while exception < self.exceptions.len() && self.exceptions[exception].0 < i {
                exception += 1;
            }
            let fate = match self.exceptions.get(exception) {
                Some(&(o, c)) if o == i => self.decode(ObjectId(i), c, |until| table.get(born as u32, until)),
                _ if born == gcs => Fate::Alive,
                _ => Fate::DiedAtGc { gc: GcIndex(born as u32), generation: 0 },
            };
            let row = ObjectRow {
                id: ObjectId(i),
                stack: StackRef(self.stacks.get(i as usize)),
                thread: ThreadRef(threads.next(i)),
                tick: TickIndex(ticks.next(i)),
            };
            f(row, fate);
        }
    }

    /// The objects in `range` whose fate is not the default one (the module
    /// documentation: dead at the first GC after the allocation, in
    /// generation 0, or alive when no GC ended after it), with their fates,
    /// in id order. Every other object of the range has the default fate.
    pub fn stored_fates_in(&self, range: std::ops::Range<ObjectId>) -> impl Iterator<Item = (ObjectId, Fate)> + '_ {
        let end = range.end.0.min(self.len);
        let start = range.start.0.min(end);
        let from = self.exceptions.partition_point(|e| e.0 < start);
        let to = self.exceptions.partition_point(|e| e.0 < end);
        let mut born = self.before_gc.partition_point(|&b| b <= start);
        let table = Promotions::new(&self.condemned);
        let mut previous = None;
        self.exceptions[from..to].iter().filter_map(move |&(o, c)| {
            // As `fates_in`: the first code stored for an object counts.
            if previous == Some(o) {
                return None;
            }
            previous = Some(o);
            while born < self.before_gc.len() && self.before_gc[born] <= o {
                born += 1;
            }
            Some((ObjectId(o), self.decode(ObjectId(o), c, |until| table.get(born as u32, until))))
        })
    }

    /// For each GC, the number of objects allocated before it ended, in GC
    /// order (so an object's [`AllocationTable::gcs_before`] is the number
    /// of entries at or below its id).
    pub fn allocated_before_gcs(&self) -> &[u32] {
        &self.before_gc
    }

    /// The objects allocated at tick indices `from..=to` (allocation ticks
    /// never decrease along the ids).
    pub fn allocated_between(&self, from: TickIndex, to: TickIndex) -> std::ops::Range<ObjectId> {
        let runs = &self.ticks.runs;
        let first = |t: u32| -> u32 {
            // The first run whose tick is at least `t` starts the range.
            let k = runs.partition_point(|&(_, v)| v < t);
            runs.get(k).map_or(self.len, |r| r.0)
        };
        let start = first(from.0);
        let end = if to.0 == u32::MAX { self.len } else { first(to.0 + 1) };
        ObjectId(start)..ObjectId(end.max(start))
    }

    /// The number of GCs that ended (the length of the GC columns).
    pub fn gcs_ended(&self) -> usize {
        self.before_gc.len()
    }

    /// Objects with a fate other than the default (for the footprint).
    pub fn stored_fates(&self) -> usize {
        self.exceptions.len()
    }

    /// Marks the end of the log inside a GC: objects erased by its moves
    /// died at it, objects alive survived it.
    pub(crate) fn unfinished_gc(&mut self, generation: i32) {
        self.gc_ended(generation);
    }

    /// Bytes held, by column.
    pub fn column_bytes(&self) -> [(&'static str, usize); 5] {
        [
            ("allocations.stack", self.stacks.heap_bytes()),
            ("allocations.thread", self.threads.heap_bytes()),
            ("allocations.address", self.addresses.heap_bytes()),
            ("allocations.tick", self.ticks.heap_bytes() + self.before_gc.capacity() * 4),
            ("allocations.fate", self.exceptions.capacity() * 8 + self.erased_gcs.capacity() * 8),
        ]
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.column_bytes().iter().map(|c| c.1).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_widen() {
        let mut c = UintColumn::default();
        let vals = [1u32, 200, 300, 70_000, 5, 20_000_000, 0];
        for v in vals {
            c.push(v);
        }
        for (i, v) in vals.iter().enumerate() {
            assert_eq!(c.get(i), *v);
        }
    }

    #[test]
    fn addresses_round_trip() {
        let mut t = AllocationTable::new();
        let mut x = 0x9E3779B97F4A7C15u64;
        let mut want = Vec::new();
        let mut cursor = [0x2_1300_0010_00u64, 0x2_1300_4000_00, 0x2_2300_0000_00, 7];
        for i in 0..5000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let th = (x % 4) as usize;
            let a = match (x >> 8) % 10 {
                0 => x >> 3,                            // anywhere
                1 => cursor[th].wrapping_sub(x % 4096), // backwards
                2 => cursor[th] + 1 + (x >> 20) % 3,    // unaligned
                _ => cursor[th] + 8 * ((x >> 20) % 40),
            };
            cursor[th] = a;
            t.push(StackRef(i), ThreadRef(th as u32), a, TickIndex(0));
            want.push(a);
        }
        t.finish();
        assert!(t.addresses().eq(want.iter().copied()));
        for (i, &a) in want.iter().enumerate().step_by(37) {
            assert_eq!(t.address(ObjectId(i as u32)), a);
        }
    }

    #[test]
    fn fates() {
        let mut t = AllocationTable::new();
        for i in 0..10u32 {
            t.push(StackRef(i), ThreadRef(1), 0x2_0000_1000 + i as u64 * 16, TickIndex(i / 3));
        }
        t.gc_ended(0);
        t.died_at_gc(0, 0, false); // the default
        t.push(StackRef(1), ThreadRef(2), 0x9000, TickIndex(5));
        t.alive(10); // born after the last GC: the default
        t.died_at_gc(1, 0, true);
        t.alive(2);
        t.erased(3, 2, 0, false);
        t.untracked(4);
        t.finish();
        assert_eq!(t.fate(ObjectId(0)), Fate::DiedAtGc { gc: GcIndex(0), generation: 0 });
        assert_eq!(t.fate(ObjectId(1)), Fate::DiedAtGc { gc: GcIndex(0), generation: 3 });
        assert_eq!(t.fate(ObjectId(2)), Fate::Alive);
        assert_eq!(t.gcs_survived(ObjectId(2)), Some(1));
        assert_eq!(t.fate(ObjectId(4)), Fate::Untracked);
        assert_eq!(t.stored_fates(), 4);
        assert_eq!(t.fate(ObjectId(10)), Fate::Alive);
        assert_eq!(t.fate(ObjectId(3)), Fate::Erased { tick: TickIndex(2), gcs_before: 0, generation: 0 });
        let addrs: Vec<u64> = t.addresses().collect();
        for (i, a) in addrs.iter().enumerate() {
            assert_eq!(*a, t.address(ObjectId(i as u32)));
        }
        assert_eq!(addrs[10], 0x9000);
        assert_eq!(t.address(ObjectId(9)), 0x2_0000_1000 + 144);
        assert_eq!(t.tick(ObjectId(7)), TickIndex(2));
        let rows: Vec<ObjectRow> = t.rows().collect();
        for r in &rows {
            assert_eq!((r.stack, r.thread, r.tick), (t.stack(r.id), t.thread(r.id), t.tick(r.id)));
        }
        let fates: Vec<Fate> = t.fates().collect();
        for (i, f) in fates.iter().enumerate() {
            assert_eq!(*f, t.fate(ObjectId(i as u32)));
        }
        assert_eq!(t.allocated_between(TickIndex(1), TickIndex(2)), ObjectId(3)..ObjectId(9));
        assert_eq!(t.allocated_between(TickIndex(3), TickIndex(4)), ObjectId(9)..ObjectId(10));
        assert_eq!(t.allocated_between(TickIndex(0), TickIndex(u32::MAX)), ObjectId(0)..ObjectId(11));
        assert_eq!(t.rows_in(ObjectId(4)..ObjectId(6)).map(|r| r.tick.0).collect::<Vec<_>>(), vec![1, 1]);
        for a in 0..=11u32 {
            let part: Vec<Fate> = t.fates_in(ObjectId(a)..ObjectId(11)).collect();
            assert_eq!(part[..], fates[a as usize..], "from {a}");
            let mut both = Vec::new();
            t.for_each_in(ObjectId(a)..ObjectId(11), |r, f| both.push((r, f)));
            assert!(both.iter().map(|b| b.0).eq(rows[a as usize..].iter().copied()), "from {a}");
            assert!(both.iter().map(|b| b.1).eq(part.iter().copied()), "from {a}");
        }
    }
}
