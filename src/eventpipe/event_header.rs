//! Event blobs inside an EventBlock or a MetadataBlock: the block header
//! and the per-event headers, compressed (V4+: a flags byte, varints,
//! deltas against the previous header of the block) or not.
//!
//! ```text
//! block body: <HeaderSize:u16> <Flags:u16> <MinTimestamp:i64> <MaxTimestamp:i64> <reserved to HeaderSize>
//!             event blob, event blob, ...
//! compressed blob (Flags & 1):
//!   <flags:u8> [MetadataId:var32 if f&1]
//!   [SequenceDelta-1:var32 CaptureThreadId:var64 Processor:var32 if f&2]
//!   [ThreadId:var64 if f&4] [StackId:var32 if f&8] <TimestampDelta:var64>
//!   [ActivityId:16 if f&16] [RelatedActivityId:16 if f&32] (sorted if f&64)
//!   [PayloadSize:var32 if f&128] <payload>
//! ```

use super::cursor::Cursor;
use super::error::Error;
use super::ids::{MetadataId, StackId, ThreadId, Timestamp};

/// The decoded header of one event (or metadata record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventHeader {
    /// The event's kind (0 for a metadata record).
    pub metadata_id: MetadataId,
    /// Per capture thread, incremented for every event the thread tried
    /// to write (gaps are dropped events).
    pub sequence_number: u32,
    /// The thread that wrote the event into the trace.
    pub capture_thread: ThreadId,
    /// The processor it ran on.
    pub processor: u32,
    /// The thread the event is about (usually the capture thread).
    pub thread: ThreadId,
    /// The event's stack (0: none).
    pub stack: StackId,
    /// When.
    pub timestamp: Timestamp,
    /// Activity id.
    pub activity_id: [u8; 16],
    /// Related activity id.
    pub related_activity_id: [u8; 16],
    /// Every later event of the trace has a timestamp at least this one's.
    pub is_sorted: bool,
    /// Size of the payload in bytes.
    pub payload_size: u32,
}


/// The events of one EventBlock or MetadataBlock, decoded one at a time.
#[derive(Debug, Clone)]
pub struct EventBlobs<'a> {
    c: Cursor<'a>,
    compressed: bool,
    prev: EventHeader,
    failed: bool,
}

impl<'a> EventBlobs<'a> {
    /// The blobs of a block body starting at trace offset `body_offset`.
    pub fn new(body: &'a [u8], body_offset: u64) -> Result<Self, Error> {
        let mut c = Cursor::new(body, body_offset);
        let at = c.offset();
        let header_size = c.u16("an event block's header size")? as usize;
        if header_size < 20 {
            return Err(Error::invalid(at, "an event block header of at least 20 bytes", header_size as u64));
        }
        let flags = c.u16("an event block's flags")?;
        c.skip(header_size - 4, "the rest of an event block's header")?;
        Ok(EventBlobs { c, compressed: flags & 1 != 0, prev: EventHeader::default(), failed: false })
    }

    /// The next event: its offset, header and payload.
    fn read(&mut self) -> Result<(u64, EventHeader, &'a [u8]), Error> {
        let at = self.c.offset();
        let h = if self.compressed { self.compressed_header()? } else { self.uncompressed_header()? };
        let payload = self.c.bytes(h.payload_size as usize, "an event's payload")?;
        if !self.compressed {
            let pad = ((4 - (self.c.offset() & 3)) & 3) as usize;
            self.c.skip(pad.min(self.c.remaining()), "an event's padding")?;
        }
        self.prev = h;
        Ok((at, h, payload))
    }

    fn compressed_header(&mut self) -> Result<EventHeader, Error> {
        let c = &mut self.c;
        let mut h = self.prev;
        let flags = c.u8("an event header's flags")?;
        if flags & 1 != 0 {
            h.metadata_id = MetadataId(c.varu32("a metadata id")?);
        }
        if flags & 2 != 0 {
            h.sequence_number = h.sequence_number.wrapping_add(c.varu32("a sequence number delta")?).wrapping_add(1);
            h.capture_thread = ThreadId(c.varu64("a capture thread id")?);
            h.processor = c.varu32("a processor number")?;
        } else if h.metadata_id.0 != 0 {
            h.sequence_number = h.sequence_number.wrapping_add(1);
        }
        if flags & 4 != 0 {
            h.thread = ThreadId(c.varu64("a thread id")?);
        }
        if flags & 8 != 0 {
            h.stack = StackId(c.varu32("a stack id")?);
        }
        h.timestamp = Timestamp(h.timestamp.0.wrapping_add(c.varu64("a timestamp delta")? as i64));
        if flags & 16 != 0 {
            h.activity_id = c.guid("an activity id")?;
        }
        if flags & 32 != 0 {
            h.related_activity_id = c.guid("a related activity id")?;
        }
        h.is_sorted = flags & 64 != 0;
        if flags & 128 != 0 {
            h.payload_size = c.varu32("a payload size")?;
        }
        Ok(h)
    }

    fn uncompressed_header(&mut self) -> Result<EventHeader, Error> {
        let c = &mut self.c;
        let at = c.offset();
        let size = c.u32("an event's size")? as usize;
        let start = c.pos();
        let id = c.u32("a metadata id")?;
        let sequence_number = c.u32("a sequence number")?;
        let thread = ThreadId(c.u64("a thread id")?);
        let capture_thread = ThreadId(c.u64("a capture thread id")?);
        let processor = c.u32("a processor number")?;
        let stack = StackId(c.u32("a stack id")?);
        let timestamp = Timestamp(c.u64("a timestamp")? as i64);
        let activity_id = c.guid("an activity id")?;
        let related_activity_id = c.guid("a related activity id")?;
        let payload_size = c.u32("a payload size")?;
        if (payload_size as usize).saturating_add(c.pos() - start) > size {
            return Err(Error::invalid(at, "an event size that holds its payload", size as u64));
        }
        Ok(EventHeader {
            metadata_id: MetadataId(id & 0x7fff_ffff),
            sequence_number,
            capture_thread,
            processor,
            thread,
            stack,
            timestamp,
            activity_id,
            related_activity_id,
            is_sorted: id & 0x8000_0000 == 0,
            payload_size,
        })
    }
}

impl<'a> Iterator for EventBlobs<'a> {
    /// (offset of the event, its header, its payload)
    type Item = Result<(u64, EventHeader, &'a [u8]), Error>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.c.is_empty() {
            return None;
        }
        let r = self.read();
        self.failed = r.is_err();
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(events: &[u8]) -> Vec<u8> {
        let mut b = vec![20, 0, 1, 0];
        b.extend([0u8; 16]);
        b.extend(events);
        b
    }

    #[test]
    fn compressed_headers_carry_over() {
        // metadata 3, seq delta 0 (+1), capture thread 7, proc 1, thread 7,
        // stack 2, ts 100, payload 2
        let first = [1 | 2 | 4 | 8 | 128, 3, 0, 7, 1, 7, 2, 100, 2, 0xaa, 0xbb];
        // only the timestamp delta; sequence increments; same payload size
        let second = [0, 5, 0xcc, 0xdd];
        let b = block(&[&first[..], &second[..]].concat());
        let v: Vec<_> = EventBlobs::new(&b, 1000).unwrap().collect::<Result<_, _>>().unwrap();
        assert_eq!(v.len(), 2);
        let (o, h, p) = v[0];
        assert_eq!((o, h.metadata_id.0, h.sequence_number, h.thread.0, h.stack.0, h.timestamp.0), (1020, 3, 1, 7, 2, 100));
        assert_eq!(p, &[0xaa, 0xbb]);
        let (_, h, p) = v[1];
        assert_eq!((h.sequence_number, h.timestamp.0, h.stack.0), (2, 105, 2));
        assert_eq!(p, &[0xcc, 0xdd]);
    }

    #[test]
    fn a_payload_past_the_block_is_an_error_with_its_offset() {
        let b = block(&[128, 0, 50, 1, 2]);
        let mut it = EventBlobs::new(&b, 0);
        let e = it.as_mut().unwrap().next().unwrap().unwrap_err();
        assert_eq!(e.offset, 23);
        assert!(it.unwrap().next().is_none());
    }
}
