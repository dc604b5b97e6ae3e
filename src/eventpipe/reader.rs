//! The streaming reader: blocks in file order, metadata and stacks kept
//! for the events that refer to them, events handed out one at a time in
//! time order (merged across threads, see [`super::order`]) or in file
//! order.

use super::allocation_tick::{decode as decode_allocation_tick, prefix_of, AllocationTick};
use super::block::{read_block, read_block_v6, Block, BlockKind};
use super::bulk::Bulk;
use super::cursor::Cursor;
use super::error::{Error, ErrorKind, Warning};
use super::event_header::{EventBlobs, EventHeader};
use super::header::{read_trace_info, TraceHeader, TraceInfo};
use super::ids::ThreadId;
use super::kinds::KindTable;
use super::labels::{LabelCache, LabelList};
use super::metadata::{parse_metadata, parse_metadata_v6, EventMetadata};
use super::order::{Merge, Order, Pending, ReadOptions};
use super::payload::{decode_metadata_fields, decode_schema, Field};
use super::runtime_schemas::{lookup, name_of, RuntimeEvent, RuntimeProvider};
use super::sequence_points::{SequencePoint, SequenceTracker};
use super::stacks::{Stack, StackCache};
use super::threads::{parse_remove_thread_block, parse_thread_block, ThreadInfo, ThreadTable};

/// An event kind: its metadata and how its payload is decoded.
#[derive(Debug)]
pub struct EventKind {
    /// The metadata record as the trace gives it.
    pub metadata: EventMetadata,
    /// The name TraceEvent gives the kind ("GC/Start", "TestEvent1").
    pub name: String,
    schema: Option<(&'static RuntimeEvent, bool)>,
    provider: Option<RuntimeProvider>,
    /// The schema's fields when it is `GC/AllocationTick`'s (a prefix of
    /// the newest layout, see [`super::allocation_tick`]).
    allocation_tick: Option<u8>,
    /// Handed out by a reader made with [`NetTraceReader::only`].
    kept: bool,
}

impl EventKind {
    pub(crate) fn new(metadata: EventMetadata) -> Self {
        let provider = RuntimeProvider::from_name(&metadata.provider);
        let schema = provider.and_then(|p| lookup(p, metadata.event_id, metadata.version));
        let name = match (schema, provider) {
            (Some((s, _)), _) => s.name.to_string(),
            (None, Some(p)) => {
                name_of(p, metadata.event_id).map(str::to_string).unwrap_or_else(|| format!("EventID({})", metadata.event_id))
            }
            (None, None) => event_source_name(&metadata),
        };
        let allocation_tick = schema.and_then(|(s, _)| prefix_of(s.name, s.fields));
        EventKind { metadata, name, schema, provider, allocation_tick, kept: true }
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
    /// V6: the event's labels (`None` when it has none, and before V6).
    pub labels: Option<&'a LabelList>,
    /// V6: the thread the event is about, from the thread table (`None`
    /// before V6 or when the index was not defined).
    pub thread_info: Option<&'a ThreadInfo>,
    pointer_size: u32,
    payload_offset: u64,
}

impl<'a> Event<'a> {
    /// The provider's name ("" when the kind is unknown).
    #[inline]
    pub fn provider(&self) -> &'a str {
        self.kind.map_or("", |k| k.metadata.provider.as_str())
    }
    /// The kind's name ("" when unknown).
    #[inline]
    pub fn name(&self) -> &'a str {
        self.kind.map_or("", |k| k.name.as_str())
    }
    /// The payload decoded into named fields. `Ok(None)` when the kind's
    /// fields are not known; an error names the payload byte that did not
    /// fit. Bytes after the known fields (a newer version) are ignored.
    pub fn fields(&self) -> Result<Option<Vec<Field<'a>>>, Error> {
        let Some(kind) = self.kind else { return Ok(None) };
        let mut c = Cursor::new(self.payload, self.payload_offset);
        if let Some(s) = self.schema(kind) {
            return decode_schema(s.fields, &mut c, self.pointer_size, 0).map(Some);
        }
        match &kind.metadata.fields {
            Some(f) => decode_metadata_fields(f, &mut c, self.pointer_size, 0).map(Some),
            None => Ok(None),
        }
    }

    /// The payload of a runtime bulk event (fixed fields, then one array
    /// of fixed-size structures) read in place, without a value per
    /// element. `Ok(None)` when the kind has no such runtime schema (its
    /// [`Self::fields`] may still decode it); an error when the payload is
    /// shorter than its count says.
    pub fn bulk(&self) -> Result<Option<Bulk<'a>>, Error> {
        let Some(kind) = self.kind else { return Ok(None) };
        match self.schema(kind) {
            Some(s) => Bulk::read(s.fields, self.payload, self.payload_offset, self.pointer_size),
            None => Ok(None),
        }
    }

    /// A `GC/AllocationTick` event's fields read straight from the
    /// payload, without allocating: the values [`Self::fields`] gives,
    /// and an error exactly when it gives one. `None` when the event is
    /// not one, or its layout is not the runtime's (then
    /// [`Self::fields`] decodes it).
    #[inline]
    pub fn allocation_tick(&self) -> Option<Result<AllocationTick<'a>, Error>> {
        let kind = self.kind?;
        let n = kind.allocation_tick?;
        // A V6 label naming another version: another schema.
        if self.labels.and_then(|l| l.version).is_some_and(|v| u32::from(v) != kind.metadata.version) {
            return None;
        }
        let mut c = Cursor::new(self.payload, self.payload_offset);
        Some(decode_allocation_tick(n, &mut c, self.pointer_size))
    }
}

impl Event<'_> {
    /// The runtime schema: the kind's, or the one of the version a V6
    /// label overrides it with.
    fn schema(&self, kind: &EventKind) -> Option<&'static RuntimeEvent> {
        if let (Some(v), Some(p)) = (self.labels.and_then(|l| l.version), kind.provider) {
            if u32::from(v) != kind.metadata.version {
                return lookup(p, kind.metadata.event_id, u32::from(v)).map(|s| s.0);
            }
        }
        kind.schema.map(|s| s.0)
    }
}

/// What [`NetTraceReader::next_or_position`] gives.
#[derive(Debug)]
pub enum Next<'a> {
    /// An event.
    Event(Event<'a>),
    /// The offset the read has reached, events left out up to there.
    Position(u64),
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
/// pass: memory is bounded by the event kinds, the stacks of one
/// sequence-point region, the threads and, in time order, the events
/// waiting to be merged (at most one region's, see [`ReadOptions`]).
///
/// Events come in time order across threads ([`Order::Time`], the
/// default): EventPipe orders events within a thread only, and the
/// reader merges the threads by timestamp within each sequence-point
/// region, as TraceEvent does. [`Order::File`] gives them as stored.
#[derive(Debug)]
pub struct NetTraceReader<'a> {
    bytes: &'a [u8],
    options: ReadOptions,
    merge: Merge<'a>,
    /// An error met while events still waited: returned after them.
    deferred: Option<Error>,
    /// V6 thread indexes removed while their events may still wait.
    removed_threads: Vec<u64>,
    header: TraceHeader,
    info: TraceInfo,
    v6: bool,
    threads: ThreadTable,
    labels: LabelCache,
    next_block: u64,
    blobs: Option<(EventBlobs<'a>, bool)>,
    kinds: KindTable,
    stacks: StackCache,
    sequence: SequenceTracker,
    warnings: Vec<Warning>,
    events: u64,
    done: bool,
    complete: bool,
    /// The kinds handed out ([`Self::only`]); `None`: every kind.
    keep: Option<fn(&EventKind) -> bool>,
    /// Where the last event read (handed out or not) starts.
    read_to: u64,
    /// The offset last told ([`Self::next_or_position`]).
    told: u64,
}

impl<'a> NetTraceReader<'a> {
    /// Reads the trace's header; events follow with [`Self::next_event`],
    /// in time order.
    pub fn new(bytes: &'a [u8]) -> Result<Self, Error> {
        Self::with_options(bytes, ReadOptions::default())
    }

    /// Reads the trace's header; events follow in the order `options` asks.
    pub fn with_options(bytes: &'a [u8], options: ReadOptions) -> Result<Self, Error> {
        let info = read_trace_info(bytes)?;
        let header = info.header;
        let v6 = header.version >= 6;
        Ok(NetTraceReader {
            bytes,
            options,
            merge: Merge::default(),
            deferred: None,
            removed_threads: Vec::new(),
            header,
            info,
            v6,
            threads: ThreadTable::default(),
            labels: LabelCache::default(),
            next_block: header.end_offset,
            blobs: None,
            kinds: KindTable::default(),
            stacks: StackCache::default(),
            sequence: if v6 { SequenceTracker::v6() } else { SequenceTracker::default() },
            warnings: Vec::new(),
            events: 0,
            keep: None,
            read_to: 0,
            told: 0,
            done: false,
            complete: false,
        })
    }

    /// The order events come in.
    pub fn order(&self) -> Order {
        self.options.order
    }

    /// The Trace object.
    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    /// The whole start of the trace: the header and, for V6, the minor
    /// version and the TraceBlock's key-value pairs.
    pub fn trace_info(&self) -> &TraceInfo {
        &self.info
    }

    /// V6: the thread with this index, while it is defined.
    pub fn thread(&self, index: u64) -> Option<&ThreadInfo> {
        self.threads.get(index)
    }

    /// The event kinds defined so far.
    pub fn kinds(&self) -> impl Iterator<Item = &EventKind> {
        self.kinds.iter()
    }

    /// Warnings so far.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// Whether the end mark was reached (the trace is complete).
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// Hands out only the events whose kind `keep` takes (asked once per
    /// kind, when the trace defines it): the others are read and counted
    /// (sequence numbers, lost events) but neither queued for the merge nor
    /// resolved, and say nothing about themselves (an undefined kind's
    /// warning). In time order, a sorted event not handed out still
    /// releases the events waiting up to its time: the events handed out
    /// come in the order they have among all the events (as long as each
    /// thread's timestamps never go back and the merge stays within
    /// [`ReadOptions::max_pending`], which counts the events kept only).
    /// [`Self::read_to`] tells how far the read has gone.
    pub fn only(mut self, keep: fn(&EventKind) -> bool) -> Self {
        self.keep = Some(keep);
        self
    }

    /// The offset of the last event read, handed out or not.
    pub fn read_to(&self) -> u64 {
        self.read_to
    }

    fn define(&mut self, m: EventMetadata) {
        let mut kind = EventKind::new(m);
        if let Some(keep) = self.keep {
            kind.kept = keep(&kind);
        }
        self.kinds.insert(kind);
    }

    /// The next event, `Ok(None)` at the end. A trace cut short ends at
    /// its last complete block with a [`Warning::Truncated`]; damage inside
    /// the trace is an error with its offset (events before it were
    /// already handed out, the ones waiting to be merged included).
    pub fn next_event(&mut self) -> Result<Option<Event<'_>>, Error> {
        // No step: never a position.
        match self.read_next(u64::MAX)? {
            Some(Next::Event(e)) => Ok(Some(e)),
            _ => Ok(None),
        }
    }

    /// [`Self::next_event`] for a reader made with [`Self::only`], which
    /// may read far without an event to hand out: the offset reached
    /// ([`Next::Position`]) whenever `step` bytes more of events were read
    /// and left out since the last event or position given.
    pub fn next_or_position(&mut self, step: u64) -> Result<Option<Next<'_>>, Error> {
        self.read_next(step)
    }

    fn read_next(&mut self, step: u64) -> Result<Option<Next<'_>>, Error> {
        loop {
            if let Some(p) = self.merge.pop() {
                self.told = self.read_to;
                return Ok(Some(Next::Event(self.event(p.offset, p.header, p.payload))));
            }
            if let Some((blobs, is_metadata)) = &mut self.blobs {
                match blobs.next() {
                    Some(Ok((offset, header, payload))) => {
                        if *is_metadata {
                            match parse_metadata(payload, offset) {
                                Ok(m) => self.define(m),
                                Err(error) => self.warnings.push(Warning::BadMetadata { error }),
                            }
                            continue;
                        }
                        self.count(offset, &header);
                        self.read_to = offset;
                        if self.keep.is_some() && !self.kinds.get(header.metadata_id).is_some_and(|k| k.kept) {
                            // Not handed out, nor queued. A sorted event
                            // releases what waits up to its time, as it
                            // would have queued.
                            if header.is_sorted && self.options.order == Order::Time && self.merge.pending() > 0 {
                                self.merge.release(header.timestamp.0);
                            }
                            if offset >= self.told.saturating_add(step) {
                                self.told = offset;
                                return Ok(Some(Next::Position(offset)));
                            }
                            continue;
                        }
                        // In file order, or a sorted event with nothing
                        // waiting (it would release itself alone): out now.
                        if self.options.order == Order::File || (header.is_sorted && self.merge.pending() == 0) {
                            self.told = offset;
                            return Ok(Some(Next::Event(self.event(offset, header, payload))));
                        }
                        self.merge.push(Pending { offset, header, payload });
                        if self.merge.pending() > self.options.max_pending && !self.merge.releasing() {
                            self.warnings.push(Warning::OrderCap { offset, pending: self.merge.pending() as u64 });
                            self.merge.release_all();
                        }
                        continue;
                    }
                    Some(Err(e)) => {
                        self.done = true;
                        self.blobs = None;
                        self.defer(e);
                        continue;
                    }
                    None => self.blobs = None,
                }
            }
            if self.done {
                if self.merge.pending() > 0 {
                    self.merge.release_all();
                    continue;
                }
                return match self.deferred.take() {
                    Some(e) => Err(e),
                    None => Ok(None),
                };
            }
            let next = if self.v6 { read_block_v6(self.bytes, self.next_block) } else { read_block(self.bytes, self.next_block) };
            match next {
                Ok(None) => {
                    self.done = true;
                    self.complete = true;
                }
                Ok(Some(b)) => {
                    // A sequence point ends a region: its waiting events go
                    // out first (stacks, labels, threads and metadata may
                    // be forgotten at it). The block is read again after.
                    if b.kind == BlockKind::SequencePoint && self.merge.pending() > 0 {
                        self.merge.release_all();
                        continue;
                    }
                    self.next_block = b.end_offset;
                    let r = if self.v6 { self.block_v6(&b) } else { self.block(&b) };
                    if let Err(e) = r {
                        self.done = true;
                        self.defer(e);
                    }
                }
                Err(error) => {
                    self.done = true;
                    if let ErrorKind::UnexpectedEnd { .. } = error.kind {
                        let unread = (self.bytes.len() as u64).saturating_sub(self.next_block);
                        self.warnings.push(Warning::Truncated { complete_until: self.next_block, unread_bytes: unread, error });
                    } else {
                        self.defer(error);
                    }
                }
            }
        }
    }

    /// An error to return once the events read before it are handed out.
    fn defer(&mut self, e: Error) {
        if self.deferred.is_none() {
            self.deferred = Some(e);
        }
    }

    /// A block of a V4 or V5 trace.
    fn block(&mut self, b: &Block<'a>) -> Result<(), Error> {
        match b.kind {
            BlockKind::Event | BlockKind::Metadata => {
                let blobs = EventBlobs::new(b.body, b.body_offset)?;
                self.blobs = Some((blobs, b.kind == BlockKind::Metadata));
            }
            BlockKind::Stack => self.stacks.add_block(b.body, b.body_offset as usize, b.body_offset)?,
            BlockKind::SequencePoint => {
                let sp = SequencePoint::parse(b.body, b.body_offset)?;
                self.sequence.sequence_point(&sp, &mut self.warnings);
                self.stacks.clear();
            }
            _ => self.warnings.push(Warning::UnknownBlock { offset: b.offset }),
        }
        Ok(())
    }

    /// A block of a V6 trace.
    fn block_v6(&mut self, b: &Block<'a>) -> Result<(), Error> {
        match b.kind {
            BlockKind::Event => self.blobs = Some((EventBlobs::new_v6(b.body, b.body_offset)?, false)),
            BlockKind::Metadata => {
                let mut c = Cursor::new(b.body, b.body_offset);
                let header_size = c.u16("a metadata block's header size")? as usize;
                c.skip(header_size, "a metadata block's header")?;
                while !c.is_empty() {
                    let at = c.offset();
                    let (m, used) = parse_metadata_v6(&c.data()[c.pos()..], at)?;
                    c.skip(used, "a metadata row")?;
                    match m {
                        Ok(m) => self.define(m),
                        Err(error) => self.warnings.push(Warning::BadMetadata { error }),
                    }
                }
            }
            BlockKind::Stack => self.stacks.add_block(b.body, b.body_offset as usize, b.body_offset)?,
            BlockKind::SequencePoint => {
                let sp = SequencePoint::parse_v6(b.body, b.body_offset)?;
                let n = self.warnings.len();
                self.sequence.sequence_point(&sp, &mut self.warnings);
                self.name_lost_threads(n);
                self.stacks.clear();
                self.labels.clear();
                for index in std::mem::take(&mut self.removed_threads) {
                    self.threads.remove(index);
                }
                if sp.flushes_threads() {
                    self.threads.clear();
                    self.sequence.clear();
                    self.merge.forget_threads();
                }
                if sp.flushes_metadata() {
                    self.kinds.clear();
                }
            }
            BlockKind::Thread => {
                for t in parse_thread_block(b.body, b.body_offset)? {
                    self.sequence.introduce(ThreadId(t.index));
                    self.threads.insert(t);
                }
            }
            BlockKind::RemoveThread => {
                for (index, seq) in parse_remove_thread_block(b.body, b.body_offset)? {
                    let n = self.warnings.len();
                    self.sequence.checkpoint(ThreadId(index), seq, b.body_offset, &mut self.warnings);
                    self.name_lost_threads(n);
                    self.sequence.remove(ThreadId(index));
                    // Its events may still wait to be merged: the row goes
                    // at the next sequence point (or now, in file order).
                    if self.options.order == Order::File || self.merge.pending() == 0 {
                        self.threads.remove(index);
                    } else {
                        self.removed_threads.push(index);
                    }
                }
            }
            BlockKind::LabelList => self.labels.add_block(b.body, b.body_offset)?,
            BlockKind::Trace | BlockKind::Unknown => self.warnings.push(Warning::UnknownBlock { offset: b.offset }),
        }
        Ok(())
    }

    /// V6: the lost-event warnings from `n` on name thread indexes; name
    /// the OS threads instead, when the table knows them.
    fn name_lost_threads(&mut self, n: usize) {
        for w in self.warnings.iter_mut().skip(n) {
            if let Warning::LostEvents { thread, .. } = w {
                *thread = self.threads.thread_id(thread.0);
            }
        }
    }

    /// Counts an event as read (in file order): its sequence number.
    #[inline]
    fn count(&mut self, offset: u64, header: &EventHeader) {
        self.events += 1;
        let n = self.warnings.len();
        self.sequence.event(ThreadId(header.capture_thread_index), header.sequence_number, offset, &mut self.warnings);
        if self.v6 && self.warnings.len() > n {
            self.name_lost_threads(n);
        }
    }

    /// An event as handed out: its thread, labels, kind and stack resolved.
    #[inline]
    fn event(&mut self, offset: u64, mut header: EventHeader, payload: &'a [u8]) -> Event<'_> {
        let (mut labels, mut thread_info) = (None, None);
        if self.v6 {
            thread_info = self.threads.get(header.thread_index);
            if thread_info.is_none() {
                self.warnings.push(Warning::UndefinedThread { offset, index: header.thread_index });
            }
            header.thread = thread_info.map_or(ThreadId(header.thread_index), ThreadInfo::thread_id);
            header.capture_thread = if header.capture_thread_index == header.thread_index {
                header.thread
            } else {
                self.threads.thread_id(header.capture_thread_index)
            };
            header.process_id = thread_info.and_then(|t| t.os_process_id).unwrap_or(u64::from(self.header.process_id));
            if header.label_list != 0 {
                labels = self.labels.get(header.label_list);
                if labels.is_none() {
                    self.warnings.push(Warning::UndefinedLabelList { offset, id: header.label_list });
                }
            }
            if let Some(l) = labels {
                header.activity_id = l.activity_id.unwrap_or_default();
                header.related_activity_id = l.related_activity_id.unwrap_or_default();
            }
        } else {
            header.process_id = u64::from(self.header.process_id);
        }
        let kind = self.kinds.get(header.metadata_id);
        if kind.is_none() {
            self.warnings.push(Warning::UndefinedMetadata { offset, id: header.metadata_id.0 });
        }
        let stack = match self.stacks.get(header.stack) {
            Some((s, n)) if header.stack.0 != 0 => Stack::new(self.bytes.get(s..s + n).unwrap_or(&[]), self.header.pointer_size),
            _ => Stack::empty(),
        };
        let payload_offset = payload.as_ptr() as u64 - self.bytes.as_ptr() as u64;
        Event { offset, header, payload, kind, stack, labels, thread_info, pointer_size: self.header.pointer_size, payload_offset }
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
