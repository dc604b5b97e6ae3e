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

mod alloc_run;
use alloc_run::AllocPrefix;

/// Bytes that must follow a record's kind letter for the fast path to run:
/// the 64 classified bytes, plus room for the 16-byte loads of a number
/// that ends at the last of them.
pub(crate) const WINDOW: usize = 80;

const ONES: u64 = 0x0101_0101_0101_0101;

/// How far ahead of the line being read the next bytes are asked for.
const PREFETCH_AHEAD: usize = 1024;

/// Asks for the cache line `PREFETCH_AHEAD` bytes after `pos` of `data`.
#[inline(always)]
fn prefetch_ahead(data: &[u8], pos: usize) {
    #[cfg(target_arch = "x86_64")]
    // Safety: a prefetch is a hint: it reads nothing into the program and
    // never faults; the address is computed with wrapping arithmetic and
    // never dereferenced.
    unsafe {
        let p = data.as_ptr().wrapping_add(pos.wrapping_add(PREFETCH_AHEAD)) as *const i8;
        std::arch::x86_64::_mm_prefetch(p, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (data, pos);
}

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

/// The window of a line: the bytes after its kind letter.
type Window = [u8; WINDOW];

/// `! thread address stack`.
#[inline(always)]
fn alloc<C: Classifier>(c: &C, d: &Window) -> Option<(Alloc, usize)> {
    let mut s = shape(c, d)?;
    if s.fields != 3 {
        return None;
    }
    let (t, _) = s.number(d, false)?;
    let (a, _) = s.number(d, true)?;
    let (k, _) = s.number(d, false)?;
    Some((Alloc { thread: Some(ThreadId(t as i32)), address: Address(a), stack: StackId(k as i32) }, s.length(d)))
}

/// `c thread stack`.
#[inline(always)]
fn call<C: Classifier>(c: &C, d: &Window) -> Option<(Call, usize)> {
    let mut s = shape(c, d)?;
    if s.fields != 2 {
        return None;
    }
    let (t, _) = s.number(d, false)?;
    let (k, _) = s.number(d, false)?;
    Some((Call { thread: ThreadId(t as i32), stack: StackId(k as i32) }, s.length(d)))
}

/// `i ms`.
#[inline(always)]
fn tick<C: Classifier>(c: &C, d: &Window) -> Option<(Tick, usize)> {
    let mut s = shape(c, d)?;
    if s.fields != 1 {
        return None;
    }
    let (ms, _) = s.number(d, false)?;
    Some((Tick { ms: ms as u32 }, s.length(d)))
}

/// `u old new length`.
#[inline(always)]
fn moved<C: Classifier>(c: &C, d: &Window) -> Option<(Moved, usize)> {
    let mut s = shape(c, d)?;
    if s.fields != 3 {
        return None;
    }
    let (old, _) = s.number(d, true)?;
    let (new, _) = s.number(d, true)?;
    let (length, _) = s.number(d, false)?;
    Some((Moved { old: Address(old), new: Address(new), length: length as u32 }, s.length(d)))
}

/// `v start length`.
#[inline(always)]
fn survived<C: Classifier>(c: &C, d: &Window) -> Option<(Survived, usize)> {
    let mut s = shape(c, d)?;
    if s.fields != 2 {
        return None;
    }
    let (start, _) = s.number(d, true)?;
    let (length, _) = s.number(d, false)?;
    Some((Survived { start: Address(start), length: length as u32 }, s.length(d)))
}

/// `o address type size ref...` (`d` is the start of `rest`).
#[inline(always)]
fn heap_object<'a, C: Classifier>(c: &C, d: &Window, rest: &'a [u8]) -> Option<(HeapObject<'a>, usize)> {
    let mut s = shape(c, d)?;
    if s.fields < 3 {
        return None;
    }
    let (address, _) = s.number(d, true)?;
    let (type_id, _) = s.number(d, false)?;
    let (size, refs) = s.number(d, false)?;
    while s.first != 0 {
        // The general reader ends the list at a -1 (all ones), and what
        // follows it is then text left on the line.
        if s.number(d, true)?.0 == u64::MAX {
            return None;
        }
    }
    let o = HeapObject {
        address: Address(address),
        type_id: TypeId(type_id as i32),
        size: size as u32,
        refs: List::Raw(rest.get(refs..s.end)?),
    };
    Some((o, s.length(d)))
}

/// Parses a frequent record with classifier `c` (see [`record`]).
#[inline(always)]
fn line<'a, C: Classifier>(c: &C, kind: Kind, rest: &'a [u8]) -> Option<(Record<'a>, usize)> {
    let d: &Window = rest.first_chunk()?;
    match kind {
        Kind::Alloc => alloc(c, d).map(|(r, n)| (Record::Alloc(r), n)),
        Kind::Call => call(c, d).map(|(r, n)| (Record::Call(r), n)),
        Kind::Tick => tick(c, d).map(|(r, n)| (Record::Tick(r), n)),
        Kind::Moved => moved(c, d).map(|(r, n)| (Record::Moved(r), n)),
        Kind::Survived => survived(c, d).map(|(r, n)| (Record::Survived(r), n)),
        Kind::HeapObject => heap_object(c, d, rest).map(|(r, n)| (Record::HeapObject(r), n)),
        _ => None,
    }
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

/// The bytes a run of call lines from one thread start with: the kind
/// letter, a space, the thread and a space (`c 26990 `, at most 16 bytes),
/// as two masked words.
///
/// In a call-logging log nearly every line is `c <thread> <stack>` with
/// the same thread as the line before it, so after one line has been read
/// by the general fast path ([`call`]), the next ones are recognised by
/// comparing their first 16 bytes with its prefix, then reading the stack
/// as up to 7 decimal digits followed by `\n`: a handful of instructions a
/// line. A line with the same prefix is read by [`call`] with the same
/// thread (the bytes are the same), and digits followed by `\n` are a
/// canonical number and line end, so the record is the one [`call`] (and
/// the general reader) would give. Anything else (another thread, a sign, a
/// hex stack, 8 or more digits, `\r`, blanks) ends the run, and the line is
/// read again the ordinary way.
///
/// ```text
///   c␠26990␠3897⏎
///   |-prefix-||--| digits, then \n
/// ```
#[derive(Clone, Copy, Debug)]
struct CallPrefix {
    words: [u64; 2],
    masks: [u64; 2],
    len: usize,
    thread: i32,
}

/// The high bit of each byte of `w` that is not an ASCII digit.
#[inline(always)]
fn non_digits(w: u64) -> u64 {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    // A digit byte becomes 0..=9, which stays below 0x80 when 0x76 is added
    // (adding to the low seven bits never carries into the next byte).
    let x = w ^ (ONES * b'0' as u64);
    (((x & LOW7).wrapping_add(ONES * 0x76)) | x) & HIGH
}

impl CallPrefix {
    /// The prefix of `line` (a whole canonical call line, as [`call`]
    /// read it, with thread `thread`); `None` when it is longer than 16
    /// bytes.
    #[inline(always)]
    fn of(line: &[u8], thread: i32) -> Option<CallPrefix> {
        // The second space: the first is right after the kind letter.
        let len = 3 + memchr::memchr(b' ', line.get(2..)?)?;
        if len > 16 {
            return None;
        }
        let mut bytes = [0u8; 16];
        bytes[..len].copy_from_slice(&line[..len]);
        let mask = |n: usize| if n >= 8 { u64::MAX } else { (1u64 << (8 * n)) - 1 };
        let word = |k: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[8 * k..8 * k + 8]);
            u64::from_le_bytes(b)
        };
        Some(CallPrefix { words: [word(0), word(1)], masks: [mask(len), mask(len.saturating_sub(8))], len, thread })
    }

    /// Reads the lines from `pos` (before `stop`) that start with this
    /// prefix and end with a short stack and `\n`, handing each to `each`;
    /// returns where it stopped. `stop` leaves a [`WINDOW`] of bytes after
    /// every line start.
    ///
    /// The line ends of 64 bytes are found at once (`c`), so where a line
    /// starts does not wait for the line before it to be read: the lines of
    /// a block are checked independently of each other.
    #[inline(always)]
    fn run<'a, C: Classifier, V: FrequentVisitor<'a>>(
        &self,
        c: &C,
        data: &'a [u8],
        mut pos: usize,
        stop: usize,
        each: &mut V,
    ) -> usize {
        const HIGH: u64 = 0x8080_8080_8080_8080;
        while pos < stop {
            prefetch_ahead(data, pos);
            let Some(block) = data[pos..].first_chunk::<WINDOW>() else { break };
            let (lo, hi) = block.split_at(32);
            let (Ok(lo), Ok(hi)) = (<&[u8; 32]>::try_from(lo), <&[u8; 32]>::try_from(&hi[..32])) else { break };
            let mut ends = c.newlines(lo) | c.newlines(hi) << 32;
            let mut start = 0usize;
            while ends != 0 {
                if pos + start >= stop {
                    return pos + start;
                }
                let end = ends.trailing_zeros() as usize;
                ends &= ends - 1;
                // 1 to 7 digits between the prefix and the line end.
                let n = end.wrapping_sub(start + self.len);
                if n.wrapping_sub(1) >= 7 {
                    return pos + start;
                }
                let Some(d) = block.get(start..start + 16) else { return pos + start };
                let w0 = u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]]);
                let w1 = u64::from_le_bytes([d[8], d[9], d[10], d[11], d[12], d[13], d[14], d[15]]);
                let Some(s) = block.get(start + self.len..start + self.len + 8) else { return pos + start };
                let w = u64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]);
                let mask = (1u64 << (8 * n)) - 1;
                let other = ((w0 ^ self.words[0]) & self.masks[0]) | ((w1 ^ self.words[1]) & self.masks[1]);
                if other | (non_digits(w) & mask & HIGH) != 0 {
                    return pos + start;
                }
                each.call(self.thread, dec8(w, n) as i32, (pos + start) as u64);
                start = end + 1;
            }
            if start == 0 {
                break;
            }
            pos += start;
        }
        pos
    }
}

#[inline(always)]
fn run_with<'a, C: Classifier, V: FrequentVisitor<'a>>(
    c: &C,
    data: &'a [u8],
    mut pos: usize,
    stop: usize,
    each: &mut V,
) -> usize {
    // Every line before `stop` has its whole window in `data`.
    let stop = stop.min(data.len().saturating_sub(WINDOW));
    let mut prefix: Option<CallPrefix> = None;
    let mut alloc_prefix: Option<AllocPrefix> = None;
    while pos < stop {
        prefetch_ahead(data, pos);
        let Some(d) = data[pos + 1..].first_chunk::<WINDOW>() else { break };
        let offset = pos as u64;
        // Each kind is delivered as its own variant, so that a visitor's
        // match on the record is decided where it is compiled in.
        let len = match data[pos] {
            b'!' => {
                // As for calls: the thread of the last allocation, most
                // likely, allocates again.
                if let Some(p) = alloc_prefix {
                    let next = p.run(c, data, pos, stop, each);
                    if next > pos {
                        pos = next;
                        continue;
                    }
                }
                let Some((r, n)) = alloc(c, d) else { break };
                each.visit(Parsed { record: Record::Alloc(r), offset, at_end_of_file: false });
                let next = pos + 1 + n;
                alloc_prefix = r.thread.and_then(|t| AllocPrefix::of(&data[pos..next], t.0));
                pos = match alloc_prefix {
                    Some(p) => p.run(c, data, next, stop, each),
                    None => next,
                };
                continue;
            }
            b'u' | b'U' => {
                let Some((r, n)) = moved(c, d) else { break };
                each.visit(Parsed { record: Record::Moved(r), offset, at_end_of_file: false });
                n
            }
            b'c' | b'C' => {
                // The thread of the last run of calls, most likely, goes
                // on after the other records.
                if let Some(p) = prefix {
                    let next = p.run(c, data, pos, stop, each);
                    if next > pos {
                        pos = next;
                        continue;
                    }
                }
                let Some((r, n)) = call(c, d) else { break };
                each.call(r.thread.0, r.stack.0, offset);
                let next = pos + 1 + n;
                prefix = CallPrefix::of(&data[pos..next], r.thread.0);
                pos = match prefix {
                    Some(p) => p.run(c, data, next, stop, each),
                    None => next,
                };
                continue;
            }
            b'i' | b'I' => {
                let Some((r, n)) = tick(c, d) else { break };
                each.visit(Parsed { record: Record::Tick(r), offset, at_end_of_file: false });
                n
            }
            b'v' | b'V' => {
                let Some((r, n)) = survived(c, d) else { break };
                each.visit(Parsed { record: Record::Survived(r), offset, at_end_of_file: false });
                n
            }
            b'o' | b'O' => {
                let Some((r, n)) = heap_object(c, d, &data[pos + 1..]) else { break };
                each.visit(Parsed { record: Record::HeapObject(r), offset, at_end_of_file: false });
                n
            }
            _ => break,
        };
        pos += 1 + len;
    }
    pos
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::classify::Swar;
    use crate::format::RecordReader;
    use proptest::prelude::*;

    /// The general reader's answer for the first line of `text`: the
    /// record, where the next one starts, and whether it came without a
    /// warning.
    fn general(text: &[u8]) -> Option<(Record<'_>, usize, bool)> {
        let mut r = RecordReader::new(text).general_only();
        let p = r.next_record()?;
        Some((p.record, r.offset(), r.diagnostics().total() == 0 && !p.at_end_of_file))
    }

    /// The fast path's answer with each classifier this CPU can run; they
    /// must agree with each other.
    fn fast(kind: Kind, rest: &[u8]) -> Option<(Record<'_>, usize)> {
        let swar = line(&Swar, kind, rest);
        #[cfg(target_arch = "x86_64")]
        {
            assert_eq!(line(&Sse2, kind, rest), swar, "sse2 vs swar: {:?}", String::from_utf8_lossy(rest));
            assert_eq!(record(kind, rest), swar, "dispatched vs swar: {:?}", String::from_utf8_lossy(rest));
            if let Some(a) = Avx2::detect() {
                // Safety: `detect` found AVX2.
                let avx2 = unsafe { record_avx2(a, kind, rest) };
                assert_eq!(avx2, swar, "avx2 vs swar: {:?}", String::from_utf8_lossy(rest));
            }
        }
        swar
    }

    /// Checks one line (followed by `pad` bytes): whatever the fast path
    /// takes, the general reader reads the same way and without a warning.
    /// Returns whether the fast path took it.
    fn check_padded(line: &[u8], pad: u8) -> bool {
        let mut text = line.to_vec();
        text.extend_from_slice(&[pad; WINDOW + 8]);
        let Some(kind) = Kind::from_byte(text[0]) else { return false };
        let got = fast(kind, &text[1..]);
        let Some((rec, len, clean)) = general(&text) else {
            // The general reader dropped the line (it ran to the end of
            // the data): the fast path must not have taken it.
            assert_eq!(got, None, "{:?}", String::from_utf8_lossy(line));
            return false;
        };
        match got {
            Some((r, n)) => {
                assert!(clean, "fast path took a line with warnings: {:?}", String::from_utf8_lossy(line));
                assert_eq!((r, n + 1), (rec, len), "{:?}", String::from_utf8_lossy(line));
                true
            }
            // Declining is always allowed (the general reader then reads
            // the line).
            None => false,
        }
    }

    fn check(line: &str) -> bool {
        check_padded(line.as_bytes(), b'x') & check_padded(line.as_bytes(), b'\n')
    }

    #[test]
    fn canonical_lines_are_taken() {
        for line in [
            "! 1 0x0000013600001000 7\n",
            "! 12 0x7ffe12345678 123456\n",
            "! -1 0xABCDEF 0\n",
            "! 214748364 0xffffffffffffffff 999999999\n",
            "! 1 1234567890123456 5\n",
            "! 007 0x00ab 000000001\n",
            "! 1 0X1F -0x7fffffff\r\n",
            "c 3 99\n",
            "c -214748364 0xffffffff\n",
            "i 123456789\n",
            "i 0\r",
            "u 0x1000 0x2000 4096\n",
            "u 0xffffffffffffffff 0x0 999999999\n",
            "u 0x21300001780 0x21300001220 40\n",
            "v 0x0000000012340000 24\r\n",
            "o 0x21300001000 1 136 0x21300001378 0x21300001290\n",
            "o 0x21300001000 1 136\n",
            "o 0x10 2 24 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8 0x9 0xa 0xb 0xc\n",
            "o 0x10 2 24 -2\n",
        ] {
            assert!(check(line), "fast path declined {line:?}");
        }
    }

    #[test]
    fn odd_lines_agree_or_decline() {
        for line in [
            "! 1  0x10 7\n",
            "! 1 0x10 7 \n",
            "! 1 0x10 7\t\n",
            "!\t1 0x10 7\n",
            "! 1 0x10\n",
            "! 1 0x10 7 8\n",
            "! 1 0x 7\n",
            "! 1 0x10 7x\n",
            "! 1 0x10 4294967296\n",
            "! 1 0x10 1234567890\n",
            "! 1 0x10 0x123456789\n",
            "! 1 0x10000000000000000 1\n",
            "! 1 0x00000000000000001 1\n",
            "! 1 12345678901234567890 1\n",
            "! 1 12345678901234567 1\n",
            "! 1 1x10 7\n",
            "! 1 0xx10 7\n",
            "! 1 0x1g 7\n",
            "! 1 a 7\n",
            "! 1 12ab 7\n",
            "! 1 12x3 7\n",
            "! 1 5x3 7\n",
            "! 1 1-2 7\n",
            "! 1 0x-2 7\n",
            "! 1 0x10 7f\n",
            "! 1 1e5 7\n",
            "c 12 3e\n",
            "u 0x10 0x20 0x\n",
            "u 0x10 0x20x0 1\n",
            "! 1 0xa-1 7\n",
            "! 1 --1 7\n",
            "! - 0x10 7\n",
            "! 1 0x10 -\n",
            "!\n",
            "! \n",
            "i -\n",
            "i 0x123456789\n",
            "i\t5\n",
            "i 5\r\r\n",
            "c 1 2\r3\n",
            "c 1 2\n\r",
            "u 0x1 -0x2 3\n",
            "v 0x10 -5\n",
            "o 0x10 2 24 -1\n",
            "o 0x10 2 24 0xffffffffffffffff 0x20\n",
            "o 0x10 2 24 0x20 \n",
            "o 0x10 2\n",
            "o 0x10 2 24 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8 0x9 0xa 0xb 0xc 0xd 0xe 0xf 0x10\n",
            "a 0x10 7\n",
            "b 1 0 0\n",
        ] {
            check(line);
        }
    }

    #[test]
    fn warnings_always_decline() {
        // Each of these makes the general reader warn.
        for line in ["! 1 0x10 4294967296\n", "! 1 0x10 7x\n", "! 1 0x10\n", "v 0x10\n", "c 1 2 3\n"] {
            let mut text = line.as_bytes().to_vec();
            text.extend_from_slice(&[b'\n'; WINDOW]);
            assert!(general(&text).is_some_and(|g| !g.2), "{line:?} should warn");
            let kind = Kind::from_byte(text[0]).unwrap_or(Kind::Comment);
            assert_eq!(fast(kind, &text[1..]), None, "{line:?}");
        }
    }

    #[test]
    fn near_the_end_of_the_file_the_general_reader_reads() {
        // A last line without its line end, and any line whose window would
        // run past the end of the data, is left to the general reader.
        let data = b"! 1 0x10 7\n! 1 0x18 7\n! 1 0x20 7";
        let mut visited = Vec::new();
        let stop = run(data, 0, data.len(), &mut |p| visited.push(p));
        assert_eq!(stop, 0);
        assert!(visited.is_empty());
        let mut fast = RecordReader::new(data);
        let mut slow = RecordReader::new(data).general_only();
        assert_eq!(fast.by_ref().collect::<Vec<_>>(), slow.by_ref().collect::<Vec<_>>());
        assert_eq!(fast.diagnostics().total(), 1); // the last line is dropped, with a warning
    }

    #[test]
    fn a_run_stops_before_the_first_other_line() {
        let mut data = Vec::new();
        for k in 0..50 {
            data.extend_from_slice(format!("! 7 0x{:x} {}\n", 0x1000 + 24 * k, k % 5 + 1).as_bytes());
        }
        let n_line = data.len();
        data.extend_from_slice(b"n 9 1 3 24\n");
        data.extend_from_slice(b"i 5\n".repeat(40).as_slice());
        let mut visited = Vec::new();
        let stop = run(&data, 0, data.len(), &mut |p| visited.push(p));
        assert_eq!(stop, n_line);
        let general: Vec<_> = RecordReader::new(&data).general_only().take(50).collect();
        assert_eq!(visited, general);
        // Alternating the run and the record-by-record reader reads the
        // whole log as the general reader does.
        let mut r = RecordReader::new(&data);
        let mut all = Vec::new();
        loop {
            r.read_frequent(&mut |p| all.push(p));
            let Some(p) = r.next_record() else { break };
            all.push(p);
        }
        assert_eq!(all, RecordReader::new(&data).general_only().collect::<Vec<_>>());
        // The range's end is respected: a run never starts a line at or
        // after `stop`.
        let stop = run(&data, 0, 30, &mut |_: Parsed<'_>| {});
        let first_after = RecordReader::new(&data).map(|p| p.offset as usize).find(|&o| o >= 30);
        assert_eq!(Some(stop), first_after);
    }

    /// A line of (nearly) the right shape, from random choices: fields of
    /// random form and length, mostly one space apart, mostly ending in a
    /// line end.
    fn shaped_line(kind: u8, fields: &[(u8, u64, u8, u8)], end: u8) -> Vec<u8> {
        let mut line = vec![kind];
        for &(sep, value, form, junk) in fields {
            line.extend_from_slice(match sep % 16 {
                0 => b"  ",
                1 => b"\t",
                2 => b"",
                _ => b" ",
            });
            let mut field = Vec::new();
            if form % 11 == 0 {
                field.push(b'-');
            }
            let digits = match form % 5 {
                // Full width, with leading zeros.
                0 => format!("{:016x}", value),
                1 => format!("{:x}", value >> (value % 64)),
                2 => format!("{:X}", value >> (value % 64)),
                3 => format!("{}", value >> (value % 64)),
                _ => format!("{:020}", value >> (value % 64)),
            };
            let hex = form % 5 < 3;
            if hex {
                field.extend_from_slice(if form % 7 == 0 { b"0X" } else { b"0x" });
            }
            let keep = if form % 3 == 0 { digits.len().min(1 + (value % 20) as usize) } else { digits.len() };
            field.extend_from_slice(&digits.as_bytes()[digits.len() - keep..]);
            if junk % 4 == 0 {
                // A stray byte or two anywhere in the number.
                let k = (junk as usize >> 2) % 13;
                let at = (value as usize >> 7) % (field.len() + 1);
                let stray = &b"xg:/@`G -aFc0x"[k..k + 1 + (junk & 128 != 0) as usize];
                field.splice(at..at, stray.iter().copied());
            }
            line.extend_from_slice(&field);
        }
        line.extend_from_slice(match end % 16 {
            0 => b"\r\n",
            1 => b"\r",
            2 => b" \n",
            3 => b"\rz\n",
            4 => b"",
            _ => b"\n",
        });
        line
    }

    fn value_len(lines: &[(u8, u8, u32, u8)]) -> u32 {
        lines.iter().fold(0u32, |a, l| a.wrapping_add(l.2))
    }

    /// Reads `data` alternating the fast runs and the record-by-record
    /// reader (as the loader does).
    pub(super) fn alternating(data: &[u8]) -> Vec<Parsed<'_>> {
        let mut r = RecordReader::new(data);
        let mut all = Vec::new();
        loop {
            r.read_frequent(&mut |p| all.push(p));
            let Some(p) = r.next_record() else { break };
            all.push(p);
        }
        all
    }

    #[test]
    fn call_runs_read_as_the_general_reader() {
        let mut data = Vec::new();
        for k in 0..400u32 {
            let line = match k % 13 {
                0 => format!("c 26990 {}\n", k * 7),
                1 => format!("c 26990 {}\r\n", k),
                2 => format!("c 26990 0{}\n", k),
                3 => format!("c 26990 {}\n", 12_345_678 + k),
                4 => format!("c 7 {}\n", k),
                5 => format!("c -1 {}\n", k),
                6 => format!("c 123456789012 {}\n", k),
                7 => format!("! 26990 0x{:x} 1\n", 0x1000 + k),
                8 => format!("c 26990 -{}\n", k),
                9 => format!("c 26990  {}\n", k),
                10 => format!("C 26990 {}\n", k),
                _ => format!("c 26990 {}\n", k % 3),
            };
            data.extend_from_slice(line.as_bytes());
        }
        data.extend_from_slice(b"c 26990 5");
        let got = alternating(&data);
        assert_eq!(got, RecordReader::new(&data).general_only().collect::<Vec<_>>());
        assert!(got.len() >= 399, "{} records", got.len());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

        /// Runs of call lines, canonical or nearly so, read by the prefix
        /// loop and the fast path read as the general reader reads them.
        #[test]
        fn call_runs_agree_with_the_general_reader(
            lines in prop::collection::vec((0u8..12, 0u8..11, any::<u32>(), 0u8..16), 1..60),
            pad in prop::sample::select(b"x\n c".to_vec()),
        ) {
            // Pairs that differ only in their last byte, in the first and in
            // the second word of the prefix.
            let threads = ["26990", "1", "-1", "0x10", "123456789012", "2699", "26990 ", "123456788", "123456789", "26991", "-12345679"];
            let mut data = Vec::new();
            for &(form, thread, value, end) in &lines {
                let t = threads[(thread as usize + form as usize / 4) % threads.len()];
                let v = value >> (value % 32);
                let stack = match form {
                    0 => format!("{v}"),
                    1 => format!("{}", v % 10),
                    2 => format!("{}", v % 10_000_000),
                    3 => format!("00{}", v % 1000),
                    4 => format!("-{}", v % 100),
                    5 => format!("0x{v:x}"),
                    6 => format!("{v}x"),
                    _ => format!("{}", v % 100_000),
                };
                let letter = if end == 15 { 'C' } else { 'c' };
                let line_end = match end {
                    0 => "\r\n",
                    1 => " \n",
                    2 => "\r",
                    3 => "",
                    _ => "\n",
                };
                data.extend_from_slice(format!("{letter} {t} {stack}{line_end}").as_bytes());
                if end == 4 {
                    data.extend_from_slice(b"i 5\n");
                }
            }
            data.extend_from_slice(&vec![pad; (value_len(&lines) % 90) as usize]);
            let got = alternating(&data);
            prop_assert_eq!(got, RecordReader::new(&data).general_only().collect::<Vec<_>>());
        }

        /// The fast path agrees with the general reader on random lines of
        /// every frequent kind (and a few others), canonical or not, with
        /// every classifier.
        #[test]
        fn fast_path_agrees_with_the_general_reader(
            kind in prop::sample::select(b"!ciuvoCIUVOa".to_vec()),
            fields in prop::collection::vec((any::<u8>(), any::<u64>(), any::<u8>(), any::<u8>()), 0..8),
            end in any::<u8>(),
            pad in prop::sample::select(b"x\n 0!".to_vec()),
        ) {
            check_padded(&shaped_line(kind, &fields, end), pad);
        }

        /// Canonical lines (one space, numbers that fit, a line end) are
        /// all taken, and read as the general reader reads them.
        #[test]
        fn canonical_lines_are_all_taken(
            kind in 0usize..6,
            values in prop::collection::vec((any::<u64>(), 0u8..6), 6),
            crlf in any::<bool>(),
        ) {
            let (letter, wide): (u8, &[bool]) = [
                (b'!', &[false, true, false][..]),
                (b'c', &[false, false]),
                (b'i', &[false]),
                (b'u', &[true, true, false]),
                (b'v', &[true, false]),
                (b'o', &[true, false, false, true, true, true]),
            ][kind];
            let mut line = vec![letter];
            for (&wide, &(v, form)) in wide.iter().zip(&values) {
                // Keep an `o` reference off all ones (it ends the list).
                let v = if wide { v.min(u64::MAX - 1) } else { v & 0xFFFF_FFFF };
                let text = match (wide, form) {
                    (_, 0) => format!("0x{v:x}"),
                    (_, 1) => format!("0X{v:X}"),
                    (true, 2) => format!("0x{v:016x}"),
                    (false, 2) => format!("0x{v:08x}"),
                    (true, _) if v < 10_000_000_000_000_000 => format!("{v}"),
                    (false, _) if v < 1_000_000_000 => format!("{v}"),
                    (false, _) => format!("-{}", v % 1_000_000_000),
                    (true, _) => format!("0x{v:x}"),
                };
                line.push(b' ');
                line.extend_from_slice(text.as_bytes());
            }
            line.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
            let taken = check_padded(&line, b'x');
            // Only an `o` line longer than the classified 64 bytes may be
            // declined.
            prop_assert!(taken || (letter == b'o' && line.len() > 65), "declined {:?}", String::from_utf8_lossy(&line));
        }
    }
}
