//! A small open-addressing hash map from packed `u64` keys to `u32` ids,
//! for the generator's interning (call-path children, allocation stacks).
//!
//! One probe usually touches one cache line (key and value side by side,
//! linear probing, load factor at most 1/2), where `std`'s map touches its
//! control bytes and its buckets. With millions of stacks the table no
//! longer fits in cache, so that difference is most of the cost of an
//! allocation. Iteration order is never used, so the layout cannot leak
//! into the log.

/// The key marking an empty slot (callers never use it as a key).
pub const EMPTY: u64 = u64::MAX;

/// An open-addressing map `u64 -> u32`.
pub struct IdMap {
    slots: Vec<(u64, u32)>,
    len: usize,
    shift: u32,
}

impl Default for IdMap {
    fn default() -> Self {
        IdMap::new()
    }
}

impl IdMap {
    /// An empty map.
    pub fn new() -> IdMap {
        IdMap::with_bits(10)
    }

    fn with_bits(bits: u32) -> IdMap {
        IdMap { slots: vec![(EMPTY, 0); 1 << bits], len: 0, shift: 64 - bits }
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: u64) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            let (k, v) = self.slots[i];
            if k == key {
                return Some(v);
            }
            if k == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Sets the value of a key that is not in the map (`key != EMPTY`).
    pub fn insert_new(&mut self, key: u64, value: u32) {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        self.place(key, value);
        self.len += 1;
    }

    fn place(&mut self, key: u64, value: u32) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        while self.slots[i].0 != EMPTY {
            i = (i + 1) & mask;
        }
        self.slots[i] = (key, value);
    }

    #[cold]
    fn grow(&mut self) {
        let bits = 64 - self.shift + 1;
        let old = std::mem::replace(self, IdMap::with_bits(bits));
        self.len = old.len;
        for (k, v) in old.slots {
            if k != EMPTY {
                self.place(k, v);
            }
        }
    }

    /// Entries.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn agrees_with_a_hash_map() {
        let mut m = IdMap::new();
        let mut oracle = HashMap::new();
        let mut x: u64 = 1;
        for i in 0..50_000u32 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let key = x >> 3;
            if oracle.contains_key(&key) {
                continue;
            }
            m.insert_new(key, i);
            oracle.insert(key, i);
        }
        assert_eq!(m.len(), oracle.len());
        for (&k, &v) in &oracle {
            assert_eq!(m.get(k), Some(v));
        }
        assert_eq!(m.get(12345), oracle.get(&12345).copied());
        assert!(IdMap::new().is_empty());
    }
}
