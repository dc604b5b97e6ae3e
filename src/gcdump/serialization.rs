//! FastSerialization, the object stream PerfView's `.gcdump` files are
//! written in: the header, object framing and the forward-reference table.
//!
//! ```text
//! i32 20, "!FastSerialization.1"        header
//! 04 <type> <fields> ... 06              the entry object (BeginObject ... EndObject)
//!    <type> = 04 01 i32 version i32 minReaderVersion string fullName 06
//!           | 02 u32 label               (a type defined earlier, by its offset)
//! 06                                     end of the objects
//! i32 n, u32 label * n                   forward references: where each is defined
//! u32 label(of the table)  u32 label(of that label)   suffix labels
//! ```
//!
//! Objects end with an EndObject tag; fields added in later versions of a
//! type are tagged so that a reader can skip what it does not know up to
//! that tag. Skip regions name a forward reference to where they end.

use super::cursor::Cursor;
use super::error::Error;

/// The file's first bytes: the length-prefixed signature.
pub(crate) const SIGNATURE: &[u8] = b"\x14\x00\x00\x00!FastSerialization.1";

/// Stream tags.
pub(crate) mod tag {
    pub(crate) const NULL_REFERENCE: u8 = 1;
    pub(crate) const OBJECT_REFERENCE: u8 = 2;
    pub(crate) const FORWARD_REFERENCE: u8 = 3;
    pub(crate) const BEGIN_OBJECT: u8 = 4;
    pub(crate) const BEGIN_PRIVATE_OBJECT: u8 = 5;
    pub(crate) const END_OBJECT: u8 = 6;
    pub(crate) const FORWARD_DEFINITION: u8 = 7;
    pub(crate) const BYTE: u8 = 8;
    pub(crate) const INT16: u8 = 9;
    pub(crate) const INT32: u8 = 10;
    pub(crate) const INT64: u8 = 11;
    pub(crate) const SKIP_REGION: u8 = 12;
    pub(crate) const STRING: u8 = 13;
    pub(crate) const BLOB: u8 = 14;
}

/// The serialized type of an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TypeRef {
    /// The .NET full name ("Graphs.MemoryGraph").
    pub(crate) name: String,
    /// The version the writer wrote.
    pub(crate) version: i32,
    /// The oldest reader version that may read it.
    pub(crate) min_reader: i32,
}

/// How deeply objects may nest before the file is refused (real files
/// nest three deep).
const MAX_DEPTH: u32 = 32;

/// Reads objects from a FastSerialization stream.
pub(crate) struct Deserializer<'a> {
    pub(crate) cur: Cursor<'a>,
    /// Types defined so far, by the offset of their BeginObject tag.
    types: Vec<(usize, TypeRef)>,
    /// The forward-reference table, read on first need.
    forward: Option<Vec<u32>>,
    depth: u32,
}

impl<'a> Deserializer<'a> {
    /// Checks the header and stands before the entry object.
    pub(crate) fn new(data: &'a [u8]) -> Result<Self, Error> {
        let mut cur = Cursor::new(data);
        let n = SIGNATURE.len().min(data.len());
        if data[..n] != SIGNATURE[..n] {
            let at = data.iter().zip(SIGNATURE).take_while(|(a, b)| a == b).count();
            return Err(Error::invalid(
                at,
                "the FastSerialization header \"!FastSerialization.1\"",
                i64::from(data.get(at).copied().unwrap_or(0)),
            ));
        }
        cur.bytes(SIGNATURE.len(), "the FastSerialization header \"!FastSerialization.1\"")?;
        Ok(Deserializer { cur, types: Vec::new(), forward: None, depth: 0 })
    }

    /// Reads a tag byte.
    pub(crate) fn tag(&mut self, what: &'static str) -> Result<u8, Error> {
        self.cur.u8(what)
    }

    /// Reads the start of an object: `None` for a null reference, else its
    /// type (the object's fields follow; [`Deserializer::end_object`]
    /// finishes it). Blobs before it are skipped, as PerfView does.
    pub(crate) fn begin_object(&mut self, what: &'static str) -> Result<Option<TypeRef>, Error> {
        loop {
            let at = self.cur.pos();
            match self.tag(what)? {
                tag::NULL_REFERENCE => return Ok(None),
                tag::BLOB => {
                    let n = self.cur.count(1, "a blob size")?;
                    self.cur.bytes(n, "a blob")?;
                }
                tag::FORWARD_DEFINITION => {
                    self.cur.i32("a forward reference index")?;
                    let at = self.cur.pos();
                    let t = self.tag(what)?;
                    if t != tag::BEGIN_OBJECT {
                        return Err(Error::invalid(at, "the BeginObject tag (4)", i64::from(t)));
                    }
                    return self.enter().map(Some);
                }
                tag::BEGIN_OBJECT | tag::BEGIN_PRIVATE_OBJECT => return self.enter().map(Some),
                t => return Err(Error::invalid(at, what, i64::from(t))),
            }
        }
    }

    fn enter(&mut self) -> Result<TypeRef, Error> {
        if self.depth >= MAX_DEPTH {
            return Err(Error::invalid(self.cur.pos(), "objects nested at most 32 deep", i64::from(self.depth)));
        }
        let t = self.type_ref()?;
        self.depth += 1;
        Ok(t)
    }

    /// Reads an object's type: a definition or a reference to an earlier one.
    fn type_ref(&mut self) -> Result<TypeRef, Error> {
        let at = self.cur.pos();
        match self.tag("an object's type (BeginObject 4 or ObjectReference 2)")? {
            tag::BEGIN_OBJECT | tag::BEGIN_PRIVATE_OBJECT => self.type_definition(at),
            tag::OBJECT_REFERENCE => {
                let label_at = self.cur.pos();
                let label = self.cur.u32("a type's label")? as usize;
                if let Some((_, t)) = self.types.iter().find(|(l, _)| *l == label) {
                    return Ok(t.clone());
                }
                // A type defined at an offset not read yet: read it there.
                if label >= at {
                    return Err(Error::invalid(label_at, "the offset of a type defined earlier", label as i64));
                }
                let back = self.cur.pos();
                self.cur.seek(label, "the offset of a type")?;
                let t = self.tag("a type definition (BeginObject 4)")?;
                if t != tag::BEGIN_OBJECT && t != tag::BEGIN_PRIVATE_OBJECT {
                    return Err(Error::invalid(label, "a type definition (BeginObject 4)", i64::from(t)));
                }
                let ty = self.type_definition(label)?;
                self.cur.seek(back, "the offset after a type reference")?;
                Ok(ty)
            }
            t => Err(Error::invalid(at, "an object's type (BeginObject 4 or ObjectReference 2)", i64::from(t))),
        }
    }

    /// A `SerializationType` object after its BeginObject tag at `at`.
    fn type_definition(&mut self, at: usize) -> Result<TypeRef, Error> {
        let inner = self.cur.pos();
        let t = self.tag("the type of a type (NullReference 1)")?;
        if t != tag::NULL_REFERENCE {
            return Err(Error::invalid(inner, "the type of a type (NullReference 1)", i64::from(t)));
        }
        let version = self.cur.i32("a type version")?;
        let min_reader = self.cur.i32("a type's minimum reader version")?;
        let name_at = self.cur.pos();
        let name = self.cur.string("a type name")?.ok_or(Error::invalid(name_at, "a type name", -1))?;
        self.depth += 1;
        self.end_object()?;
        let ty = TypeRef { name, version, min_reader };
        if !self.types.iter().any(|(l, _)| *l == at) {
            self.types.push((at, ty.clone()));
        }
        Ok(ty)
    }

    /// Skips the fields of the current object that were not read, up to
    /// its EndObject tag, as PerfView does: tagged values are skipped,
    /// skip regions jumped over (forward only).
    pub(crate) fn end_object(&mut self) -> Result<(), Error> {
        loop {
            let at = self.cur.pos();
            match self.tag("a tagged field or the EndObject tag (6)")? {
                tag::END_OBJECT => break,
                tag::BYTE => {
                    self.cur.bytes(1, "a tagged byte")?;
                }
                tag::INT16 => {
                    self.cur.bytes(2, "a tagged 16-bit integer")?;
                }
                tag::INT32 => {
                    self.cur.bytes(4, "a tagged 32-bit integer")?;
                }
                tag::INT64 => {
                    self.cur.bytes(8, "a tagged 64-bit integer")?;
                }
                tag::STRING => {
                    self.cur.string("a tagged string")?;
                }
                tag::NULL_REFERENCE | tag::BEGIN_OBJECT | tag::BEGIN_PRIVATE_OBJECT => {}
                tag::FORWARD_DEFINITION | tag::FORWARD_REFERENCE => {
                    self.cur.bytes(4, "a forward reference")?;
                }
                tag::OBJECT_REFERENCE => {
                    self.cur.bytes(4, "an object reference")?;
                }
                tag::SKIP_REGION => self.skip_region()?,
                tag::BLOB => {
                    let n = self.cur.count(1, "a blob size")?;
                    self.cur.bytes(n, "a blob")?;
                }
                t => return Err(Error::invalid(at, "a tagged field or the EndObject tag (6)", i64::from(t))),
            }
        }
        self.depth = self.depth.saturating_sub(1);
        Ok(())
    }

    /// After a SkipRegion tag or at a deferred region: reads the forward
    /// reference naming the region's end and goes there.
    pub(crate) fn skip_region(&mut self) -> Result<(), Error> {
        let at = self.cur.pos();
        let index = self.cur.i32("a forward reference")?;
        let end = self.forward_target(at, index)?;
        if end < self.cur.pos() {
            return Err(Error::invalid(at, "a region ending after its start", end as i64));
        }
        self.cur.seek(end, "the end of a skipped region")
    }

    /// Where forward reference `index` (read at `at`) is defined.
    pub(crate) fn forward_target(&mut self, at: usize, index: i32) -> Result<usize, Error> {
        if self.forward.is_none() {
            self.forward = Some(self.forward_table()?);
        }
        let table = self.forward.as_deref().unwrap_or(&[]);
        match usize::try_from(index).ok().and_then(|i| table.get(i)) {
            Some(&label) if (label as usize) <= self.cur.data().len() => Ok(label as usize),
            Some(&label) => Err(Error::invalid(at, "a forward reference defined inside the file", i64::from(label))),
            None => Err(Error::invalid(at, "a forward reference listed in the file's table", i64::from(index))),
        }
    }

    /// Reads the forward-reference table through the suffix labels at the
    /// end of the file: the last label names where the table's label is
    /// (some writers put the table's label last instead).
    fn forward_table(&self) -> Result<Vec<u32>, Error> {
        let data = self.cur.data();
        let len = data.len();
        let label_at = |pos: usize| -> Option<usize> {
            let b = data.get(pos..pos.checked_add(4)?)?;
            Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        };
        let last = len.checked_sub(4).and_then(label_at).ok_or(Error::end(len, "the suffix label at the end of the file"))?;
        let read_table = |at: usize| -> Option<Vec<u32>> {
            let mut c = Cursor::new(data);
            c.seek(at, "").ok()?;
            let n = c.count(4, "").ok()?;
            (0..n).map(|_| c.u32("").ok()).collect()
        };
        // The double indirection first, then the table at the last label.
        let table = label_at(last).filter(|&t| t < len.saturating_sub(4)).and_then(read_table).or_else(|| read_table(last));
        table.ok_or(Error::invalid(len.saturating_sub(4), "the offset of the forward-reference table", last as i64))
    }

    /// Reads a tagged field if the next tag is `want`: `false` (nothing
    /// consumed) otherwise, or at the end of the file.
    pub(crate) fn try_tag(&mut self, want: u8) -> bool {
        match self.cur.u8("") {
            Ok(t) if t == want => true,
            Ok(_) => {
                self.cur.unread_byte();
                false
            }
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(&(s.len() as i32).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    }

    #[test]
    fn types_are_defined_then_referenced() {
        let mut b = SIGNATURE.to_vec();
        let def = b.len();
        b.extend_from_slice(&[tag::BEGIN_OBJECT, tag::NULL_REFERENCE]);
        b.extend_from_slice(&3i32.to_le_bytes());
        b.extend_from_slice(&1i32.to_le_bytes());
        string(&mut b, "A.B");
        b.push(tag::END_OBJECT);
        // An object of that type, with a tagged field its reader skips.
        b.extend_from_slice(&[tag::BEGIN_OBJECT, tag::OBJECT_REFERENCE]);
        b.extend_from_slice(&(def as u32).to_le_bytes());
        b.extend_from_slice(&[tag::INT32, 1, 2, 3, 4, tag::END_OBJECT]);
        let mut d = Deserializer::new(&b).unwrap();
        // Read the definition as a type reference would.
        let t = d.type_ref().unwrap();
        assert_eq!(t, TypeRef { name: "A.B".into(), version: 3, min_reader: 1 });
        let t2 = d.begin_object("an object").unwrap().unwrap();
        assert_eq!(t2, t);
        d.end_object().unwrap();
        assert_eq!(d.cur.pos(), b.len());
    }

    #[test]
    fn bad_header_names_the_byte() {
        let mut b = SIGNATURE.to_vec();
        b[10] = b'x';
        let e = Deserializer::new(&b).err().unwrap();
        assert_eq!(e.offset, 10);
        assert!(Deserializer::new(&SIGNATURE[..5]).is_err());
    }
}
