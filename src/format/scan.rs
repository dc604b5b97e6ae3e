//! Field scanning with the exact rules of CLRProfiler's reader.
//!
//! The reference reader is a character stream reader: it keeps one
//! look-ahead character `c` and reads fields with a handful of primitives
//! (`ReadInt`, `ReadLong`, `ReadString`). This module re-creates those
//! primitives over byte slices as nom-style functions
//! (`fn(&[u8]) -> (rest, value)`): the look-ahead character is `rest[0]`, and
//! "end of file" (`c == -1`) is an empty `rest`.
//!
//! Numbers never fail: a missing number reads as `-1` without consuming the
//! character that is not a digit (a lone `-` is consumed). Arithmetic wraps
//! like C#'s unchecked `int`/`long`, which is the same as computing modulo
//! 2^64 and truncating. [`Number`] keeps enough to tell a missing or
//! overflowing field apart, so that callers can warn.

/// A number as CLRProfiler reads it: the wrapped bit pattern plus whether it
/// was present and whether it overflowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Number {
    /// The value modulo 2^64 (missing reads as `u64::MAX`, that is, -1).
    pub bits: u64,
    /// False when no digit was found (the reader returns -1).
    pub present: bool,
    /// True when the written value does not fit in 64 bits.
    pub overflow64: bool,
    /// True when the written magnitude exceeds `u32::MAX`.
    pub overflow32: bool,
}

impl Number {
    /// The value as the reader's 32-bit `ReadInt` sees it.
    #[inline]
    pub fn as_i32(self) -> i32 {
        self.bits as i32
    }
    /// The value as the reader's 64-bit `ReadULong` sees it.
    #[inline]
    pub fn as_u64(self) -> u64 {
        self.bits
    }
}

/// Hex digit values; 0xFF for bytes that are not hex digits.
static HEX: [u8; 256] = {
    let mut t = [0xFFu8; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = match b as u8 {
            c @ b'0'..=b'9' => c - b'0',
            c @ b'a'..=b'f' => c - b'a' + 10,
            c @ b'A'..=b'F' => c - b'A' + 10,
            _ => 0xFF,
        };
        b += 1;
    }
    t
};

const MISSING: Number = Number { bits: u64::MAX, present: false, overflow64: false, overflow32: false };

/// Skips spaces and tabs, as the reader does before every number.
#[inline(always)]
pub fn skip_blanks(i: &[u8]) -> &[u8] {
    // Fields are almost always separated by exactly one space.
    match i {
        [b' ', next, rest @ ..] if *next != b' ' && *next != b'\t' => {
            let _ = rest;
            &i[1..]
        }
        _ => skip_blanks_slow(i),
    }
}

#[inline(never)]
fn skip_blanks_slow(i: &[u8]) -> &[u8] {
    let k = i.iter().position(|&b| b != b' ' && b != b'\t').unwrap_or(i.len());
    &i[k..]
}

/// Reads one number: blanks, an optional `-`, then decimal digits or `0x`
/// followed by hex digits.
#[inline(always)]
pub fn number(i: &[u8]) -> (&[u8], Number) {
    number_at(skip_blanks(i))
}

/// [`number`] without the leading blanks.
#[inline(always)]
pub fn number_at(i: &[u8]) -> (&[u8], Number) {
    let mut p = 0;
    let negative = i.first() == Some(&b'-');
    if negative {
        p = 1;
    }
    match i.get(p) {
        Some(b) if b.is_ascii_digit() => {}
        _ => return (&i[p..], MISSING),
    }
    let mut value: u64 = 0;
    let wide;
    if i[p] == b'0' && matches!(i.get(p + 1), Some(b'x' | b'X')) {
        p += 2;
        let start = p;
        while p < i.len() {
            let d = HEX[i[p] as usize];
            if d > 15 {
                break;
            }
            value = (value << 4) | d as u64;
            p += 1;
        }
        wide = p - start > 16 && hex_overflows(&i[start..p]);
    } else {
        let start = p;
        while p < i.len() {
            let d = i[p].wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            value = value.wrapping_mul(10).wrapping_add(d as u64);
            p += 1;
        }
        wide = p - start > 19 && decimal_overflows(&i[start..p]);
    }
    let overflow32 = wide || value > u32::MAX as u64;
    if negative {
        value = value.wrapping_neg();
    }
    (&i[p..], Number { bits: value, present: true, overflow64: wide, overflow32 })
}

#[cold]
fn hex_overflows(digits: &[u8]) -> bool {
    let significant = digits.iter().position(|&b| b != b'0').map_or(0, |k| digits.len() - k);
    significant > 16
}

#[cold]
fn decimal_overflows(digits: &[u8]) -> bool {
    let mut v: u64 = 0;
    for &b in digits {
        match v.checked_mul(10).and_then(|x| x.checked_add((b - b'0') as u64)) {
            Some(x) => v = x,
            None => return true,
        }
    }
    false
}

/// Where a name ends, as the reader's `ReadString` decides it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NameRule {
    /// Bytes at or below this value end the name outside `<...>`.
    pub delimiter: u8,
    /// A `)` ends the name (function signatures), even inside `<...>`.
    pub stop_after_paren: bool,
    /// Inside `<...>`, delimiters are read through until the decoded name
    /// holds this many characters.
    pub max_len: usize,
}

impl NameRule {
    /// Function names: end at a space, 255 characters inside `<>`.
    pub const FUNCTION_NAME: NameRule = NameRule { delimiter: b' ', stop_after_paren: false, max_len: 255 };
    /// Function signatures: end after `)` or at a control byte.
    pub const SIGNATURE: NameRule = NameRule { delimiter: b'\r', stop_after_paren: true, max_len: 1023 };
    /// Type names: the rest of the line (trailing spaces kept).
    pub const TYPE_NAME: NameRule = NameRule { delimiter: b'\r', stop_after_paren: false, max_len: 1023 };
}

/// The outcome of scanning one name.
#[derive(Clone, Copy, Debug)]
pub struct ScannedName<'a> {
    /// The raw bytes of the name, escapes included.
    pub raw: &'a [u8],
    /// The name was read across a line end (an unbalanced `<`).
    pub crossed_line: bool,
}

/// Scans a name starting at the look-ahead character. Never fails.
///
/// At end of input the scan stops (the reader would pad the name with
/// U+FFFF up to `max_len` inside `<>`; every record that can hold a name is
/// dropped at end of input anyway).
pub fn name(i: &[u8], rule: NameRule) -> (&[u8], ScannedName<'_>) {
    let start = i;
    let mut pos = 0usize;
    let mut depth = 0u32;
    let mut len = 0usize;
    let mut crossed_line = false;
    while let Some(&c) = i.get(pos) {
        if !(c > rule.delimiter || (depth != 0 && len < rule.max_len)) {
            break;
        }
        if c == b'\n' {
            crossed_line = true;
        }
        if c == b'\\' {
            pos += 1;
            match i.get(pos) {
                Some(b'u') => {
                    pos += 1;
                    let mut count = 0;
                    while count < 4 && matches!(i.get(pos), Some(b'0'..=b'9' | b'a'..=b'f')) {
                        count += 1;
                        pos += 1;
                    }
                }
                Some(&e) => {
                    if e == b'\n' {
                        crossed_line = true;
                    }
                    pos += 1;
                }
                None => {}
            }
            len += 1;
            continue;
        }
        len += 1;
        pos += 1;
        if c == b'<' {
            depth += 1;
        } else if c == b'>' && depth > 0 {
            depth -= 1;
        } else if rule.stop_after_paren && c == b')' {
            break;
        }
    }
    (&start[pos..], ScannedName { raw: &start[..pos], crossed_line })
}

/// Scans raw text up to the first byte at or below `\r` (`m`, `y`, `z`
/// records: no escapes, tabs end the text).
#[inline]
pub fn raw_text(i: &[u8]) -> (&[u8], &[u8]) {
    let end = i.iter().position(|&b| b <= b'\r').unwrap_or(i.len());
    (&i[end..], &i[..end])
}

/// Decodes a raw name: Latin-1 bytes, `\uXXXX` (up to four lower-case hex
/// digits, UTF-16 units; surrogate pairs are joined, lone ones become
/// U+FFFD) and `\c` for any other `c`.
pub fn decode_name(raw: &[u8]) -> String {
    let mut units: Vec<u16> = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b == b'\\' {
            i += 1;
            match raw.get(i) {
                Some(b'u') => {
                    i += 1;
                    let mut v: u32 = 0;
                    let mut count = 0;
                    while count < 4 {
                        match raw.get(i) {
                            Some(&d @ b'0'..=b'9') => v = v * 16 + (d - b'0') as u32,
                            Some(&d @ b'a'..=b'f') => v = v * 16 + (d - b'a' + 10) as u32,
                            _ => break,
                        }
                        count += 1;
                        i += 1;
                    }
                    units.push(v as u16);
                }
                Some(&e) => {
                    units.push(e as u16);
                    i += 1;
                }
                None => {}
            }
        } else {
            units.push(b as u16);
            i += 1;
        }
    }
    char::decode_utf16(units.iter().copied())
        .map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()
}

/// Decodes raw text that has no escapes (Latin-1).
pub fn decode_latin1(raw: &[u8]) -> String {
    raw.iter().map(|&b| b as char).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(s: &str) -> (String, Number) {
        let (rest, n) = number(s.as_bytes());
        (String::from_utf8_lossy(rest).into_owned(), n)
    }

    #[test]
    fn decimal_hex_negative() {
        assert_eq!(num("  42 x").1.as_i32(), 42);
        assert_eq!(num("  42 x").0, " x");
        assert_eq!(num("0x1F").1.as_u64(), 31);
        assert_eq!(num("0X1f").1.as_u64(), 31);
        assert_eq!(num("-7").1.as_i32(), -7);
        assert_eq!(num("\t0123").1.as_i32(), 123);
    }

    #[test]
    fn missing_reads_minus_one() {
        let (rest, n) = num("abc");
        assert_eq!(rest, "abc");
        assert!(!n.present);
        assert_eq!(n.as_i32(), -1);
        // a lone minus is consumed
        let (rest, n) = num("-x");
        assert_eq!(rest, "x");
        assert!(!n.present);
        assert_eq!(num("").1.as_u64(), u64::MAX);
    }

    #[test]
    fn wraps_like_csharp() {
        let (_, n) = num("4294967296");
        assert_eq!(n.as_i32(), 0);
        assert!(n.overflow32 && !n.overflow64);
        let (_, n) = num("4294967295");
        assert_eq!(n.as_i32(), -1);
        assert!(!n.overflow32);
        let (_, n) = num("36893488147419103232"); // 2^65
        assert_eq!(n.as_u64(), 0);
        assert!(n.overflow64);
        let (_, n) = num("0x10000000000000001");
        assert_eq!(n.as_u64(), 1);
        assert!(n.overflow64);
    }

    #[test]
    fn long_hex_numbers() {
        assert_eq!(num("0x0000013600001000 7").1.as_u64(), 0x13600001000);
        assert_eq!(num("0xFFFFFFFFFFFFFFFF").1.as_u64(), u64::MAX);
        assert_eq!(num("0x123456789").1.as_u64(), 0x123456789);
        let (rest, n) = num("0x00000000000000000001x");
        assert_eq!((rest.as_str(), n.as_u64(), n.overflow64), ("x", 1, false));
        assert!(num("0x10000000000000000").1.overflow64);
    }

    #[test]
    fn hex_after_zero_x_stops_decimal() {
        // "0x" with no digits reads 0 and stops at the next byte
        let (rest, n) = num("0xg1");
        assert_eq!(n.as_u64(), 0);
        assert_eq!(rest, "g1");
    }

    #[test]
    fn names() {
        let (rest, n) = name(b"A::B<x y> void (int)", NameRule::FUNCTION_NAME);
        assert_eq!(n.raw, b"A::B<x y>");
        assert_eq!(rest, b" void (int)");
        let (rest, n) = name(b"void (int a, int b) 0 0", NameRule::SIGNATURE);
        assert_eq!(n.raw, b"void (int a, int b)");
        assert_eq!(rest, b" 0 0");
        let (rest, n) = name(b"T with spaces \nnext", NameRule::TYPE_NAME);
        assert_eq!(n.raw, b"T with spaces ");
        assert_eq!(rest, b"\nnext");
        // tab ends a type name
        let (_, n) = name(b"Foo\tBar", NameRule::TYPE_NAME);
        assert_eq!(n.raw, b"Foo");
    }

    #[test]
    fn names_read_through_line_ends_inside_angles() {
        let (rest, n) = name(b"F<a\nb> x", NameRule::FUNCTION_NAME);
        assert_eq!(n.raw, b"F<a\nb>");
        assert!(n.crossed_line);
        assert_eq!(rest, b" x");
    }

    #[test]
    fn name_length_limit_inside_angles() {
        let long = format!("<{}\n tail", "a".repeat(300));
        let (_, n) = name(long.as_bytes(), NameRule::FUNCTION_NAME);
        // 1 + 300 characters exceed 255, so the line end stops the name
        assert_eq!(n.raw.len(), 301);
    }

    #[test]
    fn escapes() {
        let (_, n) = name(br"A\ B\\C\u00e9\u4e2d!", NameRule::FUNCTION_NAME);
        assert_eq!(decode_name(n.raw), "A B\\Cé中!");
        // short \u escapes stop at the first non-hex digit
        assert_eq!(decode_name(br"\u41Z"), "AZ");
        // Latin-1 bytes
        assert_eq!(decode_name(&[b'a', 0xE9]), "aé");
    }
}
