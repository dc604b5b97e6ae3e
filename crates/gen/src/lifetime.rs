//! How long objects live, measured in bytes allocated after them.
//!
//! The weak generational hypothesis, in numbers: most objects die within a
//! small fraction of a gen-0 budget, some survive a few GCs, a few live
//! long, and some never die. Means are multiples of the gen-0 budget, so
//! survival rates per GC do not depend on the preset's scale. With the
//! mixture below, about 8-10% of generation 0 survives a GC.

use super::rng::Rng;
use super::types::Longevity;

/// Never dies.
pub const FOREVER: u64 = u64::MAX;

/// One component of a lifetime mixture: probability and mean lifetime in
/// gen-0 budgets (`None`: forever).
type Component = (f64, Option<f64>);

const TEMPORARY: [Component; 4] = [(0.935, Some(0.02)), (0.05, Some(1.5)), (0.012, Some(10.0)), (0.003, None)];
const DATA: [Component; 4] = [(0.78, Some(0.03)), (0.14, Some(1.5)), (0.06, Some(10.0)), (0.02, None)];
const RESOURCE: [Component; 4] = [(0.55, Some(0.05)), (0.38, Some(1.0)), (0.06, Some(6.0)), (0.01, None)];
const PERMANENT: [Component; 4] = [(0.0, Some(1.0)), (0.0, Some(1.0)), (0.0, Some(1.0)), (1.0, None)];

/// Lifetime draws for a given gen-0 budget.
pub struct LifetimeModel {
    /// Per longevity: cumulative thresholds on 64 random bits and mean
    /// lifetimes in bytes (0: forever).
    mixes: [[(u64, f64); 4]; 4],
}

impl LifetimeModel {
    /// A model for a gen-0 budget of `budget` bytes.
    pub fn new(budget: u64) -> LifetimeModel {
        let budget = budget.max(1) as f64;
        let prepare = |mix: &[Component; 4]| {
            let mut out = [(0u64, 0.0f64); 4];
            let mut cum = 0.0;
            for (k, &(p, mean)) in mix.iter().enumerate() {
                cum += p;
                let threshold =
                    if k == 3 || cum >= 1.0 { u64::MAX } else { (cum * 18_446_744_073_709_551_616.0) as u64 };
                out[k] = (threshold, mean.map_or(0.0, |m| m * budget));
            }
            out
        };
        LifetimeModel { mixes: [prepare(&TEMPORARY), prepare(&DATA), prepare(&RESOURCE), prepare(&PERMANENT)] }
    }

    /// Bytes of allocation the object stays reachable for ([`FOREVER`] for
    /// never).
    #[inline]
    pub fn draw(&self, rng: &mut Rng, longevity: Longevity) -> u64 {
        let mix = &self.mixes[longevity as usize];
        let u = rng.next_u64();
        let k = mix.iter().position(|c| u < c.0).unwrap_or(3);
        match mix[k].1 {
            m if m > 0.0 => (rng.exponential(m) as u64).max(1),
            _ => FOREVER,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixtures_are_distributions() {
        for mix in [TEMPORARY, DATA, RESOURCE, PERMANENT] {
            let total: f64 = mix.iter().map(|c| c.0).sum();
            assert!((total - 1.0).abs() < 1e-9);
        }
    }

    #[test]
    fn most_temporaries_die_young() {
        let m = LifetimeModel::new(1_000_000);
        let mut r = Rng::new(1);
        let n = 100_000;
        let young = (0..n).filter(|_| m.draw(&mut r, Longevity::Temporary) < 1_000_000).count();
        assert!(young as f64 / n as f64 > 0.9);
        assert_eq!(m.draw(&mut r, Longevity::Permanent), FOREVER);
    }
}
