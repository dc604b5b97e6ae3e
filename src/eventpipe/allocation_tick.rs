//! `GC/AllocationTick` read straight from its payload, without the vector
//! of named fields the general decoder ([`Event::fields`]) makes: the
//! event a sampled trace holds millions of.
//!
//! Every version of the event (0 to 4) lays out a prefix of the same nine
//! fields (`AllocationAmount`, `AllocationKind`, `ClrInstanceID`,
//! `AllocationAmount64`, `TypeID`, `TypeName`, `HeapIndex`, `Address`,
//! `ObjectSize`). An event kind whose schema is such a prefix (checked
//! once, when the kind is defined) is decoded field by field with the same
//! reads, in the same order, as the general decoder: the same values, and
//! an error exactly when the general decoder gives one. Any other kind (an
//! EventSource's own description, a V6 label naming another version) is
//! left to the general decoder.
//!
//! [`Event::fields`]: super::Event::fields

use super::cursor::Cursor;
use super::error::Error;
use super::payload::Utf16;
use super::runtime_schemas::{Count, In, SField, SType};

/// The fields of the newest version, in payload order.
const LAYOUT: [(&str, In); 9] = [
    ("AllocationAmount", In::U32),
    ("AllocationKind", In::U32),
    ("ClrInstanceID", In::U16),
    ("AllocationAmount64", In::U64),
    ("TypeID", In::Ptr),
    ("TypeName", In::Utf16Z),
    ("HeapIndex", In::U32),
    ("Address", In::Ptr),
    ("ObjectSize", In::U64),
];

/// A `GC/AllocationTick` event's fields, borrowed from the trace; a field
/// the event's version does not have is `None`. Integers as the general
/// decoder's [`Value::as_u64`](super::Value::as_u64) gives them (pointers
/// of a 32-bit trace widened).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocationTick<'a> {
    /// `AllocationAmount`: bytes allocated since the previous tick (32 bits).
    pub allocation_amount: Option<u64>,
    /// `AllocationKind`: 0 small, 1 large, 2 pinned.
    pub allocation_kind: Option<u64>,
    /// `ClrInstanceID`.
    pub clr_instance_id: Option<u64>,
    /// `AllocationAmount64` (version 2 on).
    pub allocation_amount64: Option<u64>,
    /// `TypeID`: the type's handle (version 2 on).
    pub type_id: Option<u64>,
    /// `TypeName` (version 2 on).
    pub type_name: Option<Utf16<'a>>,
    /// `HeapIndex` (version 2 on).
    pub heap_index: Option<u64>,
    /// `Address`: the object that crossed the threshold (version 3 on).
    pub address: Option<u64>,
    /// `ObjectSize` (version 4 on).
    pub object_size: Option<u64>,
}

/// How many of [`LAYOUT`]'s fields a runtime schema has, when it is
/// `GC/AllocationTick`'s and lays out a prefix of them (every field
/// single, of the same name and type); `None` otherwise.
pub(crate) fn prefix_of(name: &str, fields: &[SField]) -> Option<u8> {
    if name != "GC/AllocationTick" || fields.len() > LAYOUT.len() {
        return None;
    }
    let same = fields
        .iter()
        .zip(LAYOUT)
        .all(|(f, (n, t))| f.name == n && matches!(f.count, Count::One) && matches!(f.ty, SType::Prim(p) if p == t));
    same.then_some(fields.len() as u8)
}

/// Decodes the first `n` fields of [`LAYOUT`] from `c`, with pointers of
/// `ptr` bytes.
pub(crate) fn decode<'a>(n: u8, c: &mut Cursor<'a>, ptr: u32) -> Result<AllocationTick<'a>, Error> {
    let mut t = AllocationTick::default();
    let n = usize::from(n);
    // The reads of the general decoder's `prim`, field by field.
    macro_rules! field {
        ($i:expr, $slot:expr, $read:expr) => {
            if n > $i {
                $slot = Some($read);
            } else {
                return Ok(t);
            }
        };
    }
    field!(0, t.allocation_amount, u64::from(c.u32("a 32-bit integer")?));
    field!(1, t.allocation_kind, u64::from(c.u32("a 32-bit integer")?));
    field!(2, t.clr_instance_id, u64::from(c.u16("a 16-bit integer")?));
    field!(3, t.allocation_amount64, c.u64("a 64-bit integer")?);
    field!(4, t.type_id, pointer(c, ptr)?);
    field!(5, t.type_name, Utf16(c.utf16z("a string")?));
    field!(6, t.heap_index, u64::from(c.u32("a 32-bit integer")?));
    field!(7, t.address, pointer(c, ptr)?);
    field!(8, t.object_size, c.u64("a 64-bit integer")?);
    Ok(t)
}

#[inline]
fn pointer(c: &mut Cursor<'_>, ptr: u32) -> Result<u64, Error> {
    if ptr == 4 {
        Ok(u64::from(c.u32("a pointer")?))
    } else {
        c.u64("a pointer")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eventpipe::runtime_schemas::{lookup, RuntimeProvider};

    #[test]
    fn every_version_is_a_prefix() {
        for (version, fields) in [(0, 2), (1, 3), (2, 7), (3, 8), (4, 9)] {
            let (s, exact) = lookup(RuntimeProvider::Runtime, 10, version).expect("a schema");
            assert!(exact);
            assert_eq!(prefix_of(s.name, s.fields), Some(fields), "version {version}");
        }
        let (start, _) = lookup(RuntimeProvider::Runtime, 1, 2).expect("GC/Start");
        assert_eq!(prefix_of(start.name, start.fields), None);
    }

    #[test]
    fn a_short_payload_is_an_error() {
        let bytes = [1u8, 0, 0, 0, 2, 0];
        let t = decode(2, &mut Cursor::new(&bytes, 0), 8);
        assert!(t.is_err());
        let t = decode(1, &mut Cursor::new(&bytes, 0), 8).expect("one field");
        assert_eq!(t, AllocationTick { allocation_amount: Some(1), ..Default::default() });
    }
}
