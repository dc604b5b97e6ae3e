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
