//! A map from a log id (a non-negative `i64`) to a dense `u32`, stored as an
//! array for ids below a bound and as a hash map above it, so that a log
//! naming id 2,000,000,000 costs one entry rather than gigabytes.

use std::collections::HashMap;

const UNSET: u32 = u32::MAX;

/// Ids below this are stored in the array (grown on demand).
const DENSE_LIMIT: u64 = 1 << 24;

#[derive(Clone, Debug, Default)]
pub(crate) struct IdMap {
    dense: Vec<u32>,
    sparse: HashMap<u64, u32>,
}

impl IdMap {
    pub(crate) fn new() -> Self {
        IdMap::default()
    }

    #[inline]
    pub(crate) fn get(&self, id: u64) -> Option<u32> {
        if id < DENSE_LIMIT {
            match self.dense.get(id as usize) {
                Some(&v) if v != UNSET => Some(v),
                _ => None,
            }
        } else {
            self.sparse.get(&id).copied()
        }
    }

    pub(crate) fn insert(&mut self, id: u64, value: u32) {
        if id < DENSE_LIMIT {
            let i = id as usize;
            if i >= self.dense.len() {
                let want = (self.dense.len() * 2).clamp(i + 1, DENSE_LIMIT as usize);
                self.dense.resize(want, UNSET);
            }
            self.dense[i] = value;
        } else {
            self.sparse.insert(id, value);
        }
    }

    /// Bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.dense.capacity() * 4 + self.sparse.capacity() * 16
    }

    pub(crate) fn shrink(&mut self) {
        self.dense.shrink_to_fit();
        self.sparse.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_and_sparse() {
        let mut m = IdMap::new();
        assert_eq!(m.get(5), None);
        m.insert(5, 7);
        m.insert(3_000_000_000, 9);
        assert_eq!(m.get(5), Some(7));
        assert_eq!(m.get(4), None);
        assert_eq!(m.get(3_000_000_000), Some(9));
        assert_eq!(m.get(3_000_000_001), None);
        assert!(m.heap_bytes() < 1 << 20);
    }
}
