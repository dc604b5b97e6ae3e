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

/// Appends an unsigned decimal.
#[inline]
pub fn dec_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut n = buf.len();
    loop {
        n -= 1;
        buf[n] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
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
    out.extend_from_slice(b"0x");
    let digits = if v == 0 { 1 } else { (67 - v.leading_zeros() as usize) / 4 };
    for k in (0..digits).rev() {
        out.push(LOWER[((v >> (k * 4)) & 15) as usize]);
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
