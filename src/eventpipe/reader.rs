//! The streaming reader: blocks in file order, metadata and stacks kept
//! for the events that refer to them, events handed out one at a time.

use super::block::{read_block, BlockKind};
use super::cursor::Cursor;
use super::error::{Error, ErrorKind, Warning};
use super::event_header::{EventBlobs, EventHeader};
use super::header::{read_header, TraceHeader};
use super::ids::MetadataId;
use super::metadata::{parse_metadata, EventMetadata};
use super::payload::{decode_metadata_fields, decode_schema, Field};
use super::runtime_schemas::{lookup, name_of, RuntimeEvent, RuntimeProvider};
use super::sequence_points::{SequencePoint, SequenceTracker};
use super::stacks::{Stack, StackCache};
use std::collections::HashMap;

/// An event kind: its metadata and how its payload is decoded.
#[derive(Debug)]
pub struct EventKind {
    /// The metadata record as the trace gives it.
    pub metadata: EventMetadata,
    /// The name TraceEvent gives the kind ("GC/Start", "TestEvent1").
    pub name: String,
    schema: Option<(&'static RuntimeEvent, bool)>,
}

impl EventKind {
    fn new(metadata: EventMetadata) -> Self {
        let provider = RuntimeProvider::from_name(&metadata.provider);
        let schema = provider.and_then(|p| lookup(p, metadata.event_id, metadata.version));
        let name = match (schema, provider) {
            (Some((s, _)), _) => s.name.to_string(),
            (None, Some(p)) => name_of(p, metadata.event_id)
                .map(str::to_string)
                .unwrap_or_else(|| format!("EventID({})", metadata.event_id)),
            (None, None) => event_source_name(&metadata),
        };
        EventKind { metadata, name, schema }
    }
    /// Whether the payload's fields can be decoded: the runtime's events
    /// with a built-in schema, EventSource events whose metadata describes
    /// their fields.
    pub fn decodable(&self) -> bool {
        self.schema.is_some() || self.metadata.fields.is_some()
    }
    /// Whether a runtime event's schema is of its exact version (else an
    /// older one decodes the fields they share).
    pub fn schema_is_exact(&self) -> Option<bool> {
        self.schema.map(|s| s.1)
    }
}

/// TraceEvent's naming of EventSource events: the event's name, with its
/// opcode when the metadata gives one that the name does not already say.
fn event_source_name(m: &EventMetadata) -> String {
    let base = if m.name.is_empty() { format!("EventID({})", m.event_id) } else { m.name.clone() };
    match m.opcode {
        None | Some(0) => base,
        Some(op) => {
            let known = match op {
                1 => "Start",
                2 => "Stop",
                _ => "",
            };
            if !known.is_empty() && base.ends_with(known) {
                base
            } else if known.is_empty() {
                format!("{base}/{op}")
            } else {
                format!("{base}/{known}")
            }
        }
    }
}

/// One event, borrowed from the trace and the reader.
#[derive(Debug, Clone, Copy)]
pub struct Event<'a> {
    /// Offset of the event's header in the trace.
    pub offset: u64,
    /// The decoded header.
    pub header: EventHeader,
    /// The payload bytes.
    pub payload: &'a [u8],
    /// The event's kind, `None` when its metadata id was never defined.
    pub kind: Option<&'a EventKind>,
    /// The event's stack (empty when it has none).
    pub stack: Stack<'a>,
    pointer_size: u32,
    payload_offset: u64,
}

impl<'a> Event<'a> {
    /// The provider's name ("" when the kind is unknown).
    pub fn provider(&self) -> &'a str {
        self.kind.map_or("", |k| k.metadata.provider.as_str())
    }
    /// The kind's name ("" when unknown).
    pub fn name(&self) -> &'a str {
        self.kind.map_or("", |k| k.name.as_str())
    }
    /// The payload decoded into named fields. `Ok(None)` when the kind's
    /// fields are not known; an error names the payload byte that did not
    /// fit. Bytes after the known fields (a newer version) are ignored.
    pub fn fields(&self) -> Result<Option<Vec<Field<'a>>>, Error> {
        let Some(kind) = self.kind else { return Ok(None) };
        let mut c = Cursor::new(self.payload, self.payload_offset);
        if let Some((s, _)) = kind.schema {
            return decode_schema(s.fields, &mut c, self.pointer_size, 0).map(Some);
        }
        match &kind.metadata.fields {
            Some(f) => decode_metadata_fields(f, &mut c, self.pointer_size, 0).map(Some),
            None => Ok(None),
        }
    }
}

/// What a finished read found besides the events.
#[derive(Debug, Default)]
pub struct ReadSummary {
    /// Events handed out.
    pub events: u64,
    /// Events the runtime dropped, from the sequence numbers.
    pub lost_events: u64,
    /// Recoverable irregularities, in the order they were met.
    pub warnings: Vec<Warning>,
}

/// Reads a NetTrace from bytes in memory (a mapped file, a buffer) in one
/// pass, without holding events: memory is bounded by the event kinds,
/// the stacks of one sequence-point region and the threads.
///
/// Events come in file order, which is not time order across threads
/// (each region between sequence points is; sort by timestamp within one
/// if needed).
#[derive(Debug)]
pub struct NetTraceReader<'a> {
    bytes: &'a [u8],
    header: TraceHeader,
    next_block: u64,
    blobs: Option<(EventBlobs<'a>, bool)>,
    kinds: HashMap<MetadataId, EventKind>,
    stacks: StackCache,
    sequence: SequenceTracker,
    warnings: Vec<Warning>,
    events: u64,
    done: bool,
    complete: bool,
}

impl<'a> NetTraceReader<'a> {
    /// Reads the trace's header; events follow with [`Self::next_event`].
    pub fn new(bytes: &'a [u8]) -> Result<Self, Error> {
        let header = read_header(bytes)?;
        Ok(NetTraceReader {
            bytes,
            header,
            next_block: header.end_offset,
            blobs: None,
            kinds: HashMap::new(),
            stacks: StackCache::default(),
            sequence: SequenceTracker::default(),
            warnings: Vec::new(),
            events: 0,
            done: false,
            complete: false,
        })
    }

    /// The Trace object.
    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    /// The event kinds defined so far.
    pub fn kinds(&self) -> impl Iterator<Item = &EventKind> {
        self.kinds.values()
    }

    /// Warnings so far.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// Whether the end mark was reached (the trace is complete).
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// The next event, `Ok(None)` at the end. A trace cut short ends at
    /// its last complete block with a [`Warning::Truncated`]; damage inside
    /// the trace is an error with its offset (events before it were
    /// already handed out).
    pub fn next_event(&mut self) -> Result<Option<Event<'_>>, Error> {
        loop {
            if let Some((blobs, is_metadata)) = &mut self.blobs {
                match blobs.next() {
                    Some(Ok((offset, header, payload))) => {
                        if *is_metadata {
                            match parse_metadata(payload, offset) {
                                Ok(m) => {
                                    self.kinds.insert(m.id, EventKind::new(m));
                                }
                                Err(error) => self.warnings.push(Warning::BadMetadata { error }),
                            }
                            continue;
                        }
                        return Ok(Some(self.event(offset, header, payload)));
                    }
                    Some(Err(e)) => {
                        self.done = true;
                        self.blobs = None;
                        return Err(e);
                    }
                    None => self.blobs = None,
                }
            }
            if self.done {
                return Ok(None);
            }
            match read_block(self.bytes, self.next_block) {
                Ok(None) => {
                    self.done = true;
                    self.complete = true;
                }
                Ok(Some(b)) => {
                    self.next_block = b.end_offset;
                    match b.kind {
                        BlockKind::Event | BlockKind::Metadata => {
                            let blobs = EventBlobs::new(b.body, b.body_offset).inspect_err(|_| self.done = true)?;
                            self.blobs = Some((blobs, b.kind == BlockKind::Metadata));
                        }
                        BlockKind::Stack => {
                            let start = (b.body_offset) as usize;
                            self.stacks.add_block(b.body, start, b.body_offset).inspect_err(|_| self.done = true)?;
                        }
                        BlockKind::SequencePoint => {
                            let sp = SequencePoint::parse(b.body, b.body_offset).inspect_err(|_| self.done = true)?;
                            self.sequence.sequence_point(&sp, &mut self.warnings);
                            self.stacks.clear();
                        }
                        BlockKind::Unknown => self.warnings.push(Warning::UnknownBlock { offset: b.offset }),
                    }
                }
                Err(error) => {
                    self.done = true;
                    if let ErrorKind::UnexpectedEnd { .. } = error.kind {
                        let unread = (self.bytes.len() as u64).saturating_sub(self.next_block);
                        self.warnings.push(Warning::Truncated {
                            complete_until: self.next_block,
                            unread_bytes: unread,
                            error,
                        });
                        return Ok(None);
                    }
                    return Err(error);
                }
            }
        }
    }

    fn event(&mut self, offset: u64, header: EventHeader, payload: &'a [u8]) -> Event<'_> {
        self.events += 1;
        self.sequence.event(header.capture_thread, header.sequence_number, offset, &mut self.warnings);
        let kind = self.kinds.get(&header.metadata_id);
        if kind.is_none() {
            self.warnings.push(Warning::UndefinedMetadata { offset, id: header.metadata_id.0 });
        }
        let stack = match self.stacks.get(header.stack) {
            Some((s, n)) if header.stack.0 != 0 => {
                Stack::new(self.bytes.get(s..s + n).unwrap_or(&[]), self.header.pointer_size)
            }
            _ => Stack::empty(),
        };
        let payload_offset = payload.as_ptr() as u64 - self.bytes.as_ptr() as u64;
        Event { offset, header, payload, kind, stack, pointer_size: self.header.pointer_size, payload_offset }
    }

    /// Calls `f` with every event, then returns what was found besides.
    pub fn for_each(mut self, mut f: impl FnMut(&Event<'_>)) -> Result<ReadSummary, Error> {
        while let Some(e) = self.next_event()? {
            f(&e);
        }
        Ok(self.finish())
    }

    /// Ends the read: the counts and warnings.
    pub fn finish(self) -> ReadSummary {
        ReadSummary { events: self.events, lost_events: self.sequence.lost, warnings: self.warnings }
    }
}
