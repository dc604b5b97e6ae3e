//! The reading loop for runs of allocation lines from one thread.
//!
//! Most lines of a log without call logging are `! <thread> 0x<address>
//! <stack>`, and nearly all of them (95% on the generator's seed log) come
//! right after an allocation line of the same thread. So once one line has
//! been read by the general fast path ([`super::alloc`]), the next ones are
//! recognised by comparing their first bytes with its prefix (up to and
//! including the address's `0x`), then reading the address as 1 to 16 hex
//! digits, one space, and the stack as 1 to 8 decimal digits right before
//! `\n`. The line ends and spaces of 64 bytes are found at once, so the
//! lines of a block are read independently of each other.
//!
//! ```text
//!   !␠29138␠0x21300001340␠9⏎
//!   |--prefix--||--hex--| |digits, then \n
//! ```
//!
//! Why the record is the one [`super::alloc`] (and so the general reader)
//! would give: the prefix bytes are those of a line that [`super::alloc`]
//! took, so they read as the same thread and the start of a hex field; the
//! rest is hex digits that fit 64 bits, one space, and decimal digits that
//! fit the stack field, ended by `\n`, which is a canonical line with three
//! fields. Anything else (another thread, a decimal address, `\r`, a sign,
//! two blanks, 9 or more stack digits) ends the run, and the line is read
//! again the ordinary way.

use super::{dec8, hex8, non_digits, prefetch_ahead, Classifier, FrequentVisitor, WINDOW};
use crate::format::ids::{Address, StackId, ThreadId};
use crate::format::record::{Parsed, Record};
use crate::format::records::Alloc;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;
const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;

/// The high bit of each byte of `w` that is not a hex digit (`0`-`9`,
/// `a`-`f`, `A`-`F`).
#[inline(always)]
fn non_hex(w: u64) -> u64 {
    // The high bit of each byte (below 0x80) whose value is at least `c`:
    // adding to the low seven bits never carries into the next byte.
    let at_least = |v: u64, c: u8| ((v & LOW7).wrapping_add(ONES * (0x80 - c as u64))) & HIGH;
    let digit = at_least(w, b'0') & !at_least(w, b'9' + 1);
    // Setting bit 5 maps `A`-`F` onto `a`-`f` and no other byte into them.
    let lower = w | (ONES * 0x20);
    let letter = at_least(lower, b'a') & !at_least(lower, b'f' + 1);
    !((digit | letter) & !w) & HIGH
}

/// Keeps the bytes of `w` below byte `n` (`n` at most 8).
#[inline(always)]
fn below(n: usize) -> u64 {
    if n >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * n)) - 1
    }
}

#[inline(always)]
fn word(b: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(*b.first_chunk::<8>()?))
}

/// The first bytes of a run's lines (`! 29138 0x`, at most 16), as two
/// masked words, and the thread they name.
#[derive(Clone, Copy, Debug)]
pub(super) struct AllocPrefix {
    words: [u64; 2],
    masks: [u64; 2],
    len: usize,
    thread: i32,
}

impl AllocPrefix {
    /// The prefix of `line`, a whole `!` line that [`super::alloc`] read
    /// with thread `thread`; `None` when its address is not written `0x`
    /// or `0X` and hex digits, or the prefix is longer than 16 bytes.
    #[inline(always)]
    pub(super) fn of(line: &[u8], thread: i32) -> Option<AllocPrefix> {
        // The second space: the first is right after the kind letter.
        let space = 2 + memchr::memchr(b' ', line.get(2..)?)?;
        let len = space + 3;
        if len > 16 || line.get(space + 1) != Some(&b'0') || !matches!(line.get(space + 2), Some(b'x' | b'X')) {
            return None;
        }
        let mut bytes = [0u8; 16];
        bytes[..len].copy_from_slice(&line[..len]);
        let words = [word(&bytes[..8])?, word(&bytes[8..])?];
        Some(AllocPrefix { words, masks: [below(len), below(len.saturating_sub(8))], len, thread })
    }

    /// Reads the lines from `pos` (before `stop`) that start with this
    /// prefix and end as the module comment says, handing each to `each`;
    /// returns where it stopped. `stop` leaves a [`WINDOW`] of bytes after
    /// every line start.
    #[inline(always)]
    pub(super) fn run<'a, C: Classifier, V: FrequentVisitor<'a>>(
        &self,
        c: &C,
        data: &'a [u8],
        mut pos: usize,
        stop: usize,
        each: &mut V,
    ) -> usize {
        while pos < stop {
            prefetch_ahead(data, pos);
            let Some(block) = data[pos..].first_chunk::<WINDOW>() else { break };
            let (Some(lo), Some(hi)) = (block.first_chunk::<32>(), block[32..].first_chunk::<32>()) else { break };
            let mut ends = c.newlines(lo) | c.newlines(hi) << 32;
            let spaces = c.spaces(lo) | c.spaces(hi) << 32;
            let mut start = 0usize;
            while ends != 0 {
                if pos + start >= stop {
                    return pos + start;
                }
                let end = ends.trailing_zeros() as usize;
                ends &= ends - 1;
                match self.line(block, start, end, spaces) {
                    Some((address, stack)) => each.visit(Parsed {
                        record: Record::Alloc(Alloc {
                            thread: Some(ThreadId(self.thread)),
                            address: Address(address),
                            stack: StackId(stack),
                        }),
                        offset: (pos + start) as u64,
                        at_end_of_file: false,
                    }),
                    None => return pos + start,
                }
                start = end + 1;
            }
            if start == 0 {
                break;
            }
            pos += start;
        }
        pos
    }

    /// The address and stack of the line from `start` to the `\n` at `end`
    /// of `block` (`spaces`: its space bytes), when it is one of the run's.
    #[inline(always)]
    fn line(&self, block: &[u8; WINDOW], start: usize, end: usize, spaces: u64) -> Option<(u64, i32)> {
        // The address's first digit, then the space after it.
        let at = start + self.len;
        if at + 3 > end {
            return None;
        }
        let space = at + (spaces >> at).trailing_zeros() as usize;
        let hex = space - at;
        let digits = end.wrapping_sub(space + 1);
        if hex.wrapping_sub(1) >= 16 || digits.wrapping_sub(1) >= 8 {
            return None;
        }
        let head = block.get(start..start + 16)?;
        let other = ((word(head)? ^ self.words[0]) & self.masks[0]) | ((word(&head[8..])? ^ self.words[1]) & self.masks[1]);
        let h0 = word(block.get(at..)?)?;
        let h1 = word(block.get(at + 8..)?)?;
        let s = word(block.get(space + 1..)?)?;
        let bad = other
            | (non_hex(h0) & below(hex))
            | (non_hex(h1) & below(hex.saturating_sub(8)))
            | (non_digits(s) & below(digits) & HIGH);
        if bad != 0 {
            return None;
        }
        let address = if hex <= 8 { hex8(h0, hex) } else { hex8(h0, 8) << (4 * (hex - 8)) | hex8(h1, hex - 8) };
        Some((address, dec8(s, digits) as i32))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::alternating;
    use super::*;
    use crate::format::RecordReader;
    use proptest::prelude::*;

    #[test]
    fn non_hex_marks_every_byte_but_hex_digits() {
        for b in 0..=255u8 {
            for pos in 0..8 {
                let mut bytes = [b'7'; 8];
                bytes[pos] = b;
                bytes[(pos + 1) % 8] = 0x80 | b;
                let w = u64::from_le_bytes(bytes);
                let want = bytes.iter().enumerate().filter(|(_, c)| !c.is_ascii_hexdigit()).fold(0, |m, (i, _)| m | 0x80 << (8 * i));
                assert_eq!(non_hex(w), want, "{b:#x} at {pos}");
            }
        }
    }

    #[test]
    fn a_run_is_read_as_the_general_reader_reads_it() {
        let mut data = Vec::new();
        for k in 0..600u64 {
            let line = match k % 17 {
                0 => format!("! 29138 0x{:x} {}\n", 0x2130_0001_000 + 24 * k, k),
                1 => format!("! 29138 0X{:X} {}\n", 0xABC_DEF0 + k, k),
                2 => format!("! 29138 0x{:016X} {}\n", 0x0200_001C + k, k % 7),
                3 => format!("! 29138 0x{:017x} 5\n", k),
                4 => format!("! 29138 0x{:x} {}\n", u64::MAX - k, 99_999_999 - k),
                5 => format!("! 29138 0x{:x} {}\n", k, 123_456_789 + k),
                6 => format!("! 29138 0x{:x} {}\r\n", k, k),
                7 => format!("! 29138 0x{:x}  {}\n", k, k),
                8 => format!("! 29138 0x{:x} -{}\n", k, k),
                9 => format!("! 29139 0x{:x} {}\n", k, k),
                10 => format!("! 29138 {} {}\n", 4096 + k, k),
                11 => format!("! 29138 0x{:x} 0{}\n", k, k),
                12 => format!("! 29138 0x{:x}g {}\n", k, k),
                13 => format!("! 29138 0x {}\n", k),
                14 => format!("c 29138 {}\n", k),
                15 => format!("! 29138 0x{:x} {} 1\n", k, k),
                _ => format!("! 29138 0x{:x} {}\n", 0x1000 + k, k % 3),
            };
            data.extend_from_slice(line.as_bytes());
        }
        data.extend_from_slice(b"! 29138 0x1000 5");
        let got = alternating(&data);
        assert_eq!(got, RecordReader::new(&data).general_only().collect::<Vec<_>>());
        assert!(got.len() >= 590, "{} records", got.len());
    }

    #[test]
    fn the_loop_takes_the_lines_of_a_run() {
        // 3 lines: one read by the general fast path, two by the loop.
        let mut data = b"! 7 0x1000 1\n! 7 0x1018 2\n! 7 0xFFFFFFFFFFFFFFFF 12345678\n".to_vec();
        let lines = data.len();
        data.extend_from_slice(&[b'x'; WINDOW + 8]);
        let p = AllocPrefix::of(b"! 7 0x1000 1\n", 7);
        let Some(p) = p else { panic!("no prefix") };
        let mut got = Vec::new();
        let next = p.run(&crate::format::classify::Swar, &data, 13, data.len() - WINDOW, &mut |r| got.push(r));
        assert_eq!(next, lines);
        let want: Vec<_> = RecordReader::new(&data[..lines]).general_only().skip(1).collect();
        assert_eq!(got, want);
        // A decimal address has no prefix.
        assert!(AllocPrefix::of(b"! 7 4096 1\n", 7).is_none());
        assert!(AllocPrefix::of(b"! 123456789012 0x10 1\n", 7).is_none());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

        /// Runs of allocation lines, canonical or nearly so, read by the
        /// prefix loop and the fast path read as the general reader
        /// reads them.
        #[test]
        fn alloc_runs_agree_with_the_general_reader(
            lines in prop::collection::vec((0u8..14, 0u8..8, any::<u64>(), 0u8..12, 0u8..16), 1..60),
            pad in prop::sample::select(b"x\n !".to_vec()),
        ) {
            let threads = ["29138", "1", "-1", "2913", "29139", "1234567890", "12345678901"];
            let mut data = Vec::new();
            let mut total = 0u64;
            for &(form, thread, value, stack_form, end) in &lines {
                total = total.wrapping_add(value);
                let t = threads[(thread as usize + form as usize / 5) % threads.len()];
                let v = value >> (value % 64);
                let address = match form {
                    0 => format!("0x{v:x}"),
                    1 => format!("0X{v:X}"),
                    2 => format!("0x{v:016x}"),
                    3 => format!("0x0{v:016x}"),
                    4 => format!("{v}"),
                    5 => format!("0x{v:x}g"),
                    6 => "0x".to_string(),
                    7 => format!("0x{:x}", v % 4096),
                    _ => format!("0x{v:X}"),
                };
                let s = (value >> 7) as u32;
                let stack = match stack_form {
                    0 => format!("{}", s % 10),
                    1 => format!("{s}"),
                    2 => format!("{}", s % 100_000_000),
                    3 => format!("{}", 100_000_000 + s % 1000),
                    4 => format!("-{}", s % 100),
                    5 => format!("00{}", s % 1000),
                    6 => format!("0x{s:x}"),
                    7 => format!("{} 3", s % 100),
                    _ => format!("{}", s % 100_000),
                };
                let line_end = match end {
                    0 => "\r\n",
                    1 => " \n",
                    2 => "\r",
                    3 => "",
                    _ => "\n",
                };
                let sep = if end == 5 { "  " } else { " " };
                data.extend_from_slice(format!("! {t} {address}{sep}{stack}{line_end}").as_bytes());
                if end == 6 {
                    data.extend_from_slice(b"u 7 0x10 0x20 24\n");
                }
            }
            data.extend_from_slice(&vec![pad; (total % 90) as usize]);
            let got = alternating(&data);
            prop_assert_eq!(got, RecordReader::new(&data).general_only().collect::<Vec<_>>());
        }
    }
}
