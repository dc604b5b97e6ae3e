//! A map from a log id (a non-negative `i64`) to a dense `u32`, stored as an
//! array while the ids are dense enough and as a hash map otherwise, so that
//! a log naming id 2,000,000,000 (or 16,000,000) costs one entry rather than
//! megabytes.

use std::collections::HashMap;

const UNSET: u32 = u32::MAX;

/// Ids below this are stored in the array (grown on demand).
const DENSE_LIMIT: u64 = 1 << 24;

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct IdMap {
    dense: Vec<u32>,
    sparse: HashMap<u64, u32>,
    entries: usize,
}

/// Whether an array entry for `id` is worth it with `entries` entries so
/// far: the array may hold at most about 16 slots per entry (and 64K free).
#[inline]
pub(crate) fn dense_enough(id: u64, entries: usize, limit: u64) -> bool {
    id < limit && id <= (entries as u64).saturating_mul(16).max(1 << 16)
}

impl IdMap {
    pub(crate) fn new() -> Self {
        IdMap::default()
    }

    #[inline]
    pub(crate) fn get(&self, id: u64) -> Option<u32> {
        match self.dense.get(id as usize) {
            Some(&v) if id < DENSE_LIMIT => {
                if v == UNSET {
                    None
                } else {
                    Some(v)
                }
            }
            _ if self.sparse.is_empty() => None,
            _ => self.sparse.get(&id).copied(),
        }
    }

    pub(crate) fn insert(&mut self, id: u64, value: u32) {
        let i = id as usize;
        if i < self.dense.len() && id < DENSE_LIMIT {
            if self.dense[i] == UNSET {
                self.entries += 1;
            }
            self.dense[i] = value;
            return;
        }
        if dense_enough(id, self.entries, DENSE_LIMIT) {
            let want = (self.dense.len() * 2).clamp(i + 1, DENSE_LIMIT as usize);
            self.dense.resize(want, UNSET);
            self.dense[i] = value;
            self.entries += 1;
            // Move sparse entries that now fit.
            if !self.sparse.is_empty() {
                let len = self.dense.len() as u64;
                let moved: Vec<(u64, u32)> = self.sparse.iter().filter(|(&k, _)| k < len).map(|(&k, &v)| (k, v)).collect();
                for (k, v) in moved {
                    self.sparse.remove(&k);
                    self.dense[k as usize] = v;
                }
            }
        } else if self.sparse.insert(id, value).is_none() {
            self.entries += 1;
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
