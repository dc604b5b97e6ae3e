//! The fast path for the frequent records (`!`, `c`, `i`, `u`, `v`).
//!
//! Nearly every line of a large log is one of these five records, written
//! by the profiler in one canonical form: the kind letter, then for each
//! field one space and a number (decimal with an optional `-`, or `0x` and
//! hex digits), then `\n` (or `\r`). For such a line the general reader
//! ([`super::reader`]) yields the record and no warning. This module
//! recognises exactly that form in one pass over the line, eight bytes at a
//! time (SWAR: the digits of a word are classified, counted and converted
//! with a few integer operations, no loop per digit), and declines anything
//! else: two blanks, a missing number, a number long enough to overflow,
//! text after the numbers, a line near the end of the file. The general
//! reader then reads the line, so the result is the same either way.

use super::ids::{Address, StackId, ThreadId};
use super::record::{Kind, Record};
use super::records::{Alloc, Call, Moved, Survived, Tick};

/// Bytes that must follow a record's kind letter for the fast path to run
/// (the longest canonical line, plus the eight bytes a load may read past
/// the last digit).
const WINDOW: usize = 80;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;
const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;

/// Powers of ten up to 10^8.
const POW10: [u64; 9] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000];

#[inline(always)]
fn load(d: &[u8], p: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[p..p + 8]);
    u64::from_le_bytes(b)
}

/// The high bit of each byte of `w` that is at least `c` (for bytes below
/// 0x80; the caller excludes the others).
#[inline(always)]
fn at_least(w: u64, c: u8) -> u64 {
    ((w & LOW7).wrapping_add(ONES * (0x80 - c as u64))) & HIGH
}

/// The high bit of each byte of `w` that lies in `lo..=hi` (ASCII only).
#[inline(always)]
fn in_range(w: u64, lo: u8, hi: u8) -> u64 {
    at_least(w, lo) & !at_least(w, hi + 1) & !w & HIGH
}

/// How many of the first bytes of a classification mask are set.
#[inline(always)]
fn leading(mask: u64) -> usize {
    ((!mask & HIGH).trailing_zeros() / 8) as usize
}

/// The value of the first `n` (1..=8) decimal digits of `w`.
#[inline(always)]
fn dec8(w: u64, n: usize) -> u64 {
    // Byte 0 holds the most significant digit: each step multiplies the
    // lower (more significant) half of a lane and adds it to the upper.
    let v = (w & 0x0F0F_0F0F_0F0F_0F0F) << (8 * (8 - n));
    let v = (v.wrapping_mul(10 << 8 | 1) >> 8) & 0x00FF_00FF_00FF_00FF;
    let v = (v.wrapping_mul(100 << 16 | 1) >> 16) & 0x0000_FFFF_0000_FFFF;
    v.wrapping_mul(10_000 << 32 | 1) >> 32
}

/// The value of the first `n` (1..=8) hex digits of `w`.
#[inline(always)]
fn hex8(w: u64, n: usize) -> u64 {
    // '0'-'9' keep their low nibble; letters (bit 6 set) add 9.
    let nib = (w & 0x0F0F_0F0F_0F0F_0F0F) + ((w >> 6) & ONES) * 9;
    let v = nib << (8 * (8 - n));
    // Byte 0 holds the most significant digit: pair, then quad, then all.
    let v = ((v & 0x000F_000F_000F_000F) << 4) | ((v >> 8) & 0x000F_000F_000F_000F);
    let v = ((v & 0x0000_00FF_0000_00FF) << 8) | ((v >> 16) & 0x0000_00FF_0000_00FF);
    ((v & 0xFFFF) << 16) | ((v >> 32) & 0xFFFF)
}

#[inline(always)]
fn hex_mask(w: u64) -> u64 {
    in_range(w, b'0', b'9') | in_range(w | 0x2020_2020_2020_2020, b'a', b'f')
}

/// Reads one number at `p` (just after its blank). `wide`: a 64-bit field
/// (up to 16 digits either way); otherwise up to 9 decimal or 8 hex digits,
/// so that no value overflows its field. Returns the bits as the general
/// reader computes them and the position after the last digit.
#[inline(always)]
fn number(d: &[u8], p: usize, wide: bool) -> Option<(u64, usize)> {
    let negative = d[p] == b'-';
    let p = p + negative as usize;
    let w = load(d, p);
    let (magnitude, end) = if (w & 0xFFFF) | 0x2000 == 0x7830 {
        // "0x" or "0X"
        let w1 = load(d, p + 2);
        let n1 = leading(hex_mask(w1));
        if n1 == 0 {
            return None;
        }
        let v1 = hex8(w1, n1);
        if n1 < 8 {
            (v1, p + 2 + n1)
        } else {
            let w2 = load(d, p + 10);
            let n2 = leading(hex_mask(w2));
            if n2 == 0 {
                (v1, p + 10)
            } else if !wide || (n2 == 8 && hex_mask(d[p + 18] as u64) != 0) {
                return None;
            } else {
                ((v1 << (4 * n2)) | hex8(w2, n2), p + 10 + n2)
            }
        }
    } else {
        let n1 = leading(in_range(w, b'0', b'9'));
        if n1 == 0 {
            return None;
        }
        let v1 = dec8(w, n1);
        if n1 < 8 {
            (v1, p + n1)
        } else {
            let w2 = load(d, p + 8);
            let n2 = leading(in_range(w2, b'0', b'9'));
            if n2 == 0 {
                (v1, p + 8)
            } else if (!wide && n2 > 1) || (n2 == 8 && in_range(d[p + 16] as u64, b'0', b'9') != 0) {
                return None;
            } else {
                (v1 * POW10[n2] + dec8(w2, n2), p + 8 + n2)
            }
        }
    };
    let bits = if negative { magnitude.wrapping_neg() } else { magnitude };
    Some((bits, end))
}

/// Reads `N` fields (`wide[k]`: field `k` is 64-bit), each after exactly
/// one space, then the line end; returns the values and the length read,
/// line end included.
#[inline(always)]
fn fields<const N: usize>(d: &[u8], wide: [bool; N]) -> Option<([u64; N], usize)> {
    let mut out = [0u64; N];
    let mut p = 0;
    for k in 0..N {
        if d[p] != b' ' {
            return None;
        }
        let (v, e) = number(d, p + 1, wide[k])?;
        out[k] = v;
        p = e;
    }
    match d[p] {
        b'\n' => Some((out, p + 1)),
        b'\r' => Some((out, p + 1 + (d[p + 1] == b'\n') as usize)),
        _ => None,
    }
}

/// Parses a frequent record whose kind letter has just been read: `rest`
/// is what follows the letter. Returns the record and the bytes it takes
/// (the line end included), or `None` when the line is not in the
/// canonical form (the general reader then reads it).
#[inline(always)]
pub(crate) fn record<'a>(kind: Kind, rest: &[u8]) -> Option<(Record<'a>, usize)> {
    if rest.len() < WINDOW {
        return None;
    }
    let d = &rest[..WINDOW];
    match kind {
        Kind::Alloc => {
            let ([t, a, s], n) = fields(d, [false, true, false])?;
            let r = Alloc { thread: Some(ThreadId(t as i32)), address: Address(a), stack: StackId(s as i32) };
            Some((Record::Alloc(r), n))
        }
        Kind::Call => {
            let ([t, s], n) = fields(d, [false, false])?;
            Some((Record::Call(Call { thread: ThreadId(t as i32), stack: StackId(s as i32) }), n))
        }
        Kind::Tick => {
            let ([ms], n) = fields(d, [false])?;
            Some((Record::Tick(Tick { ms: ms as u32 }), n))
        }
        Kind::Moved => {
            let ([old, new, length], n) = fields(d, [true, true, false])?;
            Some((Record::Moved(Moved { old: Address(old), new: Address(new), length: length as u32 }), n))
        }
        Kind::Survived => {
            let ([start, length], n) = fields(d, [true, false])?;
            Some((Record::Survived(Survived { start: Address(start), length: length as u32 }), n))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::RecordReader;

    /// The general reader's answer for the first line of `text`.
    fn general(text: &[u8]) -> (Record<'_>, usize, bool) {
        let mut r = RecordReader::new(text).general_only();
        let p = r.next_record().unwrap_or_else(|| panic!("no record in {:?}", String::from_utf8_lossy(text)));
        (p.record, r.offset(), r.diagnostics().total() == 0 && !p.at_end_of_file)
    }

    fn check(line: &str) {
        let mut text = line.as_bytes().to_vec();
        text.extend_from_slice(&[b'x'; WINDOW + 8]);
        let kind = Kind::from_byte(text[0]).unwrap_or(Kind::Comment);
        let fast = record(kind, &text[1..]);
        let (rec, len, clean) = general(&text);
        match fast {
            Some((r, n)) => {
                assert!(clean, "fast path took a line with warnings: {line:?}");
                assert_eq!((r, n + 1), (rec, len), "{line:?}");
            }
            None => {
                // Declining is always allowed; it must happen for anything
                // with a warning.
            }
        }
        if !clean {
            assert!(fast.is_none(), "{line:?}");
        }
    }

    #[test]
    fn canonical_lines_are_taken() {
        for line in [
            "! 1 0x0000013600001000 7\n",
            "! 12 0x7ffe12345678 123456\n",
            "! -1 0xABCDEF 0\n",
            "c 3 99\n",
            "i 123456789\n",
            "u 0x1000 0x2000 4096\n",
            "u 0xffffffffffffffff 0x0 999999999\n",
            "v 0x0000000012340000 24\r\n",
            "! 1 1234567890123456 5\n",
        ] {
            let mut text = line.as_bytes().to_vec();
            text.extend_from_slice(&[b'x'; WINDOW]);
            let kind = Kind::from_byte(text[0]).unwrap_or(Kind::Comment);
            assert!(record(kind, &text[1..]).is_some(), "{line:?}");
            check(line);
        }
    }

    #[test]
    fn odd_lines_agree_or_decline() {
        for line in [
            "! 1  0x10 7\n",
            "! 1 0x10 7 \n",
            "! 1 0x10\n",
            "! 1 0x 7\n",
            "! 1 0x10 7x\n",
            "! 1 0x10 4294967296\n",
            "! 1 0x10 1234567890\n",
            "! 1 0x10000000000000000 1\n",
            "! 1 0x00000000000000001 1\n",
            "! 1 12345678901234567890 1\n",
            "i -\n",
            "i 0x123456789\n",
            "i\t5\n",
            "c 1 2\r3\n",
            "u 0x1 -0x2 3\n",
            "v 0x10 -5\n",
        ] {
            check(line);
        }
    }

    #[test]
    fn random_lines_agree() {
        // Lines of (nearly) the right shape: fields of random form and
        // length, mostly one space apart, mostly ending in a line end.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut taken = 0;
        for _ in 0..300_000 {
            let r = next();
            let kind = b"!ciuv"[(r % 5) as usize];
            let fields = [3u64, 2, 1, 3, 2][(r % 5) as usize] + u64::from(r >> 8 & 15 == 0);
            let mut line = vec![kind];
            for _ in 0..fields {
                let r = next();
                line.extend_from_slice(match r % 64 {
                    0 => b"  ",
                    1 => b"\t",
                    2 => b"",
                    _ => b" ",
                });
                if (r >> 6) % 16 == 0 {
                    line.push(b'-');
                }
                let hex = (r >> 10) % 2 == 0;
                if hex {
                    line.extend_from_slice(if (r >> 11) % 8 == 0 { b"0X" } else { b"0x" });
                }
                let digits = match (r >> 14) % 4 {
                    0 => (r >> 16) % 21,
                    _ => 1 + (r >> 16) % 16,
                };
                for k in 0..digits {
                    let d = (next() >> (k % 8)) % if hex { 22 } else { 10 };
                    line.push(b"0123456789abcdefABCDEF"[d as usize]);
                }
                if (r >> 22) % 64 == 0 {
                    line.push(b"xg:/@`G "[((r >> 28) % 8) as usize]);
                }
            }
            line.extend_from_slice(match next() % 32 {
                0 => b"\r\n",
                1 => b"\r",
                2 => b" \n",
                3 => b"\rz\n",
                _ => b"\n",
            });
            let text = String::from_utf8(line).unwrap_or_default();
            let mut padded = text.clone().into_bytes();
            padded.extend_from_slice(&[b'x'; WINDOW]);
            if let Some(k) = Kind::from_byte(padded[0]) {
                taken += record(k, &padded[1..]).is_some() as u32;
            }
            check(&text);
        }
        assert!(taken > 50_000, "only {taken} lines took the fast path");
    }
}
