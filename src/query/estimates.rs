//! What a model's figures are made of: every allocation (a CLRProfiler
//! log), or samples (a trace) whose figures are estimates.

use crate::model::Model;
use serde::Serialize;

/// How the figures of a model of sampled allocations were made, for every
/// view to say so beside its figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Estimates {
    /// The sampling event (`GC/AllocationTick`).
    pub method: &'static str,
    /// Sampled allocations read.
    pub samples: u64,
    /// Objects they stand for, in all.
    pub estimated_objects: u64,
    /// The trace did not give the sampled objects' sizes: object counts
    /// are counts of samples, bytes are estimated.
    pub sizes_unknown: bool,
    /// Whether the GCs reported their survivors, so that lifetimes,
    /// survivors and the heap at the end are estimated from the samples
    /// followed through them; without, those figures are unknown.
    pub survival_known: bool,
    /// Sampled objects whose fate the GCs' reports leave unknown (counted
    /// as unknown in survivors, lifetime and ages; never as dead or
    /// alive).
    pub survival_unknown_samples: u64,
    /// Which figures are estimates, and how they were made, in a sentence.
    pub note: String,
}

/// The estimates of a model of a trace; `None` for a log of every
/// allocation (its figures are exact).
pub fn estimates(model: &Model) -> Option<Estimates> {
    let s = model.sampling()?;
    let facts = model.imported();
    let survival_known = facts.is_some_and(|f| f.survival_known);
    let unknown = facts.map_or(0, |f| f.survival_unknown_samples);
    let samples = s.weights.len() as u64;
    let estimated_objects = s.estimated_objects().round() as u64;
    let how = match s.method {
        crate::import::SamplingMethod::AllocationTick => "each stands for the bytes allocated since the previous one",
        crate::import::SamplingMethod::AllocationSampled => "each stands for the inverse of its chance of being sampled",
    };
    let mut note = format!("allocated objects and bytes are estimates from {samples} {} samples ({how})", s.method.event());
    if s.method == crate::import::SamplingMethod::AllocationTick {
        note.push_str(
            "; each figure's 95% range is the sampling's spread from its number of samples; \
             a thread that interleaves types of different sizes shifts bytes between them beyond it \
             (the clrprof agent counts every allocation)",
        );
    }
    if s.sizes_unknown {
        note.push_str("; the runtime did not report object sizes, so object counts are counts of samples");
    }
    if survival_known {
        note.push_str("; survivors and the heap at the end are estimated from the sampled objects followed through the GCs");
    } else if unknown > 0 && unknown < samples {
        note.push_str(&format!(
            "; survivors and the heap at the end are estimated from the sampled objects followed through the GCs, but the GCs' reports do not say what became of {unknown} sample(s) (memory condemned without a report of its survivors, or a background GC's report that cannot tell them from objects made where they lay): their fate is unknown (counted apart, never as dead or alive)"
        ));
    } else {
        note.push_str("; the GCs did not report survivors (keyword GCHeapSurvivalAndMovement, 0x400000), so what survived is unknown");
    }
    Some(Estimates {
        method: s.method.event(),
        samples,
        estimated_objects,
        sizes_unknown: s.sizes_unknown,
        survival_known,
        survival_unknown_samples: unknown,
        note,
    })
}

/// The 95% range of a figure estimated from `samples` sampled allocations,
/// as factors of the estimate: the figure lies between `estimate * low`
/// and `estimate * high`.
///
/// The samples of a type are counted as a Poisson count (each
/// `GC/AllocationTick` is one draw of about 100 KB of allocation), and the
/// range is the exact (Garwood) 95% interval of its mean divided by the
/// count: about ±1.96/√k for k samples (-19% +22% at 100 samples, ±6.4%
/// at 1,000). It is the spread of the sampling alone: a thread that
/// interleaves types of different sizes in a fixed pattern biases the
/// split between them beyond it (see the guide's EventPipe chapter).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Range95 {
    /// Lower factor (0 for no sample).
    pub low: f64,
    /// Upper factor.
    pub high: f64,
}

impl Range95 {
    /// The range of an estimate from `samples` samples; `None` for no
    /// sample (nothing was estimated).
    pub fn of(samples: u64) -> Option<Range95> {
        if samples == 0 {
            return None;
        }
        let k = samples as f64;
        Some(Range95 { low: poisson_lower(samples) / k, high: poisson_upper(samples) / k })
    }

    /// The most samples (95% upper bound) a figure that got none could
    /// have had: a type or function a trace shows nothing of may still
    /// have allocated up to about this many samples' worth.
    pub fn unseen_samples() -> f64 {
        poisson_upper(0)
    }

    /// `value`'s range, rounded to whole units.
    pub fn apply(&self, value: f64) -> [f64; 2] {
        [(value * self.low).floor(), (value * self.high).ceil()]
    }

    /// The range as a table cell: "±6.2%", or "-64% +457%" when it is
    /// lopsided (few samples).
    pub fn cell(&self) -> String {
        let down = (1.0 - self.low) * 100.0;
        let up = (self.high - 1.0) * 100.0;
        let digits = |v: f64| if v < 10.0 { format!("{v:.1}") } else { format!("{v:.0}") };
        if (up - down).abs() <= 0.1 * up.max(down) {
            format!("±{}%", digits(up.max(down)))
        } else {
            format!("-{}% +{}%", digits(down), digits(up))
        }
    }
}

/// The two-sided 95% normal quantile.
const Z95: f64 = 1.959_963_984_540_054;

/// Above this count the Wilson-Hilferty form of the chi-square quantiles
/// is used (its error is under 0.1% of the bound there); below, the
/// Poisson tails are solved exactly by bisection.
const EXACT_UP_TO: u64 = 200;

/// The mean `m` whose Poisson probability of at least `k` is 2.5%.
fn poisson_lower(k: u64) -> f64 {
    if k > EXACT_UP_TO {
        let k = k as f64;
        return k * (1.0 - 1.0 / (9.0 * k) - Z95 / (3.0 * k.sqrt())).powi(3);
    }
    // P(X >= k; m) grows with m.
    bisect(0.0, k as f64, |m| 1.0 - poisson_cdf(k - 1, m) < 0.025)
}

/// The mean `m` whose Poisson probability of at most `k` is 2.5%.
fn poisson_upper(k: u64) -> f64 {
    if k > EXACT_UP_TO {
        let k = (k + 1) as f64;
        return k * (1.0 - 1.0 / (9.0 * k) + Z95 / (3.0 * k.sqrt())).powi(3);
    }
    // P(X <= k; m) falls with m.
    bisect(k as f64, 4.0 * k as f64 + 10.0, |m| poisson_cdf(k, m) > 0.025)
}

/// The boundary in `[lo, hi]` where `below` turns false (it holds at `lo`).
fn bisect(mut lo: f64, mut hi: f64, below: impl Fn(f64) -> bool) -> f64 {
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if below(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// P(X <= k) for a Poisson count of mean `m`.
fn poisson_cdf(k: u64, m: f64) -> f64 {
    let mut term = (-m).exp();
    let mut sum = term;
    for i in 1..=k {
        term *= m / i as f64;
        sum += term;
    }
    sum.min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_ranges_are_garwoods() {
        // Exact 95% bounds of a Poisson mean (chi-square quantiles / 2).
        for (k, lo, hi) in [(1, 0.0253, 5.5716), (10, 4.7954, 18.3904), (100, 81.3640, 121.6268), (1000, 938.973, 1063.952)] {
            let r = Range95::of(k).unwrap();
            let kf = k as f64;
            assert!((r.low * kf - lo).abs() < lo * 0.002 + 0.001, "{k}: low {}", r.low * kf);
            assert!((r.high * kf - hi).abs() < hi * 0.002, "{k}: high {}", r.high * kf);
        }
        assert_eq!(Range95::of(0), None);
        // Either side of the exact/approximate switch, the bounds agree.
        let (a, b) = (Range95::of(EXACT_UP_TO).unwrap(), Range95::of(EXACT_UP_TO + 1).unwrap());
        assert!((a.low - b.low).abs() < 0.002 && (a.high - b.high).abs() < 0.002);
        assert_eq!(Range95::of(1000).unwrap().cell(), "±6.4%");
        assert_eq!(Range95::of(100).unwrap().cell(), "-19% +22%");
        assert_eq!(Range95::of(2).unwrap().cell(), "-88% +261%");
    }
}
