//! CLRProfiler's "Histogram by Size" view: objects in size classes whose
//! bounds grow geometrically, with the types in each class.
//!
//! The classes are those of CLRProfiler's view: starting at 8 bytes, each
//! lower bound is the previous one times a factor (2 for its default
//! "coarse" horizontal scale, then the square root of 2, 2^(1/4) and
//! 2^(1/8) for "medium", "fine" and "very fine"), rounded to the nearest
//! integer (ties to even, as .NET rounds), while below 2^31 - 1; a class
//! holds the sizes from its rounded lower bound to the next class's rounded
//! lower bound minus one. An object whose size fits no class (under 8
//! bytes, or negative) is in no class. Leading empty classes are dropped
//! except the one just before the first non-empty class, and so are
//! trailing empty classes, as the view does; when every class is empty the
//! answer is empty (the view would show all of them empty).
//!
//! The view lists types per type id; here types with equal names are
//! merged, as in the other type histograms.
//!
//! ```
//! use clrprof::query::{size_buckets, BucketScale, HistogramKind};
//! let log = b"t 1 0 T\nn 1 1 1 24\nn 2 1 1 100\ni 5\n! 7 0x1000 1\n! 7 0x1018 2\n";
//! let model = clrprof::model::load(log, &Default::default()).unwrap();
//! let b = size_buckets(&model, HistogramKind::Allocated.of(&model), BucketScale::Coarse);
//! // One empty class is kept before the first one with objects.
//! assert_eq!((b[0].min_size, b[0].max_size, b[0].count), (8, 15, 0));
//! assert_eq!((b[1].min_size, b[1].max_size, b[1].count), (16, 31, 1));
//! assert_eq!((b[2].min_size, b[2].count), (32, 0));
//! assert_eq!((b[3].min_size, b[3].max_size, b[3].bytes), (64, 127, 100));
//! assert_eq!(b.len(), 4);
//! ```

use super::types::{by_bytes, group_by_name, TypeCount};
use crate::model::{Model, StackCounts, StackRef};
use serde::Serialize;

/// The horizontal scale of the view: how fast the classes grow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BucketScale {
    /// Each class twice the previous (CLRProfiler's default).
    #[default]
    Coarse,
    /// By the square root of 2.
    Medium,
    /// By 2^(1/4).
    Fine,
    /// By 2^(1/8).
    VeryFine,
}

impl BucketScale {
    /// The growth factor.
    pub fn factor(self) -> f64 {
        match self {
            BucketScale::Coarse => 2.0,
            BucketScale::Medium => 2f64.sqrt(),
            BucketScale::Fine => 2f64.powf(0.25),
            BucketScale::VeryFine => 2f64.powf(0.125),
        }
    }

    /// The classes as `(lowest size, highest size)`, before trimming.
    pub fn bounds(self) -> Vec<(u32, u32)> {
        let f = self.factor();
        let mut lows = Vec::new();
        let mut m = 8.0f64;
        while m < i32::MAX as f64 {
            lows.push(m);
            m *= f;
        }
        lows.windows(2)
            .map(|w| (w[0].round_ties_even() as u32, (w[1].round_ties_even() as u32).saturating_sub(1)))
            .collect()
    }
}

/// One size class.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizeBucket {
    /// The smallest object size in the class, bytes.
    pub min_size: u32,
    /// The largest, bytes.
    pub max_size: u32,
    /// Objects.
    pub count: u64,
    /// Bytes.
    pub bytes: u64,
    /// The types in the class, by bytes (largest first).
    pub types: Vec<TypeCount>,
}

/// The size histogram of counts per stack row (any of
/// [`super::type_counts()`]'s answers).
pub fn size_buckets(model: &Model, counts: &StackCounts, scale: BucketScale) -> Vec<SizeBucket> {
    let bounds = scale.bounds();
    let mut rows: Vec<Vec<(StackRef, u64)>> = vec![Vec::new(); bounds.len()];
    let mut totals = vec![(0u64, 0u64); bounds.len()];
    for (row, count) in counts.iter() {
        let Some((_, size)) = model.stacks().type_and_size(row) else { continue };
        if size < 0 {
            continue;
        }
        let size = size as u32;
        // The first class whose upper bound reaches the size.
        let k = bounds.partition_point(|&(_, hi)| hi < size);
        let Some(&(lo, _)) = bounds.get(k) else { continue };
        if size < lo {
            continue;
        }
        rows[k].push((row, count));
        totals[k].0 += count;
        totals[k].1 += size as u64 * count;
    }
    let Some(hi) = totals.iter().rposition(|t| t.0 > 0) else { return Vec::new() };
    let first = totals.iter().position(|t| t.0 > 0).unwrap_or(0);
    let lo = first.saturating_sub(1);
    (lo..=hi)
        .map(|k| SizeBucket {
            min_size: bounds[k].0,
            max_size: bounds[k].1,
            count: totals[k].0,
            bytes: totals[k].1,
            types: by_bytes(group_by_name(model, rows[k].iter().copied())),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_follow_the_view() {
        let b = BucketScale::Coarse.bounds();
        assert_eq!(b[0], (8, 15));
        assert_eq!(b[1], (16, 31));
        // 8 * 2^27 = 2^30 is the last lower bound below 2^31 - 1; the class
        // before it is the last one.
        assert_eq!(b.len(), 27);
        assert_eq!(*b.last().unwrap(), (1 << 29, (1 << 30) - 1));
        let m = BucketScale::Medium.bounds();
        assert_eq!(&m[..4], &[(8, 10), (11, 15), (16, 22), (23, 31)]);
        // Classes tile the sizes without gaps.
        for s in [BucketScale::Medium, BucketScale::Fine, BucketScale::VeryFine] {
            let v = s.bounds();
            for w in v.windows(2) {
                assert!(w[0].1 + 1 == w[1].0 || w[0].0 > w[0].1, "{s:?}: {w:?}");
            }
        }
    }
}
