//! A fast, deterministic hasher for the generator's integer-keyed maps
//! (stack interning, call-tree children). Keys are packed `u64`s, so a
//! strong 64-bit finalizer (murmur3's fmix64) is all that is needed;
//! SipHash would cost more than the rest of an allocation.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Hashes integers with murmur3's 64-bit finalizer.
#[derive(Default, Clone, Copy)]
pub struct Fmix64(u64);

impl Hasher for Fmix64 {
    #[inline]
    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        h ^= h >> 33;
        h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
        h ^ (h >> 33)
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0 ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ v;
    }

    #[inline]
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64)
    }
}

/// A `HashMap` keyed by integers, hashed with [`Fmix64`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<Fmix64>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_work_and_spread() {
        let mut m: FastMap<u64, u32> = FastMap::default();
        for i in 0..10_000u64 {
            m.insert(i << 40 | i, i as u32);
        }
        assert_eq!(m.len(), 10_000);
        assert_eq!(m.get(&(77 << 40 | 77)), Some(&77));
        let mut h = Fmix64::default();
        h.write_u64(1);
        let a = h.finish();
        let mut h = Fmix64::default();
        h.write_u64(2);
        assert_ne!(a & 0xff, h.finish() & 0xff);
    }
}
