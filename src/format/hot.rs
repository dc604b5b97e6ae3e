//! The fast path for the frequent records (`!`, `c`, `i`, `u`, `v`, `o`).
//!
//! Nearly every line of a large log is one of these six records, written
//! by the profiler in one canonical form: the kind letter, then for each
//! field one space and a number (decimal with an optional `-`, or `0x` and
//! hex digits), then `\n` (or `\r`, `\r\n`). For such a line the general
//! reader ([`super::reader`]) yields the record and no warning.
//!
//! This module recognises exactly that form. The 32 (or 64) bytes after the
//! kind letter are classified at once ([`super::classify`]: AVX2 when the
//! CPU has it, else SSE2 or SWAR), and a few operations on the resulting
//! bit masks check the whole line's grammar: only blanks, signs, digits and
//! `x` before the first line end; every space followed by a number; a sign
//! only at a number's start; `x` only as the second byte of a number that
//! starts with `0`; hex letters only after such an `x`. A loop over the
//! fields then checks each number's length (so that none overflows its
//! field) and converts it eight digits at a time. Anything else is
//! declined: two blanks, a tab, a missing number, text after the numbers,
//! a number long enough to overflow, an `o` line longer than 64 bytes, a
//! line near the end of the file. The general reader then reads the line,
//! so the records and warnings are the same either way.
//!
//! ```text
//!  kind  window: the 80 bytes after the kind letter (64 classified)
//!   |    |
//!   !␠12185␠0x21300001000␠2⏎
//!    s     s              s e      s: space (field start follows)
//!     f     f x            f       f: first digit, x: hex marker
//! ```

use super::classify::{Classes, Classifier};
#[cfg(not(target_arch = "x86_64"))]
use super::classify::Swar;
#[cfg(target_arch = "x86_64")]
use super::classify::{Avx2, Sse2};
use super::ids::{Address, StackId, ThreadId, TypeId};
use super::list::List;
use super::reader::FrequentVisitor;
use super::record::{Kind, Parsed, Record};
use super::records::{Alloc, Call, HeapObject, Moved, Survived, Tick};

/// Bytes that must follow a record's kind letter for the fast path to run:
/// the 64 classified bytes, plus room for the 16-byte loads of a number
/// that ends at the last of them.
pub(crate) const WINDOW: usize = 80;

const ONES: u64 = 0x0101_0101_0101_0101;

/// Powers of ten up to 10^8.
const POW10: [u64; 9] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000];

#[inline(always)]
fn load(d: &[u8; WINDOW], p: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[p..p + 8]);
    u64::from_le_bytes(b)
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

/// A canonical line, as found by [`shape`]: where its numbers are.
struct Shape {
    /// One bit per number not yet read: its first digit (after any `-`).
    first: u64,
    /// One bit per number not yet read: the byte after it (a space or the
    /// line end).
    after: u64,
    /// `x` markers of hex numbers.
    x: u64,
    /// `-` signs, shifted onto the first digit they negate.
    negative: u64,
    /// Numbers on the line.
    fields: u32,
    /// The line end's position.
    end: usize,
}

/// Checks the grammar of the line at the start of `d` with masks (see the
/// module comment); `None` when it is not canonical.
#[inline(always)]
fn shape<C: Classifier>(c: &C, d: &[u8; WINDOW]) -> Option<Shape> {
    let (head, tail) = d.split_at(32);
    let mut m: Classes = c.classify(head.try_into().ok()?);
    if m.end == 0 {
        m = m.join(c.classify(tail.get(..32)?.try_into().ok()?));
        if m.end == 0 {
            return None;
        }
    }
    let e = m.end.trailing_zeros();
    let line = (1u64 << e) - 1;
    let space = m.space & line;
    let minus = m.minus & line;
    let x = m.x & line;
    let digit = m.digit & line;
    let hex_letter = m.hex_letter & line;
    // Only these bytes before the line end, and a space right after the
    // kind letter.
    let mut bad = (space | minus | x | digit | hex_letter) ^ line;
    bad |= !space & 1;
    // After each space a digit or a sign (not a blank, not the line end).
    let starts = space << 1;
    bad |= starts & !(digit | minus);
    // A sign only at a number's start, and a digit after it.
    bad |= minus & !starts;
    let first = (starts & !minus) | (minus << 1);
    bad |= first & !digit;
    // `x` only as a number's second byte, and a hex digit after it.
    bad |= x & !(first << 1);
    let hex_start = x << 1;
    bad |= hex_start & !(digit | hex_letter);
    // Hex letters only from a hex start to the end of its number: adding
    // the start bit to the run of field bytes it sits in carries to the
    // run's end.
    let inside = line & !space;
    let hex_digits = (inside.wrapping_add(hex_start) ^ inside) & inside;
    bad |= hex_letter & !hex_digits;
    if bad != 0 {
        return None;
    }
    Some(Shape {
        first,
        after: (space & space.wrapping_sub(1)) | 1 << e,
        x,
        negative: minus << 1,
        fields: space.count_ones(),
        end: e as usize,
    })
}

impl Shape {
    /// Reads the next number (`wide`: a 64-bit field): its bits as the
    /// general reader computes them, and the position after it; `None` when
    /// it is long enough to overflow its field, or is `x` after a digit
    /// other than `0`.
    #[inline(always)]
    fn number(&mut self, d: &[u8; WINDOW], wide: bool) -> Option<(u64, usize)> {
        let a = self.first.trailing_zeros() as usize;
        let t = self.after.trailing_zeros() as usize;
        self.first &= self.first.wrapping_sub(1);
        self.after &= self.after.wrapping_sub(1);
        let hex = self.x.wrapping_shr(a as u32 + 1) & 1 != 0;
        let negative = self.negative.wrapping_shr(a as u32) & 1 != 0;
        let magnitude = if hex {
            if d[a] != b'0' {
                return None;
            }
            let n = t - (a + 2);
            let most = if wide { 16 } else { 8 };
            if n > most {
                return None;
            }
            let w = load(d, a + 2);
            if n <= 8 {
                hex8(w, n)
            } else {
                (hex8(w, 8) << (4 * (n - 8))) | hex8(load(d, a + 10), n - 8)
            }
        } else {
            let n = t - a;
            let most = if wide { 16 } else { 9 };
            if n > most {
                return None;
            }
            let w = load(d, a);
            if n <= 8 {
                dec8(w, n)
            } else {
                dec8(w, 8) * POW10[n - 8] + dec8(load(d, a + 8), n - 8)
            }
        };
        Some((if negative { magnitude.wrapping_neg() } else { magnitude }, t))
    }

    /// Bytes from the line's start to after its line end.
    #[inline(always)]
    fn length(&self, d: &[u8; WINDOW]) -> usize {
        self.end + 1 + (d[self.end] == b'\r' && d[self.end + 1] == b'\n') as usize
    }
}

/// Parses a frequent record with classifier `c` (see [`record`]).
#[inline(always)]
fn line<'a, C: Classifier>(c: &C, kind: Kind, rest: &'a [u8]) -> Option<(Record<'a>, usize)> {
    let d: &[u8; WINDOW] = rest.get(..WINDOW)?.try_into().ok()?;
    let mut s = shape(c, d)?;
    let record = match (kind, s.fields) {
        (Kind::Alloc, 3) => {
            let (t, _) = s.number(d, false)?;
            let (a, _) = s.number(d, true)?;
            let (k, _) = s.number(d, false)?;
            Record::Alloc(Alloc { thread: Some(ThreadId(t as i32)), address: Address(a), stack: StackId(k as i32) })
        }
        (Kind::Call, 2) => {
            let (t, _) = s.number(d, false)?;
            let (k, _) = s.number(d, false)?;
            Record::Call(Call { thread: ThreadId(t as i32), stack: StackId(k as i32) })
        }
        (Kind::Tick, 1) => Record::Tick(Tick { ms: s.number(d, false)?.0 as u32 }),
        (Kind::Moved, 3) => {
            let (old, _) = s.number(d, true)?;
            let (new, _) = s.number(d, true)?;
            let (length, _) = s.number(d, false)?;
            Record::Moved(Moved { old: Address(old), new: Address(new), length: length as u32 })
        }
        (Kind::Survived, 2) => {
            let (start, _) = s.number(d, true)?;
            let (length, _) = s.number(d, false)?;
            Record::Survived(Survived { start: Address(start), length: length as u32 })
        }
        (Kind::HeapObject, 3..) => {
            let (address, _) = s.number(d, true)?;
            let (type_id, _) = s.number(d, false)?;
            let (size, refs) = s.number(d, false)?;
            while s.first != 0 {
                // The general reader ends the list at a -1 (all ones), and
                // what follows it is then text left on the line.
                if s.number(d, true)?.0 == u64::MAX {
                    return None;
                }
            }
            Record::HeapObject(HeapObject {
                address: Address(address),
                type_id: TypeId(type_id as i32),
                size: size as u32,
                refs: List::Raw(&rest[refs..s.end]),
            })
        }
        _ => return None,
    };
    Some((record, s.length(d)))
}

/// Parses a frequent record whose kind letter has just been read: `rest`
/// is what follows the letter. Returns the record and the bytes it takes
/// (the line end included), or `None` when the line is not in the
/// canonical form (the general reader then reads it).
#[inline]
pub(crate) fn record(kind: Kind, rest: &[u8]) -> Option<(Record<'_>, usize)> {
    #[cfg(target_arch = "x86_64")]
    {
        match Avx2::detect() {
            // Safety: `detect` found AVX2 on this CPU.
            Some(a) => unsafe { record_avx2(a, kind, rest) },
            None => line(&Sse2, kind, rest),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        line(&Swar, kind, rest)
    }
}

/// [`record`] compiled for AVX2.
///
/// # Safety
/// The CPU must have AVX2 (`a` proves it).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
unsafe fn record_avx2(a: Avx2, kind: Kind, rest: &[u8]) -> Option<(Record<'_>, usize)> {
    line(&a, kind, rest)
}

/// Reads the canonical frequent records that start at `pos` and before
/// `stop`, one after another, handing each to `each`; stops before the
/// first line that is not one. Returns where it stopped.
#[inline]
pub(crate) fn run<'a, V: FrequentVisitor<'a>>(data: &'a [u8], pos: usize, stop: usize, each: &mut V) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        match Avx2::detect() {
            // Safety: `detect` found AVX2 on this CPU.
            Some(a) => unsafe { run_avx2(&a, data, pos, stop, each) },
            None => run_with(&Sse2, data, pos, stop, each),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        run_with(&Swar, data, pos, stop, each)
    }
}

/// [`run`] compiled for AVX2.
///
/// # Safety
/// The CPU must have AVX2 (`a` proves it).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
unsafe fn run_avx2<'a, V: FrequentVisitor<'a>>(
    a: &Avx2,
    data: &'a [u8],
    pos: usize,
    stop: usize,
    each: &mut V,
) -> usize {
    run_with(a, data, pos, stop, each)
}

#[inline(always)]
fn run_with<'a, C: Classifier, V: FrequentVisitor<'a>>(
    c: &C,
    data: &'a [u8],
    mut pos: usize,
    stop: usize,
    each: &mut V,
) -> usize {
    while pos < stop {
        let Some(kind) = Kind::from_byte(data[pos]) else { break };
        let Some((record, len)) = line(c, kind, &data[pos + 1..]) else { break };
        each.visit(Parsed { record, offset: pos as u64, at_end_of_file: false });
        pos += 1 + len;
    }
    pos
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
