//! Payload decoding: an event's bytes to named, typed values, from the
//! EventSource metadata or from the runtime's built-in schema.
//!
//! Decoding is on demand ([`Event::fields`](super::Event::fields)): the
//! streaming reader itself never decodes or allocates per event.

use super::cursor::{utf16_to_string, Cursor};
use super::error::Error;
use super::metadata::{FieldDesc, FieldType};
use super::runtime_schemas::{Count, In, SField, SType, ValueMap};

/// One decoded field.
#[derive(Debug, Clone, PartialEq)]
pub struct Field<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its value.
    pub value: Value<'a>,
    /// The names of its values, for the runtime's enumerations and flags.
    pub map: Option<&'static ValueMap>,
}

impl Field<'_> {
    /// The value's name from the field's map ("AllocSmall",
    /// "Compaction, Promotion"), when it has one.
    pub fn label(&self) -> Option<String> {
        let m = self.map?;
        m.name(self.value.as_u64()?)
    }
}

/// A UTF-16LE string borrowed from the trace.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Utf16<'a>(pub &'a [u8]);

impl std::fmt::Debug for Utf16<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", utf16_to_string(self.0))
    }
}

impl std::fmt::Display for Utf16<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&utf16_to_string(self.0))
    }
}

/// A decoded value.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Value<'a> {
    /// A boolean.
    Bool(bool),
    /// A UTF-16 code unit.
    Char(u16),
    /// An unsigned integer and its width in bytes.
    Unsigned(u64, u8),
    /// A signed integer and its width in bytes.
    Signed(i64, u8),
    /// A pointer (an address, an id).
    Pointer(u64),
    /// A floating-point number.
    Float(f64),
    /// A string.
    Str(Utf16<'a>),
    /// A byte string (ANSI; V6 arrays of UTF-8 code units).
    Bytes(&'a [u8]),
    /// A GUID's 16 bytes as stored.
    Guid([u8; 16]),
    /// A .NET decimal's 16 bytes.
    Decimal([u8; 16]),
    /// A DateTime's ticks.
    DateTime(i64),
    /// An array.
    Array(Vec<Value<'a>>),
    /// A structure.
    Struct(Vec<Field<'a>>),
}

impl Value<'_> {
    /// The value as an unsigned integer (integers, pointers, booleans).
    #[inline]
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Unsigned(v, _) | Value::Pointer(v) => Some(v),
            Value::Signed(v, _) => Some(v as u64),
            Value::Bool(b) => Some(u64::from(b)),
            Value::Char(c) => Some(u64::from(c)),
            _ => None,
        }
    }
}

/// At most this many elements are decoded per array (a u16 count, or a
/// count field bounded by the payload's size).
const MAX_DEPTH: u32 = 8;

pub(crate) fn decode_metadata_fields<'a>(
    fields: &'a [FieldDesc],
    c: &mut Cursor<'a>,
    ptr: u32,
    depth: u32,
) -> Result<Vec<Field<'a>>, Error> {
    let mut out = Vec::with_capacity(fields.len());
    for f in fields {
        let value = desc_value(&f.ty, c, ptr, depth)?;
        out.push(Field { name: &f.name, value, map: None });
    }
    Ok(out)
}

fn desc_value<'a>(ty: &'a FieldType, c: &mut Cursor<'a>, ptr: u32, depth: u32) -> Result<Value<'a>, Error> {
    if depth > MAX_DEPTH {
        return Err(Error::invalid(c.offset(), "a payload nested at most 8 deep", u64::from(depth)));
    }
    Ok(match ty {
        FieldType::Bool32 => Value::Bool(c.u32("a boolean")? != 0),
        FieldType::Char16 => Value::Char(c.u16("a character")?),
        FieldType::I8 => Value::Signed(i64::from(c.u8("an 8-bit integer")? as i8), 1),
        FieldType::U8 => Value::Unsigned(u64::from(c.u8("an 8-bit integer")?), 1),
        FieldType::I16 => Value::Signed(i64::from(c.u16("a 16-bit integer")? as i16), 2),
        FieldType::U16 => Value::Unsigned(u64::from(c.u16("a 16-bit integer")?), 2),
        FieldType::I32 => Value::Signed(i64::from(c.u32("a 32-bit integer")? as i32), 4),
        FieldType::U32 => Value::Unsigned(u64::from(c.u32("a 32-bit integer")?), 4),
        FieldType::I64 => Value::Signed(c.u64("a 64-bit integer")? as i64, 8),
        FieldType::U64 => Value::Unsigned(c.u64("a 64-bit integer")?, 8),
        FieldType::F32 => Value::Float(f64::from(f32::from_bits(c.u32("a float")?))),
        FieldType::F64 => Value::Float(f64::from_bits(c.u64("a double")?)),
        FieldType::Decimal => Value::Decimal(c.guid("a decimal")?),
        FieldType::DateTime => Value::DateTime(c.u64("a DateTime")? as i64),
        FieldType::Guid => Value::Guid(c.guid("a GUID")?),
        FieldType::Utf16Z => Value::Str(Utf16(c.utf16z("a string")?)),
        FieldType::Struct(fields) => Value::Struct(decode_metadata_fields(fields, c, ptr, depth + 1)?),
        FieldType::Array(elem) => {
            let n = c.u16("an array's element count")? as usize;
            elements(elem, n, c, ptr, depth)?
        }
        FieldType::VarInt => Value::Signed(c.vari64("a varint")?, 8),
        FieldType::VarUInt => Value::Unsigned(c.varu64("a varint")?, 8),
        FieldType::FixedArray(elem, n) => elements(elem, usize::from(*n), c, ptr, depth)?,
        FieldType::Utf8CodeUnit => Value::Unsigned(u64::from(c.u8("a UTF-8 code unit")?), 1),
        FieldType::Bool8 => Value::Bool(c.u8("a boolean")? != 0),
        FieldType::RelLoc(elem) | FieldType::DataLoc(elem) => {
            let at = c.offset();
            let loc = c.u32("a data location")?;
            let (size, pos) = ((loc >> 16) as usize, (loc & 0xffff) as usize);
            // RelLoc counts from the end of the field, DataLoc from the payload's start.
            let start = if matches!(ty, FieldType::RelLoc(_)) { c.pos() + pos } else { pos };
            let data = c.data();
            let Some(bytes) = data.get(start..start.saturating_add(size)) else {
                return Err(Error::invalid(at, "a data location inside the payload", u64::from(loc)));
            };
            let mut sub = Cursor::new(bytes, c.base() + start as u64);
            let per = elem.fixed_size().unwrap_or(0);
            let n = size.checked_div(per).unwrap_or(0);
            elements(elem, n, &mut sub, ptr, depth)?
        }
    })
}

/// `n` elements of type `elem`: an array, or a byte string for UTF-8 code units.
fn elements<'a>(elem: &'a FieldType, n: usize, c: &mut Cursor<'a>, ptr: u32, depth: u32) -> Result<Value<'a>, Error> {
    if *elem == FieldType::Utf8CodeUnit {
        return Ok(Value::Bytes(c.bytes(n, "UTF-8 code units")?));
    }
    let mut v = Vec::with_capacity(n.min(c.remaining()));
    for _ in 0..n {
        let before = c.pos();
        v.push(desc_value(elem, c, ptr, depth + 1)?);
        // Elements of no bytes (an empty structure): the rest are the same.
        if c.pos() == before {
            break;
        }
    }
    Ok(Value::Array(v))
}

#[inline(always)]
fn prim<'a>(t: In, c: &mut Cursor<'a>, ptr: u32) -> Result<Value<'a>, Error> {
    Ok(match t {
        In::U8 => Value::Unsigned(u64::from(c.u8("an 8-bit integer")?), 1),
        In::U16 => Value::Unsigned(u64::from(c.u16("a 16-bit integer")?), 2),
        In::U32 => Value::Unsigned(u64::from(c.u32("a 32-bit integer")?), 4),
        In::U64 => Value::Unsigned(c.u64("a 64-bit integer")?, 8),
        In::I32 => Value::Signed(i64::from(c.u32("a 32-bit integer")? as i32), 4),
        In::I64 => Value::Signed(c.u64("a 64-bit integer")? as i64, 8),
        In::F64 => Value::Float(f64::from_bits(c.u64("a double")?)),
        In::Bool32 => Value::Bool(c.u32("a boolean")? != 0),
        In::Ptr if ptr == 4 => Value::Pointer(u64::from(c.u32("a pointer")?)),
        In::Ptr => Value::Pointer(c.u64("a pointer")?),
        In::Utf16Z => Value::Str(Utf16(c.utf16z("a string")?)),
        In::AnsiZ => Value::Bytes(c.bytez("a string")?),
        In::Guid => Value::Guid(c.guid("a GUID")?),
    })
}

#[inline(always)]
fn one<'a>(f: &SField, c: &mut Cursor<'a>, ptr: u32, depth: u32) -> Result<Value<'a>, Error> {
    match f.ty {
        SType::Prim(t) => prim(t, c, ptr),
        SType::Struct(fields) => Ok(Value::Struct(decode_schema(fields, c, ptr, depth + 1)?)),
    }
}

/// Decodes a field of type `t` into `slot`, in place: a field built whole
/// on the stack and then copied into the vector (what `Vec::push` does)
/// stalls on the copy's wide loads of the narrow stores just made (store
/// forwarding), and those copies were the hottest instructions of a
/// decode. `slot` holds the placeholder `Value::Bool(false)`, which owns
/// nothing: it is overwritten without the call that would drop it.
#[inline(always)]
fn set_prim<'a>(slot: &mut Value<'a>, t: In, c: &mut Cursor<'a>, ptr: u32) -> Result<(), Error> {
    let value = match t {
        In::U8 => Value::Unsigned(u64::from(c.u8("an 8-bit integer")?), 1),
        In::U16 => Value::Unsigned(u64::from(c.u16("a 16-bit integer")?), 2),
        In::U32 => Value::Unsigned(u64::from(c.u32("a 32-bit integer")?), 4),
        In::U64 => Value::Unsigned(c.u64("a 64-bit integer")?, 8),
        In::Ptr if ptr == 4 => Value::Pointer(u64::from(c.u32("a pointer")?)),
        In::Ptr => Value::Pointer(c.u64("a pointer")?),
        In::Utf16Z => Value::Str(Utf16(c.utf16z("a string")?)),
        _ => prim(t, c, ptr)?,
    };
    std::mem::forget(std::mem::replace(slot, value));
    Ok(())
}

pub(crate) fn decode_schema<'a>(fields: &'static [SField], c: &mut Cursor<'a>, ptr: u32, depth: u32) -> Result<Vec<Field<'a>>, Error> {
    if depth > MAX_DEPTH {
        return Err(Error::invalid(c.offset(), "a payload nested at most 8 deep", u64::from(depth)));
    }
    // Every field is named first, then its value set in place, in order
    // (see `set_prim`; the vector is made from the schema's exact length,
    // written without a copy through the stack).
    let mut out: Vec<Field<'a>> = fields.iter().map(|f| Field { name: f.name, value: Value::Bool(false), map: f.map }).collect();
    for (i, f) in fields.iter().enumerate() {
        let count = match f.count {
            Count::One => None,
            Count::Fixed(n) => Some(usize::from(n)),
            Count::Field(from) => {
                let at = c.offset();
                let n = out.get(usize::from(from)).and_then(|s| s.value.as_u64()).unwrap_or(0);
                // Each element takes at least a byte: a count beyond the
                // payload is damage, not a reason to allocate.
                if n > c.remaining() as u64 {
                    return Err(Error::invalid(at, "an element count that fits the payload", n));
                }
                Some(n as usize)
            }
        };
        let Some(slot) = out.get_mut(i) else { break };
        match (count, f.ty) {
            (None, SType::Prim(t)) => set_prim(&mut slot.value, t, c, ptr)?,
            (None, SType::Struct(inner)) => slot.value = Value::Struct(decode_schema(inner, c, ptr, depth + 1)?),
            (Some(n), _) => slot.value = Value::Array(repeat(f, n, c, ptr, depth)?),
        }
    }
    Ok(out)
}

fn repeat<'a>(f: &SField, n: usize, c: &mut Cursor<'a>, ptr: u32, depth: u32) -> Result<Vec<Value<'a>>, Error> {
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(one(f, c, ptr, depth)?);
    }
    Ok(v)
}
