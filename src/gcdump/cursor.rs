//! Little-endian reading over the whole file, as FastSerialization writes
//! its primitives: fixed-width integers, floats, and strings as a count of
//! UTF-16 code units followed by each unit in one to three UTF-8-like bytes.
//! Every error names the byte offset and what was expected.

use super::error::Error;

/// A position in the file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Cursor { data, pos: 0 }
    }

    /// The whole file.
    pub(crate) fn data(&self) -> &'a [u8] {
        self.data
    }

    /// Offset of the next byte.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    /// Moves to `pos` (at most the end of the file).
    pub(crate) fn seek(&mut self, pos: usize, what: &'static str) -> Result<(), Error> {
        if pos > self.data.len() {
            return Err(Error::invalid(self.pos, what, pos as i64));
        }
        self.pos = pos;
        Ok(())
    }

    /// Steps back over the byte just read (a tag that was not the one a
    /// tagged field needs).
    pub(crate) fn unread_byte(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    pub(crate) fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], Error> {
        if self.remaining() < n {
            return Err(Error::end(self.pos, what));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], Error> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.bytes(N, what)?);
        Ok(a)
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, Error> {
        Ok(self.array::<1>(what)?[0])
    }

    pub(crate) fn bool(&mut self, what: &'static str) -> Result<bool, Error> {
        Ok(self.u8(what)? != 0)
    }

    pub(crate) fn i32(&mut self, what: &'static str) -> Result<i32, Error> {
        self.array(what).map(i32::from_le_bytes)
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, Error> {
        self.array(what).map(u32::from_le_bytes)
    }

    pub(crate) fn i64(&mut self, what: &'static str) -> Result<i64, Error> {
        self.array(what).map(i64::from_le_bytes)
    }

    pub(crate) fn f32(&mut self, what: &'static str) -> Result<f32, Error> {
        self.array(what).map(f32::from_le_bytes)
    }

    /// A count written as a 32-bit integer, each of whose items takes at
    /// least `item_bytes` bytes: refused when negative or when the rest of
    /// the file cannot hold that many items (so that it may size a buffer).
    pub(crate) fn count(&mut self, item_bytes: usize, what: &'static str) -> Result<usize, Error> {
        let at = self.pos;
        let n = self.i32(what)?;
        if n < 0 {
            return Err(Error::invalid(at, what, i64::from(n)));
        }
        let n = n as usize;
        if n.saturating_mul(item_bytes.max(1)) > self.remaining() {
            return Err(Error::end(self.pos, what));
        }
        Ok(n)
    }

    /// A FastSerialization string: `None` for the null string (count -1).
    pub(crate) fn string(&mut self, what: &'static str) -> Result<Option<String>, Error> {
        let at = self.pos;
        let n = self.i32(what)?;
        if n < 0 {
            if n == -1 {
                return Ok(None);
            }
            return Err(Error::invalid(at, what, i64::from(n)));
        }
        let n = n as usize;
        // Every code unit takes at least one byte.
        if n > self.remaining() {
            return Err(Error::end(self.pos, what));
        }
        let mut units = Vec::with_capacity(n);
        for _ in 0..n {
            let b = u32::from(self.u8(what)?);
            let unit = if b < 0x80 {
                b
            } else if b < 0xE0 {
                let b2 = u32::from(self.u8(what)?);
                ((b & 0x1F) << 6) | (b2 & 0x3F)
            } else {
                let b2 = u32::from(self.u8(what)?);
                let b3 = u32::from(self.u8(what)?);
                ((b & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
            };
            units.push(unit as u16);
        }
        Ok(Some(String::from_utf16_lossy(&units)))
    }
}

/// Reads one of the graph's compressed integers from `blob` at `*pos`:
/// big-endian groups of 7 bits, a set high bit meaning another byte
/// follows, the first group sign-extended, at most five bytes (the fifth
/// taken whole). `None` when the blob ends first.
pub(crate) fn compressed_int(blob: &[u8], pos: &mut usize) -> Option<i32> {
    let first = *blob.get(*pos)?;
    *pos += 1;
    // Sign-extend the low 7 bits.
    let mut v = (i32::from(first) << 25) >> 25;
    if first & 0x80 == 0 {
        return Some(v);
    }
    for k in 1..5 {
        let b = *blob.get(*pos)?;
        *pos += 1;
        v = v.wrapping_shl(7);
        if k == 4 {
            return Some(v.wrapping_add(i32::from(b)));
        }
        v = v.wrapping_add(i32::from(b & 0x7F));
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The writer's encoding, as the graph writes it, for the round trip.
    fn encode(value: i32, out: &mut Vec<u8>) {
        let fits = |bits: u32| (value << (32 - bits)) >> (32 - bits) == value;
        let n = if fits(7) {
            1
        } else if fits(14) {
            2
        } else if fits(21) {
            3
        } else if fits(28) {
            4
        } else {
            5
        };
        for k in (1..n).rev() {
            out.push((((value >> (7 * k)) as u8) & 0x7F) | 0x80);
        }
        if n == 5 {
            // The fifth group from the top is written with its high bits.
            let len = out.len();
            out[len - 4] = ((value >> 28) as u8) | 0x80;
        }
        out.push((value & 0x7F) as u8);
    }

    #[test]
    fn compressed_ints_round_trip() {
        for v in [0, 1, -1, 63, 64, -64, -65, 8191, 8192, -8193, 1 << 20, -(1 << 27), 1 << 28, i32::MAX, i32::MIN, 123_456_789] {
            let mut buf = Vec::new();
            encode(v, &mut buf);
            let mut pos = 0;
            assert_eq!(compressed_int(&buf, &mut pos), Some(v), "{v} as {buf:x?}");
            assert_eq!(pos, buf.len());
            // Cut short: no value.
            let mut pos = 0;
            assert_eq!(compressed_int(&buf[..buf.len() - 1], &mut pos), None);
        }
    }

    #[test]
    fn strings_decode_and_refuse_bad_counts() {
        let mut b = Vec::new();
        b.extend_from_slice(&3i32.to_le_bytes());
        b.extend_from_slice(&[b'a', 0xC3, 0xA9, 0xE2, 0x82, 0xAC]);
        b.extend_from_slice(&(-1i32).to_le_bytes());
        b.extend_from_slice(&(-2i32).to_le_bytes());
        let mut c = Cursor::new(&b);
        assert_eq!(c.string("s").unwrap().as_deref(), Some("a\u{e9}\u{20ac}"));
        assert_eq!(c.string("s").unwrap(), None);
        assert_eq!(c.string("s").unwrap_err(), Error::invalid(14, "s", -2));
        let big = 1000i32.to_le_bytes();
        assert!(matches!(Cursor::new(&big).string("s"), Err(Error { offset: 4, .. })));
    }

    #[test]
    fn counts_are_capped_by_the_remaining_bytes() {
        let mut b = 3i32.to_le_bytes().to_vec();
        b.extend_from_slice(&[0; 12]);
        assert_eq!(Cursor::new(&b).count(4, "n").unwrap(), 3);
        assert!(Cursor::new(&b).count(5, "n").is_err());
        assert!(Cursor::new(&(-1i32).to_le_bytes()).count(1, "n").is_err());
    }
}
