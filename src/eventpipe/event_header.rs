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
//!
//! V6 changes the event rows (metadata rows no longer have event headers):
//! thread fields are indexes into the thread table, and a label list id
//! replaces the two activity ids.
//!
//! ```text
//! uncompressed: <EventSize:u32> <MetadataId:u32 (high bit: not sorted)> <SequenceNumber:u32>
//!   <ThreadIndex:u64> <CaptureThreadIndex:u64> <Processor:u32> <StackId:u32>
//!   <Timestamp:u64> <LabelListId:u32> <PayloadSize:u32> <payload>       (no padding)
//! compressed: as above to the timestamp delta, then
//!   [LabelListId:var32 if f&16] (sorted if f&64) [PayloadSize:var32 if f&128] <payload>
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
    /// V6: the event's label list (0: none); its activity ids are copied
    /// into `activity_id` and `related_activity_id` by the reader.
    pub label_list: u32,
    /// V6: `thread`'s index in the trace's thread table (before V6, the
    /// thread id itself). The reader resolves `thread` to the OS thread id
    /// the table gives.
    pub thread_index: u64,
    /// V6: `capture_thread`'s index in the thread table (before V6, the id).
    pub capture_thread_index: u64,
    /// The process the event is from: the trace's process before V6, the
    /// thread table's process id in V6 (filled in by the reader; 0 when
    /// unknown).
    pub process_id: u64,
}

/// Which event row encoding a block uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    V4,
    V6,
}

/// The events of one EventBlock or MetadataBlock, decoded one at a time.
#[derive(Debug, Clone)]
pub struct EventBlobs<'a> {
    c: Cursor<'a>,
    compressed: bool,
    format: Format,
    prev: EventHeader,
    failed: bool,
}

impl<'a> EventBlobs<'a> {
    /// The blobs of a block body (V4, V5) starting at trace offset `body_offset`.
    pub fn new(body: &'a [u8], body_offset: u64) -> Result<Self, Error> {
        Self::with_format(body, body_offset, Format::V4)
    }

    /// The event rows of a V6 EventBlock body starting at trace offset
    /// `body_offset` (thread fields are thread indexes, see [`EventHeader`]).
    pub fn new_v6(body: &'a [u8], body_offset: u64) -> Result<Self, Error> {
        Self::with_format(body, body_offset, Format::V6)
    }

    fn with_format(body: &'a [u8], body_offset: u64, format: Format) -> Result<Self, Error> {
        let mut c = Cursor::new(body, body_offset);
        let at = c.offset();
        let header_size = c.u16("an event block's header size")? as usize;
        if header_size < 20 {
            return Err(Error::invalid(at, "an event block header of at least 20 bytes", header_size as u64));
        }
        let flags = c.u16("an event block's flags")?;
        c.skip(header_size - 4, "the rest of an event block's header")?;
        Ok(EventBlobs { c, compressed: flags & 1 != 0, format, prev: EventHeader::default(), failed: false })
    }

    /// The next event: its offset, header and payload.
    #[inline]
    fn read(&mut self) -> Result<(u64, EventHeader, &'a [u8]), Error> {
        let at = self.c.offset();
        let (h, end) = match (self.compressed, self.format) {
            (true, _) => (self.compressed_header()?, None),
            (false, Format::V4) => (self.uncompressed_header()?, None),
            (false, Format::V6) => self.uncompressed_header_v6()?,
        };
        let payload = self.c.bytes(h.payload_size as usize, "an event's payload")?;
        if let Some(end) = end {
            // V6: the event ends where its size says (no padding).
            self.c.skip(end - self.c.pos(), "the rest of an event")?;
        } else if !self.compressed {
            let pad = ((4 - (self.c.offset() & 3)) & 3) as usize;
            self.c.skip(pad.min(self.c.remaining()), "an event's padding")?;
        }
        self.prev = h;
        Ok((at, h, payload))
    }

    #[inline]
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
        if self.format == Format::V6 {
            if flags & 16 != 0 {
                h.label_list = c.varu32("a label list id")?;
            }
        } else {
            if flags & 16 != 0 {
                h.activity_id = c.guid("an activity id")?;
            }
            if flags & 32 != 0 {
                h.related_activity_id = c.guid("a related activity id")?;
            }
        }
        h.is_sorted = flags & 64 != 0;
        if flags & 128 != 0 {
            h.payload_size = c.varu32("a payload size")?;
        }
        h.thread_index = h.thread.0;
        h.capture_thread_index = h.capture_thread.0;
        Ok(h)
    }

    /// A V6 uncompressed header and where its event ends (a cursor position).
    fn uncompressed_header_v6(&mut self) -> Result<(EventHeader, Option<usize>), Error> {
        let c = &mut self.c;
        let at = c.offset();
        let size = c.u32("an event's size")? as usize;
        let start = c.pos();
        let id = c.u32("a metadata id")?;
        let sequence_number = c.u32("a sequence number")?;
        let thread = c.u64("a thread index")?;
        let capture_thread = c.u64("a capture thread index")?;
        let processor = c.u32("a processor number")?;
        let stack = StackId(c.u32("a stack id")?);
        let timestamp = Timestamp(c.u64("a timestamp")? as i64);
        let label_list = c.u32("a label list id")?;
        let payload_size = c.u32("a payload size")?;
        if (payload_size as usize).saturating_add(c.pos() - start) > size {
            return Err(Error::invalid(at, "an event size that holds its header and payload", size as u64));
        }
        if size > c.remaining() + (c.pos() - start) {
            return Err(Error::end(c.offset() + c.remaining() as u64, "the rest of an event"));
        }
        let h = EventHeader {
            metadata_id: MetadataId(id & 0x7fff_ffff),
            sequence_number,
            capture_thread: ThreadId(capture_thread),
            processor,
            thread: ThreadId(thread),
            stack,
            timestamp,
            is_sorted: id & 0x8000_0000 == 0,
            payload_size,
            label_list,
            thread_index: thread,
            capture_thread_index: capture_thread,
            ..EventHeader::default()
        };
        Ok((h, Some(start + size)))
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
            label_list: 0,
            thread_index: thread.0,
            capture_thread_index: capture_thread.0,
            process_id: 0,
        })
    }
}

impl<'a> Iterator for EventBlobs<'a> {
    /// (offset of the event, its header, its payload)
    type Item = Result<(u64, EventHeader, &'a [u8]), Error>;
    #[inline]
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
    fn v6_rows_carry_label_lists_and_indexes() {
        // compressed: metadata 3, seq +1, capture index 0, proc 2, thread
        // index 1, stack 4, ts 50, label list 2, payload 1
        let first = [1 | 2 | 4 | 8 | 16 | 64 | 128, 3, 0, 0, 2, 1, 4, 50, 2, 1, 0xaa];
        let second = [32, 1, 0xbb]; // bit 32 means nothing in V6
        let b = block(&[&first[..], &second[..]].concat());
        let v: Vec<_> = EventBlobs::new_v6(&b, 0).unwrap().collect::<Result<_, _>>().unwrap();
        let (_, h, p) = v[0];
        assert_eq!((h.metadata_id.0, h.sequence_number, h.capture_thread_index, h.thread_index), (3, 1, 0, 1));
        assert_eq!((h.stack.0, h.timestamp.0, h.label_list, h.is_sorted, p), (4, 50, 2, true, &[0xaa][..]));
        let (_, h, p) = v[1];
        assert_eq!((h.sequence_number, h.timestamp.0, h.label_list, h.is_sorted, p), (2, 51, 2, false, &[0xbb][..]));
        // uncompressed: 48 header bytes, 2 payload bytes, 1 more byte the size covers
        let mut u = vec![20, 0, 0, 0];
        u.extend([0u8; 16]);
        u.extend(51u32.to_le_bytes());
        u.extend((7u32 | 0x8000_0000).to_le_bytes());
        u.extend(9u32.to_le_bytes());
        u.extend(5u64.to_le_bytes());
        u.extend(6u64.to_le_bytes());
        u.extend(1u32.to_le_bytes());
        u.extend(0u32.to_le_bytes());
        u.extend(1000u64.to_le_bytes());
        u.extend(3u32.to_le_bytes());
        u.extend(2u32.to_le_bytes());
        u.extend([0xcc, 0xdd, 0xee]);
        let v: Vec<_> = EventBlobs::new_v6(&u, 0).unwrap().collect::<Result<_, _>>().unwrap();
        assert_eq!(v.len(), 1);
        let (_, h, p) = v[0];
        assert_eq!((h.metadata_id.0, h.sequence_number, h.thread_index, h.capture_thread_index), (7, 9, 5, 6));
        assert_eq!((h.timestamp.0, h.label_list, h.is_sorted, p), (1000, 3, false, &[0xcc, 0xdd][..]));
        // a size that does not hold the payload
        let mut bad = u.clone();
        bad[20] = 40;
        assert!(EventBlobs::new_v6(&bad, 0).unwrap().next().unwrap().is_err());
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
