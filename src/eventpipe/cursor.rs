//! Little-endian reading over a byte slice, every error naming the byte
//! offset in the trace and what was expected.

use super::error::Error;

/// A position in a slice of the trace; `base` is the slice's offset in the
/// trace so that errors name trace offsets.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    base: u64,
}

impl<'a> Cursor<'a> {
    #[inline]
    pub(crate) fn new(data: &'a [u8], base: u64) -> Self {
        Cursor { data, pos: 0, base }
    }
    /// The trace offset of the next byte.
    #[inline]
    pub(crate) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }
    #[inline]
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }
    #[inline]
    pub(crate) fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }
    #[inline]
    pub(crate) fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], Error> {
        if self.remaining() < n {
            return Err(Error::end(self.offset(), what));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    #[inline]
    pub(crate) fn skip(&mut self, n: usize, what: &'static str) -> Result<(), Error> {
        self.bytes(n, what).map(|_| ())
    }
    #[inline]
    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], Error> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.bytes(N, what)?);
        Ok(a)
    }
    #[inline]
    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, Error> {
        Ok(self.array::<1>(what)?[0])
    }
    #[inline]
    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16, Error> {
        self.array(what).map(u16::from_le_bytes)
    }
    #[inline]
    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, Error> {
        self.array(what).map(u32::from_le_bytes)
    }
    #[inline]
    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, Error> {
        self.array(what).map(u64::from_le_bytes)
    }
    #[inline]
    pub(crate) fn guid(&mut self, what: &'static str) -> Result<[u8; 16], Error> {
        self.array(what)
    }
    /// A varint of one byte (the common case: deltas, small ids), read
    /// without the loop.
    #[inline(always)]
    fn one_byte_varint(&mut self) -> Option<u8> {
        let b = *self.data.get(self.pos)?;
        if b & 0x80 != 0 {
            return None;
        }
        self.pos += 1;
        Some(b)
    }
    /// An unsigned LEB128-style varint of at most `max_bytes` bytes.
    #[inline(always)]
    fn varint(&mut self, max_bytes: u32, what: &'static str) -> Result<u64, Error> {
        let start = self.offset();
        let mut v = 0u64;
        for i in 0..max_bytes {
            let Some(&b) = self.data.get(self.pos) else { return Err(Error::end(self.offset(), what)) };
            self.pos += 1;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Error::invalid(start, what, v))
    }
    pub(crate) fn varu32(&mut self, what: &'static str) -> Result<u32, Error> {
        if let Some(b) = self.one_byte_varint() {
            return Ok(u32::from(b));
        }
        // 5 bytes carry 35 bits; the writer never sets the top ones, and
        // truncation is what the runtime's own reader does.
        Ok(self.varint(5, what)? as u32)
    }
    #[inline]
    pub(crate) fn varu64(&mut self, what: &'static str) -> Result<u64, Error> {
        if let Some(b) = self.one_byte_varint() {
            return Ok(u64::from(b));
        }
        self.varint(10, what)
    }
    /// A zigzag-encoded signed varint (V6 `varint64`).
    #[inline]
    pub(crate) fn vari64(&mut self, what: &'static str) -> Result<i64, Error> {
        let v = self.varint(10, what)?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }
    /// A V6 string: a `varuint32` byte count and that many UTF-8 bytes.
    #[inline]
    pub(crate) fn utf8(&mut self, what: &'static str) -> Result<&'a [u8], Error> {
        let at = self.offset();
        let n = self.varu32(what)? as usize;
        if n > self.remaining() {
            return Err(Error::end(at, what));
        }
        self.bytes(n, what)
    }
    /// The bytes this cursor reads, from its first.
    #[inline]
    pub(crate) fn data(&self) -> &'a [u8] {
        self.data
    }
    /// The trace offset of the first byte of [`Self::data`].
    #[inline]
    pub(crate) fn base(&self) -> u64 {
        self.base
    }
    /// A UTF-16LE string ended by a 0 code unit; returns the code units'
    /// bytes without the terminator.
    pub(crate) fn utf16z(&mut self, what: &'static str) -> Result<&'a [u8], Error> {
        let rest = &self.data[self.pos..];
        let mut i = 0;
        // Four code units at a time while none of them is 0 (a 16-bit
        // lane is 0 exactly when the borrow trick sets its top bit).
        while let Some(w) = rest.get(i..i + 8) {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            let v = u64::from_le_bytes(b);
            if v.wrapping_sub(0x0001_0001_0001_0001) & !v & 0x8000_8000_8000_8000 != 0 {
                break;
            }
            i += 8;
        }
        while i + 1 < rest.len() {
            if rest[i] == 0 && rest[i + 1] == 0 {
                let s = &rest[..i];
                self.pos += i + 2;
                return Ok(s);
            }
            i += 2;
        }
        Err(Error::end(self.offset() + rest.len() as u64, what))
    }
    /// A byte string ended by a 0 byte; returns it without the terminator.
    #[inline]
    pub(crate) fn bytez(&mut self, what: &'static str) -> Result<&'a [u8], Error> {
        let rest = &self.data[self.pos..];
        match memchr::memchr(0, rest) {
            Some(i) => {
                self.pos += i + 1;
                Ok(&rest[..i])
            }
            None => Err(Error::end(self.offset() + rest.len() as u64, what)),
        }
    }
}

/// UTF-8 bytes to a `String`, invalid sequences replaced.
pub(crate) fn utf8_to_string(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// UTF-16LE bytes to a `String`, unpaired surrogates replaced.
pub(crate) fn utf16_to_string(bytes: &[u8]) -> String {
    char::decode_utf16(bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])))
        .map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_ends() {
        let mut c = Cursor::new(&[0x81, 0x01, 0x7f, 0xff], 100);
        assert_eq!(c.varu32("v").unwrap(), 129);
        assert_eq!(c.varu64("v").unwrap(), 127);
        let e = c.varu32("a varint").unwrap_err();
        assert_eq!(e.offset, 104);
        let mut c = Cursor::new(&[0xff; 11], 0);
        assert!(matches!(c.varu64("v").unwrap_err().kind, super::super::ErrorKind::Invalid { .. }));
    }

    #[test]
    fn zigzag_and_utf8() {
        let mut c = Cursor::new(&[0x03, 0x04, 0x02, b'h', b'i', 0x05, b'x'], 0);
        assert_eq!(c.vari64("v").unwrap(), -2);
        assert_eq!(c.vari64("v").unwrap(), 2);
        assert_eq!(c.utf8("s").unwrap(), b"hi");
        let e = c.utf8("a string").unwrap_err();
        assert_eq!(e.offset, 5);
    }

    #[test]
    fn strings() {
        let mut c = Cursor::new(&[b'h', 0, b'i', 0, 0, 0, 7], 0);
        assert_eq!(utf16_to_string(c.utf16z("s").unwrap()), "hi");
        assert_eq!(c.u8("b").unwrap(), 7);
        let mut c = Cursor::new(&[b'h', 0, b'i'], 10);
        assert_eq!(c.utf16z("a name").unwrap_err().offset, 13);
    }
}
