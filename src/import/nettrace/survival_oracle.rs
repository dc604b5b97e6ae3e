//! Tests: the survival tracker as it was first written (every followed
//! object in a `BTreeMap`), the oracle the faster one is checked against
//! (`survival::tests::agrees_with_the_first_tracker`).

use super::survival::{body, Collected, Memory};
use crate::import::SampledFate;
use std::collections::BTreeMap;

/// One followed object.
#[derive(Clone, Copy, Debug)]
struct Followed {
    sample: u32,
    /// Its size, when the runtime gave it (0: unknown).
    size: u64,
}

/// The sampled objects followed so far and their fates.
pub(super) struct Oracle {
    /// The objects believed alive, by address.
    alive: BTreeMap<u64, Followed>,
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
}

impl Default for Oracle {
    fn default() -> Self {
        Oracle::new(8)
    }
}

impl Oracle {
    /// A trace whose pointers are `pointer_size` bytes.
    pub fn new(pointer_size: u32) -> Oracle {
        Oracle {
            alive: BTreeMap::new(),
            fates: Vec::new(),
            reported: Vec::new(),
            overwritten: 0,
            silent_gcs: 0,
            gcs_ended: 0,
            min_object: 3 * u64::from(pointer_size.clamp(4, 8)),
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
        // A followed object whose body holds the new one's start is gone.
        // Objects do not overlap: only the nearest one below can hold it.
        let mut gone = Vec::new();
        if let Some((&a, f)) = self.alive.range(..=address).next_back() {
            let end = if f.size == 0 { a + 1 } else { a.saturating_add(f.size) };
            if address < end {
                gone.push(a);
            }
        }
        for a in gone {
            if let Some(f) = self.alive.remove(&a) {
                self.overwritten += 1;
                self.set(f.sample, SampledFate::Unknown { gc: self.last_gc() });
            }
        }
        self.alive.insert(address, Followed { sample, size });
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
        // GC of generation 0 leaves the old generations' objects alone
        // without visiting them).
        let mut moved: Vec<(u64, Followed)> = Vec::new();
        for &(old, new, length) in &reported {
            let end = old.saturating_add(length);
            let min_object = self.min_object;
            let inside: Vec<u64> =
                self.alive.range(old..end).filter(|(&a, f)| a.saturating_add(body(f.size, min_object)) <= end).map(|(&a, _)| a).collect();
            for a in inside {
                if let Some(f) = self.alive.remove(&a) {
                    moved.push((new.wrapping_add(a - old), f));
                }
            }
        }
        let mut silent = false;
        for m in memory.iter().filter(|m| condemns(m.generation)) {
            let inside: Vec<u64> = self.alive.range(m.lo..m.hi).map(|(&a, _)| a).collect();
            for a in inside {
                let Some(f) = self.alive.remove(&a) else { continue };
                silent |= !any_report;
                let fate = if any_report && finished {
                    SampledFate::Died { gc, generation: m.generation.min(3) as u8 }
                } else {
                    SampledFate::Unknown { gc }
                };
                self.set(f.sample, fate);
            }
        }
        // Objects in memory no range of the GC's start covered: the GC
        // may have condemned them or not (when the trace has no ranges at
        // all, every uncovered object is such).
        let mut covered: Vec<(u64, u64)> = memory.iter().map(|m| (m.lo, m.hi)).collect();
        covered.sort_unstable();
        let mut outside: Vec<u64> = Vec::new();
        let mut from = 0u64;
        for (lo, hi) in covered {
            if lo > from {
                outside.extend(self.alive.range(from..lo).map(|(&a, _)| a));
            }
            from = from.max(hi);
        }
        outside.extend(self.alive.range(from..).map(|(&a, _)| a));
        for a in outside {
            if let Some(f) = self.alive.remove(&a) {
                self.set(f.sample, SampledFate::Unknown { gc });
            }
        }
        self.silent_gcs += u64::from(silent);
        for (a, f) in moved {
            if let Some(old) = self.alive.insert(a, f) {
                // Two objects moved to one address: the reports contradict
                // each other; neither can be told apart now.
                self.overwritten += 1;
                self.set(old.sample, SampledFate::Unknown { gc });
            }
        }
        reported.clear();
        self.reported = reported;
    }

    /// The fates so far.
    pub fn fates(&self) -> &[SampledFate] {
        &self.fates
    }

    /// Samples whose fate is unknown.
    pub fn unknown(&self) -> u64 {
        self.fates.iter().filter(|f| matches!(f, SampledFate::Unknown { .. })).count() as u64
    }
}
