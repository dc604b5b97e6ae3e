//! The simulated managed heap: where objects live, generation by
//! generation.
//!
//! ```text
//!  small-object heap (one segment)                         large-object heap
//!  soh_base    gen1_start     gen0_start        alloc_ptr   loh_base          top
//!  |  gen 2    |   gen 1      |   gen 0  ...      |         |  gen 3 ...       |
//!  [ compacted survivors ... ][ promoted ... ][ allocation contexts ][ free ]
//! ```
//!
//! Generation 0 is filled by bumping `alloc_ptr` in 8 KB allocation
//! contexts, one per thread (so threads' objects interleave, and context
//! tails stay unused, as in the CLR). A GC moves (or keeps in place) the
//! survivors of the condemned generations and moves the boundaries; the
//! large-object heap is first-fit between its objects and never moves.
//! The two heaps are far apart (gigabytes on 64-bit, 16 MB on 32-bit), more
//! than the 1 MB gaps CLRProfiler's reader joins into one interval.
//!
//! Objects are kept in one compact `Vec` of small `Copy` structs per
//! generation: gen 0 in allocation order, the others in address order.

use super::error::GenError;
use super::options::PointerBits;
use clrprof::format::records::GenerationRange;
use clrprof::format::Address;

/// Flag: the type has a finalizer and the object was never queued.
pub const FINALIZABLE: u8 = 1;
/// Flag: the finalizer is critical.
pub const CRITICAL: u8 = 2;
/// Flag: queued for finalization; dies at the next GC that condemns it.
pub const QUEUED: u8 = 4;
/// Flag: pinned by a handle (a compacting GC leaves it in place).
pub const PINNED: u8 = 8;

/// Type indices are below this (12 bits; the flags use the other 4 of a
/// `u16`).
pub const MAX_TYPES: usize = 1 << 12;

/// A live (or not yet collected) object, in 32 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Obj {
    /// Current address.
    pub addr: u64,
    /// Allocation clock (bytes allocated) at which it becomes unreachable;
    /// `u64::MAX` for never.
    pub death: u64,
    /// Allocation sequence number.
    pub seq: u32,
    /// Size in bytes.
    pub size: u32,
    /// Elapsed ms of the tick before its `!` line.
    pub alloc_ms: u32,
    /// Type index in the low 12 bits, flags in the high 4.
    ty_flags: u16,
    /// GCs completed before its allocation.
    pub born_gc: u16,
}

impl Obj {
    /// An object of type `ty` (below [`MAX_TYPES`]) with `flags`.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn new(addr: u64, death: u64, seq: u32, size: u32, alloc_ms: u32, ty: usize, born_gc: u16, flags: u8) -> Obj {
        Obj { addr, death, seq, size, alloc_ms, ty_flags: (ty as u16 & 0x0fff) | (flags as u16) << 12, born_gc }
    }

    /// Type index.
    #[inline]
    pub fn ty(&self) -> usize {
        (self.ty_flags & 0x0fff) as usize
    }

    /// `FINALIZABLE`, `CRITICAL`, `QUEUED`, `PINNED`.
    #[inline]
    pub fn flags(&self) -> u8 {
        (self.ty_flags >> 12) as u8
    }

    /// Sets the flags.
    #[inline]
    pub fn set_flags(&mut self, flags: u8) {
        self.ty_flags = (self.ty_flags & 0x0fff) | ((flags & 0x0f) as u16) << 12;
    }
}

/// Where the heaps are in the address space.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// Pointer width.
    pub bits: PointerBits,
    /// First address of the small-object heap.
    pub soh_base: u64,
    /// The small-object heap must end below this.
    pub soh_limit: u64,
    /// First address of the large-object heap.
    pub loh_base: u64,
    /// The large-object heap must end below this.
    pub loh_limit: u64,
}

impl Layout {
    /// The layout for a pointer width.
    pub fn new(bits: PointerBits) -> Layout {
        match bits {
            PointerBits::Bits32 => Layout {
                bits,
                soh_base: 0x1300_1000,
                soh_limit: 0xFFF0_0000,
                loh_base: 0x0300_1000,
                loh_limit: 0x1200_0000,
            },
            PointerBits::Bits64 => Layout {
                bits,
                soh_base: 0x0000_0213_0000_1000,
                soh_limit: 0x0000_0222_FF00_0000,
                loh_base: 0x0000_0223_0000_1000,
                loh_limit: 0x0000_0233_0000_0000,
            },
        }
    }
}

/// Bytes of an allocation context.
const QUANTUM: u64 = 8 * 1024;
/// Reserved segment granularity reported on `b` lines.
const SOH_RESERVE: u64 = 256 << 20;
const LOH_RESERVE: u64 = 128 << 20;

/// The heap.
pub struct Heap {
    /// Address layout.
    pub layout: Layout,
    /// Generation 0, in allocation order.
    pub gen0: Vec<Obj>,
    /// Generation 1, in address order.
    pub gen1: Vec<Obj>,
    /// Generation 2, in address order.
    pub gen2: Vec<Obj>,
    /// The large-object heap, in address order.
    pub loh: Vec<Obj>,
    /// Where generation 1 starts (generation 2 ends).
    pub gen1_start: u64,
    /// Where generation 0 starts (generation 1 ends).
    pub gen0_start: u64,
    /// End of the space handed out in generation 0.
    pub alloc_ptr: u64,
    contexts: Vec<(u64, u64)>,
    high_water: u64,
}

impl Heap {
    /// An empty heap for `threads` threads.
    pub fn new(layout: Layout, threads: usize) -> Heap {
        let b = layout.soh_base;
        Heap {
            layout,
            gen0: Vec::new(),
            gen1: Vec::new(),
            gen2: Vec::new(),
            loh: Vec::new(),
            gen1_start: b,
            gen0_start: b,
            alloc_ptr: b,
            contexts: vec![(0, 0); threads],
            high_water: b,
        }
    }

    /// Space for a small object of `size` bytes on `thread`.
    #[inline]
    pub fn alloc_small(&mut self, thread: usize, size: u64) -> Result<u64, GenError> {
        let ctx = &mut self.contexts[thread];
        if ctx.0 + size <= ctx.1 {
            let a = ctx.0;
            ctx.0 += size;
            return Ok(a);
        }
        self.new_context(thread, size)
    }

    #[cold]
    fn new_context(&mut self, thread: usize, size: u64) -> Result<u64, GenError> {
        let start = self.alloc_ptr;
        let end = start + QUANTUM.max(size);
        if end > self.layout.soh_limit {
            return Err(GenError::AddressSpace { area: "small-object heap", bits: self.layout.bits.bits() });
        }
        self.alloc_ptr = end;
        self.high_water = self.high_water.max(end);
        self.contexts[thread] = (start + size, end);
        Ok(start)
    }

    /// Drops every thread's allocation context (at a GC).
    pub fn reset_contexts(&mut self) {
        for c in &mut self.contexts {
            *c = (0, 0);
        }
    }

    /// First-fit space for a large object: its address and the index it
    /// takes in `loh`.
    pub fn place_large(&mut self, size: u64) -> Result<(u64, usize), GenError> {
        let mut prev_end = self.layout.loh_base;
        for (i, o) in self.loh.iter().enumerate() {
            if o.addr - prev_end >= size {
                return Ok((prev_end, i));
            }
            prev_end = o.addr + o.size as u64;
        }
        if prev_end + size > self.layout.loh_limit {
            return Err(GenError::AddressSpace { area: "large-object heap", bits: self.layout.bits.bits() });
        }
        Ok((prev_end, self.loh.len()))
    }

    /// End of the highest large object.
    pub fn loh_top(&self) -> u64 {
        self.loh.last().map_or(self.layout.loh_base, |o| o.addr + o.size as u64)
    }

    /// The generation bounds as a `b` line reports them: generation 3, 2,
    /// 1, 0, in that order.
    pub fn ranges(&self) -> [GenerationRange; 4] {
        let l = &self.layout;
        let loh_len = self.loh_top() - l.loh_base;
        let seg_end = l.soh_base + round_up((self.high_water - l.soh_base).max(1), SOH_RESERVE);
        let range = |start: u64, length: u64, reserved: u64, generation: i32| GenerationRange {
            start: Address(start),
            length,
            reserved,
            generation,
        };
        [
            range(l.loh_base, loh_len, round_up(loh_len.max(1), LOH_RESERVE), 3),
            range(l.soh_base, self.gen1_start - l.soh_base, self.gen1_start - l.soh_base, 2),
            range(self.gen1_start, self.gen0_start - self.gen1_start, self.gen0_start - self.gen1_start, 1),
            range(self.gen0_start, self.alloc_ptr - self.gen0_start, seg_end - self.gen0_start, 0),
        ]
    }

    /// The object at `addr`, wherever it lives.
    pub fn find_mut(&mut self, addr: u64) -> Option<&mut Obj> {
        let in_sorted = |v: &mut Vec<Obj>| -> Option<usize> { v.binary_search_by_key(&addr, |o| o.addr).ok() };
        if addr >= self.layout.loh_base && addr < self.layout.loh_limit {
            let i = in_sorted(&mut self.loh)?;
            return self.loh.get_mut(i);
        }
        if addr < self.gen1_start {
            let i = in_sorted(&mut self.gen2)?;
            return self.gen2.get_mut(i);
        }
        if addr < self.gen0_start {
            let i = in_sorted(&mut self.gen1)?;
            return self.gen1.get_mut(i);
        }
        self.gen0.iter_mut().rev().find(|o| o.addr == addr)
    }

    /// Every object, generation 2, 1, 0, then large objects.
    pub fn all(&self) -> impl Iterator<Item = (u8, &Obj)> {
        self.gen2
            .iter()
            .map(|o| (2, o))
            .chain(self.gen1.iter().map(|o| (1, o)))
            .chain(self.gen0.iter().map(|o| (0, o)))
            .chain(self.loh.iter().map(|o| (3, o)))
    }
}

fn round_up(n: u64, to: u64) -> u64 {
    n.div_ceil(to) * to
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(addr: u64, size: u32) -> Obj {
        Obj::new(addr, 0, 0, size, 0, 0, 0, 0)
    }

    #[test]
    fn objects_pack_type_and_flags() {
        assert_eq!(std::mem::size_of::<Obj>(), 32);
        let mut o = Obj::new(1, 2, 3, 24, 5, 4095, 7, FINALIZABLE | CRITICAL);
        assert_eq!((o.ty(), o.flags()), (4095, 3));
        o.set_flags(o.flags() | PINNED);
        assert_eq!((o.ty(), o.flags()), (4095, 11));
    }

    #[test]
    fn contexts_interleave_threads() {
        let mut h = Heap::new(Layout::new(PointerBits::Bits64), 2);
        let b = h.layout.soh_base;
        assert_eq!(h.alloc_small(0, 24).unwrap(), b);
        assert_eq!(h.alloc_small(1, 24).unwrap(), b + QUANTUM);
        assert_eq!(h.alloc_small(0, 32).unwrap(), b + 24);
        assert_eq!(h.alloc_small(0, 10_000).unwrap(), b + 2 * QUANTUM);
        assert_eq!(h.alloc_ptr, b + 2 * QUANTUM + 10_000);
        h.reset_contexts();
        assert_eq!(h.alloc_small(1, 24).unwrap(), b + 2 * QUANTUM + 10_000);
    }

    #[test]
    fn large_objects_fill_gaps_first() {
        let mut h = Heap::new(Layout::new(PointerBits::Bits32), 1);
        let b = h.layout.loh_base;
        h.loh.push(obj(b, 100_000));
        h.loh.push(obj(b + 300_000, 100_000));
        assert_eq!(h.place_large(150_000).unwrap(), (b + 100_000, 1));
        assert_eq!(h.place_large(250_000).unwrap(), (b + 400_000, 2));
        assert_eq!(h.loh_top(), b + 400_000);
        assert!(h.place_large(1 << 30).is_err());
        assert!(h.find_mut(b + 300_000).is_some());
        assert!(h.find_mut(b + 300_008).is_none());
    }

    #[test]
    fn ranges_cover_the_generations() {
        let mut h = Heap::new(Layout::new(PointerBits::Bits64), 1);
        let b = h.layout.soh_base;
        h.alloc_small(0, 64).unwrap();
        let r = h.ranges();
        assert_eq!(r.map(|r| r.generation), [3, 2, 1, 0]);
        assert_eq!(r[3].start.0, b);
        assert_eq!(r[3].length, QUANTUM);
        assert!(r[3].reserved >= r[3].length);
        assert_eq!(r[1].length, 0);
    }
}
