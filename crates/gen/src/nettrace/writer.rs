//! The NetTrace file layer: the stream header, the Trace object, and the
//! blocks (metadata, stacks, events, sequence points) with compressed
//! event headers, written as the runtime's EventPipe writes them (file
//! format V5, Trace object version 4).
//!
//! ```text
//! "Nettrace" <20>"!FastSerialization.1"
//! 05 05 01 <4> <4> <5>"Trace" 06 <Trace fields> 06
//! { 05 05 01 <2> <2> <len>"MetadataBlock|StackBlock|EventBlock|SPBlock" 06
//!       <BlockSize:u32> <pad to 4> <body> 06 } *
//! 01
//! ```
//!
//! Memory is bounded by one block of each kind (about 100 KB each, as the
//! runtime's), the stacks interned since the last sequence point (written
//! every `sequence_point_bytes`), the event kinds and the threads: not by
//! the trace's length.

use clrprof::eventpipe::{MetadataId, StackId, ThreadId, Timestamp};
use std::collections::HashMap;
use std::io::{self, Write};

/// FastSerialization tags.
const NULL_REFERENCE: u8 = 1;
const BEGIN_PRIVATE_OBJECT: u8 = 5;
const END_OBJECT: u8 = 6;

/// Flags of a compressed event header.
mod flag {
    pub const METADATA_ID: u8 = 1;
    pub const CAPTURE_THREAD_AND_SEQUENCE: u8 = 2;
    pub const THREAD_ID: u8 = 4;
    pub const STACK_ID: u8 = 8;
    pub const IS_SORTED: u8 = 64;
    pub const PAYLOAD_SIZE: u8 = 128;
}

/// What the Trace object says about the whole trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceInfo {
    /// Wall-clock start: year, month, day of week, day, hour, minute,
    /// second, millisecond (UTC).
    pub sync_time_utc: [u16; 8],
    /// The timestamp at `sync_time_utc`.
    pub sync_time_qpc: Timestamp,
    /// Ticks per second (1,000,000,000 on Linux).
    pub qpc_frequency: i64,
    /// 4 or 8.
    pub pointer_size: u32,
    /// The traced process.
    pub process_id: u32,
    /// Processors of the machine.
    pub processors: u32,
    /// The sample profiler's rate (samples per second).
    pub expected_cpu_sampling_rate: u32,
}

/// How the writer cuts the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriterOptions {
    /// An event block is written when its body reaches this size (the
    /// runtime's: 100 KB).
    pub block_bytes: usize,
    /// A sequence point (and a fresh stack numbering) after this many
    /// bytes of trace (the runtime's allocation budget: 10 MB).
    pub sequence_point_bytes: u64,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions { block_bytes: 100 * 1024, sequence_point_bytes: 10 << 20 }
    }
}

/// An event kind: what its metadata record says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindDef {
    /// Provider name.
    pub provider: &'static str,
    /// Event id within the provider.
    pub event_id: u32,
    /// Event name (empty for the runtime's own events, as the runtime writes them).
    pub name: &'static str,
    /// Keywords.
    pub keywords: u64,
    /// Version of the event's payload.
    pub version: u32,
    /// Level (4 informational, 5 verbose).
    pub level: u32,
    /// The opcode (a V5 metadata tag), if any.
    pub opcode: Option<u8>,
}

/// One event to write.
#[derive(Clone, Copy, Debug)]
pub struct EventOut<'a> {
    /// Its kind, from [`NetTraceWriter::define`].
    pub kind: MetadataId,
    /// The thread that writes it (and that it is about).
    pub thread: ThreadId,
    /// The processor it ran on.
    pub processor: u32,
    /// When (never before the previous event: the writer marks every
    /// event sorted).
    pub timestamp: Timestamp,
    /// Instruction pointers, innermost first (empty: no stack).
    pub stack: &'a [u64],
    /// The payload.
    pub payload: &'a [u8],
}

/// What a finished writer wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WriterStats {
    /// Bytes of trace.
    pub bytes: u64,
    /// Events dropped on purpose ([`NetTraceWriter::lose_every`]): their
    /// sequence numbers are gaps in the trace.
    pub lost: u64,
    /// Events (not counting metadata records).
    pub events: u64,
    /// Metadata records.
    pub kinds: u64,
    /// Stacks written (a stack used in several sequence-point regions counts once per region).
    pub stacks: u64,
    /// Event blocks.
    pub event_blocks: u64,
    /// Sequence points.
    pub sequence_points: u64,
}

/// A byte counter around the output (block bodies are aligned by file offset).
struct Counted<W> {
    out: W,
    at: u64,
}

impl<W: Write> Counted<W> {
    fn put(&mut self, b: &[u8]) -> io::Result<()> {
        self.out.write_all(b)?;
        self.at += b.len() as u64;
        Ok(())
    }
}

/// The per-event header state a compressed header is a delta against.
#[derive(Clone, Copy, Default)]
struct Prev {
    metadata: u32,
    sequence: u32,
    capture_thread: u64,
    processor: u32,
    thread: u64,
    stack: u32,
    timestamp: i64,
    payload_size: u32,
}

/// A block being filled: its body after the 20-byte header.
struct BlockBuf {
    body: Vec<u8>,
    prev: Prev,
    min_ts: i64,
    max_ts: i64,
}

impl BlockBuf {
    fn new(cap: usize) -> Self {
        BlockBuf { body: Vec::with_capacity(cap + 1024), prev: Prev::default(), min_ts: i64::MAX, max_ts: i64::MIN }
    }
    fn clear(&mut self) {
        self.body.clear();
        self.prev = Prev::default();
        self.min_ts = i64::MAX;
        self.max_ts = i64::MIN;
    }
    /// Appends one compressed event blob.
    #[allow(clippy::too_many_arguments)]
    fn blob(&mut self, metadata: u32, sequence: u32, capture: u64, processor: u32, thread: u64, stack: u32, ts: i64, payload: &[u8]) {
        let p = self.prev;
        let b = &mut self.body;
        let mut flags = flag::IS_SORTED;
        let flags_at = b.len();
        b.push(0);
        if metadata != p.metadata {
            flags |= flag::METADATA_ID;
            varint(b, u64::from(metadata));
        }
        // Metadata records carry no sequence number; events do, and the
        // reader adds one per event when the flag is absent.
        let implied = if metadata != 0 { p.sequence.wrapping_add(1) } else { p.sequence };
        if metadata != 0 && (sequence != implied || capture != p.capture_thread || processor != p.processor) {
            flags |= flag::CAPTURE_THREAD_AND_SEQUENCE;
            varint(b, u64::from(sequence.wrapping_sub(p.sequence).wrapping_sub(1)));
            varint(b, capture);
            varint(b, u64::from(processor));
        }
        if thread != p.thread {
            flags |= flag::THREAD_ID;
            varint(b, thread);
        }
        if stack != p.stack {
            flags |= flag::STACK_ID;
            varint(b, u64::from(stack));
        }
        varint(b, ts.wrapping_sub(p.timestamp) as u64);
        let size = payload.len() as u32;
        if size != p.payload_size {
            flags |= flag::PAYLOAD_SIZE;
            varint(b, u64::from(size));
        }
        b[flags_at] = flags;
        b.extend_from_slice(payload);
        let (sequence, capture, processor) =
            if metadata != 0 { (sequence, capture, processor) } else { (p.sequence, p.capture_thread, p.processor) };
        self.prev = Prev { metadata, sequence, capture_thread: capture, processor, thread, stack, timestamp: ts, payload_size: size };
        self.min_ts = self.min_ts.min(ts);
        self.max_ts = self.max_ts.max(ts);
    }
}

/// LEB128, as the compressed headers use.
fn varint(b: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        b.push((v as u8) | 0x80);
        v >>= 7;
    }
    b.push(v as u8);
}

/// Appends `s` as UTF-16LE with a terminating 0 unit.
pub fn utf16z(b: &mut Vec<u8>, s: &str) {
    for u in s.encode_utf16() {
        b.extend_from_slice(&u.to_le_bytes());
    }
    b.extend_from_slice(&[0, 0]);
}

/// Writes a NetTrace stream, block by block, to any `Write`.
pub struct NetTraceWriter<W: Write> {
    out: Counted<W>,
    opts: WriterOptions,
    pointer_size: usize,
    events: BlockBuf,
    metadata: BlockBuf,
    kinds: u32,
    /// Stacks of the current region: frames -> id; the stack block body.
    stack_ids: HashMap<Vec<u64>, u32>,
    stack_body: Vec<u8>,
    stack_first: u32,
    stack_count: u32,
    next_stack: u32,
    /// Capture threads and their last sequence numbers, in order of appearance.
    threads: Vec<(u64, u32)>,
    last_ts: i64,
    since_sp: u64,
    scratch: Vec<u8>,
    stats: WriterStats,
    /// Every this many events one is dropped after taking its sequence
    /// number, as the runtime drops events when its buffers are full (0:
    /// none); `offered` counts the events given to [`NetTraceWriter::event`].
    lose_every: u64,
    offered: u64,
}

impl<W: Write> NetTraceWriter<W> {
    /// Writes the stream header and the Trace object.
    pub fn new(out: W, info: &TraceInfo, opts: WriterOptions) -> io::Result<Self> {
        if info.pointer_size != 4 && info.pointer_size != 8 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "a pointer size of 4 or 8"));
        }
        let mut w = NetTraceWriter {
            out: Counted { out, at: 0 },
            opts,
            pointer_size: info.pointer_size as usize,
            events: BlockBuf::new(opts.block_bytes),
            metadata: BlockBuf::new(4096),
            kinds: 0,
            stack_ids: HashMap::new(),
            stack_body: Vec::new(),
            stack_first: 1,
            stack_count: 0,
            next_stack: 1,
            threads: Vec::new(),
            last_ts: info.sync_time_qpc.0,
            since_sp: 0,
            scratch: Vec::new(),
            stats: WriterStats::default(),
            lose_every: 0,
            offered: 0,
        };
        let mut h = Vec::with_capacity(128);
        h.extend_from_slice(b"Nettrace");
        h.extend_from_slice(&20u32.to_le_bytes());
        h.extend_from_slice(b"!FastSerialization.1");
        h.push(BEGIN_PRIVATE_OBJECT);
        type_header(&mut h, 4, b"Trace");
        for v in info.sync_time_utc {
            h.extend_from_slice(&v.to_le_bytes());
        }
        h.extend_from_slice(&info.sync_time_qpc.0.to_le_bytes());
        h.extend_from_slice(&info.qpc_frequency.to_le_bytes());
        for v in [info.pointer_size, info.process_id, info.processors, info.expected_cpu_sampling_rate] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        h.push(END_OBJECT);
        w.out.put(&h)?;
        Ok(w)
    }

    /// Defines an event kind: its metadata record goes out before the
    /// first block that may use it.
    pub fn define(&mut self, kind: &KindDef) -> MetadataId {
        self.kinds += 1;
        let id = self.kinds;
        let p = &mut self.scratch;
        p.clear();
        p.extend_from_slice(&id.to_le_bytes());
        utf16z(p, kind.provider);
        p.extend_from_slice(&kind.event_id.to_le_bytes());
        utf16z(p, kind.name);
        p.extend_from_slice(&kind.keywords.to_le_bytes());
        p.extend_from_slice(&kind.version.to_le_bytes());
        p.extend_from_slice(&kind.level.to_le_bytes());
        // No V1 field descriptions: the runtime's payloads are described
        // by its manifest, not by the trace.
        p.extend_from_slice(&0u32.to_le_bytes());
        if let Some(op) = kind.opcode {
            p.extend_from_slice(&1u32.to_le_bytes());
            p.push(1);
            p.push(op);
        }
        let ts = self.last_ts;
        self.metadata.blob(0, 0, 0, 0, 0, 0, ts, &self.scratch);
        self.stats.kinds += 1;
        MetadataId(id)
    }

    /// Writes one event (its stack interned in the current region).
    pub fn event(&mut self, e: &EventOut<'_>) -> io::Result<()> {
        if self.since_sp >= self.opts.sequence_point_bytes {
            self.sequence_point()?;
        }
        let ts = e.timestamp.0.max(self.last_ts);
        self.last_ts = ts;
        let seq = self.next_sequence(e.thread.0);
        self.offered += 1;
        if self.lose_every > 0 && self.offered % self.lose_every == 0 {
            // Lost: its sequence number is taken and never written, so the
            // next event of the thread (or the next sequence point) shows
            // the gap a reader reports.
            self.stats.lost += 1;
            return Ok(());
        }
        let stack = self.intern(e.stack);
        let before = self.events.body.len();
        self.events.blob(e.kind.0, seq, e.thread.0, e.processor, e.thread.0, stack.0, ts, e.payload);
        self.since_sp += (self.events.body.len() - before) as u64;
        self.stats.events += 1;
        if self.events.body.len() >= self.opts.block_bytes {
            self.flush()?;
        }
        Ok(())
    }

    /// Drops every `n`th event from now on (0: none), as a runtime whose
    /// buffers are full does: a trace to test how readers report losses.
    pub fn lose_every(&mut self, n: u64) {
        self.lose_every = n;
    }

    fn next_sequence(&mut self, thread: u64) -> u32 {
        for t in &mut self.threads {
            if t.0 == thread {
                t.1 = t.1.wrapping_add(1);
                return t.1;
            }
        }
        self.threads.push((thread, 1));
        1
    }

    fn intern(&mut self, frames: &[u64]) -> StackId {
        if frames.is_empty() {
            return StackId(0);
        }
        if let Some(&id) = self.stack_ids.get(frames) {
            return StackId(id);
        }
        let id = self.next_stack;
        self.next_stack += 1;
        self.stack_count += 1;
        let size = (frames.len() * self.pointer_size) as u32;
        self.stack_body.extend_from_slice(&size.to_le_bytes());
        for &ip in frames {
            self.stack_body.extend_from_slice(&ip.to_le_bytes()[..self.pointer_size]);
        }
        self.since_sp += u64::from(size) + 4;
        self.stack_ids.insert(frames.to_vec(), id);
        self.stats.stacks += 1;
        StackId(id)
    }

    /// Writes what is pending: metadata, then stacks, then events (an
    /// event may refer only to what precedes its block).
    pub fn flush(&mut self) -> io::Result<()> {
        if !self.metadata.body.is_empty() {
            write_event_block(&mut self.out, b"MetadataBlock", &self.metadata)?;
            self.metadata.clear();
        }
        if self.stack_count > 0 {
            let mut head = [0u8; 8];
            head[..4].copy_from_slice(&self.stack_first.to_le_bytes());
            head[4..].copy_from_slice(&self.stack_count.to_le_bytes());
            write_object(&mut self.out, b"StackBlock", &[&head, &self.stack_body])?;
            self.stack_first += self.stack_count;
            self.stack_count = 0;
            self.stack_body.clear();
        }
        if !self.events.body.is_empty() {
            write_event_block(&mut self.out, b"EventBlock", &self.events)?;
            self.events.clear();
            self.stats.event_blocks += 1;
        }
        Ok(())
    }

    /// Writes everything pending, then a sequence point (each thread's
    /// last sequence number); stacks are numbered afresh after it.
    pub fn sequence_point(&mut self) -> io::Result<()> {
        self.flush()?;
        let mut body = Vec::with_capacity(12 + 12 * self.threads.len());
        body.extend_from_slice(&self.last_ts.to_le_bytes());
        body.extend_from_slice(&(self.threads.len() as u32).to_le_bytes());
        for &(t, seq) in &self.threads {
            body.extend_from_slice(&t.to_le_bytes());
            body.extend_from_slice(&seq.to_le_bytes());
        }
        write_object(&mut self.out, b"SPBlock", &[&body])?;
        self.stack_ids.clear();
        self.stack_first = 1;
        self.next_stack = 1;
        self.since_sp = 0;
        self.stats.sequence_points += 1;
        Ok(())
    }

    /// Bytes written so far (blocks not yet flushed excluded).
    pub fn bytes_written(&self) -> u64 {
        self.out.at
    }

    /// Flushes the blocks, writes the end mark and flushes the output.
    pub fn finish(mut self) -> io::Result<(W, WriterStats)> {
        self.flush()?;
        self.out.put(&[NULL_REFERENCE])?;
        self.out.out.flush()?;
        self.stats.bytes = self.out.at;
        Ok((self.out.out, self.stats))
    }
}

/// `05 01 <version> <version> <len> name 06`: a type, after its object's `05`.
fn type_header(h: &mut Vec<u8>, version: u32, name: &[u8]) {
    h.push(BEGIN_PRIVATE_OBJECT);
    h.push(NULL_REFERENCE);
    h.extend_from_slice(&version.to_le_bytes());
    h.extend_from_slice(&version.to_le_bytes());
    h.extend_from_slice(&(name.len() as u32).to_le_bytes());
    h.extend_from_slice(name);
    h.push(END_OBJECT);
}

/// An object of type `name` (version 2) whose body is `parts` concatenated.
fn write_object<W: Write>(out: &mut Counted<W>, name: &[u8], parts: &[&[u8]]) -> io::Result<()> {
    let mut h = Vec::with_capacity(40);
    h.push(BEGIN_PRIVATE_OBJECT);
    type_header(&mut h, 2, name);
    let size: usize = parts.iter().map(|p| p.len()).sum();
    let size = u32::try_from(size).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a block over 4 GB"))?;
    h.extend_from_slice(&size.to_le_bytes());
    let at = out.at + h.len() as u64;
    h.resize(h.len() + ((4 - (at & 3)) & 3) as usize, 0);
    out.put(&h)?;
    for p in parts {
        out.put(p)?;
    }
    out.put(&[END_OBJECT])
}

/// An EventBlock or MetadataBlock: the 20-byte header (compressed
/// headers, the timestamp range), then the blobs.
fn write_event_block<W: Write>(out: &mut Counted<W>, name: &[u8], b: &BlockBuf) -> io::Result<()> {
    let mut head = [0u8; 20];
    head[..2].copy_from_slice(&20u16.to_le_bytes());
    head[2..4].copy_from_slice(&1u16.to_le_bytes());
    let (min, max) = if b.min_ts <= b.max_ts { (b.min_ts, b.max_ts) } else { (0, 0) };
    head[4..12].copy_from_slice(&min.to_le_bytes());
    head[12..20].copy_from_slice(&max.to_le_bytes());
    write_object(out, name, &[&head, &b.body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use clrprof::eventpipe::NetTraceReader;

    fn info() -> TraceInfo {
        TraceInfo {
            sync_time_utc: [2026, 1, 4, 1, 0, 0, 0, 0],
            sync_time_qpc: Timestamp(1000),
            qpc_frequency: 1_000_000_000,
            pointer_size: 8,
            process_id: 42,
            processors: 4,
            expected_cpu_sampling_rate: 1000,
        }
    }

    fn kind(id: u32) -> KindDef {
        KindDef { provider: "Test-Provider", event_id: id, name: "Thing", keywords: 1, version: 0, level: 4, opcode: Some(1) }
    }

    #[test]
    fn varints_are_leb128() {
        let mut b = Vec::new();
        varint(&mut b, 0);
        varint(&mut b, 127);
        varint(&mut b, 128);
        varint(&mut b, u64::MAX);
        assert_eq!(&b[..4], &[0, 127, 0x80, 1]);
        assert_eq!(b.len() - 4, 10);
    }

    #[test]
    fn events_stacks_and_sequence_points_read_back() {
        // Tiny blocks and regions: many blocks, several sequence points.
        let opts = WriterOptions { block_bytes: 64, sequence_point_bytes: 300 };
        let mut w = NetTraceWriter::new(Vec::new(), &info(), opts).unwrap();
        let a = w.define(&kind(1));
        let b = w.define(&kind(2));
        let stacks: [&[u64]; 3] = [&[0x10, 0x20], &[], &[0x30, 0x20, 0x10]];
        for i in 0..200u64 {
            let payload = i.to_le_bytes();
            let e = EventOut {
                kind: if i % 3 == 0 { a } else { b },
                thread: ThreadId(7 + i % 2),
                processor: (i % 4) as u32,
                timestamp: Timestamp(2000 + i as i64 * 10),
                stack: stacks[(i % 3) as usize],
                payload: &payload[..(i % 8) as usize],
            };
            w.event(&e).unwrap();
        }
        let (bytes, stats) = w.finish().unwrap();
        assert_eq!(stats.bytes, bytes.len() as u64);
        assert!(stats.sequence_points >= 3, "{stats:?}");
        let mut r = NetTraceReader::new(&bytes).unwrap();
        assert_eq!(r.header().process_id, 42);
        let mut i = 0u64;
        while let Some(e) = r.next_event().unwrap() {
            assert_eq!(e.name(), "Thing/Start");
            assert_eq!(e.kind.unwrap().metadata.event_id, if i % 3 == 0 { 1 } else { 2 });
            assert_eq!(e.header.thread.0, 7 + i % 2);
            assert_eq!(e.header.processor, (i % 4) as u32);
            assert_eq!(e.header.timestamp.0, 2000 + i as i64 * 10);
            assert_eq!(e.header.sequence_number as u64, i / 2 + 1);
            assert!(e.stack.frames().eq(stacks[(i % 3) as usize].iter().copied()), "event {i}");
            assert_eq!(e.payload, &i.to_le_bytes()[..(i % 8) as usize]);
            i += 1;
        }
        assert_eq!(i, 200);
        assert!(r.is_complete());
        let s = r.finish();
        assert_eq!(s.warnings, vec![]);
        assert_eq!(s.lost_events, 0);
    }

    #[test]
    fn four_byte_pointers() {
        let mut i = info();
        i.pointer_size = 4;
        let mut w = NetTraceWriter::new(Vec::new(), &i, WriterOptions::default()).unwrap();
        let a = w.define(&kind(1));
        let e = EventOut { kind: a, thread: ThreadId(1), processor: 0, timestamp: Timestamp(5000), stack: &[0x1234_5678, 0x9abc], payload: &[] };
        w.event(&e).unwrap();
        let (bytes, _) = w.finish().unwrap();
        let mut r = NetTraceReader::new(&bytes).unwrap();
        let e = r.next_event().unwrap().unwrap();
        assert_eq!(e.stack.frames().collect::<Vec<_>>(), vec![0x1234_5678, 0x9abc]);
        assert!(r.next_event().unwrap().is_none());
        assert!(NetTraceWriter::new(Vec::new(), &TraceInfo { pointer_size: 2, ..i }, WriterOptions::default()).is_err());
    }
}
