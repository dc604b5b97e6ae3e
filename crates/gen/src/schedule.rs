//! When GCs happen and what they condemn.
//!
//! A gen-0 GC starts when the small-object bytes allocated since the last
//! GC reach the gen-0 budget (total expected bytes / (GCs + 1)), so the
//! requested number of GCs spreads over the run; a safety trigger by object
//! count makes sure all of them happen even when sizes run small. Induced
//! GCs (`GC.Collect()`, condemning gen 2, some carrying a heap dump) are
//! spread evenly over the GC numbers and come at half a budget. Otherwise,
//! as in the CLR, older generations are condemned by their own budgets:
//! gen 1 when enough bytes were promoted into it, gen 2 when enough were
//! promoted into it or enough large objects were allocated.

use super::options::GenOptions;
use super::rng::Rng;

/// What one GC does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcPlan {
    /// 1-based GC number.
    pub number: u32,
    /// Condemned generation (0, 1 or 2).
    pub condemned: u8,
    /// Induced by the program.
    pub induced: bool,
    /// Survivors are compacted (moved down, `u`); else swept in place (`v`).
    pub compacting: bool,
    /// A heap dump is written during this GC.
    pub heap_dump: bool,
}

/// Fractions of the gen-0 budget that trigger older-generation GCs.
const GEN1_BUDGET: f64 = 0.25;
const GEN2_BUDGET: f64 = 0.35;
const LOH_BUDGET: f64 = 2.5;

/// The GC schedule and the CLR-style counters behind it.
pub struct Schedule {
    total: u32,
    done: u32,
    budget: u64,
    objects: u64,
    induced: Vec<u32>,
    dumps: Vec<u32>,
    soh_since: u64,
    next_trigger: u64,
    force_at: u64,
    gen1_growth: u64,
    gen2_growth: u64,
    loh_since_gen2: u64,
    counts: [u32; 3],
    by_condemned: [u32; 3],
}

/// `count` distinct numbers in `1..=total`, evenly spread (the centres of
/// `count` equal parts).
fn spread(count: u32, total: u32) -> Vec<u32> {
    let (c, t) = (count.min(total) as u64, total as u64);
    (0..c).map(|j| (1 + (2 * j + 1) * t / (2 * c)) as u32).collect()
}

impl Schedule {
    /// The schedule for a run with a gen-0 budget of `budget` bytes.
    pub fn new(opts: &GenOptions, budget: u64) -> Schedule {
        let induced = spread(opts.effective_induced(), opts.gcs);
        let picks = spread(opts.heap_dumps, induced.len() as u32);
        let dumps = picks.iter().map(|&k| induced[k as usize - 1]).collect();
        let mut s = Schedule {
            total: opts.gcs,
            done: 0,
            budget: budget.max(1),
            objects: opts.objects,
            induced,
            dumps,
            soh_since: 0,
            next_trigger: 0,
            force_at: 0,
            gen1_growth: 0,
            gen2_growth: 0,
            loh_since_gen2: 0,
            counts: [0; 3],
            by_condemned: [0; 3],
        };
        s.arm();
        s
    }

    /// The gen-0 budget in bytes.
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// GCs completed.
    pub fn done(&self) -> u32 {
        self.done
    }

    /// Cumulative GC counts per generation (a gen-2 GC counts for 0 and 1).
    pub fn counts(&self) -> [u32; 3] {
        self.counts
    }

    /// GCs by condemned generation.
    pub fn by_condemned(&self) -> [u32; 3] {
        self.by_condemned
    }

    fn arm(&mut self) {
        let next = self.done + 1;
        self.next_trigger = if self.induced.contains(&next) { self.budget / 2 } else { self.budget };
        let spacing = self.objects / (self.total as u64 + 1);
        let remaining = (self.total - self.done.min(self.total)) as u64;
        self.force_at = self.objects.saturating_sub(remaining * spacing / 2);
    }

    /// Whether a GC starts before allocation number `index`.
    #[inline]
    pub fn due(&self, index: u64) -> bool {
        self.done < self.total && (self.soh_since >= self.next_trigger || index >= self.force_at)
    }

    /// A lower bound of the allocation clock at the next GC, seen before
    /// allocation number `index` when `alloc_bytes` have been allocated
    /// (objects are at least `min_object` bytes); `None` when no GC is
    /// coming. An object unreachable by then is certainly reclaimed by it.
    #[inline]
    pub fn next_gc_clock_bound(&self, alloc_bytes: u64, index: u64, min_object: u64) -> Option<u64> {
        if self.done >= self.total {
            return None;
        }
        let by_bytes = self.next_trigger.saturating_sub(self.soh_since);
        let by_count = self.force_at.saturating_sub(index).saturating_mul(min_object);
        Some(alloc_bytes.saturating_add(by_bytes.min(by_count)))
    }

    /// Counts an allocation.
    #[inline]
    pub fn note_alloc(&mut self, size: u64, large: bool) {
        if large {
            self.loh_since_gen2 += size;
        } else {
            self.soh_since += size;
        }
    }

    /// Plans the next GC.
    pub fn plan(&self, rng: &mut Rng) -> GcPlan {
        let number = self.done + 1;
        let induced = self.induced.contains(&number);
        let heap_dump = self.dumps.contains(&number);
        let b = self.budget as f64;
        let condemned = if induced
            || self.gen2_growth as f64 >= GEN2_BUDGET * b
            || self.loh_since_gen2 as f64 >= LOH_BUDGET * b
        {
            2
        } else if self.gen1_growth as f64 >= GEN1_BUDGET * b {
            1
        } else {
            0
        };
        let compacting = match condemned {
            0 => !rng.chance(0.04),
            1 => !rng.chance(0.08),
            _ => induced || rng.chance(0.5),
        };
        GcPlan { number, condemned, induced, compacting, heap_dump }
    }

    /// Records a finished GC: bytes promoted into gen 1 and gen 2.
    pub fn finished(&mut self, plan: &GcPlan, into_gen1: u64, into_gen2: u64) {
        self.done += 1;
        self.soh_since = 0;
        let g = plan.condemned as usize;
        self.by_condemned[g] += 1;
        for c in &mut self.counts[..=g] {
            *c += 1;
        }
        if g >= 1 {
            self.gen1_growth = into_gen1;
        } else {
            self.gen1_growth += into_gen1;
        }
        if g == 2 {
            self.gen2_growth = 0;
            self.loh_since_gen2 = 0;
        } else {
            self.gen2_growth += into_gen2;
        }
        self.arm();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_is_distinct_and_in_range() {
        for total in 1..40 {
            for count in 0..=total {
                let v = spread(count, total);
                assert_eq!(v.len(), count as usize);
                assert!(v.windows(2).all(|w| w[0] < w[1]));
                assert!(v.iter().all(|&k| (1..=total).contains(&k)));
            }
        }
        assert_eq!(spread(2, 8), vec![3, 7]);
    }

    #[test]
    fn induced_and_dumps() {
        let o = GenOptions { gcs: 10, induced: 3, heap_dumps: 2, ..GenOptions::default() };
        let s = Schedule::new(&o, 1000);
        assert_eq!(s.induced.len(), 3);
        assert_eq!(s.dumps.len(), 2);
        assert!(s.dumps.iter().all(|d| s.induced.contains(d)));
        let mut r = Rng::new(1);
        let p = s.plan(&mut r);
        assert_eq!(p.number, 1);
        assert!(!s.due(0));
    }
}
