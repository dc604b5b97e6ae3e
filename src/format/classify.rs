//! Byte classes of a 32-byte block, as bit masks: the first step of the
//! fast path for the frequent records ([`super::hot`]).
//!
//! A canonical frequent line holds only a handful of byte values (spaces,
//! `-`, decimal and hex digits, `x`), so one pass that compares a block
//! against each class gives everything the line's grammar needs: bit `i`
//! of a mask is set when byte `i` of the block is in the class. Three
//! implementations compute the same masks: AVX2 (one 32-byte vector,
//! chosen at run time), SSE2 (two 16-byte vectors; every x86-64 has it)
//! and SWAR (four 8-byte words; any target). The tests compare them.

/// The classes of 32 bytes (bits 0..32 of each mask).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Classes {
    /// `\n` or `\r`.
    pub end: u64,
    /// `' '`.
    pub space: u64,
    /// `-`.
    pub minus: u64,
    /// `x` or `X`.
    pub x: u64,
    /// `0`-`9`.
    pub digit: u64,
    /// `a`-`f` or `A`-`F`.
    pub hex_letter: u64,
}

impl Classes {
    /// `self` for bits 0..32 and `high` for bits 32..64.
    #[inline(always)]
    pub fn join(self, high: Classes) -> Classes {
        Classes {
            end: self.end | high.end << 32,
            space: self.space | high.space << 32,
            minus: self.minus | high.minus << 32,
            x: self.x | high.x << 32,
            digit: self.digit | high.digit << 32,
            hex_letter: self.hex_letter | high.hex_letter << 32,
        }
    }
}

/// One way of computing [`Classes`].
pub(crate) trait Classifier {
    /// The classes of `block`.
    fn classify(&self, block: &[u8; 32]) -> Classes;

    /// The `\n` bytes of `block` (bit `i` for byte `i`).
    fn newlines(&self, block: &[u8; 32]) -> u64;

    /// The `' '` bytes of `block` (bit `i` for byte `i`).
    fn spaces(&self, block: &[u8; 32]) -> u64;
}

#[cfg_attr(all(target_arch = "x86_64", not(test)), allow(unused_imports))]
pub(crate) use swar::Swar;

/// The portable classifier (x86-64 uses it only in tests).
#[cfg_attr(all(target_arch = "x86_64", not(test)), allow(dead_code))]
mod swar {
    /// Four 8-byte words, with integer operations only.
    pub(crate) struct Swar;

    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;

    /// The high bit of each byte of `w` equal to `c`.
    #[inline(always)]
    fn eq(w: u64, c: u8) -> u64 {
        let t = w ^ (ONES * c as u64);
        // A byte of `t` is non-zero when its low seven bits carry into bit 7
        // or bit 7 is set already.
        !((t & LOW7).wrapping_add(LOW7) | t) & HIGH
    }

    /// The high bit of each byte of `w` in `lo..=hi` (`hi` below 0x80).
    #[inline(always)]
    fn in_range(w: u64, lo: u8, hi: u8) -> u64 {
        let at_least = |c: u8| ((w & LOW7).wrapping_add(ONES * (0x80 - c as u64))) & HIGH;
        at_least(lo) & !at_least(hi + 1) & !w & HIGH
    }

    /// The high bits of the bytes of `m` gathered into the low eight bits.
    #[inline(always)]
    fn gather(m: u64) -> u64 {
        ((m >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56
    }

    impl super::Classifier for Swar {
        #[inline(always)]
        fn classify(&self, block: &[u8; 32]) -> super::Classes {
            let mut c = super::Classes { end: 0, space: 0, minus: 0, x: 0, digit: 0, hex_letter: 0 };
            for (k, chunk) in block.chunks_exact(8).enumerate() {
                let mut b = [0u8; 8];
                b.copy_from_slice(chunk);
                let w = u64::from_le_bytes(b);
                let lower = w | 0x2020_2020_2020_2020;
                let s = 8 * k;
                c.end |= gather(eq(w, b'\n') | eq(w, b'\r')) << s;
                c.space |= gather(eq(w, b' ')) << s;
                c.minus |= gather(eq(w, b'-')) << s;
                c.x |= gather(eq(lower, b'x')) << s;
                c.digit |= gather(in_range(w, b'0', b'9')) << s;
                c.hex_letter |= gather(in_range(lower, b'a', b'f') & !(w & HIGH)) << s;
            }
            c
        }

        #[inline(always)]
        fn newlines(&self, block: &[u8; 32]) -> u64 {
            equal(block, b'\n')
        }

        fn spaces(&self, block: &[u8; 32]) -> u64 {
            equal(block, b' ')
        }
    }

    /// The bytes of `block` equal to `c` (bit `i` for byte `i`).
    #[inline(always)]
    fn equal(block: &[u8; 32], c: u8) -> u64 {
        let mut m = 0;
        for (k, chunk) in block.chunks_exact(8).enumerate() {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            m |= gather(eq(u64::from_le_bytes(b), c)) << (8 * k);
        }
        m
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) use x86::{Avx2, Sse2};

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Classes, Classifier};
    use std::arch::x86_64::*;

    /// Two 16-byte SSE2 vectors (part of every x86-64).
    pub(crate) struct Sse2;

    /// The classes of 16 bytes at `p`.
    ///
    /// # Safety
    /// `p` must point to 16 readable bytes.
    #[inline(always)]
    unsafe fn sse2_16(p: *const u8) -> Classes {
        let v = _mm_loadu_si128(p as *const __m128i);
        let lower = _mm_or_si128(v, _mm_set1_epi8(0x20));
        let is = |a: __m128i, c: u8| _mm_cmpeq_epi8(a, _mm_set1_epi8(c as i8));
        let mask = |m: __m128i| _mm_movemask_epi8(m) as u32 as u64;
        let d = _mm_sub_epi8(v, _mm_set1_epi8(b'0' as i8));
        let digit = _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d);
        let h = _mm_sub_epi8(lower, _mm_set1_epi8(b'a' as i8));
        let hex_letter = _mm_cmpeq_epi8(_mm_min_epu8(h, _mm_set1_epi8(5)), h);
        Classes {
            end: mask(_mm_or_si128(is(v, b'\n'), is(v, b'\r'))),
            space: mask(is(v, b' ')),
            minus: mask(is(v, b'-')),
            x: mask(is(lower, b'x')),
            digit: mask(digit),
            hex_letter: mask(hex_letter),
        }
    }

    impl Classifier for Sse2 {
        #[inline(always)]
        fn classify(&self, block: &[u8; 32]) -> Classes {
            // Safety: SSE2 is part of the x86-64 baseline; the block holds
            // 32 bytes, so both 16-byte loads are in bounds.
            let (lo, hi) = unsafe { (sse2_16(block.as_ptr()), sse2_16(block.as_ptr().add(16))) };
            Classes {
                end: lo.end | hi.end << 16,
                space: lo.space | hi.space << 16,
                minus: lo.minus | hi.minus << 16,
                x: lo.x | hi.x << 16,
                digit: lo.digit | hi.digit << 16,
                hex_letter: lo.hex_letter | hi.hex_letter << 16,
            }
        }

        #[inline(always)]
        fn newlines(&self, block: &[u8; 32]) -> u64 {
            Sse2::equal(block, b'\n')
        }

        fn spaces(&self, block: &[u8; 32]) -> u64 {
            Sse2::equal(block, b' ')
        }
    }

    impl Sse2 {
        /// The bytes of `block` equal to `c` (bit `i` for byte `i`).
        #[inline(always)]
        fn equal(block: &[u8; 32], c: u8) -> u64 {
            // Safety: SSE2 is part of the x86-64 baseline; the block holds
            // 32 bytes, so both 16-byte loads are in bounds.
            unsafe {
                let v = _mm_set1_epi8(c as i8);
                let lo = _mm_loadu_si128(block.as_ptr() as *const __m128i);
                let hi = _mm_loadu_si128(block.as_ptr().add(16) as *const __m128i);
                let lo = _mm_movemask_epi8(_mm_cmpeq_epi8(lo, v)) as u32 as u64;
                let hi = _mm_movemask_epi8(_mm_cmpeq_epi8(hi, v)) as u32 as u64;
                lo | hi << 16
            }
        }
    }

    /// One 32-byte AVX2 vector. A value exists only when the CPU has AVX2
    /// ([`Avx2::detect`]); it is fast only in code compiled with AVX2
    /// enabled (a `#[target_feature(enable = "avx2")]` function).
    #[derive(Clone, Copy)]
    pub(crate) struct Avx2 {
        _checked: (),
    }

    impl Avx2 {
        /// The classifier, when this CPU has AVX2.
        #[inline]
        pub fn detect() -> Option<Avx2> {
            if std::is_x86_feature_detected!("avx2") {
                Some(Avx2 { _checked: () })
            } else {
                None
            }
        }
    }

    impl Classifier for Avx2 {
        #[inline(always)]
        fn classify(&self, block: &[u8; 32]) -> Classes {
            // Safety: the block holds 32 bytes, and an `Avx2` value exists
            // only when the CPU has AVX2 (`Avx2::detect`).
            unsafe {
                let v = _mm256_loadu_si256(block.as_ptr() as *const __m256i);
                let lower = _mm256_or_si256(v, _mm256_set1_epi8(0x20));
                let d = _mm256_sub_epi8(v, _mm256_set1_epi8(b'0' as i8));
                let digit = _mm256_cmpeq_epi8(_mm256_min_epu8(d, _mm256_set1_epi8(9)), d);
                let h = _mm256_sub_epi8(lower, _mm256_set1_epi8(b'a' as i8));
                let hex_letter = _mm256_cmpeq_epi8(_mm256_min_epu8(h, _mm256_set1_epi8(5)), h);
                let nl = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'\n' as i8));
                let cr = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'\r' as i8));
                let space = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b' ' as i8));
                let minus = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'-' as i8));
                let x = _mm256_cmpeq_epi8(lower, _mm256_set1_epi8(b'x' as i8));
                Classes {
                    end: _mm256_movemask_epi8(_mm256_or_si256(nl, cr)) as u32 as u64,
                    space: _mm256_movemask_epi8(space) as u32 as u64,
                    minus: _mm256_movemask_epi8(minus) as u32 as u64,
                    x: _mm256_movemask_epi8(x) as u32 as u64,
                    digit: _mm256_movemask_epi8(digit) as u32 as u64,
                    hex_letter: _mm256_movemask_epi8(hex_letter) as u32 as u64,
                }
            }
        }

        #[inline(always)]
        fn newlines(&self, block: &[u8; 32]) -> u64 {
            self.equal(block, b'\n')
        }

        fn spaces(&self, block: &[u8; 32]) -> u64 {
            self.equal(block, b' ')
        }
    }

    impl Avx2 {
        /// The bytes of `block` equal to `c` (bit `i` for byte `i`).
        #[inline(always)]
        fn equal(&self, block: &[u8; 32], c: u8) -> u64 {
            // Safety: as in `classify`.
            unsafe {
                let v = _mm256_loadu_si256(block.as_ptr() as *const __m256i);
                _mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_set1_epi8(c as i8))) as u32 as u64
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Byte by byte, the definition of each class.
    fn naive(block: &[u8; 32]) -> Classes {
        let mut c = Classes { end: 0, space: 0, minus: 0, x: 0, digit: 0, hex_letter: 0 };
        for (i, &b) in block.iter().enumerate() {
            let bit = 1u64 << i;
            if b == b'\n' || b == b'\r' {
                c.end |= bit;
            }
            if b == b' ' {
                c.space |= bit;
            }
            if b == b'-' {
                c.minus |= bit;
            }
            if b == b'x' || b == b'X' {
                c.x |= bit;
            }
            if b.is_ascii_digit() {
                c.digit |= bit;
            }
            if matches!(b, b'a'..=b'f' | b'A'..=b'F') {
                c.hex_letter |= bit;
            }
        }
        c
    }

    #[test]
    fn every_byte_value_in_every_position() {
        for b in 0..=255u8 {
            for pos in 0..32 {
                let mut block = [b'5'; 32];
                block[pos] = b;
                // A neighbour with the high bit set must not disturb a byte.
                block[(pos + 1) % 32] = 0x80 | b;
                let want = naive(&block);
                let lines = block.iter().enumerate().filter(|(_, &c)| c == b'\n').fold(0u64, |m, (i, _)| m | 1 << i);
                assert_eq!(Swar.newlines(&block), lines, "swar newlines {b:#x} at {pos}");
                assert_eq!(Swar.spaces(&block), want.space, "swar spaces {b:#x} at {pos}");
                #[cfg(target_arch = "x86_64")]
                {
                    assert_eq!(Sse2.newlines(&block), lines, "sse2 newlines {b:#x} at {pos}");
                    assert_eq!(Sse2.spaces(&block), want.space, "sse2 spaces {b:#x} at {pos}");
                    if let Some(a) = Avx2::detect() {
                        assert_eq!(a.newlines(&block), lines, "avx2 newlines {b:#x} at {pos}");
                        assert_eq!(a.spaces(&block), want.space, "avx2 spaces {b:#x} at {pos}");
                    }
                }
                assert_eq!(Swar.classify(&block), want, "swar {b:#x} at {pos}");
                #[cfg(target_arch = "x86_64")]
                {
                    assert_eq!(Sse2.classify(&block), want, "sse2 {b:#x} at {pos}");
                    if let Some(a) = Avx2::detect() {
                        assert_eq!(a.classify(&block), want, "avx2 {b:#x} at {pos}");
                    }
                }
            }
        }
    }
}
