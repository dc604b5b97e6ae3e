//! GC handles: created (`h`) right after an allocation, some pointing at
//! the new object, destroyed (`j`) later or never. Handle ids are slot
//! addresses in a handle table; freed slots are reused, as the CLR does,
//! but never while the handle in them lives.
//!
//! Strong and pinned handles keep their object reachable until they are
//! destroyed; a pinned object is not moved by compacting GCs while pinned;
//! weak handles do not keep anything alive.

use super::options::PointerBits;
use super::rng::{Chance, Rng};
use clrprof::format::HandleId;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What a handle does to its object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandleKind {
    /// Keeps the object alive.
    Strong,
    /// Does not keep it alive.
    Weak,
    /// Keeps it alive and in place.
    Pinned,
}

/// A live handle.
#[derive(Clone, Copy, Debug)]
pub struct Handle {
    /// The id written in `h`/`j` lines.
    pub id: HandleId,
    /// Its kind.
    pub kind: HandleKind,
    /// Sequence number of the object it points at, if any.
    pub target: Option<u32>,
    /// Address of that object when the handle was created (pinned objects
    /// stay there).
    pub target_addr: u64,
}

/// A handle about to be created.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Its kind.
    pub kind: HandleKind,
    /// Whether it points at the object just allocated (else at nothing).
    pub with_target: bool,
    /// Allocation clock at which it is destroyed (`u64::MAX`: never).
    pub destroy_at: u64,
}

/// Counts for the truth file.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct HandleStats {
    /// `h` lines.
    pub created: u64,
    /// `j` lines.
    pub destroyed: u64,
    /// Handles alive at the end.
    pub surviving: u64,
    /// Strong handles created.
    pub strong: u64,
    /// Weak handles created.
    pub weak: u64,
    /// Pinned handles created.
    pub pinned: u64,
    /// Handles created pointing at nothing.
    pub null_initial: u64,
    /// Creations that reused the id of a destroyed handle.
    pub reused_ids: u64,
}

/// The handle table.
pub struct Handles {
    slots: Vec<Option<Handle>>,
    free: Vec<u32>,
    due: BinaryHeap<Reverse<(u64, u32)>>,
    base: u64,
    ptr: u64,
    /// Probability of a handle per allocation.
    rate: Chance,
    stats: HandleStats,
}

impl Handles {
    /// A table creating `per_million` handles per million allocations.
    pub fn new(per_million: f64, bits: PointerBits) -> Handles {
        let base = match bits {
            PointerBits::Bits32 => 0x0062_13F8,
            PointerBits::Bits64 => 0x0000_0000_012A_13F8,
        };
        Handles {
            slots: Vec::new(),
            free: Vec::new(),
            due: BinaryHeap::new(),
            base,
            ptr: bits.bytes(),
            rate: Chance::new(per_million / 1e6),
            stats: HandleStats::default(),
        }
    }

    /// Whether the allocation just made creates a handle.
    #[inline]
    pub fn roll(&self, rng: &mut Rng) -> bool {
        rng.hit(self.rate)
    }

    /// Decides the next handle's shape; `now` is the allocation clock and
    /// `budget` the gen-0 budget (lifetimes are multiples of it).
    pub fn plan(&self, rng: &mut Rng, now: u64, budget: u64) -> Plan {
        let kind = match rng.below(20) {
            0..=8 => HandleKind::Strong,
            9..=16 => HandleKind::Weak,
            _ => HandleKind::Pinned,
        };
        let with_target = rng.chance(0.7);
        // Pins are short (a buffer pinned for an I/O call); other handles
        // live long, some for the whole run.
        let destroy_at = if kind == HandleKind::Pinned {
            now.saturating_add(rng.exponential(0.05 * budget as f64) as u64 + 1)
        } else if rng.chance(0.7) {
            now.saturating_add(rng.exponential(3.0 * budget as f64) as u64 + 1)
        } else {
            u64::MAX
        };
        Plan { kind, with_target, destroy_at }
    }

    /// Creates a handle; `target` is the object's sequence number and
    /// address when the plan has one.
    pub fn create(&mut self, plan: Plan, target: Option<(u32, u64)>) -> Handle {
        let slot = match self.free.pop() {
            Some(s) => {
                self.stats.reused_ids += 1;
                s
            }
            None => {
                self.slots.push(None);
                (self.slots.len() - 1) as u32
            }
        };
        let h = Handle {
            id: HandleId(self.base + slot as u64 * self.ptr),
            kind: plan.kind,
            target: target.map(|t| t.0),
            target_addr: target.map_or(0, |t| t.1),
        };
        self.slots[slot as usize] = Some(h);
        if plan.destroy_at != u64::MAX {
            self.due.push(Reverse((plan.destroy_at, slot)));
        }
        self.stats.created += 1;
        match plan.kind {
            HandleKind::Strong => self.stats.strong += 1,
            HandleKind::Weak => self.stats.weak += 1,
            HandleKind::Pinned => self.stats.pinned += 1,
        }
        if target.is_none() {
            self.stats.null_initial += 1;
        }
        h
    }

    /// The next handle due for destruction at clock `now`, removed.
    #[inline]
    pub fn pop_due(&mut self, now: u64) -> Option<Handle> {
        match self.due.peek() {
            Some(Reverse((t, _))) if *t <= now => {}
            _ => return None,
        }
        let Reverse((_, slot)) = self.due.pop()?;
        let h = self.slots[slot as usize].take()?;
        self.free.push(slot);
        self.stats.destroyed += 1;
        Some(h)
    }

    /// Live handles.
    pub fn live(&self) -> impl Iterator<Item = &Handle> {
        self.slots.iter().flatten()
    }

    /// Counts so far.
    pub fn stats(&self) -> HandleStats {
        HandleStats { surviving: self.live().count() as u64, ..self.stats }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_reused_only_after_destruction() {
        let mut h = Handles::new(1000.0, PointerBits::Bits64);
        let p = Plan { kind: HandleKind::Strong, with_target: true, destroy_at: 10 };
        let a = h.create(p, Some((1, 0x1000)));
        let b = h.create(Plan { destroy_at: u64::MAX, ..p }, None);
        assert_ne!(a.id, b.id);
        assert!(h.pop_due(9).is_none());
        assert_eq!(h.pop_due(10).map(|x| x.id), Some(a.id));
        let c = h.create(p, None);
        assert_eq!(c.id, a.id);
        let s = h.stats();
        assert_eq!((s.created, s.destroyed, s.surviving, s.reused_ids, s.null_initial), (3, 1, 2, 1, 2));
    }
}
