//! Block framing: the objects that follow the Trace object.
//!
//! ```text
//! 05  05 01 <version> <min-version> <len>"EventBlock" 06    the object and its type
//!     <BlockSize:i32> <0-3 bytes of padding to a 4-byte file offset>
//!     <BlockSize bytes of body>
//! 06                                                       end of the object
//! ...
//! 01                                                       NullReference: end of the trace
//! ```

use super::cursor::Cursor;
use super::error::Error;
use super::header::{expect_tag, read_type, tag};

/// The kinds of object a trace holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// Events.
    Event,
    /// Metadata records (event kinds).
    Metadata,
    /// Interned stacks.
    Stack,
    /// A sequence point.
    SequencePoint,
    /// An object of a type this reader does not know (skipped).
    Unknown,
}

/// One object of the trace, its body borrowed from the input.
#[derive(Debug, Clone, Copy)]
pub struct Block<'a> {
    /// What it holds.
    pub kind: BlockKind,
    /// Its type's version.
    pub version: u32,
    /// Offset of its first byte (the `BeginPrivateObject` tag).
    pub offset: u64,
    /// Offset of the body's first byte.
    pub body_offset: u64,
    /// The body (after the size and the padding).
    pub body: &'a [u8],
    /// Offset just after the object's `EndObject` tag.
    pub end_offset: u64,
}

/// Reads the next object at `offset`. `Ok(None)` at the end mark.
pub fn read_block(bytes: &[u8], offset: u64) -> Result<Option<Block<'_>>, Error> {
    let start = usize::try_from(offset).unwrap_or(usize::MAX).min(bytes.len());
    let mut c = Cursor::new(&bytes[start..], start as u64);
    let at = c.offset();
    let t = c.u8("an object (tag 5) or the end of the trace (tag 1)")?;
    if t == tag::NULL_REFERENCE {
        return Ok(None);
    }
    if t != tag::BEGIN_PRIVATE_OBJECT {
        return Err(Error::invalid(at, "an object (tag 5) or the end of the trace (tag 1)", u64::from(t)));
    }
    let (version, _min, name) = read_type(&mut c)?;
    let kind = match name {
        b"EventBlock" => BlockKind::Event,
        b"MetadataBlock" => BlockKind::Metadata,
        b"StackBlock" => BlockKind::Stack,
        b"SPBlock" => BlockKind::SequencePoint,
        _ => BlockKind::Unknown,
    };
    let size_at = c.offset();
    let size = c.u32("a block size")? as usize;
    let pad = ((4 - (c.offset() & 3)) & 3) as usize;
    c.skip(pad, "the padding after a block size")?;
    let body_offset = c.offset();
    if c.remaining() < size {
        let _ = size_at;
        return Err(Error::end(body_offset + c.remaining() as u64, "the rest of a block"));
    }
    let body = c.bytes(size, "a block body")?;
    expect_tag(&mut c, tag::END_OBJECT, "the tag EndObject (6) ending a block")?;
    Ok(Some(Block { kind, version, offset: at, body_offset, body, end_offset: c.offset() }))
}
