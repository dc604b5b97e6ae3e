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
//!
//! V6 metadata rows (in a MetadataBlock after a `u16` header size and that
//! many bytes), strings as a varuint32 byte count and UTF-8:
//!
//! ```text
//! <Size:u16> <MetadataId:var32> <Provider:string> <EventId:var32> <EventName:string>
//!   <FieldCount:u16> { <FieldSize:u16> <Name:string> <Type> <ignored to FieldSize> } * FieldCount
//!   <OptionalSize:u16> { <Kind:u8> <value> } to OptionalSize
//!   <ignored to Size>
//! Type: <TypeCode:u8> [element Type if Array 19, FixedLengthArray 22, RelLoc 24, DataLoc 25]
//!       [<ElementCount:u16> if FixedLengthArray] [FieldCount and fields if Object 1]
//! optional kinds: 1 OpCode:u8, 3 Keywords:u64, 4 MessageTemplate:string,
//!   5 Description:string, 6 KeyValue:string string, 7 ProviderGuid:16, 8 Level:u8, 9 Version:u8
//! ```

use super::cursor::{utf16_to_string, utf8_to_string, Cursor};
use super::error::Error;
use super::ids::MetadataId;

/// The type of one EventSource payload field (System.TypeCode values,
/// plus the V5 array and the V6 additions).
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
    /// A zigzag varint, at most 64 bits (20, V6).
    VarInt,
    /// An unsigned varint, at most 64 bits (21, V6).
    VarUInt,
    /// A number of elements fixed by the metadata (22, V6).
    FixedArray(Box<FieldType>, u16),
    /// One byte of UTF-8 (23, V6).
    Utf8CodeUnit,
    /// A u32 whose high 16 bits are a size in bytes and low 16 bits a
    /// position relative to the end of this field: the elements are there
    /// (24, V6; fixed-size elements only).
    RelLoc(Box<FieldType>),
    /// As [`FieldType::RelLoc`], the position relative to the payload's
    /// start (25, V6).
    DataLoc(Box<FieldType>),
    /// A 1-byte boolean (26, V6).
    Bool8,
}

impl FieldType {
    /// The encoded size when it is the same for every value (`None` for
    /// strings, arrays with a count in the payload, varints).
    pub fn fixed_size(&self) -> Option<usize> {
        Some(match self {
            FieldType::Bool8 | FieldType::I8 | FieldType::U8 | FieldType::Utf8CodeUnit => 1,
            FieldType::Char16 | FieldType::I16 | FieldType::U16 => 2,
            FieldType::Bool32 | FieldType::I32 | FieldType::U32 | FieldType::F32 => 4,
            FieldType::RelLoc(_) | FieldType::DataLoc(_) => 4,
            FieldType::I64 | FieldType::U64 | FieldType::F64 | FieldType::DateTime => 8,
            FieldType::Decimal | FieldType::Guid => 16,
            FieldType::FixedArray(e, n) => e.fixed_size()?.checked_mul(usize::from(*n))?,
            FieldType::Struct(fields) => {
                let mut total = 0usize;
                for f in fields {
                    total = total.checked_add(f.ty.fixed_size()?)?;
                }
                total
            }
            FieldType::Utf16Z | FieldType::Array(_) | FieldType::VarInt | FieldType::VarUInt => return None,
        })
    }
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
    /// V6: the message template ("Request {0} took {1} ms"), if given.
    pub message_template: Option<String>,
    /// V6: a description of the event, if given.
    pub description: Option<String>,
    /// V6: the provider's GUID as stored, if given.
    pub provider_guid: Option<[u8; 16]>,
    /// V6: other key-value pairs of the row's optional metadata.
    pub attributes: Vec<(String, String)>,
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
    let mut m = EventMetadata {
        id,
        provider,
        event_id,
        name,
        keywords,
        version,
        level,
        opcode: None,
        fields: None,
        message_template: None,
        description: None,
        provider_guid: None,
        attributes: Vec::new(),
    };
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

/// Reads one V6 metadata row at the start of `rows` (trace offset
/// `offset`), its `u16` size first. Returns the record (or why it could not
/// be read) and the bytes the row takes, so that the next row can be read
/// even when this one is unreadable; `Err` only when the row's size itself
/// does not fit.
pub fn parse_metadata_v6(rows: &[u8], offset: u64) -> Result<(Result<EventMetadata, Error>, usize), Error> {
    let mut c = Cursor::new(rows, offset);
    let at = c.offset();
    let size = c.u16("a metadata row's size")? as usize;
    if size > c.remaining() {
        return Err(Error::end(at + 2 + c.remaining() as u64, "the rest of a metadata row"));
    }
    let row = c.bytes(size, "a metadata row")?;
    Ok((metadata_row_v6(row, at + 2), size + 2))
}

fn metadata_row_v6(row: &[u8], offset: u64) -> Result<EventMetadata, Error> {
    let mut c = Cursor::new(row, offset);
    let id = MetadataId(c.varu32("a metadata id")?);
    let provider = utf8_to_string(c.utf8("a provider name")?);
    let event_id = c.varu32("an event id")?;
    let name = utf8_to_string(c.utf8("an event name")?);
    let mut m = EventMetadata {
        id,
        provider,
        event_id,
        name,
        keywords: 0,
        version: 0,
        level: 0,
        opcode: None,
        fields: None,
        message_template: None,
        description: None,
        provider_guid: None,
        attributes: Vec::new(),
    };
    // A field whose type cannot be read leaves the kind without fields,
    // but the sizes let the optional metadata after them be read.
    m.fields = fields_v6(&mut c, 0)?.ok();
    let at = c.offset();
    let size = c.u16("the size of a row's optional metadata")? as usize;
    if size > c.remaining() {
        return Err(Error::invalid(at, "optional metadata that fits the row", size as u64));
    }
    let mut o = Cursor::new(c.bytes(size, "optional metadata")?, at + 2);
    while !o.is_empty() {
        let at = o.offset();
        match o.u8("an optional metadata kind")? {
            1 => m.opcode = Some(o.u8("an opcode")?),
            3 => m.keywords = o.u64("keywords")?,
            4 => m.message_template = Some(utf8_to_string(o.utf8("a message template")?)),
            5 => m.description = Some(utf8_to_string(o.utf8("a description")?)),
            6 => {
                let k = utf8_to_string(o.utf8("a key")?);
                let v = utf8_to_string(o.utf8("a value")?);
                m.attributes.push((k, v));
            }
            7 => m.provider_guid = Some(o.guid("a provider GUID")?),
            8 => m.level = u32::from(o.u8("a level")?),
            9 => m.version = u32::from(o.u8("a version")?),
            // The kinds are not self-sized: an unknown one hides the rest.
            k => return Err(Error::invalid(at, "an optional metadata kind (1, 3-9)", u64::from(k))),
        }
    }
    Ok(m)
}

/// V6 field descriptions: `Err` when the sizes do not fit (the row is
/// damaged), `Ok(Err)` when a type could not be read (the fields are
/// unknown, the row is still readable).
fn fields_v6(c: &mut Cursor<'_>, depth: u32) -> Result<Result<Vec<FieldDesc>, Error>, Error> {
    let at = c.offset();
    let n = c.u16("a field count")? as usize;
    // Each field takes at least 4 bytes.
    if n > c.remaining() / 4 + 1 {
        return Err(Error::invalid(at, "a field count that fits the row", n as u64));
    }
    let mut v = Vec::with_capacity(n);
    let mut bad = None;
    for _ in 0..n {
        let at = c.offset();
        let size = c.u16("a field description's size")? as usize;
        if size > c.remaining() {
            return Err(Error::invalid(at, "a field description that fits the row", size as u64));
        }
        let mut f = Cursor::new(c.bytes(size, "a field description")?, at + 2);
        let parsed = f.utf8("a field name").map(utf8_to_string).and_then(|name| type_v6(&mut f, depth).map(|ty| FieldDesc { name, ty }));
        match parsed {
            Ok(d) => v.push(d),
            Err(e) => bad = bad.or(Some(e)),
        }
    }
    Ok(match bad {
        Some(e) => Err(e),
        None => Ok(v),
    })
}

fn type_v6(c: &mut Cursor<'_>, depth: u32) -> Result<FieldType, Error> {
    let at = c.offset();
    if depth > MAX_DEPTH {
        return Err(Error::invalid(at, "fields nested at most 8 deep", u64::from(depth)));
    }
    let code = c.u8("a type code")?;
    Ok(match code {
        1 => FieldType::Struct(fields_v6(c, depth + 1)??),
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
        19 => FieldType::Array(Box::new(type_v6(c, depth + 1)?)),
        20 => FieldType::VarInt,
        21 => FieldType::VarUInt,
        22 => {
            let e = type_v6(c, depth + 1)?;
            let n = c.u16("a fixed-length array's element count")?;
            // Elements of no bytes would be decoded without end.
            if e.fixed_size() == Some(0) {
                return Err(Error::invalid(at, "a fixed-length array of elements that take bytes", 0));
            }
            FieldType::FixedArray(Box::new(e), n)
        }
        23 => FieldType::Utf8CodeUnit,
        24 | 25 => {
            let e = type_v6(c, depth + 1)?;
            match e.fixed_size() {
                Some(n) if n > 0 => {}
                _ => return Err(Error::invalid(at, "a RelLoc or DataLoc of fixed-size elements", u64::from(code))),
            }
            if code == 24 {
                FieldType::RelLoc(Box::new(e))
            } else {
                FieldType::DataLoc(Box::new(e))
            }
        }
        26 => FieldType::Bool8,
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

    fn s8(s: &str) -> Vec<u8> {
        let mut v = vec![s.len() as u8];
        v.extend(s.as_bytes());
        v
    }

    fn field(name: &str, ty: &[u8]) -> Vec<u8> {
        let mut f = s8(name);
        f.extend(ty);
        let mut v = (f.len() as u16).to_le_bytes().to_vec();
        v.extend(f);
        v
    }

    #[test]
    fn v6_rows() {
        let mut r = vec![5]; // id
        r.extend(s8("Prov"));
        r.push(9); // event id
        r.extend(s8("Ev"));
        r.extend(3u16.to_le_bytes());
        r.extend(field("a", &[21]));
        r.extend(field("b", &[22, 6, 4, 0]));
        r.extend(field("c", &[24, 8]));
        let mut o = vec![1, 2, 9, 3, 8, 4, 4];
        o.extend(s8("tmpl"));
        o.push(6);
        o.extend(s8("k"));
        o.extend(s8("v"));
        r.extend((o.len() as u16).to_le_bytes());
        r.extend(o);
        r.extend([0xee, 0xee]); // ignored by readers of this version
        let mut row = (r.len() as u16).to_le_bytes().to_vec();
        row.extend(r);
        let (m, used) = parse_metadata_v6(&row, 100).unwrap();
        let m = m.unwrap();
        assert_eq!(used, row.len());
        assert_eq!((m.id.0, m.provider.as_str(), m.event_id, m.name.as_str()), (5, "Prov", 9, "Ev"));
        assert_eq!((m.opcode, m.version, m.level, m.message_template.as_deref()), (Some(2), 3, 4, Some("tmpl")));
        assert_eq!(m.attributes, vec![("k".to_string(), "v".to_string())]);
        let f = m.fields.unwrap();
        assert_eq!(f[0].ty, FieldType::VarUInt);
        assert_eq!(f[1].ty, FieldType::FixedArray(Box::new(FieldType::U8), 4));
        assert_eq!(f[2].ty, FieldType::RelLoc(Box::new(FieldType::U16)));
        // an unknown type code: no fields, the rest still read
        let bad = [&row[..18], &[99u8][..], &row[19..]].concat();
        let (m, _) = parse_metadata_v6(&bad, 0).unwrap();
        let m = m.unwrap();
        assert!(m.fields.is_none());
        assert_eq!(m.opcode, Some(2));
        // RelLoc of a variable-size element, fixed array of empty structs
        assert!(type_v6(&mut Cursor::new(&[24, 18], 0), 0).is_err());
        assert!(type_v6(&mut Cursor::new(&[22, 1, 0, 0, 255, 255], 0), 0).is_err());
        for n in 0..row.len() {
            let _ = parse_metadata_v6(&row[..n], 0);
        }
    }
}
