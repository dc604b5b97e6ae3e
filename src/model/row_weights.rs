//! What the samples of each stack row stand for, for a sampled trace: the
//! sum of the row's sample weights and how many samples it has. Every
//! estimated count of a row is made here, from the sum in full precision,
//! so that every view that counts the same samples of a row gives the same
//! figure (a row's allocated objects in `types`, `survivors` and the
//! rest agree to the object).

/// Per stack row: the sum of its samples' weights and their number.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct RowWeights {
    sums: Vec<f64>,
    samples: Vec<u64>,
}

impl RowWeights {
    /// The weights of `rows` rows, from each sample's row and weight.
    pub(crate) fn new(rows: usize, samples: impl Iterator<Item = (usize, f64)>) -> RowWeights {
        let mut w = RowWeights { sums: vec![0.0; rows], samples: vec![0; rows] };
        for (row, weight) in samples {
            if let (Some(sum), Some(count)) = (w.sums.get_mut(row), w.samples.get_mut(row)) {
                *sum += weight;
                *count += 1;
            }
        }
        w
    }

    /// None: a log of every allocation (each object stands for itself).
    pub(crate) fn is_empty(&self) -> bool {
        self.sums.is_empty()
    }

    /// The objects `count` of a row's samples stand for: the row's sum
    /// when they are all of its samples, else their share of it; rounded,
    /// at least 1 for a count above 0. `count` itself for a row without
    /// samples.
    pub(crate) fn estimate(&self, row: usize, count: u64) -> u64 {
        let (Some(&sum), Some(&k)) = (self.sums.get(row), self.samples.get(row)) else { return count };
        if count == 0 || k == 0 {
            return count;
        }
        let v = if count == k { sum } else { count as f64 * sum / k as f64 };
        v.round().max(1.0) as u64
    }

    /// The objects all of a row's samples stand for (0 for a row without
    /// samples).
    pub(crate) fn whole(&self, row: usize) -> u64 {
        self.estimate(row, self.samples.get(row).copied().unwrap_or(0))
    }

    /// The objects one sample of a row stands for on average (1 for a row
    /// without samples).
    pub(crate) fn per_sample(&self, row: usize) -> f64 {
        match (self.sums.get(row), self.samples.get(row)) {
            (Some(&sum), Some(&k)) if k > 0 => sum / k as f64,
            _ => 1.0,
        }
    }

    /// The samples an estimate of a row rests on: the inverse of
    /// [`RowWeights::estimate`] (a row's weight is at least 1, so the
    /// rounding is undone exactly).
    pub(crate) fn samples_behind(&self, row: usize, estimated: u64) -> u64 {
        let w = self.per_sample(row);
        if estimated > 0 && w > 0.0 && self.samples.get(row).is_some_and(|&k| k > 0) {
            ((estimated as f64) / w).round().max(1.0) as u64
        } else {
            estimated
        }
    }

    /// Bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.sums.capacity() * 8 + self.samples.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::RowWeights;

    #[test]
    fn a_whole_row_is_its_sum_and_parts_are_shares() {
        // Three samples of 1/3 + 2/3 + 10^7: the f32 average of the
        // weights times 3 is not the sum.
        let w = RowWeights::new(2, [(0, 10_000_000.4), (0, 3.3), (0, 7.5), (1, 1.0)].into_iter());
        assert_eq!(w.estimate(0, 3), 10_000_011);
        assert_eq!(w.estimate(0, 1), ((10_000_011.2f64) / 3.0).round() as u64);
        assert_eq!(w.estimate(0, 0), 0);
        assert_eq!(w.estimate(1, 1), 1);
        assert_eq!(w.estimate(5, 4), 4, "a row without samples counts itself");
        assert_eq!(w.samples_behind(0, w.estimate(0, 2)), 2);
    }
}
