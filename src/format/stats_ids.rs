//! A set of small integer ids: a bitmap for the dense range, a sorted
//! vector for the rest (negative or huge ids from damaged logs).

const DENSE_LIMIT: i32 = 1 << 26;

/// A set of `i32` ids.
#[derive(Default, Clone, Debug)]
pub struct IdSet {
    bits: Vec<u64>,
    dense: u64,
    sparse: Vec<i32>,
}

impl IdSet {
    /// Adds an id.
    #[inline]
    pub fn insert(&mut self, id: i32) {
        if (0..DENSE_LIMIT).contains(&id) {
            let (w, b) = (id as usize / 64, id as usize % 64);
            if w >= self.bits.len() {
                self.bits.resize(w + 1, 0);
            }
            if self.bits[w] & (1 << b) == 0 {
                self.bits[w] |= 1 << b;
                self.dense += 1;
            }
        } else {
            self.sparse.push(id);
        }
    }

    /// Whether `id` is in the set.
    #[inline]
    pub fn contains(&self, id: i32) -> bool {
        if (0..DENSE_LIMIT).contains(&id) {
            let (w, b) = (id as usize / 64, id as usize % 64);
            self.bits.get(w).is_some_and(|x| x & (1 << b) != 0)
        } else {
            self.sparse.contains(&id)
        }
    }

    /// Adds every id of `other`.
    pub fn merge(&mut self, other: IdSet) {
        if other.bits.len() > self.bits.len() {
            self.bits.resize(other.bits.len(), 0);
        }
        self.dense = 0;
        for (a, b) in self.bits.iter_mut().zip(other.bits.iter()) {
            *a |= *b;
        }
        self.dense = self.bits.iter().map(|w| w.count_ones() as u64).sum();
        self.sparse.extend(other.sparse);
        self.sparse.sort_unstable();
        self.sparse.dedup();
    }

    /// Number of distinct ids.
    pub fn len(&self) -> u64 {
        let mut s = self.sparse.clone();
        s.sort_unstable();
        s.dedup();
        self.dense + s.len() as u64
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The dense ids (`1..DENSE_LIMIT`) of a set marked without counting: one
/// store a mark, for the hot loops, with the counting left to whoever reads
/// it.
#[derive(Default, Clone, Debug)]
pub struct IdBits {
    words: Vec<u64>,
}

impl IdBits {
    /// Whether [`IdBits::mark`] takes `id`.
    #[inline(always)]
    pub fn takes(id: i32) -> bool {
        (1..DENSE_LIMIT).contains(&id)
    }

    /// Marks `id` (one of [`IdBits::takes`]).
    #[inline(always)]
    pub fn mark(&mut self, id: i32) {
        let (w, b) = (id as usize / 64, id as usize % 64);
        if w >= self.words.len() {
            self.grow(w);
        }
        if let Some(x) = self.words.get_mut(w) {
            *x |= 1 << b;
        }
    }

    #[cold]
    fn grow(&mut self, w: usize) {
        self.words.resize((w + 1).max(2 * self.words.len()), 0);
    }

    /// Whether `id` is marked.
    #[inline]
    pub fn contains(&self, id: i32) -> bool {
        Self::takes(id) && self.words.get(id as usize / 64).is_some_and(|x| x & (1 << (id % 64)) != 0)
    }

    /// The marked ids in none of `sets`, in increasing order.
    pub fn missing_from(&self, sets: &[&IdSet]) -> Vec<i32> {
        let mut out = Vec::new();
        for (k, &w) in self.words.iter().enumerate() {
            let mut left = w;
            for set in sets {
                if left == 0 {
                    break;
                }
                left &= !set.bits.get(k).copied().unwrap_or(0);
            }
            while left != 0 {
                out.push((64 * k + left.trailing_zeros() as usize) as i32);
                left &= left - 1;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_from_is_the_difference() {
        let mut bits = IdBits::default();
        let mut a = IdSet::default();
        let mut b = IdSet::default();
        for id in [1, 5, 63, 64, 65, 200, 4000, 4001] {
            bits.mark(id);
        }
        for id in [5, 64, 9000] {
            a.insert(id);
        }
        b.insert(4000);
        b.insert(-7);
        assert_eq!(bits.missing_from(&[&a, &b]), vec![1, 63, 65, 200, 4001]);
        assert_eq!(bits.missing_from(&[]), vec![1, 5, 63, 64, 65, 200, 4000, 4001]);
        assert!(bits.contains(4001) && !bits.contains(4002) && !bits.contains(-1) && !bits.contains(0));
        assert!(!IdBits::takes(0) && !IdBits::takes(-3) && !IdBits::takes(DENSE_LIMIT) && IdBits::takes(1));
    }
}
