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
//!
//! V6 replaces the framing with a 4-byte block header and no padding:
//!
//! ```text
//! <BlockSize:u24 | BlockKind:u8 << 24> <BlockSize bytes of body>
//! ...
//! 00 00 00 00                                              EndOfStream (kind 0)
//! ```
//! Kinds: 1 Trace, 2 Event, 3 Metadata, 4 SequencePoint, 5 Stack,
//! 6 Thread, 7 RemoveThread, 8 LabelList; others are skipped.

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
    /// The trace's header (V6 TraceBlock; the Trace object before).
    Trace,
    /// Thread rows: index, OS thread and process ids, name (V6).
    Thread,
    /// Threads that write no more events, with their last sequence numbers (V6).
    RemoveThread,
    /// Label lists: activity ids and other per-event labels (V6).
    LabelList,
    /// An object of a type this reader does not know (skipped).
    Unknown,
}

/// One object of the trace, its body borrowed from the input.
#[derive(Debug, Clone, Copy)]
pub struct Block<'a> {
    /// What it holds.
    pub kind: BlockKind,
    /// Its type's version (V6 blocks: 6, the format's major version).
    pub version: u32,
    /// V6: the kind byte of the block header (0 before V6).
    pub raw_kind: u8,
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
    Ok(Some(Block { kind, version, raw_kind: 0, offset: at, body_offset, body, end_offset: c.offset() }))
}

/// Reads the next V6 block at `offset`. `Ok(None)` at the EndOfStream block.
pub fn read_block_v6(bytes: &[u8], offset: u64) -> Result<Option<Block<'_>>, Error> {
    let start = usize::try_from(offset).unwrap_or(usize::MAX).min(bytes.len());
    let mut c = Cursor::new(&bytes[start..], start as u64);
    let at = c.offset();
    let word = c.u32("a block header (size and kind) or the EndOfStream block")?;
    let size = (word & 0x00ff_ffff) as usize;
    let raw_kind = (word >> 24) as u8;
    let kind = match raw_kind {
        0 => return Ok(None),
        1 => BlockKind::Trace,
        2 => BlockKind::Event,
        3 => BlockKind::Metadata,
        4 => BlockKind::SequencePoint,
        5 => BlockKind::Stack,
        6 => BlockKind::Thread,
        7 => BlockKind::RemoveThread,
        8 => BlockKind::LabelList,
        _ => BlockKind::Unknown,
    };
    let body_offset = c.offset();
    if c.remaining() < size {
        return Err(Error::end(body_offset + c.remaining() as u64, "the rest of a block"));
    }
    let body = c.bytes(size, "a block body")?;
    Ok(Some(Block { kind, version: 6, raw_kind, offset: at, body_offset, body, end_offset: c.offset() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v6_block_headers() {
        let mut b = vec![0xee; 3];
        b.extend((2u32 | 6 << 24).to_le_bytes());
        b.extend([7, 8]);
        b.extend((9u32 << 24).to_le_bytes());
        b.extend(0u32.to_le_bytes());
        let x = read_block_v6(&b, 3).unwrap().unwrap();
        assert_eq!((x.kind, x.body, x.body_offset, x.end_offset), (BlockKind::Thread, &[7u8, 8][..], 7, 9));
        let u = read_block_v6(&b, 9).unwrap().unwrap();
        assert_eq!((u.kind, u.raw_kind, u.end_offset), (BlockKind::Unknown, 9, 13));
        assert!(read_block_v6(&b, 13).unwrap().is_none());
        // a header cut short, a body cut short
        assert_eq!(read_block_v6(&b[..5], 3).unwrap_err().offset, 3);
        assert_eq!(read_block_v6(&b[..8], 3).unwrap_err().offset, 8);
    }
}
