//! The runtime's bulk events read in place: fixed-size fields, then one
//! array of fixed-size structures (`GC/BulkNode`, `GC/BulkEdge`,
//! `GC/BulkRootEdge`, ...), the array's elements read at their stride
//! with no value built per element.
//!
//! ```text
//! payload  Index u32 | Count u32 | ClrInstanceID u16 | Values[Count] | (bytes of a newer version)
//! Values   element 0: Address ptr | Size u64 | ...   element 1 at +stride ...
//! ```
//!
//! [`Event::fields`](super::Event::fields) decodes the same payload into
//! named values; this is the way for the events whose elements come by
//! the million. A member is found by name once per event
//! ([`Bulk::member`]) and read per element ([`Bulk::get`]).

use super::error::Error;
use super::runtime_schemas::{Count, In, SField, SType};

/// A member of a bulk event's elements: where in an element it lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    offset: usize,
    width: u8,
}

/// A bulk event's payload, borrowed from the trace.
#[derive(Debug, Clone, Copy)]
pub struct Bulk<'a> {
    head: &'static [SField],
    elem: &'static [SField],
    payload: &'a [u8],
    ptr: u32,
    /// The elements' bytes (`count * stride`).
    items: &'a [u8],
    stride: usize,
    count: usize,
}

/// The width of a fixed-size primitive (`None`: a string, of no fixed size).
fn width(t: In, ptr: u32) -> Option<usize> {
    Some(match t {
        In::U8 => 1,
        In::U16 => 2,
        In::U32 | In::I32 | In::Bool32 => 4,
        In::U64 | In::I64 | In::F64 => 8,
        In::Ptr => ptr as usize,
        In::Guid => 16,
        In::Utf16Z | In::AnsiZ => return None,
    })
}

/// The little-endian integer of `width` bytes at `at` (0 past the end).
#[inline(always)]
fn read(bytes: &[u8], at: usize, width: u8) -> u64 {
    match width {
        1 => bytes.get(at).map_or(0, |&b| u64::from(b)),
        2 => bytes.get(at..at + 2).map_or(0, |b| u64::from(u16::from_le_bytes([b[0], b[1]]))),
        4 => bytes.get(at..at + 4).map_or(0, |b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
        8 => bytes.get(at..at + 8).and_then(|b| b.try_into().ok()).map_or(0, u64::from_le_bytes),
        _ => 0,
    }
}

impl<'a> Bulk<'a> {
    /// Reads `payload` (at trace offset `base`) by the runtime schema
    /// `fields`. `Ok(None)` when the schema is not fixed-size fields
    /// followed by one counted array of fixed-size structures; an error
    /// when the payload is shorter than its count says.
    pub(crate) fn read(fields: &'static [SField], payload: &'a [u8], base: u64, ptr: u32) -> Result<Option<Bulk<'a>>, Error> {
        let mut at = 0usize;
        for (i, f) in fields.iter().enumerate() {
            match (f.count, f.ty) {
                (Count::One, SType::Prim(t)) => match width(t, ptr) {
                    Some(w) => at += w,
                    None => return Ok(None),
                },
                (Count::Field(from), SType::Struct(elem)) if i + 1 == fields.len() && usize::from(from) < i => {
                    let mut stride = 0usize;
                    for m in elem {
                        match (m.count, m.ty) {
                            (Count::One, SType::Prim(t)) => match width(t, ptr) {
                                Some(w) => stride += w,
                                None => return Ok(None),
                            },
                            _ => return Ok(None),
                        }
                    }
                    let head = &fields[..i];
                    let bulk = Bulk { head, elem, payload, ptr, items: &[], stride, count: 0 };
                    let count = bulk.head_at(usize::from(from)).unwrap_or(0);
                    let bytes = count.checked_mul(stride as u64).filter(|&b| b <= payload.len().saturating_sub(at) as u64);
                    let Some(bytes) = bytes else {
                        return Err(Error::invalid(base + at as u64, "an element count that fits the payload", count));
                    };
                    let items = &payload[at..at + bytes as usize];
                    // Elements of no bytes (an empty structure) are none.
                    let count = if stride == 0 { 0 } else { count as usize };
                    return Ok(Some(Bulk { items, count, ..bulk }));
                }
                _ => return Ok(None),
            }
        }
        Ok(None)
    }

    /// The value of the fixed field at position `k` before the array.
    fn head_at(&self, k: usize) -> Option<u64> {
        let mut at = 0usize;
        for (i, f) in self.head.iter().enumerate() {
            let SType::Prim(t) = f.ty else { return None };
            let w = width(t, self.ptr)?;
            if i == k {
                if at + w > self.payload.len() {
                    return None;
                }
                return Some(read(self.payload, at, w as u8));
            }
            at += w;
        }
        None
    }

    /// A fixed field before the array, by name (`Index`, `Count`).
    pub fn head(&self, name: &str) -> Option<u64> {
        self.head.iter().position(|f| f.name == name).and_then(|k| self.head_at(k))
    }

    /// A member of the elements, by name (`None` when they have none of
    /// that name, or it is not an integer of at most 8 bytes).
    pub fn member(&self, name: &str) -> Option<Member> {
        let mut offset = 0usize;
        for m in self.elem {
            let SType::Prim(t) = m.ty else { return None };
            let w = width(t, self.ptr)?;
            if m.name == name {
                return (w <= 8).then_some(Member { offset, width: w as u8 });
            }
            offset += w;
        }
        None
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Member `m` of element `i` (0 when `i` is out of range).
    #[inline(always)]
    pub fn get(&self, i: usize, m: Member) -> u64 {
        read(self.items, i * self.stride + m.offset, m.width)
    }

    /// Member `m` of element `i`, or 0 when the elements have no such
    /// member.
    #[inline(always)]
    pub fn get_or_zero(&self, i: usize, m: Option<Member>) -> u64 {
        m.map_or(0, |m| self.get(i, m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eventpipe::cursor::Cursor;
    use crate::eventpipe::payload::{decode_schema, Value};
    use crate::eventpipe::runtime_schemas::{lookup, RuntimeProvider};

    fn node_payload(count: u32, values: &[[u64; 4]]) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend(7u32.to_le_bytes());
        p.extend(count.to_le_bytes());
        p.extend(1u16.to_le_bytes());
        for v in values {
            for x in v {
                p.extend(x.to_le_bytes());
            }
        }
        p
    }

    #[test]
    fn elements_read_in_place_agree_with_the_named_fields() {
        let schema = lookup(RuntimeProvider::Runtime, 18, 0).map(|s| s.0.fields).unwrap_or(&[]);
        let values = [[0x1000, 24, 0xabc, 2], [0x1018, 40, 0xdef, 0], [0x1040, u64::MAX, 1, 1]];
        let p = node_payload(3, &values);
        let b = Bulk::read(schema, &p, 0, 8).expect("reads").expect("a bulk event");
        assert_eq!((b.head("Index"), b.head("Count"), b.len()), (Some(7), Some(3), 3));
        let named = decode_schema(schema, &mut Cursor::new(&p, 0), 8, 0).expect("decodes");
        let Some(Value::Array(items)) = named.iter().find(|f| f.name == "Values").map(|f| &f.value) else { panic!("no Values") };
        for (i, item) in items.iter().enumerate() {
            let Value::Struct(fields) = item else { panic!("not a struct") };
            for f in fields {
                let m = b.member(f.name).expect("a member");
                assert_eq!(Some(b.get(i, m)), f.value.as_u64(), "{} of {i}", f.name);
            }
        }
        assert_eq!(b.member("Nothing"), None);
    }

    #[test]
    fn a_count_beyond_the_payload_is_an_error_and_bytes_after_are_left() {
        let schema = lookup(RuntimeProvider::Runtime, 18, 0).map(|s| s.0.fields).unwrap_or(&[]);
        let p = node_payload(3, &[[1, 2, 3, 4], [5, 6, 7, 8]]);
        assert!(Bulk::read(schema, &p, 100, 8).is_err());
        let mut p = node_payload(1, &[[1, 2, 3, 4]]);
        p.extend([9u8; 5]);
        let b = Bulk::read(schema, &p, 0, 8).expect("reads").expect("a bulk event");
        assert_eq!(b.len(), 1);
        // A schema that is not a bulk event (a string field) is not read.
        let start = lookup(RuntimeProvider::Runtime, 10, 0).map(|s| s.0.fields).unwrap_or(&[]);
        assert!(matches!(Bulk::read(start, &p, 0, 8), Ok(None)));
    }
}
