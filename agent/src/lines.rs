//! Binary thread records ([`crate::threadlog`]) formatted to log lines,
//! on the drain: `! tid 0xaddr stack` and `c tid stack`, byte for byte
//! what `clrprof::format::write_record` writes for the same records (the
//! tests below compare the two on random records).
//!
//! A thread's records share its id, so the line's start (`! tid 0x`,
//! `c tid `) is formatted once per thread; lines are written straight
//! into room reserved for the whole batch (assembling each in a small
//! array and copying it cost a store-forwarding stall per line).

use crate::threadlog::{kind, take_text, Slot};

const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// The longest line: `! -2147483648 0x` + 16 digits + ` -2147483648\n`.
const MAX_LINE: usize = 48;
/// Room a line is given (more than the longest).
const COPY: usize = 64;

/// The start of a thread's `!` and `c` lines.
#[derive(Clone, Copy, Debug)]
pub struct Prefixes {
    alloc: [u8; 24],
    alloc_len: usize,
    call: [u8; 24],
    call_len: usize,
}

impl Prefixes {
    /// The prefixes of thread `tid`.
    pub fn new(tid: i32) -> Prefixes {
        let mut digits = [0u8; COPY];
        // Safety: `digits` has room for any i32.
        let n = unsafe { put_dec(digits.as_mut_ptr(), tid) };
        let mut p = Prefixes { alloc: [0; 24], alloc_len: 0, call: [0; 24], call_len: 0 };
        for (buf, len, head, tail) in
            [(&mut p.alloc, &mut p.alloc_len, &b"! "[..], &b" 0x"[..]), (&mut p.call, &mut p.call_len, &b"c "[..], &b" "[..])]
        {
            let parts = [head, &digits[..n], tail];
            let mut at = 0;
            for part in parts {
                buf[at..at + part.len()].copy_from_slice(part);
                at += part.len();
            }
            *len = at;
        }
        p
    }
}

/// Decimal digits of `u`.
#[inline]
fn digits(u: u32) -> usize {
    if u < 10 {
        1
    } else if u < 100 {
        2
    } else if u < 1000 {
        3
    } else if u < 10_000 {
        4
    } else if u < 100_000 {
        5
    } else {
        u.ilog10() as usize + 1
    }
}

/// Writes `v` in decimal at `dst`; returns the bytes written.
///
/// # Safety
/// `dst` is valid for 11 bytes of writes.
#[inline]
unsafe fn put_dec(dst: *mut u8, v: i32) -> usize {
    let mut at = 0;
    // Safety (all writes): within the first 11 bytes of `dst`, the sign
    // and at most 10 digits.
    unsafe {
        if v < 0 {
            *dst = b'-';
            at = 1;
        }
        let mut u = v.unsigned_abs();
        let n = digits(u);
        let mut end = at + n;
        while u >= 100 {
            let d = (u % 100) as usize * 2;
            u /= 100;
            end -= 2;
            std::ptr::copy_nonoverlapping(PAIRS.as_ptr().add(d), dst.add(end), 2);
        }
        if u >= 10 {
            std::ptr::copy_nonoverlapping(PAIRS.as_ptr().add(u as usize * 2), dst.add(end - 2), 2);
        } else {
            *dst.add(end - 1) = b'0' + u as u8;
        }
        at + n
    }
}

/// Eight nibbles (`v`, most significant first) as eight ASCII hex digits
/// in memory order (a little-endian u64's bytes), without a loop: spread
/// one nibble per byte, then add `'0'`, and `'a' - '0' - 10` more where a
/// nibble is 10 or more.
#[inline]
fn hex8(v: u32) -> u64 {
    let x = v as u64;
    let x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
    let x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
    let x = (x | (x << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    // Bytes holding 10..15 carry into bit 4 when 6 is added.
    let letters = ((x + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
    let ascii = x + 0x3030_3030_3030_3030 + letters * (b'a' - b'0' - 10) as u64;
    // Byte i holds nibble i (least significant first): reverse.
    ascii.swap_bytes().to_le()
}

/// Writes `v` in lower-case hex (no leading zeros, `0` for zero) at
/// `dst`; returns the digits written. Writes sixteen bytes (the digits,
/// then bytes the caller overwrites).
///
/// # Safety
/// `dst` is valid for 16 bytes of writes.
#[inline]
unsafe fn put_hex(dst: *mut u8, v: u64) -> usize {
    let n = if v == 0 { 1 } else { (67 - v.leading_zeros() as usize) / 4 };
    // The first `n` digits of the shifted value are `v`'s.
    let w = v << (4 * (16 - n));
    // Safety: the caller's contract; unaligned 8-byte writes.
    unsafe {
        (dst as *mut u64).write_unaligned(hex8((w >> 32) as u32));
        (dst.add(8) as *mut u64).write_unaligned(hex8(w as u32));
    }
    n
}

/// Writes one record's line at `dst`; returns its length (0 for TEXT and
/// TICK slots, which are not lines of their own).
///
/// # Safety
/// `dst` is valid for [`COPY`] bytes of writes.
#[inline]
unsafe fn put_line(dst: *mut u8, p: &Prefixes, s: &Slot) -> usize {
    let (prefix, mut at) = match s.kind {
        kind::ALLOC => (&p.alloc, p.alloc_len),
        kind::CALL => (&p.call, p.call_len),
        _ => return 0,
    };
    // Safety: the longest line is MAX_LINE bytes, and the widest writes
    // (24 bytes of prefix, 16 of hex, 11 of decimal) end before COPY.
    unsafe {
        std::ptr::copy_nonoverlapping(prefix.as_ptr(), dst, 24);
        if s.kind == kind::ALLOC {
            at += put_hex(dst.add(at), s.word);
            *dst.add(at) = b' ';
            at += 1;
        }
        at += put_dec(dst.add(at), s.value as i32);
        *dst.add(at) = b'\n';
    }
    at + 1
}

/// Appends the lines of `slots` (one thread's, in order) to `out`. TEXT
/// slots are taken over (their lines appended, their memory freed), so
/// each batch of slots is formatted once.
pub fn format(out: &mut Vec<u8>, p: &Prefixes, slots: &[Slot]) {
    let mut i = 0;
    while i < slots.len() {
        // Lines up to the next TEXT slot go straight into reserved room.
        let run = slots[i..].iter().position(|s| s.kind == kind::TEXT).unwrap_or(slots.len() - i);
        out.reserve(run * MAX_LINE + COPY);
        let mut len = out.len();
        let base = out.as_mut_ptr();
        for s in &slots[i..i + run] {
            // Safety: `reserve` made room for `run` lines of at most
            // MAX_LINE bytes plus COPY: each line's COPY bytes of writes
            // start at most `(run - 1) * MAX_LINE` past the old length.
            len += unsafe { put_line(base.add(len), p, s) };
        }
        // Safety: every byte up to `len` was written above.
        unsafe { out.set_len(len) };
        i += run;
        if let Some(s) = slots.get(i) {
            // Safety: the drain formats each slot once.
            let text = unsafe { take_text(s) };
            out.extend_from_slice(&text);
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clrprof::format::records::{Alloc, Call};
    use clrprof::format::{write_record, Address, Record, StackId, Style, ThreadId};
    use proptest::prelude::*;

    /// Hex digits one at a time: the oracle for `hex_wide`.
    fn hex(buf: &mut [u8], at: usize, v: u64) -> usize {
        const LOWER: &[u8; 16] = b"0123456789abcdef";
        let n = if v == 0 { 1 } else { (67 - v.leading_zeros() as usize) / 4 };
        for i in 0..n {
            buf[at + n - 1 - i] = LOWER[((v >> (4 * i)) & 15) as usize];
        }
        at + n
    }

    /// What the agent wrote before binary records: `write_record`.
    fn oracle(tid: i32, s: &Slot) -> Vec<u8> {
        let mut out = Vec::new();
        let r = match s.kind {
            kind::ALLOC => Record::Alloc(Alloc {
                thread: Some(ThreadId(tid)),
                address: Address(s.word),
                stack: StackId(s.value as i32),
            }),
            kind::CALL => Record::Call(Call { thread: ThreadId(tid), stack: StackId(s.value as i32) }),
            _ => return out,
        };
        write_record(&mut out, &r, Style::BITS64);
        out
    }

    fn slot() -> impl Strategy<Value = Slot> {
        let word = prop_oneof![any::<u64>(), 0u64..256, Just(0u64), Just(u64::MAX), 0x7f00_0000_0000u64..0x7fff_ffff_ffff];
        let value = prop_oneof![any::<u32>(), 0u32..1000, Just(i32::MIN as u32), Just(i32::MAX as u32), Just(0u32)];
        (word, value, prop_oneof![Just(kind::ALLOC), Just(kind::CALL)]).prop_map(|(word, value, kind)| Slot { word, value, kind })
    }

    proptest! {
        #[test]
        fn lines_equal_write_record(tid in prop_oneof![any::<i32>(), 1i32..100_000], slots in proptest::collection::vec(slot(), 0..200)) {
            let p = Prefixes::new(tid);
            let mut got = b"z before\n".to_vec();
            format(&mut got, &p, &slots);
            let mut want = b"z before\n".to_vec();
            for s in &slots {
                want.extend_from_slice(&oracle(tid, s));
            }
            prop_assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(&want));
        }
    }

    #[test]
    fn text_slots_keep_their_place() {
        let p = Prefixes::new(42);
        let slots = [Slot::alloc(0x10, 3), Slot::text(b"z hello\n".to_vec()), Slot::call(7), Slot::text(b"z x\n".to_vec())];
        let mut got = Vec::new();
        format(&mut got, &p, &slots);
        assert_eq!(String::from_utf8(got).unwrap(), "! 42 0x10 3\nz hello\nc 42 7\nz x\n");
    }

    proptest! {
        #[test]
        fn put_hex_equals_hex(v in any::<u64>(), shift in 0u32..64) {
            let v = v >> shift;
            let mut plain = [0u8; 32];
            let n = hex(&mut plain, 3, v);
            let mut wide = [0u8; 32];
            // Safety: 16 bytes of room from offset 3.
            prop_assert_eq!(unsafe { put_hex(wide.as_mut_ptr().add(3), v) } + 3, n);
            prop_assert_eq!(&wide[3..n], &plain[3..n]);
        }
    }

    #[test]
    fn extremes() {
        for (tid, s) in [(i32::MIN, Slot::alloc(u64::MAX, i32::MIN)), (0, Slot::alloc(0, 0)), (i32::MAX, Slot::call(i32::MAX))] {
            let mut got = Vec::new();
            format(&mut got, &Prefixes::new(tid), &[s]);
            assert_eq!(got, oracle(tid, &s));
        }
    }
}
