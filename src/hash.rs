//! A cheap seeded hasher for hot maps: the live store's block index
//! (`u64` block ids), the trace importer's definition tables (type
//! handles, stacks).
//!
//! The standard library's SipHash costs about 40 instructions per `u64` key;
//! the live store looks a block up by its id on most allocations and moves
//! that miss its small cache of recent blocks (measured: 1.7% of the
//! simulation's instructions on a `--preset medium` log). This hasher mixes
//! the key with a per-map random seed by two folded 64x64->128-bit
//! multiplies (the high and low halves xor-ed), so that every key bit reaches the bits
//! the hash table uses (the low ones pick the bucket, the top seven the
//! control byte) and ids that differ only in high bits (sparse 64-bit heaps)
//! do not collide. The seed comes from the standard library's per-process
//! randomness, so a log cannot be written to make chosen ids collide.

use std::hash::{BuildHasher, Hasher};

/// Odd multiplier (the fractional part of the golden ratio, times 2^64).
const K: u64 = 0x9E37_79B9_7F4A_7C15;
/// A second odd multiplier (one round alone leaves ids 2^40 apart in 43%
/// of the buckets instead of a random function's 63%; see the tests).
const K2: u64 = 0xD6E8_FEB8_6659_FD93;

/// Builds [`BlockHasher`]s that share one random seed.
#[derive(Clone, Debug)]
pub(crate) struct BlockHashState {
    seed: u64,
}

impl Default for BlockHashState {
    fn default() -> Self {
        // One SipHash of a constant under a fresh random key: a random seed.
        let seed = std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64);
        BlockHashState { seed }
    }
}

impl BuildHasher for BlockHashState {
    type Hasher = BlockHasher;

    #[inline]
    fn build_hasher(&self) -> BlockHasher {
        BlockHasher { state: self.seed }
    }
}

/// The hasher (see the module documentation); keys other than a `u64`
/// are hashed eight bytes at a time.
#[derive(Clone, Debug)]
pub(crate) struct BlockHasher {
    state: u64,
}

/// The folded multiply of `a` and `b`.
#[inline]
fn fold(a: u64, b: u64) -> u64 {
    let m = (a as u128).wrapping_mul(b as u128);
    (m as u64) ^ ((m >> 64) as u64)
}

impl Hasher for BlockHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
    }

    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.state = fold(fold(self.state ^ x, K) ^ self.state, K2);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.state
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    /// How many distinct values the low `bits` bits of the hashes of `keys`
    /// take.
    fn low_bits_spread(s: &BlockHashState, keys: impl Iterator<Item = u64>, bits: u32) -> usize {
        keys.map(|k| s.hash_one(k) & ((1 << bits) - 1)).collect::<HashSet<_>>().len()
    }

    #[test]
    fn high_bit_keys_spread_over_buckets() {
        // 4096 ids that differ only above bit 40 (blocks 2^40 apart): a
        // plain multiply would send them all to one bucket of a table of
        // 4096 buckets; here they spread like random values (a random
        // function fills about 63% of the buckets).
        let s = BlockHashState::default();
        let n = low_bits_spread(&s, (0..4096u64).map(|i| i << 40), 12);
        assert!(n > 2200, "{n} buckets of 4096");
        let n = low_bits_spread(&s, 0..4096u64, 12);
        assert!(n > 2200, "{n} buckets of 4096");
    }

    #[test]
    fn a_plain_multiply_would_fail_that_test() {
        // The test above can fail: without the fold, ids 2^40 apart share
        // their low bits.
        let n = (0..4096u64).map(|i| (i << 40).wrapping_mul(K) & 0xfff).collect::<HashSet<_>>().len();
        assert_eq!(n, 1);
    }

    #[test]
    fn one_round_would_fail_that_test() {
        // One folded multiply alone: ids 2^40 apart fill only about 43% of
        // the buckets, whatever the seed.
        for seed in [0u64, 12345, 0xdead_beef_0bad_f00d] {
            let n = (0..4096u64).map(|i| fold(seed ^ (i << 40), K) & 0xfff).collect::<HashSet<_>>().len();
            assert!(n < 2000, "{n}");
        }
    }

    #[test]
    fn seeds_differ_and_maps_work() {
        let (a, b) = (BlockHashState::default(), BlockHashState::default());
        assert_ne!(a.hash_one(7u64), b.hash_one(7u64));
        let mut m: HashMap<u64, u32, BlockHashState> = HashMap::default();
        for i in 0..10_000u64 {
            m.insert(i * 0x1_0000_0001, i as u32);
        }
        assert!((0..10_000u64).all(|i| m.get(&(i * 0x1_0000_0001)) == Some(&(i as u32))));
        assert_eq!(m.get(&3), None);
    }
}
