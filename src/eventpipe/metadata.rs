//! Metadata records: what an event kind is (provider, id, name, version)
//! and, for EventSource events, the layout of its payload.
//!
//! ```text
//! <MetadataId:i32> <Provider:utf16z> <EventId:i32> <EventName:utf16z>
//! <Keywords:i64> <Version:i32> <Level:i32>
//! <FieldCount:i32> { <TypeCode:i32> [nested description if Object] <Name:utf16z> } * FieldCount   (V1)
//! { <TagSize:i32> <TagKind:u8> <tag payload> } *                                                   (V5)
//!     kind 1 (OpCode): <opcode:u8>
//!     kind 2 (V2Params): <Count:i32> { <Size:i32> <Name:utf16z> <TypeCode:i32>
//!                                      [<ElementTypeCode:i32> if Array] [description if Object] pad } * Count
//! ```

use super::cursor::{utf16_to_string, Cursor};
use super::error::Error;
use super::ids::MetadataId;

/// The type of one EventSource payload field (System.TypeCode values,
/// plus the V5 array).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FieldType {
    /// 4-byte boolean (TypeCode 3).
    Bool32,
    /// A UTF-16 code unit (4).
    Char16,
    /// (5)
    I8,
    /// (6)
    U8,
    /// (7)
    I16,
    /// (8)
    U16,
    /// (9)
    I32,
    /// (10)
    U32,
    /// (11)
    I64,
    /// (12)
    U64,
    /// (13)
    F32,
    /// (14)
    F64,
    /// 16-byte decimal (15).
    Decimal,
    /// 8-byte FILETIME-like ticks (16).
    DateTime,
    /// (17)
    Guid,
    /// A UTF-16 string ended by a 0 code unit (18).
    Utf16Z,
    /// A nested structure (TypeCode 1, Object).
    Struct(Vec<FieldDesc>),
    /// A u16 element count followed by the elements (19, V5 metadata).
    Array(Box<FieldType>),
}

/// One payload field of an EventSource event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldDesc {
    /// Its name.
    pub name: String,
    /// Its type.
    pub ty: FieldType,
}

/// One event kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventMetadata {
    /// Its key in this trace.
    pub id: MetadataId,
    /// The provider ("Microsoft-Windows-DotNETRuntime", an EventSource's name).
    pub provider: String,
    /// The event's id within the provider.
    pub event_id: u32,
    /// The event's name, empty for the runtime's own events.
    pub name: String,
    /// Keywords.
    pub keywords: u64,
    /// The event's version (the runtime's events have several).
    pub version: u32,
    /// Level (1 critical .. 5 verbose).
    pub level: u32,
    /// The opcode, when a V5 tag gives it.
    pub opcode: Option<u8>,
    /// The payload's fields, when the metadata describes them (EventSource
    /// events). `None` when the description could not be read.
    pub fields: Option<Vec<FieldDesc>>,
}

const MAX_DEPTH: u32 = 8;

/// Reads a metadata record from the payload of a MetadataBlock event at
/// trace offset `offset`.
pub fn parse_metadata(payload: &[u8], offset: u64) -> Result<EventMetadata, Error> {
    let mut c = Cursor::new(payload, offset);
    let id = MetadataId(c.u32("a metadata id")?);
    let provider = utf16_to_string(c.utf16z("a provider name")?);
    let event_id = c.u32("an event id")?;
    let name = utf16_to_string(c.utf16z("an event name")?);
    let keywords = c.u64("keywords")?;
    let version = c.u32("an event version")?;
    let level = c.u32("a level")?;
    let mut m = EventMetadata { id, provider, event_id, name, keywords, version, level, opcode: None, fields: None };
    // Field descriptions that cannot be read leave the event without
    // fields (as TraceEvent does): the name and id are still good.
    let Ok(v1) = fields_v1(&mut c, 0) else { return Ok(m) };
    m.fields = Some(v1);
    while c.remaining() >= 5 {
        let Ok(size) = c.u32("a metadata tag size") else { break };
        let Ok(kind) = c.u8("a metadata tag kind") else { break };
        let Ok(body) = c.bytes(size as usize, "a metadata tag") else { break };
        let mut t = Cursor::new(body, c.offset() - size as u64);
        match kind {
            1 => m.opcode = t.u8("an opcode").ok(),
            2 => m.fields = fields_v2(&mut t, 0).ok(),
            _ => {}
        }
    }
    Ok(m)
}

fn count(c: &mut Cursor<'_>) -> Result<usize, Error> {
    let at = c.offset();
    let n = c.u32("a field count")? as usize;
    // Each field takes at least 6 bytes: a count beyond what is left is
    // damage, not a reason to allocate.
    if n > c.remaining() / 4 {
        return Err(Error::invalid(at, "a field count that fits the record", n as u64));
    }
    Ok(n)
}

fn fields_v1(c: &mut Cursor<'_>, depth: u32) -> Result<Vec<FieldDesc>, Error> {
    let n = count(c)?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let ty = type_code(c, depth, false, fields_v1)?;
        let name = utf16_to_string(c.utf16z("a field name")?);
        v.push(FieldDesc { name, ty });
    }
    Ok(v)
}

fn fields_v2(c: &mut Cursor<'_>, depth: u32) -> Result<Vec<FieldDesc>, Error> {
    let n = count(c)?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let at = c.offset();
        let size = c.u32("a field definition's size")? as usize;
        if size < 4 {
            return Err(Error::invalid(at, "a field definition of at least 4 bytes", size as u64));
        }
        let body = c.bytes(size - 4, "a field definition")?;
        let mut f = Cursor::new(body, at + 4);
        let name = utf16_to_string(f.utf16z("a field name")?);
        let ty = type_code(&mut f, depth, true, fields_v2)?;
        v.push(FieldDesc { name, ty });
    }
    Ok(v)
}

type Fields = fn(&mut Cursor<'_>, u32) -> Result<Vec<FieldDesc>, Error>;

fn type_code(c: &mut Cursor<'_>, depth: u32, v2: bool, nested: Fields) -> Result<FieldType, Error> {
    let at = c.offset();
    if depth > MAX_DEPTH {
        return Err(Error::invalid(at, "fields nested at most 8 deep", u64::from(depth)));
    }
    let code = c.u32("a type code")?;
    Ok(match code {
        1 => FieldType::Struct(nested(c, depth + 1)?),
        3 => FieldType::Bool32,
        4 => FieldType::Char16,
        5 => FieldType::I8,
        6 => FieldType::U8,
        7 => FieldType::I16,
        8 => FieldType::U16,
        9 => FieldType::I32,
        10 => FieldType::U32,
        11 => FieldType::I64,
        12 => FieldType::U64,
        13 => FieldType::F32,
        14 => FieldType::F64,
        15 => FieldType::Decimal,
        16 => FieldType::DateTime,
        17 => FieldType::Guid,
        18 => FieldType::Utf16Z,
        19 if v2 => FieldType::Array(Box::new(type_code(c, depth + 1, v2, nested)?)),
        _ => return Err(Error::invalid(at, "a known field type code", u64::from(code))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u16s(s: &str) -> Vec<u8> {
        s.encode_utf16().chain([0]).flat_map(|u| u.to_le_bytes()).collect()
    }

    #[test]
    fn v1_and_v2_fields() {
        let mut p = Vec::new();
        p.extend(7u32.to_le_bytes());
        p.extend(u16s("MyProvider"));
        p.extend(3u32.to_le_bytes());
        p.extend(u16s("Ev"));
        p.extend(0u64.to_le_bytes());
        p.extend(1u32.to_le_bytes());
        p.extend(5u32.to_le_bytes());
        p.extend(1u32.to_le_bytes()); // one V1 field
        p.extend(9u32.to_le_bytes());
        p.extend(u16s("a"));
        // opcode tag
        p.extend(1u32.to_le_bytes());
        p.push(1);
        p.push(24);
        // V2 params: one array of i32
        let mut f = Vec::new();
        f.extend(u16s("arr"));
        f.extend(19u32.to_le_bytes());
        f.extend(9u32.to_le_bytes());
        let mut t = 1u32.to_le_bytes().to_vec();
        t.extend(((f.len() + 4) as u32).to_le_bytes());
        t.extend(f);
        p.extend((t.len() as u32).to_le_bytes());
        p.push(2);
        p.extend(t);
        let m = parse_metadata(&p, 0).unwrap();
        assert_eq!((m.id.0, m.provider.as_str(), m.event_id, m.name.as_str(), m.version), (7, "MyProvider", 3, "Ev", 1));
        assert_eq!(m.opcode, Some(24));
        let fields = m.fields.unwrap();
        assert_eq!(fields, vec![FieldDesc { name: "arr".into(), ty: FieldType::Array(Box::new(FieldType::I32)) }]);
        // cut anywhere: an error or a record, never a panic
        for n in 0..p.len() {
            let _ = parse_metadata(&p[..n], 0);
        }
    }
}
