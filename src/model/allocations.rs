//! Allocated objects as columns, and what became of each.
//!
//! One row per applied `!`/`a` record, in log order ([`ObjectId`]):
//!
//! ```text
//! column    storage                                   bytes per object
//! stack     StackRef, 1-4 bytes (widened on demand)   1-4
//! thread    ThreadRef, 1-4 bytes                      1 (usually)
//! address   low 32 bits; the high 32 bits as runs     4
//! tick      runs of (first object, tick index)        ~0
//! fate      exceptions to a default, sorted by id     ~1
//! ```
//!
//! Fates: most objects die at the first GC after their allocation, in
//! generation 0. That is the default; only objects whose fate differs
//! (survivors, objects alive at the end, objects under 12 bytes, objects
//! erased outside a GC) are stored, as `(object, code, aux)` triples sorted
//! by object.

use super::ids::{GcIndex, ObjectId, StackRef, ThreadRef, TickIndex};

/// A column of unsigned integers stored in 1 to 4 bytes each, widened (the
/// whole column re-encoded) the first time a value needs more.
#[derive(Clone, Debug)]
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
        self.bytes.extend_from_slice(&b[..self.width as usize]);
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
        let w = self.width as usize;
        let s = &self.bytes[i * w..i * w + w];
        let mut b = [0u8; 4];
        b[..w].copy_from_slice(s);
        u32::from_le_bytes(b)
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
#[derive(Clone, Debug, Default)]
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

/// What became of an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fate {
    /// Removed by a GC: by its removal pass (not covered by a `u`/`v` range
    /// or a preserved generation), or overwritten while that GC moved
    /// objects. `gc` equals the number of GCs when the log ended inside that
    /// GC.
    DiedAtGc {
        /// The GC.
        gc: GcIndex,
        /// The object's generation when it died (CLRProfiler's rule:
        /// the generation of the `b` range holding it, else by allocation
        /// tick against the last GCs; 3 is the large object heap).
        generation: u8,
    },
    /// Erased outside a GC: a later allocation overlapped it, or the
    /// allocation-after-GC rule removed it (section 3.6).
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
}

const KIND_GC: u32 = 0;
const KIND_ERASED: u32 = 1;
const KIND_ALIVE: u32 = 2;
const KIND_UNTRACKED: u32 = 3;
const PAYLOAD: u32 = (1 << 28) - 1;

fn encode(kind: u32, generation: u8, payload: u32) -> u32 {
    (kind << 30) | ((generation as u32 & 3) << 28) | (payload & PAYLOAD)
}

/// The allocation table.
#[derive(Clone, Debug, Default)]
pub struct AllocationTable {
    stacks: UintColumn,
    threads: UintColumn,
    address_low: Vec<u32>,
    address_high: Runs,
    ticks: Runs,
    /// Objects allocated before each GC ended (index = GC).
    before_gc: Vec<u32>,
    /// Sorted by object after `finish`.
    exceptions: Vec<(u32, u32, u32)>,
    len: u32,
}

impl AllocationTable {
    pub(crate) fn new() -> Self {
        AllocationTable::default()
    }

    /// Appends an allocation; returns its id.
    #[inline]
    pub(crate) fn push(
        &mut self,
        stack: StackRef,
        thread: ThreadRef,
        address: u64,
        tick: TickIndex,
    ) -> Option<ObjectId> {
        let id = self.len;
        if id == u32::MAX {
            return None;
        }
        self.stacks.push(stack.0);
        self.threads.push(thread.0);
        self.address_low.push(address as u32);
        self.address_high.push(id, (address >> 32) as u32);
        self.ticks.push(id, tick.0);
        self.len += 1;
        Some(ObjectId(id))
    }

    /// Marks the end of a GC (every object allocated so far was allocated
    /// before it).
    pub(crate) fn gc_ended(&mut self) {
        self.before_gc.push(self.len);
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

    /// The fate code an object has when nothing was recorded for it.
    #[inline]
    fn default_code(&self, obj: u32) -> u32 {
        encode(KIND_GC, 0, self.gcs_before(ObjectId(obj)))
    }

    /// Records that `obj` died at GC `gc` in `generation`.
    #[inline]
    pub(crate) fn died_at_gc(&mut self, obj: u32, gc: u32, generation: u8) {
        let code = encode(KIND_GC, generation, gc);
        if code != self.default_code(obj) {
            self.exceptions.push((obj, code, 0));
        }
    }

    /// Records that `obj` was erased outside a GC.
    pub(crate) fn erased(&mut self, obj: u32, tick: u32, gcs_before: u32, generation: u8) {
        self.exceptions.push((obj, encode(KIND_ERASED, generation, tick), gcs_before));
    }

    /// Records that `obj` is alive at the end.
    pub(crate) fn alive(&mut self, obj: u32) {
        self.exceptions.push((obj, encode(KIND_ALIVE, 0, 0), 0));
    }

    /// Records that `obj` is under 12 bytes.
    pub(crate) fn untracked(&mut self, obj: u32) {
        self.exceptions.push((obj, encode(KIND_UNTRACKED, 0, 0), 0));
    }

    pub(crate) fn finish(&mut self) {
        self.exceptions.sort_unstable_by_key(|e| e.0);
        self.exceptions.shrink_to_fit();
        self.stacks.shrink();
        self.threads.shrink();
        self.address_low.shrink_to_fit();
        self.address_high.shrink();
        self.ticks.shrink();
        self.before_gc.shrink_to_fit();
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
        ThreadRef(self.threads.get(obj.index()))
    }

    /// The address it was allocated at.
    #[inline]
    pub fn address(&self, obj: ObjectId) -> u64 {
        ((self.address_high.get(obj.0) as u64) << 32) | self.address_low[obj.index()] as u64
    }

    /// When it was allocated.
    #[inline]
    pub fn tick(&self, obj: ObjectId) -> TickIndex {
        TickIndex(self.ticks.get(obj.0))
    }

    /// What became of it.
    pub fn fate(&self, obj: ObjectId) -> Fate {
        let code = match self.exceptions.binary_search_by_key(&obj.0, |e| e.0) {
            Ok(k) => self.exceptions[k],
            Err(_) => (obj.0, self.default_code(obj.0), 0),
        };
        let (_, c, aux) = code;
        let generation = ((c >> 28) & 3) as u8;
        match c >> 30 {
            KIND_GC => Fate::DiedAtGc { gc: GcIndex(c & PAYLOAD), generation },
            KIND_ERASED => Fate::Erased { tick: TickIndex(c & PAYLOAD), gcs_before: aux, generation },
            KIND_ALIVE => Fate::Alive,
            _ => Fate::Untracked,
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
            Fate::Untracked => None,
        }
    }

    /// Objects allocated per stack row.
    pub(crate) fn stack_counts(&self) -> super::histogram::StackCounts {
        let mut counts: Vec<u64> = Vec::new();
        for i in 0..self.stacks.len() {
            let r = self.stacks.get(i) as usize;
            if r >= counts.len() {
                counts.resize((r + 1).max(counts.len() * 2), 0);
            }
            counts[r] += 1;
        }
        super::histogram::StackCounts::from_vec(counts)
    }

    /// Objects with a fate other than the default (for the footprint).
    pub fn stored_fates(&self) -> usize {
        self.exceptions.len()
    }

    /// Bytes held, by column.
    pub fn column_bytes(&self) -> [(&'static str, usize); 5] {
        [
            ("allocations.stack", self.stacks.heap_bytes()),
            ("allocations.thread", self.threads.heap_bytes()),
            ("allocations.address", self.address_low.capacity() * 4 + self.address_high.heap_bytes()),
            ("allocations.tick", self.ticks.heap_bytes() + self.before_gc.capacity() * 4),
            ("allocations.fate", self.exceptions.capacity() * 12),
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
    fn fates() {
        let mut t = AllocationTable::new();
        for i in 0..10u32 {
            t.push(StackRef(i), ThreadRef(1), 0x2_0000_1000 + i as u64 * 16, TickIndex(i / 3));
        }
        t.gc_ended();
        t.died_at_gc(0, 0, 0); // the default
        t.died_at_gc(1, 0, 3);
        t.alive(2);
        t.erased(3, 2, 0, 0);
        t.untracked(4);
        t.finish();
        assert_eq!(t.fate(ObjectId(0)), Fate::DiedAtGc { gc: GcIndex(0), generation: 0 });
        assert_eq!(t.fate(ObjectId(1)), Fate::DiedAtGc { gc: GcIndex(0), generation: 3 });
        assert_eq!(t.fate(ObjectId(2)), Fate::Alive);
        assert_eq!(t.gcs_survived(ObjectId(2)), Some(1));
        assert_eq!(t.fate(ObjectId(4)), Fate::Untracked);
        assert_eq!(t.stored_fates(), 4);
        assert_eq!(t.address(ObjectId(9)), 0x2_0000_1000 + 144);
        assert_eq!(t.tick(ObjectId(7)), TickIndex(2));
    }
}
