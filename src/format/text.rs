//! Number and name formatting for the writer, in the styles of
//! CLRProfiler's profiler.

/// How addresses are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    /// Digits of a zero-padded pointer: 8 for a 32-bit process, 16 for 64-bit.
    pub pointer_digits: usize,
}

impl Style {
    /// A 64-bit process.
    pub const BITS64: Style = Style { pointer_digits: 16 };
    /// A 32-bit process.
    pub const BITS32: Style = Style { pointer_digits: 8 };
}

impl Default for Style {
    fn default() -> Self {
        Style::BITS64
    }
}

const LOWER: &[u8; 16] = b"0123456789abcdef";
const UPPER: &[u8; 16] = b"0123456789ABCDEF";

const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Writes the decimal digits of `v` so that they end at `end` in `buf`;
/// returns where they start. `buf[..end]` must have room for 20 digits.
#[inline]
fn dec_into(buf: &mut [u8], end: usize, mut v: u64) -> usize {
    let mut n = end;
    while v >= 100 {
        let k = (v % 100) as usize * 2;
        v /= 100;
        n -= 2;
        buf[n] = PAIRS[k];
        buf[n + 1] = PAIRS[k + 1];
    }
    if v >= 10 {
        let k = v as usize * 2;
        n -= 2;
        buf[n] = PAIRS[k];
        buf[n + 1] = PAIRS[k + 1];
    } else {
        n -= 1;
        buf[n] = b'0' + v as u8;
    }
    n
}

/// Writes `v` as lower-case hex digits (no prefix) ending at `end` in
/// `buf`; returns where they start.
#[inline]
fn hex_into(buf: &mut [u8], end: usize, mut v: u64) -> usize {
    let mut n = end;
    loop {
        n -= 1;
        buf[n] = LOWER[(v & 15) as usize];
        v >>= 4;
        if v == 0 {
            return n;
        }
    }
}

/// Appends an unsigned decimal.
#[inline]
pub fn dec_u64(out: &mut Vec<u8>, v: u64) {
    let mut buf = [0u8; 20];
    let n = dec_into(&mut buf, 20, v);
    out.extend_from_slice(&buf[n..]);
}

/// Appends a signed decimal.
#[inline]
pub fn dec_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    dec_u64(out, v.unsigned_abs());
}

/// Appends `0x` + lower-case hex without padding (the hot records).
#[inline]
pub fn hex_lower(out: &mut Vec<u8>, v: u64) {
    let mut buf = [0u8; 18];
    let n = hex_into(&mut buf, 18, v) - 2;
    buf[n] = b'0';
    buf[n + 1] = b'x';
    out.extend_from_slice(&buf[n..]);
}

/// One short line assembled on the stack and appended to the output with a
/// single copy (the hot records: `!`, `c`, `i`). Fields are written from
/// the end backwards.
pub(crate) struct Line {
    buf: [u8; 96],
    start: usize,
}

impl Line {
    /// An empty line ending in `\n`.
    #[inline]
    pub(crate) fn new() -> Line {
        let mut buf = [0u8; 96];
        buf[95] = b'\n';
        Line { buf, start: 95 }
    }

    /// Prepends bytes.
    #[inline]
    pub(crate) fn text(&mut self, s: &[u8]) -> &mut Line {
        let n = self.start - s.len();
        self.buf[n..self.start].copy_from_slice(s);
        self.start = n;
        self
    }

    /// Prepends a signed decimal.
    #[inline]
    pub(crate) fn dec(&mut self, v: i64) -> &mut Line {
        self.start = dec_into(&mut self.buf, self.start, v.unsigned_abs());
        if v < 0 {
            self.text(b"-");
        }
        self
    }

    /// Prepends `0x` + lower-case hex.
    #[inline]
    pub(crate) fn hex(&mut self, v: u64) -> &mut Line {
        self.start = hex_into(&mut self.buf, self.start, v);
        self.text(b"0x")
    }

    /// Appends the line to `out`.
    #[inline]
    pub(crate) fn finish(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.buf[self.start..]);
    }
}

/// Appends `0x` + upper-case hex zero-padded to pointer width (`%p`).
#[inline]
pub fn hex_pointer(out: &mut Vec<u8>, v: u64, style: Style) {
    out.extend_from_slice(b"0x");
    let needed = if v == 0 { 1 } else { (67 - v.leading_zeros() as usize) / 4 };
    let digits = needed.max(style.pointer_digits);
    for k in (0..digits).rev() {
        out.push(UPPER[((v >> (k * 4)) & 15) as usize]);
    }
}

/// Appends `0x` + lower-case hex (`%x`).
#[inline]
pub fn hex_plain(out: &mut Vec<u8>, v: u64) {
    hex_lower(out, v)
}

/// Escapes a name the way CLRProfiler's profiler does before writing it:
/// when the name holds a character at or above U+0100, a backslash or the
/// `quote` character, backslashes and `quote` get a backslash and every
/// character at or above U+0080 becomes `\uXXXX`; other names are written
/// as Latin-1 bytes (characters U+0080..U+00FF as single bytes).
pub fn escape_name(name: &str, quote: Option<char>) -> Vec<u8> {
    let needs = name.chars().any(|c| c == '\\' || Some(c) == quote || (c as u32) >= 0x100);
    let mut out = Vec::with_capacity(name.len());
    if !needs {
        out.extend(name.chars().map(|c| c as u32 as u8));
        return out;
    }
    let mut units = [0u16; 2];
    for c in name.chars() {
        if c == '\\' || Some(c) == quote {
            out.push(b'\\');
            out.push(c as u8);
        } else if (c as u32) >= 0x80 {
            for &u in c.encode_utf16(&mut units).iter() {
                out.extend_from_slice(b"\\u");
                for k in (0..4).rev() {
                    out.push(LOWER[((u >> (k * 4)) & 15) as usize]);
                }
            }
        } else {
            out.push(c as u8);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(f: impl Fn(&mut Vec<u8>)) -> String {
        let mut v = Vec::new();
        f(&mut v);
        String::from_utf8(v).unwrap() // ok: test helper
    }

    #[test]
    fn formats() {
        assert_eq!(s(|o| dec_i64(o, -42)), "-42");
        assert_eq!(s(|o| dec_u64(o, 0)), "0");
        assert_eq!(s(|o| dec_u64(o, u64::MAX)), "18446744073709551615");
        assert_eq!(s(|o| hex_lower(o, 0x13600001220)), "0x13600001220");
        assert_eq!(s(|o| hex_lower(o, 0)), "0x0");
        assert_eq!(s(|o| hex_pointer(o, 0x2000000, Style::BITS64)), "0x0000000002000000");
        assert_eq!(s(|o| hex_pointer(o, 0xA01000, Style::BITS32)), "0x00A01000");
    }

    #[test]
    fn escapes_like_the_profiler() {
        assert_eq!(escape_name("System.String", Some(' ')), b"System.String");
        assert_eq!(escape_name("a b", Some(' ')), b"a\\ b");
        assert_eq!(escape_name("caf\u{e9}", None), b"caf\xe9");
        assert_eq!(escape_name("caf\u{e9}\u{4e2d}", None), b"caf\\u00e9\\u4e2d");
        assert_eq!(escape_name("a\\b", None), b"a\\\\b");
    }
}

#[cfg(test)]
mod number_tests {
    use super::*;

    #[test]
    fn decimals_and_hex_match_std() {
        let mut vals: Vec<u64> = vec![0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, u32::MAX as u64, u64::MAX, u64::MAX - 1];
        let mut x = 0x9E3779B97F4A7C15u64;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            vals.push(x >> (x % 64));
        }
        for v in vals {
            let mut out = Vec::new();
            dec_u64(&mut out, v);
            assert_eq!(out, v.to_string().into_bytes());
            out.clear();
            hex_lower(&mut out, v);
            assert_eq!(out, format!("0x{v:x}").into_bytes());
            let s = v as i64;
            out.clear();
            dec_i64(&mut out, s);
            assert_eq!(out, s.to_string().into_bytes());
            out.clear();
            Line::new().dec(s).text(b" ").hex(v).text(b"! ").finish(&mut out);
            assert_eq!(out, format!("! 0x{v:x} {s}\n").into_bytes());
        }
        let mut out = Vec::new();
        Line::new().dec(i64::MIN).text(b" ").dec(i64::MAX).hex(u64::MAX).text(b"c ").finish(&mut out);
        assert_eq!(out, format!("c 0x{:x}{} {}\n", u64::MAX, i64::MAX, i64::MIN).into_bytes());
    }
}
