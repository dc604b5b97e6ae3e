//! [`Builder`]: records in log order -> [`Model`].

use super::allocations::AllocationTable;
use super::comments::{Comment, CommentTable};
use super::deferred::{Deferred, Outbox, Recorder};
use super::dump_follow::DumpFollower;
use super::error::{Error, Problem};
use super::finalizers::{Finalization, FinalizerTable};
use super::functions::{Function, FunctionTable};
use super::gc::{Gc, GcBookkeeping, GcSource, GcTable, GenerationRange};
use super::handles::{HandleEvent, HandleTable};
use super::heap::{Effects, Heap};
use super::heap_dump::{DumpObject, DumpRoot, HeapDumpTable};
use super::histogram::{Histograms, StackCounts};
use super::ids::{ObjectId, StackRef, TickIndex};
use super::modules::{AssemblyLoad, Module, ModuleTable};
use super::names::NameTable;
use super::ops::Op;
use super::stacks::StackTable;
use super::threads::ThreadTable;
use super::time::TimeTable;
use super::types::TypeTable;
use super::{Collections, Model};
use crate::format::{scan, Address, Diagnostics, DumpState, Parsed, Record, RecordReader, StackId, ThreadId, TypeId};

/// Builds a [`Model`] from records given in log order.
///
/// ```
/// use clrprof::format::read_all;
/// use clrprof::model::Builder;
/// let log = b"t 1 0 System.String\nn 1 1 1 24\n! 7 0x1000 1\n";
/// let (records, _) = read_all(log);
/// let mut b = Builder::new(log);
/// for r in &records {
///     b.push(r).unwrap();
/// }
/// let model = b.finish().unwrap();
/// assert_eq!(model.allocations().len(), 1);
/// ```
#[derive(Clone)]
pub struct Builder<'a> {
    data: &'a [u8],
    /// Where `data` starts in the log (0, except for a [`super::GrowingLog`],
    /// which keeps only the part of the log still needed).
    base: u64,
    /// Line ends in the log before `base`.
    base_line: u64,
    names: NameTable,
    types: TypeTable,
    functions: FunctionTable,
    modules: ModuleTable,
    threads: ThreadTable,
    stacks: StackTable,
    time: TimeTable,
    heap: Heap,
    /// The allocation columns and the sample table, written off this
    /// thread when the loader takes the recorder (see [`super::deferred`]).
    out: Outbox,
    objects: AllocationTable,
    histograms: Histograms,
    gc_book: GcBookkeeping,
    gcs: GcTable,
    gc_start: Option<(TickIndex, bool)>,
    gc_start_generation: i32,
    gc_ranges: Vec<GenerationRange>,
    handles: HandleTable,
    finalizers: FinalizerTable,
    dumps: HeapDumpTable,
    /// Dump objects the simulation does not know, followed between dumps.
    follow: DumpFollower,
    comments: CommentTable,
    // The heap-dump state of the reader's main loop.
    last_was_root: bool,
    last_offset: u64,
    extended_roots_seen: bool,
    /// An `e` or `r` record was read (the parser's [`DumpState`] follows
    /// these two flags).
    dump_lines_seen: bool,
    records: u64,
    call_log: Vec<u32>,
    had_alloc_info: bool,
    had_call_info: bool,
    /// Records come from a [`super::RecordFeed`], not from log text:
    /// a record's offset is its number, each follows the one before.
    stream: Option<Stream>,
}

/// What a builder fed records without log text knows of its input.
#[derive(Clone, Copy)]
struct Stream {
    /// The input's size (the memory rule's D; the model's file size).
    input_bytes: u64,
}

impl Builder<'static> {
    /// A builder fed records made without log text (see
    /// [`super::RecordFeed`]): an input of `input_bytes` bytes (for the
    /// memory rule's shares), each record's offset its number.
    pub(crate) fn for_records(input_bytes: u64) -> Self {
        let mut b = Builder::new(&[]);
        b.stream = Some(Stream { input_bytes });
        b.allow(input_bytes);
        b
    }
}

impl<'a> Builder<'a> {
    /// A builder for the log `data` (used for line numbers in errors and to
    /// look between records).
    pub fn new(data: &'a [u8]) -> Self {
        let mut names = NameTable::new();
        let types = TypeTable::new(&mut names);
        let mut b = Builder {
            data,
            base: 0,
            base_line: 0,
            names,
            types,
            functions: FunctionTable::new(),
            modules: ModuleTable::default(),
            threads: ThreadTable::new(),
            stacks: StackTable::new(),
            time: TimeTable::new(),
            heap: Heap::new(),
            out: Outbox::inline(),
            objects: AllocationTable::new(),
            histograms: Histograms::default(),
            gc_book: GcBookkeeping::default(),
            gcs: GcTable::default(),
            gc_start: None,
            gc_start_generation: 0,
            gc_ranges: Vec::new(),
            handles: HandleTable::default(),
            finalizers: FinalizerTable::default(),
            dumps: HeapDumpTable::new(),
            follow: DumpFollower::default(),
            comments: CommentTable::default(),
            last_was_root: false,
            last_offset: 0,
            extended_roots_seen: false,
            dump_lines_seen: false,
            records: 0,
            call_log: Vec::new(),
            had_alloc_info: false,
            had_call_info: false,
            stream: None,
        };
        b.allow(data.len() as u64);
        b
    }

    /// The memory rule's shares of the tables that can grow faster than
    /// the records making them, for a log of `input` bytes (see
    /// [`crate::limits`]; only ever raised).
    fn allow(&mut self, input: u64) {
        self.out.allow_history(crate::limits::history_bytes(input));
        self.stacks.allow_copies(crate::limits::copied_frames(input));
    }

    /// The fates are to come from a trace's importer (see
    /// [`AllocationTable::fates_to_come`]).
    pub(crate) fn fates_to_come(&mut self) {
        self.objects.fates_to_come();
    }

    /// Records queued for the recorder and not yet handed over.
    #[inline]
    pub(crate) fn queued(&self) -> usize {
        self.out.queue_len()
    }

    /// The same builder, reading `data` from now on: the part of the log
    /// from byte `base` (after `base_line` line ends) to as far as it has
    /// been written, or nothing while it waits for more (see
    /// [`super::GrowingLog`]). The part must hold the last record read.
    pub(crate) fn rebind<'b>(self, data: &'b [u8], base: u64, base_line: u64) -> Builder<'b> {
        let mut b = Builder {
            data,
            base,
            base_line,
            names: self.names,
            types: self.types,
            functions: self.functions,
            modules: self.modules,
            threads: self.threads,
            stacks: self.stacks,
            time: self.time,
            heap: self.heap,
            out: self.out,
            objects: self.objects,
            histograms: self.histograms,
            gc_book: self.gc_book,
            gcs: self.gcs,
            gc_start: self.gc_start,
            gc_start_generation: self.gc_start_generation,
            gc_ranges: self.gc_ranges,
            handles: self.handles,
            finalizers: self.finalizers,
            dumps: self.dumps,
            follow: self.follow,
            comments: self.comments,
            last_was_root: self.last_was_root,
            last_offset: self.last_offset,
            extended_roots_seen: self.extended_roots_seen,
            dump_lines_seen: self.dump_lines_seen,
            records: self.records,
            call_log: self.call_log,
            had_alloc_info: self.had_alloc_info,
            had_call_info: self.had_call_info,
            stream: self.stream,
        };
        b.allow(base + data.len() as u64);
        b
    }

    /// The line number of the log's byte `offset` (which `data` holds).
    #[cold]
    fn line_at(&self, offset: u64) -> u64 {
        if self.stream.is_some() {
            // The record's number: its line in the same records as text.
            return offset + 1;
        }
        self.base_line + crate::format::line_of(self.data, offset.saturating_sub(self.base))
    }

    /// Where the log's byte `offset` is in `data`.
    #[inline]
    fn local(&self, offset: u64) -> usize {
        (offset.saturating_sub(self.base) as usize).min(self.data.len())
    }

    /// Where the next record may make this builder read the log again
    /// (from the last record read, when that was a heap-dump root line:
    /// see `follows_previous`), or `None`: a [`super::GrowingLog`] keeps
    /// the log from there on.
    pub(crate) fn looks_back_to(&self) -> Option<u64> {
        self.last_was_root.then_some(self.last_offset)
    }

    /// The parser's state after the records read: it follows whether an
    /// `e` record, and whether an `e` or `r` record, was read.
    pub(crate) fn dump_state(&self) -> DumpState {
        DumpState { root_seen: self.extended_roots_seen, dump_started: self.dump_lines_seen }
    }

    #[cold]
    fn error(&self, p: &Parsed<'_>, problem: Problem) -> Error {
        Error { line: self.line_at(p.offset), offset: p.offset, kind: Some(p.record.kind().letter()), problem }
    }

    /// Applies one record. After an error the builder must not be used
    /// further (CLRProfiler's reader stops there too).
    #[inline]
    pub fn push(&mut self, p: &Parsed<'_>) -> Result<(), Error> {
        let result = self.apply(p);
        self.records += 1;
        self.last_offset = p.offset;
        result.map_err(|e| self.error(p, e))
    }

    /// Whether the record at `offset` directly follows the previous record
    /// (no skipped line between them: only then does an `e`/`r` record
    /// continue a heap dump).
    fn follows_previous(&self, offset: u64) -> bool {
        if !self.last_was_root {
            return false;
        }
        if self.stream.is_some() {
            return true;
        }
        let state = DumpState { root_seen: self.extended_roots_seen, dump_started: true };
        let mut r = RecordReader::range_with_state(self.data, self.local(self.last_offset), self.data.len(), state);
        if r.next_record().is_none() {
            return false;
        }
        self.base + r.offset() as u64 == offset
    }

    fn effects(&mut self) -> (&mut Heap, Effects<'_>) {
        let tick = self.time.current().0;
        (&mut self.heap, Effects { stacks: &self.stacks, out: &mut self.out, objects: &mut self.objects, tick })
    }

    /// An allocation (`!` or `a`).
    #[inline]
    fn alloc(&mut self, thread: Option<ThreadId>, address: u64, stack: StackId) -> Result<(), Problem> {
        // CLRProfiler sets both flags for an allocation.
        self.had_alloc_info = true;
        self.had_call_info = true;
        let st = self.stacks.alloc_stack(stack)?;
        let thread = self.threads.intern(thread);
        let tick = self.time.current();
        let Some(obj) = self.objects.count_one() else {
            return Err(Problem::TooMany { what: "objects" });
        };
        self.out.object(st.row, thread, address, tick);
        let (heap, mut fx) = self.effects();
        heap.allocate(&mut fx, address, st.row, st.type_id, st.size, obj.0)
    }

    /// A `u` (or, with `old == new`, a `v`) record.
    #[inline]
    fn moved(&mut self, old: u64, new: u64, length: u32) -> Result<(), Problem> {
        self.follow.moved(&self.dumps, old, new, length);
        let (heap, mut fx) = self.effects();
        heap.move_range(&mut fx, old, new, length)
    }

    /// A `c` record.
    #[inline]
    fn call(&mut self, thread: ThreadId, stack: StackId) -> Result<(), Problem> {
        self.had_call_info = true;
        if thread.0 != -1 && stack.0 != -1 {
            let row = self.stacks.call_row(stack)?;
            // Logged, and counted in batches (no cache miss per call).
            self.call_log.push(row.0);
            if self.call_log.len() >= 1 << 16 {
                self.flush_calls();
            }
        }
        Ok(())
    }

    /// `count` `c` records with stack id `stack` (-1: records that only
    /// count; see [`super::ops`]).
    #[inline]
    fn calls(&mut self, stack: StackId, count: u32) -> Result<(), Problem> {
        self.had_call_info = true;
        if stack.0 != -1 {
            let row = self.stacks.call_row(stack)?;
            self.histograms.calls.add_n(row, count as u64);
        }
        Ok(())
    }

    /// Whether a `c` record with stack id `stack` (and a thread other than
    /// -1) would fail here, without applying it.
    pub(crate) fn check_call(&self, stack: i32) -> Result<(), Problem> {
        if stack == -1 {
            return Ok(());
        }
        self.stacks.call_check(StackId(stack))
    }

    fn flush_calls(&mut self) {
        for &r in &self.call_log {
            self.histograms.calls.add(StackRef(r));
        }
        self.call_log.clear();
    }

    /// Applies one record of a compact stream (see [`super::ops`]); on an
    /// error, returns the problem and the record's kind letter.
    #[inline]
    pub(crate) fn push_op(&mut self, op: &Op, rare: &[Parsed<'_>]) -> Result<(), (Problem, char)> {
        self.records += 1;
        if !matches!(op, Op::Rare(_)) {
            self.last_was_root = false;
        }
        match *op {
            Op::Alloc { address, stack, thread, has_thread } => {
                let thread = has_thread.then_some(ThreadId(thread));
                self.alloc(thread, address, StackId(stack)).map_err(|e| (e, if has_thread { '!' } else { 'a' }))
            }
            Op::Moved { old, new, length } => self.moved(old, new, length).map_err(|e| (e, 'u')),
            Op::Survived { start, length } => self.moved(start, start, length).map_err(|e| (e, 'v')),
            Op::Tick { ms, offset } => {
                self.time.on_tick(ms as i32, offset);
                Ok(())
            }
            Op::Calls { stack, count, .. } => {
                self.records += count as u64 - 1;
                self.calls(StackId(stack), count).map_err(|e| (e, 'c'))
            }
            Op::Rare(i) => {
                let Some(p) = rare.get(i as usize) else { return Ok(()) };
                let r = self.apply(p);
                self.last_offset = p.offset;
                r.map_err(|e| (e, p.record.kind().letter()))
            }
        }
    }

    /// Hints that an allocation on `stack` comes soon (fetches its row).
    #[inline]
    pub(crate) fn prefetch_stack(&self, stack: StackId) {
        self.stacks.prefetch(stack);
    }

    /// Hints that `op` comes soon (fetches what it will read).
    #[inline]
    pub(crate) fn prefetch(&self, op: &Op) {
        if let Op::Alloc { stack, .. } | Op::Calls { stack, .. } = *op {
            self.stacks.prefetch(StackId(stack));
        }
    }

    /// The error for a problem at `offset` in a record of kind `kind`.
    #[cold]
    pub(crate) fn error_at(&self, offset: u64, kind: Option<char>, problem: Problem) -> Error {
        Error { line: self.line_at(offset), offset, kind, problem }
    }

    fn apply(&mut self, p: &Parsed<'_>) -> Result<(), Problem> {
        let is_root_kind = matches!(p.record, Record::Root(_) | Record::Roots(_));
        let prev_was_root = is_root_kind && self.follows_previous(p.offset);
        self.last_was_root = is_root_kind;
        match p.record {
            Record::Alloc(a) => self.alloc(a.thread, a.address.0, a.stack)?,
            Record::Stack(n) => {
                let cap = self.functions.capacity();
                self.stacks.define_compressed(n.id, n.flag, n.alloc, n.reference, n.frames.iter(), cap)?;
            }
            Record::StackOld(s) => self.stacks.define_plain(s.id, s.frames.iter())?,
            Record::Moved(u) => self.moved(u.old.0, u.new.0, u.length)?,
            Record::Survived(v) => self.moved(v.start.0, v.start.0, v.length)?,
            Record::Tick(t) => self.time.on_tick(t.ms as i32, p.offset),
            Record::Call(c) => self.call(c.thread, c.stack)?,
            Record::GcBoundary(b) => self.gc_boundary(&b, p.at_end_of_file)?,
            Record::GcCounts(g) => {
                self.follow.gc_ended(&self.dumps);
                if self.gc_book.counts()[0] == 0 {
                    let (heap, mut fx) = self.effects();
                    let (generation, source) = if p.at_end_of_file || g.gen0 < 0 {
                        let simple = g.gen0 < 0;
                        heap.record_gc(&mut fx, 0, simple)?;
                        (0, if simple { GcSource::Simple } else { GcSource::Counts })
                    } else {
                        (heap.record_gc_counts(&mut fx, [g.gen0, g.gen1, g.gen2])?, GcSource::Counts)
                    };
                    self.push_gc(generation, false, source);
                }
            }
            Record::Finalizer(l) => {
                let found = self.heap.object_at(&self.stacks, l.address.0)?;
                match found {
                    // Counted at the object's first `l` only: later ones
                    // are the runtime reporting the f-reachable queue again
                    // (see `super::finalizers`).
                    Some(o) => {
                        let first = self.finalizers.matched(Finalization {
                            object: ObjectId(o.header.obj),
                            tick: self.time.current(),
                            critical: l.critical,
                        });
                        if first {
                            if l.critical {
                                self.histograms.critical_finalized.add(o.row);
                            }
                            self.histograms.finalized.add(o.row);
                        }
                    }
                    None => self.finalizers.unmatched(),
                }
            }
            Record::HandleCreated(h) => {
                let thread = self.threads.intern(Some(h.thread));
                self.handles.create(HandleEvent { tick: self.time.current(), thread, handle: h.handle, object: h.initial, stack: h.stack });
                if h.stack.0 < 0 {
                    return Err(Problem::NegativeStackId { id: h.stack.0 as i64 });
                }
            }
            Record::HandleDestroyed(j) => {
                let thread = self.threads.intern(Some(j.thread));
                self.handles.destroy(HandleEvent {
                    tick: self.time.current(),
                    thread,
                    handle: j.handle,
                    object: Address(0),
                    stack: j.stack,
                });
                if j.stack.0 < 0 {
                    return Err(Problem::NegativeStackId { id: j.stack.0 as i64 });
                }
            }
            Record::Root(e) => {
                self.extended_roots_seen = true;
                self.dump_lines_seen = true;
                if !prev_was_root {
                    self.dumps.start(self.time.current());
                    self.follow.dump_started(&self.dumps);
                }
                // Weak roots are kept in the table but, as in CLRProfiler,
                // create no root type (see `HeapDumpTable::add_root`).
                if !p.at_end_of_file && e.address.0 > 0 {
                    self.dumps.add_root(DumpRoot { address: e.address, kind: e.kind, flags: e.flags, id: e.id });
                }
            }
            Record::Roots(r) => {
                self.dump_lines_seen = true;
                if !self.extended_roots_seen {
                    if !prev_was_root {
                        self.dumps.start(self.time.current());
                        self.follow.dump_started(&self.dumps);
                    }
                    if !p.at_end_of_file {
                        for a in r.addresses.iter().filter(|a| a.0 != 0) {
                            self.dumps.add_root(DumpRoot { address: a, kind: -1, flags: 0, id: 0 });
                        }
                    }
                }
            }
            Record::HeapObject(o) => self.heap_object(&o)?,
            Record::Comment(z) => {
                self.time.on_comment(p.offset);
                let text = self.names.intern(&z.decoded());
                self.comments.add(Comment { tick: self.time.current(), text });
            }
            Record::Type(t) => {
                if t.id.0 < 0 {
                    return Err(Problem::NegativeId { id: t.id.0 as i64 });
                }
                if t.finalizable == Some(true) {
                    self.types.set_finalizable(t.id);
                }
                let name = self.names.intern(&t.decoded_name());
                self.types.define(t.id, name);
            }
            Record::Function(f) => {
                if f.id.0 < 0 {
                    return Err(Problem::NegativeId { id: f.id.0 as i64 });
                }
                let name = self.names.intern(&f.decoded_name());
                let signature = self.names.intern(&f.decoded_signature());
                self.functions.define(Function {
                    id: f.id,
                    name,
                    signature,
                    address: f.address,
                    size: f.size,
                    module: f.module,
                    first_stack: f.stack,
                });
            }
            Record::Module(m) => {
                if m.id.0 < 0 {
                    return Err(Problem::NegativeId { id: m.id.0 as i64 });
                }
                self.check_module_line(p.offset)?;
                let path = self.names.intern(&scan::decode_latin1(m.path));
                let short_name = self.names.intern(&scan::decode_latin1(m.short_name()));
                self.modules.add_module(Module { id: m.id, path, short_name, address: m.address });
            }
            Record::Assembly(y) => {
                let thread = self.threads.intern(Some(y.thread));
                let name = self.names.intern(&scan::decode_latin1(y.name));
                self.modules.add_assembly(AssemblyLoad { thread, assembly: y.assembly, name, tick: self.time.current() });
            }
            Record::AssemblyD(d) => {
                // clrprof's named static root: `d 0 0xID static Class.field`
                // (CLRProfiler's reader skips `d` lines whole).
                if let Some(name) = d.name.strip_prefix(b"static ") {
                    self.dumps.name_static(d.assembly, scan::decode_latin1(name).trim().to_string());
                }
            }
        }
        Ok(())
    }

    /// T16: an `m` line whose last backslash lies after its last ` 0x`.
    fn check_module_line(&self, offset: u64) -> Result<(), Problem> {
        let start = (self.local(offset) + 1).min(self.data.len());
        let rest = &self.data[start..];
        let end = rest.iter().position(|&b| b < b' ' && b != b'\t').unwrap_or(rest.len());
        let line = &rest[..end];
        if let (Some(x), Some(b)) = (memchr::memmem::rfind(line, b" 0x"), memchr::memrchr(b'\\', line)) {
            if b > x {
                return Err(Problem::ModulePathAfterAddress);
            }
        }
        Ok(())
    }

    fn gc_boundary(&mut self, b: &crate::format::records::GcBoundary<'_>, _at_end: bool) -> Result<(), Problem> {
        let tick = self.time.current();
        if b.is_start {
            self.heap.gc_started();
            self.gc_start = Some((tick, b.induced));
            self.gc_start_generation = b.condemned;
            self.follow.gc_started(&self.dumps, b.condemned, b.ranges.iter().map(|r| (r.start.0, r.length, r.generation)));
        } else {
            self.follow.gc_ended(&self.dumps);
        }
        let accepted = self.gc_book.begin_line(b.is_start, b.induced, b.condemned, tick.0)?;
        self.gc_ranges.clear();
        for r in b.ranges.iter() {
            if b.is_start {
                if r.generation > b.condemned && b.condemned != 2 {
                    self.heap.intervals.preserve(r.start.0, r.length);
                }
            } else {
                self.heap.intervals.generation_range(r.start.0, r.length, r.generation);
                self.gc_ranges.push(GenerationRange { generation: r.generation, start: r.start.0, length: r.length, reserved: r.reserved });
            }
            self.gc_book.range(r.generation, r.length)?;
        }
        if !b.is_start {
            let (heap, mut fx) = self.effects();
            heap.record_gc(&mut fx, b.condemned, false)?;
            self.push_gc(b.condemned, accepted, GcSource::EndLine);
        }
        Ok(())
    }

    fn push_gc(&mut self, generation: i32, counted: bool, source: GcSource) {
        let start = self.gc_start.take();
        let ranges = std::mem::take(&mut self.gc_ranges);
        self.gcs.push(
            Gc {
                end: self.time.current(),
                start: start.map(|s| s.0),
                generation,
                induced: start.is_some_and(|s| s.1),
                counted,
                source,
                objects_before: self.objects.len() as u32,
            },
            &ranges,
        );
        self.gc_ranges = ranges;
    }

    fn heap_object(&mut self, o: &crate::format::records::HeapObject<'_>) -> Result<(), Problem> {
        let t = o.type_id.0;
        if t >= 0 {
            if t as u64 >= self.types.capacity() {
                return Err(Problem::TypeIdOutOfRange { type_id: t as i64, limit: self.types.capacity() });
            }
        } else if !self.dumps.knows_negative_type(t) {
            return Err(Problem::TypeIdOutOfRange { type_id: t as i64, limit: self.types.capacity() });
        }
        let found = self.heap.object_at(&self.stacks, o.address.0)?;
        let (stack, object) = match found {
            Some(f) if self.stacks.type_and_size(f.row).map(|t| t.0) == Some(o.type_id) => {
                if !self.dumps.any_started() {
                    return Err(Problem::ObjectOutsideHeapDump);
                }
                (f.row, Some(ObjectId(f.header.obj)))
            }
            _ => (self.stacks.type_size_index(TypeId(t), o.size as i32), None),
        };
        // An object the simulation does not know continues the lineage of
        // the previous dump's object followed to its address, if any.
        let lineage = match object {
            Some(_) => None,
            None => Some(self.follow.object(&self.dumps, o.address.0, t, o.size, self.dumps.next_position())),
        };
        self.dumps.add_object(
            DumpObject { address: o.address, type_id: o.type_id, size: o.size, stack, object, lineage },
            o.refs.iter().map(|a| a.0),
        );
        Ok(())
    }

    /// Tests: the heap applies its general rules only.
    #[cfg(test)]
    pub(crate) fn general_rules_only(&mut self) {
        self.heap.general_only = true;
    }

    /// Tests: how often the heap's shortcuts were taken.
    #[cfg(test)]
    pub(crate) fn shortcuts_taken(&self) -> super::heap::Shortcuts {
        self.heap.taken
    }

    /// Takes the recorder out of the builder: from now on the allocation
    /// columns and the sample table are queued (see [`Builder::swap_queue`])
    /// for the caller to apply on another thread and give back with
    /// [`Builder::put_recorder`] before [`Builder::finish`].
    pub(crate) fn take_recorder(&mut self) -> Option<Box<Recorder>> {
        self.out.take_recorder()
    }

    /// Gives the recorder back.
    pub(crate) fn put_recorder(&mut self, r: Box<Recorder>) {
        self.out.put_recorder(r);
    }

    /// The records queued since the last call, replaced by `spare`.
    pub(crate) fn swap_queue(&mut self, spare: Vec<Deferred>) -> Vec<Deferred> {
        self.out.swap_queue(spare)
    }

    /// Ends the log: walks the final heap and freezes the tables.
    pub fn finish(mut self) -> Result<Model, Error> {
        let mut heap = std::mem::take(&mut self.heap);
        let relocated = heap.take_relocations();
        self.finish_with(std::borrow::Cow::Owned(heap), relocated)
    }

    /// The model of the log read so far, this builder left as it is to
    /// read more (a [`super::GrowingLog`]), with `data` as the part of the
    /// log from `base` (after `base_line` line ends) to where it was read:
    /// its tables are copied, its heap is only read (the heap, the largest
    /// part of a builder, is not in the model).
    pub(crate) fn snapshot(&self, data: &[u8], base: u64, base_line: u64) -> Result<Model, Error> {
        let copy = Builder {
            data,
            base,
            base_line,
            names: self.names.clone(),
            types: self.types.clone(),
            functions: self.functions.clone(),
            modules: self.modules.clone(),
            threads: self.threads.clone(),
            stacks: self.stacks.clone(),
            time: self.time.clone(),
            heap: Heap::default(),
            out: self.out.clone(),
            objects: self.objects.clone(),
            histograms: self.histograms.clone(),
            gc_book: self.gc_book.clone(),
            gcs: self.gcs.clone(),
            gc_start: self.gc_start,
            gc_start_generation: self.gc_start_generation,
            gc_ranges: self.gc_ranges.clone(),
            handles: self.handles.clone(),
            finalizers: self.finalizers.clone(),
            dumps: self.dumps.clone(),
            follow: DumpFollower::default(),
            comments: self.comments.clone(),
            last_was_root: self.last_was_root,
            last_offset: self.last_offset,
            extended_roots_seen: self.extended_roots_seen,
            dump_lines_seen: self.dump_lines_seen,
            records: self.records,
            call_log: self.call_log.clone(),
            had_alloc_info: self.had_alloc_info,
            had_call_info: self.had_call_info,
            stream: self.stream,
        };
        copy.finish_with(std::borrow::Cow::Borrowed(&self.heap), self.heap.relocations())
    }

    /// [`Builder::finish`] with the final heap `heap` (this builder's own
    /// heap is not used) and its relocation counts.
    fn finish_with(mut self, heap: std::borrow::Cow<'_, Heap>, relocated: StackCounts) -> Result<Model, Error> {
        let end = match self.stream {
            Some(s) => s.input_bytes,
            None => self.base + self.data.len() as u64,
        };
        // (Lines are counted only for an error: reading the whole log
        // again would bring back the pages the loader gave back.)
        let (data, base_line) = (self.data, self.base_line);
        let (records, stream) = (self.records, self.stream.is_some());
        let err = |problem| {
            let line = if stream { records + 1 } else { base_line + crate::format::line_of(data, data.len() as u64) };
            Error { line, offset: end, kind: None, problem }
        };
        let mut recorder = std::mem::take(&mut self.out).into_recorder();
        if let Some(problem) = recorder.failed.take() {
            return Err(err(problem));
        }
        self.histograms.relocated = relocated;
        self.flush_calls();
        self.call_log = Vec::new();
        if heap.in_gc {
            self.objects.unfinished_gc(self.gc_start_generation);
        }
        for (_, h) in heap.live.iter() {
            self.objects.alive(h.obj);
        }
        let live_objects = heap.live.len() as u64;
        let collections = Collections {
            gen0: heap.gc0 as i64,
            gen1: heap.gc1 as i64,
            gen2: heap.gc2 as i64,
            gen1_limit: TickIndex(heap.gen1_limit),
            gen2_limit: TickIndex(heap.gen2_limit),
        };
        // The final walk reads the live store and the stacks; the fates
        // and the recorder's tables are finished beside it.
        let mut final_heap = StackCounts::default();
        let (walker, stacks, fh) = (&*heap, &self.stacks, &mut final_heap);
        let objects = &mut self.objects;
        let rec = &mut recorder;
        // (The walk stays on this thread: the store's lookup cache is not
        // shared between threads.)
        let mut walked = Ok(());
        rayon::in_place_scope(|s| {
            s.spawn(move |_| {
                objects.adopt_columns(&mut rec.columns);
                objects.finish();
                rec.samples.finish();
            });
            walked = walker.final_walk(stacks, |o| fh.add(o.row));
        });
        walked.map_err(err)?;
        self.histograms.final_heap = final_heap;
        self.histograms.allocated = std::mem::take(&mut recorder.allocated);
        drop(heap);
        self.stacks.shrink();
        self.types.shrink();
        self.functions.shrink();
        self.modules.shrink();
        self.names.shrink();
        self.time.shrink();
        self.gcs.shrink();
        self.dumps.finish();
        self.histograms.shrink();
        Ok(Model {
            names: self.names,
            types: self.types,
            functions: self.functions,
            modules: self.modules,
            threads: self.threads,
            stacks: self.stacks,
            time: self.time,
            allocations: self.objects,
            samples: std::mem::take(&mut recorder.samples),
            histograms: self.histograms,
            gc_bookkeeping: self.gc_book,
            gcs: self.gcs,
            collections,
            handles: self.handles,
            finalizers: self.finalizers,
            dumps: self.dumps,
            comments: self.comments,
            live_objects_at_end: live_objects,
            records: self.records,
            had_alloc_info: self.had_alloc_info,
            had_call_info: self.had_call_info,
            diagnostics: Diagnostics::new(0),
            file_bytes: end,
            sampling: None,
            imported: None,
            row_weights: Default::default(),
        })
    }

    /// Bytes held by the tables so far (for progress reports).
    pub fn heap_bytes(&self) -> usize {
        self.heap.heap_bytes() + self.out.heap_bytes() + self.objects.heap_bytes() + self.stacks.heap_bytes()
    }
}
