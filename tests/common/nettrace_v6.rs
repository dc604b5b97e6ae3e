//! A small NetTrace V6 writer for tests, written from the format's
//! description (microsoft/perfview `src/TraceEvent/EventPipe/NetTraceFormat.md`)
//! and independent of the reader under test: it shares no code with
//! `clrprof::eventpipe`. It records where every block ends and how many
//! events precede that point, so that truncation tests know what a cut
//! trace must still yield.
#![allow(dead_code)] // each test binary uses a part

/// A V6 string: varuint32 byte count and UTF-8.
fn string(out: &mut Vec<u8>, s: &str) {
    varuint(out, s.len() as u64);
    out.extend(s.as_bytes());
}

/// Unsigned LEB128.
pub fn varuint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Zigzag, then LEB128.
pub fn varint(out: &mut Vec<u8>, v: i64) {
    varuint(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// A NUL-terminated UTF-16LE string (payload helper).
pub fn utf16z(out: &mut Vec<u8>, s: &str) {
    for u in s.encode_utf16().chain([0]) {
        out.extend(u.to_le_bytes());
    }
}

/// A field type of a V6 metadata row.
#[derive(Debug, Clone)]
pub enum Ty {
    /// A type code without parameters (3..=18, 20, 21, 23, 26).
    Code(u8),
    /// 19: u16-counted array.
    Array(Box<Ty>),
    /// 22: fixed-length array.
    Fixed(Box<Ty>, u16),
    /// 24: relative location.
    RelLoc(Box<Ty>),
    /// 25: data location.
    DataLoc(Box<Ty>),
    /// 1: nested fields.
    Object(Vec<(String, Ty)>),
}

fn field_descriptions(out: &mut Vec<u8>, fields: &[(String, Ty)]) {
    out.extend((fields.len() as u16).to_le_bytes());
    for (name, ty) in fields {
        let mut f = Vec::new();
        string(&mut f, name);
        type_code(&mut f, ty);
        out.extend((f.len() as u16).to_le_bytes());
        out.extend(f);
    }
}

fn type_code(out: &mut Vec<u8>, ty: &Ty) {
    match ty {
        Ty::Code(c) => out.push(*c),
        Ty::Array(e) => {
            out.push(19);
            type_code(out, e);
        }
        Ty::Fixed(e, n) => {
            out.push(22);
            type_code(out, e);
            out.extend(n.to_le_bytes());
        }
        Ty::RelLoc(e) => {
            out.push(24);
            type_code(out, e);
        }
        Ty::DataLoc(e) => {
            out.push(25);
            type_code(out, e);
        }
        Ty::Object(fields) => {
            out.push(1);
            field_descriptions(out, fields);
        }
    }
}

/// An optional metadata element.
#[derive(Debug, Clone)]
pub enum Opt {
    OpCode(u8),
    Keywords(u64),
    MessageTemplate(String),
    Description(String),
    KeyValue(String, String),
    ProviderGuid([u8; 16]),
    Level(u8),
    Version(u8),
}

/// One metadata row.
#[derive(Debug, Clone)]
pub struct Meta {
    pub id: u32,
    pub provider: String,
    pub event_id: u32,
    pub name: String,
    pub fields: Vec<(String, Ty)>,
    pub optional: Vec<Opt>,
}

impl Meta {
    /// A runtime event: no fields, the version in the optional metadata.
    pub fn runtime(id: u32, event_id: u32, version: u8) -> Meta {
        Meta {
            id,
            provider: "Microsoft-Windows-DotNETRuntime".into(),
            event_id,
            name: String::new(),
            fields: Vec::new(),
            optional: vec![Opt::Version(version), Opt::Level(4), Opt::Keywords(1)],
        }
    }

    fn encode(&self, out: &mut Vec<u8>) {
        let mut r = Vec::new();
        varuint(&mut r, u64::from(self.id));
        string(&mut r, &self.provider);
        varuint(&mut r, u64::from(self.event_id));
        string(&mut r, &self.name);
        field_descriptions(&mut r, &self.fields);
        let mut o = Vec::new();
        for opt in &self.optional {
            match opt {
                Opt::OpCode(v) => o.extend([1, *v]),
                Opt::Keywords(v) => {
                    o.push(3);
                    o.extend(v.to_le_bytes());
                }
                Opt::MessageTemplate(s) => {
                    o.push(4);
                    string(&mut o, s);
                }
                Opt::Description(s) => {
                    o.push(5);
                    string(&mut o, s);
                }
                Opt::KeyValue(k, v) => {
                    o.push(6);
                    string(&mut o, k);
                    string(&mut o, v);
                }
                Opt::ProviderGuid(g) => {
                    o.push(7);
                    o.extend(g);
                }
                Opt::Level(v) => o.extend([8, *v]),
                Opt::Version(v) => o.extend([9, *v]),
            }
        }
        r.extend((o.len() as u16).to_le_bytes());
        r.extend(o);
        out.extend((r.len() as u16).to_le_bytes());
        out.extend(r);
    }
}

/// A row of a ThreadBlock.
#[derive(Debug, Clone, Default)]
pub struct Thread {
    pub index: u64,
    pub name: Option<String>,
    pub pid: Option<u64>,
    pub tid: Option<u64>,
    pub attributes: Vec<(String, String)>,
}

/// A label of a label list.
#[derive(Debug, Clone)]
pub enum Label {
    Activity([u8; 16]),
    Related([u8; 16]),
    TraceId([u8; 16]),
    SpanId(u64),
    Str(String, String),
    Int(String, i64),
    OpCode(u8),
    Keywords(u64),
    Level(u8),
    Version(u8),
}

/// One event row.
#[derive(Debug, Clone, Default)]
pub struct Ev {
    pub metadata: u32,
    pub seq: u32,
    pub capture_thread: u64,
    pub processor: u32,
    pub thread: u64,
    pub stack: u32,
    pub timestamp: u64,
    pub label_list: u32,
    pub sorted: bool,
    pub payload: Vec<u8>,
}

/// Where a block ends and how many events the trace holds up to there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockEnd {
    pub end: u64,
    pub events: u64,
}

/// Builds a V6 trace block by block.
#[derive(Debug)]
pub struct Writer {
    pub bytes: Vec<u8>,
    /// The end of the TraceBlock (where the first other block starts).
    pub header_end: u64,
    /// Every block after the TraceBlock, in file order.
    pub blocks: Vec<BlockEnd>,
    events: u64,
}

impl Writer {
    /// The stream header and the TraceBlock.
    pub fn new(pointer_size: u32, sync_qpc: u64, frequency: u64, key_values: &[(&str, &str)]) -> Writer {
        let mut w = Writer { bytes: b"Nettrace".to_vec(), header_end: 0, blocks: Vec::new(), events: 0 };
        w.bytes.extend(0u32.to_le_bytes());
        w.bytes.extend(6u32.to_le_bytes());
        w.bytes.extend(0u32.to_le_bytes());
        let mut t = Vec::new();
        for v in [2026u16, 11, 5, 27, 6, 30, 15, 250] {
            t.extend(v.to_le_bytes());
        }
        t.extend(sync_qpc.to_le_bytes());
        t.extend(frequency.to_le_bytes());
        t.extend(pointer_size.to_le_bytes());
        t.extend((key_values.len() as u32).to_le_bytes());
        for (k, v) in key_values {
            string(&mut t, k);
            string(&mut t, v);
        }
        w.raw_block(1, &t);
        w.header_end = w.bytes.len() as u64;
        w.blocks.clear();
        w
    }

    /// Any block: header (size | kind << 24) and body.
    pub fn raw_block(&mut self, kind: u8, body: &[u8]) {
        assert!(body.len() < 1 << 24);
        self.bytes.extend((body.len() as u32 | u32::from(kind) << 24).to_le_bytes());
        self.bytes.extend(body);
        self.blocks.push(BlockEnd { end: self.bytes.len() as u64, events: self.events });
    }

    pub fn metadata(&mut self, rows: &[Meta]) {
        let mut b = 0u16.to_le_bytes().to_vec();
        for r in rows {
            r.encode(&mut b);
        }
        self.raw_block(3, &b);
    }

    pub fn threads(&mut self, rows: &[Thread]) {
        let mut b = Vec::new();
        for t in rows {
            let mut r = Vec::new();
            varuint(&mut r, t.index);
            if let Some(n) = &t.name {
                r.push(1);
                string(&mut r, n);
            }
            if let Some(p) = t.pid {
                r.push(2);
                varuint(&mut r, p);
            }
            if let Some(id) = t.tid {
                r.push(3);
                varuint(&mut r, id);
            }
            for (k, v) in &t.attributes {
                r.push(4);
                string(&mut r, k);
                string(&mut r, v);
            }
            b.extend((r.len() as u16).to_le_bytes());
            b.extend(r);
        }
        self.raw_block(6, &b);
    }

    pub fn remove_threads(&mut self, threads: &[(u64, u32)]) {
        let mut b = Vec::new();
        for &(index, seq) in threads {
            varuint(&mut b, index);
            varuint(&mut b, u64::from(seq));
        }
        self.raw_block(7, &b);
    }

    /// Stacks of `pointer_size`-byte frames, ids from `first`.
    pub fn stacks(&mut self, first: u32, pointer_size: u32, stacks: &[&[u64]]) {
        let mut b = first.to_le_bytes().to_vec();
        b.extend((stacks.len() as u32).to_le_bytes());
        for s in stacks {
            b.extend((s.len() as u32 * pointer_size).to_le_bytes());
            for ip in *s {
                b.extend(&ip.to_le_bytes()[..pointer_size as usize]);
            }
        }
        self.raw_block(5, &b);
    }

    pub fn labels(&mut self, first: u32, lists: &[Vec<Label>]) {
        let mut b = first.to_le_bytes().to_vec();
        b.extend((lists.len() as u32).to_le_bytes());
        for list in lists {
            assert!(!list.is_empty(), "an empty label list cannot be encoded");
            for (i, l) in list.iter().enumerate() {
                let last = if i + 1 == list.len() { 0x80 } else { 0 };
                match l {
                    Label::Activity(g) => {
                        b.push(1 | last);
                        b.extend(g);
                    }
                    Label::Related(g) => {
                        b.push(2 | last);
                        b.extend(g);
                    }
                    Label::TraceId(g) => {
                        b.push(3 | last);
                        b.extend(g);
                    }
                    Label::SpanId(v) => {
                        b.push(4 | last);
                        b.extend(v.to_le_bytes());
                    }
                    Label::Str(k, v) => {
                        b.push(5 | last);
                        string(&mut b, k);
                        string(&mut b, v);
                    }
                    Label::Int(k, v) => {
                        b.push(6 | last);
                        string(&mut b, k);
                        varint(&mut b, *v);
                    }
                    Label::OpCode(v) => b.extend([7 | last, *v]),
                    Label::Keywords(v) => {
                        b.push(8 | last);
                        b.extend(v.to_le_bytes());
                    }
                    Label::Level(v) => b.extend([9 | last, *v]),
                    Label::Version(v) => b.extend([10 | last, *v]),
                }
            }
        }
        self.raw_block(8, &b);
    }

    /// An EventBlock, with header compression or without.
    pub fn events(&mut self, events: &[Ev], compressed: bool) {
        let min = events.iter().map(|e| e.timestamp).min().unwrap_or(0);
        let max = events.iter().map(|e| e.timestamp).max().unwrap_or(0);
        let mut b = 20u16.to_le_bytes().to_vec();
        b.extend(u16::from(compressed).to_le_bytes());
        b.extend(min.to_le_bytes());
        b.extend(max.to_le_bytes());
        let mut prev = Ev::default();
        for e in events {
            if compressed {
                compressed_event(&mut b, &prev, e);
                prev = e.clone();
            } else {
                let size = 48 + e.payload.len() as u32;
                b.extend(size.to_le_bytes());
                b.extend((e.metadata | if e.sorted { 0 } else { 0x8000_0000 }).to_le_bytes());
                b.extend(e.seq.to_le_bytes());
                b.extend(e.thread.to_le_bytes());
                b.extend(e.capture_thread.to_le_bytes());
                b.extend(e.processor.to_le_bytes());
                b.extend(e.stack.to_le_bytes());
                b.extend(e.timestamp.to_le_bytes());
                b.extend(e.label_list.to_le_bytes());
                b.extend((e.payload.len() as u32).to_le_bytes());
                b.extend(&e.payload);
            }
        }
        self.events += events.len() as u64;
        self.raw_block(2, &b);
    }

    pub fn sequence_point(&mut self, timestamp: u64, flags: u32, threads: &[(u64, u32)]) {
        let mut b = timestamp.to_le_bytes().to_vec();
        b.extend(flags.to_le_bytes());
        b.extend((threads.len() as u32).to_le_bytes());
        for &(index, seq) in threads {
            varuint(&mut b, index);
            varuint(&mut b, u64::from(seq));
        }
        self.raw_block(4, &b);
    }

    /// The EndOfStream block; the trace's bytes.
    pub fn finish(mut self) -> (Vec<u8>, u64, Vec<BlockEnd>) {
        self.bytes.extend(0u32.to_le_bytes());
        (self.bytes, self.header_end, self.blocks)
    }
}

fn compressed_event(b: &mut Vec<u8>, prev: &Ev, e: &Ev) {
    let mut flags = 0u8;
    let mut rest = Vec::new();
    if e.metadata != prev.metadata {
        flags |= 1;
        varuint(&mut rest, u64::from(e.metadata));
    }
    if e.capture_thread != prev.capture_thread || e.processor != prev.processor || e.seq != prev.seq.wrapping_add(1) {
        flags |= 2;
        varuint(&mut rest, u64::from(e.seq.wrapping_sub(prev.seq).wrapping_sub(1)));
        varuint(&mut rest, e.capture_thread);
        varuint(&mut rest, u64::from(e.processor));
    }
    if e.thread != prev.thread {
        flags |= 4;
        varuint(&mut rest, e.thread);
    }
    if e.stack != prev.stack {
        flags |= 8;
        varuint(&mut rest, u64::from(e.stack));
    }
    varuint(&mut rest, e.timestamp.wrapping_sub(prev.timestamp));
    if e.label_list != prev.label_list {
        flags |= 16;
        varuint(&mut rest, u64::from(e.label_list));
    }
    if e.sorted {
        flags |= 64;
    }
    if e.payload.len() != prev.payload.len() {
        flags |= 128;
        varuint(&mut rest, e.payload.len() as u64);
    }
    b.push(flags);
    b.extend(rest);
    b.extend(&e.payload);
}
