//! A NetTrace (EventPipe) trace to CLRProfiler records.
//!
//! Two passes over the trace's bytes, each streaming (no event is kept):
//! the first collects the methods and modules that name stack frames (the
//! rundown at a trace's end names methods compiled before it began; the
//! other events are read past, not merged: [`NetTraceReader::only`]); the
//! second gives the records, in event order, to a [`RecordSink`] (the
//! model's builder: [`import`]; or log text: [`to_log`]):
//!
//! | events | log records |
//! |---|---|
//! | `GC/AllocationTick` (V2-V4), with its stack | `t` (the type, once), `f`/`m`/`n` (the stack, once), `!` |
//! | `GC/Start`, `GC/GenerationRange` | `i`, `b 1 induced condemned ranges` |
//! | `GC/BulkMovedObjectRanges`, `GC/BulkSurvivingObjectRanges` | `u` / `v` |
//! | `GC/Stop` | `i`, `b 0 0 condemned [ranges]`, `g` |
//! | `GC/BulkNode`, `GC/BulkEdge`, `GC/BulkRootEdge`, `GC/BulkRootConditionalWeakTableElementEdge`, `GC/BulkRootStaticVar`, `Type/BulkType` | a heap dump: `e` lines, `o` lines (joined by the batches' `Index`, see `walk`) |
//!
//! Time: the events in time order across threads (the reader's merge);
//! an `i` line (milliseconds since the trace's start) before each
//! record that moves time on. Threads: the OS thread id. What each sampled
//! allocation stands for goes to [`Sampling`]; what the trace could not
//! say, to [`TraceFacts`].

mod fields;
mod followed;
mod gc;
mod log_text;
mod methods;
mod snapshot;
mod survival;
#[cfg(test)]
mod survival_oracle;
mod walk;
mod walk_summary;

pub use walk_summary::{walk_summary, TypeFigures, WalkSummary};

use super::{Import, Imported, Sampling, SamplingMethod, TraceFacts};
use crate::eventpipe::{AllocationTick, Error, Event, NetTraceReader, Next, Warning};
use crate::format::{RecordSink, Style, TextSink};
use crate::hash::BlockHashState;
use fields::Fields;
use gc::{GcState, Range};
use log_text::LogText;
use methods::MethodMap;
use snapshot::Snapshot;
use std::collections::HashMap;

/// Turns the trace in `bytes` into CLRProfiler log text.
///
/// A trace cut short gives the log of what was read, with the reader's
/// [`Warning::Truncated`] in [`TraceFacts::warnings`]; an error is a trace
/// whose start cannot be read at all.
///
/// ```no_run
/// let bytes = std::fs::read("app.nettrace")?;
/// let imported = clrprof::import::nettrace::to_log(&bytes)?;
/// let model = clrprof::model::load(&imported.log, &Default::default())?;
/// println!("{} sampled allocations", model.allocations().len());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn to_log(bytes: &[u8]) -> Result<Imported, Error> {
    let style = match crate::eventpipe::read_header(bytes)?.pointer_size {
        4 => Style::BITS32,
        _ => Style::BITS64,
    };
    let mut log = Vec::with_capacity(1 << 20);
    let Import { sampling, facts } = import(bytes, &mut TextSink::new(&mut log, style), &mut |_, _| {})?;
    Ok(Imported { log, sampling, facts })
}

/// Which of the two passes over a trace an import is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// The first: methods and modules are collected.
    Methods,
    /// The second: the records are made.
    Records,
}

/// Gives the trace in `bytes` to `sink` as CLRProfiler records, in the
/// trace's time order; returns what each sampled allocation stands for
/// and what the trace said about itself. `position` is called now and
/// then, in each pass, with the offset in `bytes` the reader has reached
/// (a caller may give back the pages of a mapped trace behind it).
///
/// A trace cut short gives the records of what was read, with the
/// reader's [`Warning::Truncated`] in [`TraceFacts::warnings`]; an error is
/// a trace whose start cannot be read at all.
///
/// ```no_run
/// use clrprof::format::{Record, RecordSink};
/// struct Count(u64);
/// impl RecordSink for Count {
///     fn record(&mut self, _: &Record<'_>) {
///         self.0 += 1;
///     }
/// }
/// let bytes = std::fs::read("app.nettrace")?;
/// let mut count = Count(0);
/// let import = clrprof::import::nettrace::import(&bytes, &mut count, &mut |_, _| {})?;
/// println!("{} records, {} GCs", count.0, import.facts.gcs);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn import(bytes: &[u8], sink: &mut dyn RecordSink, position: &mut dyn FnMut(Pass, u64)) -> Result<Import, Error> {
    let (methods, sampled) = first_pass(bytes, position)?;
    second_pass(bytes, &methods, sampled, sink, position)
}

/// Trace bytes read between two calls of an import's `position`.
const POSITION_STEP: u64 = 1 << 20;

/// Methods and modules, from every event that names them; and whether
/// the trace has `AllocationSampled` events (then they, not the ticks,
/// are the sampled allocations: a .NET 10 session may ask for both).
fn first_pass(bytes: &[u8], position: &mut dyn FnMut(Pass, u64)) -> Result<(MethodMap, bool), Error> {
    let mut methods = MethodMap::default();
    let mut sampled = false;
    // The other events are read past, not merged or resolved.
    let mut reader = NetTraceReader::new(bytes)?.only(|k| MethodMap::names(k) || k.name == "AllocationSampled");
    let mut told = 0u64;
    loop {
        // A read error ends the events (the reader has recorded it as a
        // warning when the trace is cut short; other errors are noted by
        // the second pass).
        let at = match reader.next_or_position(POSITION_STEP) {
            Ok(Some(Next::Event(e))) => {
                methods.observe(&e);
                sampled |= e.name() == "AllocationSampled";
                e.offset
            }
            Ok(Some(Next::Position(at))) => at,
            _ => break,
        };
        if at >= told + POSITION_STEP {
            told = at;
            position(Pass::Methods, told);
        }
    }
    methods.seal();
    Ok((methods, sampled))
}

/// The probability that an allocated byte is sampled by `AllocationSampled`.
const BYTE_PROBABILITY: f64 = 1.0 / 102_400.0;

/// The objects an `AllocationSampled` sample of an object of `size` bytes
/// stands for: the inverse of the probability that such an object is
/// sampled, `1 / (1 - (1 - p)^size)` (the runtime's design,
/// `RandomizedAllocationSampling.md`, "weighted samples": unbiased).
pub fn allocation_sampled_weight(size: u64) -> f64 {
    let size = size.max(1) as f64;
    let sampled = -f64::exp_m1(size * f64::ln_1p(-BYTE_PROBABILITY));
    if sampled > 0.0 {
        1.0 / sampled
    } else {
        1.0
    }
}

struct Writer<'m, 's> {
    log: LogText<'s>,
    methods: &'m MethodMap,
    gc: GcState,
    snapshot: Snapshot,
    /// Type handle -> name, from the allocation events.
    allocation_type_names: HashMap<u64, String, BlockHashState>,
    weights: Vec<f32>,
    method: Option<SamplingMethod>,
    sizes_unknown: bool,
    undecodable: HashMap<String, u64>,
    snapshots: u64,
    /// Heap walks of GCs that were not blocking gen-2 GCs, left out.
    walks_left_out: u64,
    /// `AllocationSampled` events are the samples (the ticks are not).
    use_sampled: bool,
    /// The time of the event being read (ms).
    event_ms: f64,
    /// Samples made while a GC is in progress (between its `GC/Start` and
    /// `GC/Stop` in time order: a background GC lets the program run),
    /// given to the sink after the GC's records. Their definitions (type,
    /// stack) are given at once. The survival tracker has those made
    /// during a background GC before its report at once: the report, at
    /// the GC's end, covers them (a dead one is already swept, and its
    /// memory may hold new objects when the next GC reports).
    held: Vec<HeldSample>,
    /// The GC in progress is a background one (`GC/Start`'s `Type` 1): its
    /// records keep the time of its start.
    background_gc: bool,
}

/// A sample waiting for the end of the GC it was made in.
struct HeldSample {
    ms: f64,
    thread: u64,
    address: u64,
    stack: i32,
    /// The object's size for the survival tracker (0: unknown).
    size: u64,
    /// The survival tracker has it already.
    followed: bool,
}

fn second_pass(
    bytes: &[u8],
    methods: &MethodMap,
    use_sampled: bool,
    sink: &mut dyn RecordSink,
    position: &mut dyn FnMut(Pass, u64),
) -> Result<Import, Error> {
    let mut reader = NetTraceReader::new(bytes)?;
    let header = *reader.header();
    let mut told = 0u64;
    let mut w = Writer {
        log: LogText::new(bytes, sink),
        methods,
        gc: GcState::new(bytes.len(), header.pointer_size),
        snapshot: Snapshot::aligned(u64::from(header.pointer_size.max(4))),
        allocation_type_names: HashMap::default(),
        weights: Vec::new(),
        method: None,
        sizes_unknown: false,
        undecodable: HashMap::new(),
        snapshots: 0,
        walks_left_out: 0,
        use_sampled,
        event_ms: 0.0,
        held: Vec::new(),
        background_gc: false,
    };
    let [year, month, _, day, hour, minute, second, _] = header.sync_time_utc;
    w.log.comment(&format!(
        "clrprof: from a NetTrace (EventPipe) trace of process {} started {year:04}-{month:02}-{day:02} {hour:02}:{minute:02}:{second:02} UTC; allocations are samples",
        header.process_id
    ));
    w.log.tick(0.0);
    let mut read_error: Option<Error> = None;
    loop {
        let e = match reader.next_event() {
            Ok(Some(e)) => e,
            Ok(None) => break,
            Err(err) => {
                read_error = Some(err);
                break;
            }
        };
        if e.offset >= told + POSITION_STEP {
            told = e.offset;
            position(Pass::Records, told);
        }
        w.event(&e, header.msec(e.header.timestamp));
    }
    // A GC or a heap walk the trace ended inside of.
    if w.gc.in_gc() {
        let dump = w.snapshot_of_gc();
        w.gc.trace_ended(&mut w.log, dump);
        w.release_held();
    } else if let Some(dump) = w.snapshot.take(&mut w.log, &w.allocation_type_names) {
        w.snapshots += 1;
        dump.write(&mut w.log);
    }
    // A background GC still set aside: its stop never came.
    w.gc.end_set_aside();
    w.release_held();
    let summary = reader.finish();
    let mut warnings: Vec<String> = summary.warnings.iter().map(describe).collect();
    if let Some(err) = read_error {
        warnings.push(format!("the events stop at an error: {err}"));
    }
    // The reader's warnings in the trace's order; the undecodable kinds
    // (counted in a map) by name, for the same text on every run.
    let mut undecodable: Vec<String> =
        w.undecodable.iter().map(|(name, count)| format!("{count} {name} event(s) could not be decoded and were left out")).collect();
    undecodable.sort();
    warnings.extend(undecodable);
    if w.gc.cut_ranges > 0 {
        warnings.push(format!(
            "{} surviving or moved range(s) claimed more memory than the address space or the trace's size allows and were cut short",
            w.gc.cut_ranges
        ));
    }
    if w.log.cut_stacks > 0 {
        warnings.push(format!("{} stack(s) deeper than 2^20 frames kept their outermost frames only", w.log.cut_stacks));
    }
    let gaps = w.snapshot.gaps;
    if gaps.missing_nodes > 0 {
        warnings
            .push(format!("the heap walk lost {} object(s) (GC/BulkNode batches missing): they are not in the dump", gaps.missing_nodes));
    }
    if gaps.missing_edges > 0 {
        warnings.push(format!(
            "the heap walk lost {} reference(s) (GC/BulkEdge batches missing): the objects that held them are in the dump without them",
            gaps.missing_edges
        ));
    }
    if gaps.unplaced_edges > 0 {
        warnings.push(format!(
            "{} heap-walk reference(s) could not be placed on their objects after a lost batch and were left out",
            gaps.unplaced_edges
        ));
    }
    if gaps.missing_roots > 0 {
        warnings.push(format!("the heap walk lost {} root(s) (GC/BulkRootEdge batches missing)", gaps.missing_roots));
    }
    if gaps.duplicate_batches > 0 {
        warnings.push(format!("{} heap-walk batch(es) came twice; the repeats were left out", gaps.duplicate_batches));
    }
    if w.walks_left_out > 0 {
        warnings.push(format!(
            "{} heap walk(s) made in a GC that was not a blocking gen-2 GC were left out: only such a GC's walk is a snapshot of live objects (CoreCLR 3.1 also walks the heap in a gen-0 GC that comes first while a heap-dump session is on)",
            w.walks_left_out
        ));
    }
    let unknown = w.gc.survival.unknown();
    if unknown > 0 {
        warnings.push(format!(
            "{unknown} sampled object(s) lay in memory that a GC condemned without reporting its survivors, or that no generation range covered, or are held at the end only by a background GC's report that cannot tell them from objects the program made where they lay during it: what became of them after that GC is unknown ({} GC(s) reported no survivors; {} object(s) were found overwritten; {} held so)",
            w.gc.survival.silent_gcs,
            w.gc.survival.overwritten,
            w.gc.survival.doubtful_alive()
        ));
    }
    let fates = std::mem::take(&mut w.gc.survival).finish();
    let facts = TraceFacts {
        format: format!("NetTrace (Trace object version {})", header.version),
        process_id: Some(header.process_id),
        events: summary.events,
        sampled_allocations: w.weights.len() as u64,
        gcs: w.gc.gcs,
        heap_snapshots: w.snapshots,
        survival_known: w.gc.survival_seen && unknown == 0,
        survival_unknown_samples: unknown,
        lost_events: summary.lost_events,
        heap_walk_missing_objects: gaps.missing_nodes,
        heap_walk_missing_references: gaps.missing_edges + gaps.unplaced_edges,
        heap_walk_missing_roots: gaps.missing_roots,
        unresolved_frames: w.log.unresolved_frames,
        static_fields: w.snapshot.static_fields(),
        warnings,
    };
    let sampling = w.method.map(|method| Sampling { method, weights: w.weights, sizes_unknown: w.sizes_unknown, fates });
    position(Pass::Records, bytes.len() as u64);
    Ok(Import { sampling, facts })
}

/// The (old, new, length) ranges of a bulk moved or surviving ranges event.
fn ranges(f: &Fields<'_>, old: &str, new: &str) -> Vec<(u64, u64, u64)> {
    f.structs("Values")
        .iter()
        .map(|v| {
            let g = |n| fields::member_u64(v, n).unwrap_or(0);
            (g(old), g(new), g("RangeLength"))
        })
        .collect()
}

/// One line for a reader warning.
fn describe(w: &Warning) -> String {
    w.to_string()
}

/// An event's payload as the importer reads it.
enum Decoded<'a> {
    Fields(Fields<'a>),
    Bulk(crate::eventpipe::Bulk<'a>),
}

impl Writer<'_, '_> {
    fn event(&mut self, e: &Event<'_>, ms: f64) {
        let name = e.name();
        if !e.provider().starts_with("Microsoft-Windows-DotNETRuntime") {
            return;
        }
        let wanted = matches!(
            name,
            "GC/AllocationTick"
                | "AllocationSampled"
                | "GC/Start"
                | "GC/Stop"
                | "GC/GenerationRange"
                | "GC/BulkMovedObjectRanges"
                | "GC/BulkSurvivingObjectRanges"
                | "GC/BulkNode"
                | "GC/BulkEdge"
                | "GC/BulkRootEdge"
                | "GC/BulkRootConditionalWeakTableElementEdge"
                | "GC/BulkRootStaticVar"
                | "Type/BulkType"
        );
        if !wanted {
            return;
        }
        // The heap walk's bulk events (millions of elements) are read in
        // place, and the sampled allocations (millions of them) straight
        // from the payload when the layout is the runtime's; the others
        // are decoded into named fields.
        let bulk = matches!(name, "GC/BulkNode" | "GC/BulkEdge" | "GC/BulkRootEdge");
        let typed = if name == "GC/AllocationTick" { e.allocation_tick() } else { None };
        let mut tick = AllocationTick::default();
        let decoded = match typed {
            Some(Ok(t)) => {
                tick = t;
                Some(Decoded::Fields(Fields::empty()))
            }
            Some(Err(_)) => None,
            None if bulk => e.bulk().ok().flatten().map(Decoded::Bulk),
            None => Fields::of(e).map(|f| {
                if name == "GC/AllocationTick" {
                    tick = fields::allocation_tick(&f);
                }
                Decoded::Fields(f)
            }),
        };
        let Some(decoded) = decoded else {
            *self.undecodable.entry(name.to_string()).or_default() += 1;
            return;
        };
        let empty = Fields::empty();
        let f = match &decoded {
            Decoded::Fields(f) => f,
            Decoded::Bulk(_) => &empty,
        };
        if name == "GC/Start" && self.gc.in_gc() {
            // The previous GC's end is missing: closed here, as reported,
            // before the samples made during it.
            self.gc.cut(&mut self.log);
            self.release_held();
        }
        self.event_ms = ms;
        let sample = match name {
            "GC/AllocationTick" => !self.use_sampled,
            "AllocationSampled" => self.use_sampled,
            _ => false,
        };
        // Time moves on, but not while samples wait for a GC's end (its
        // records keep the time before them), nor during a background GC
        // (its time is its start).
        if !(sample && self.gc.in_gc()) && self.held.is_empty() && !(self.background_gc && self.gc.in_gc()) {
            self.log.tick(ms);
        }
        match name {
            "GC/AllocationTick" if !self.use_sampled => self.allocation_tick(e, &tick),
            "AllocationSampled" if self.use_sampled => self.allocation_sampled(e, f),
            "GC/Start" => {
                self.background_gc = f.u64("Type") == Some(1);
                self.gc.start(&mut self.log, f.u64("Depth").unwrap_or(0), f.u64("Reason").unwrap_or(0), f.u64("Type").unwrap_or(0));
            }
            "GC/GenerationRange" => self.gc.range(Range {
                generation: f.u64("Generation").unwrap_or(0).min(u64::from(u32::MAX)) as u32,
                start: f.u64("RangeStart").unwrap_or(0),
                used: f.u64("RangeUsedLength").unwrap_or(0),
                reserved: f.u64("RangeReservedLength").unwrap_or(0),
            }),
            "GC/BulkMovedObjectRanges" => {
                self.gc.survivors(&mut self.log, &ranges(f, "OldRangeBase", "NewRangeBase"));
            }
            // A survivor is a range moved onto itself.
            "GC/BulkSurvivingObjectRanges" => {
                self.gc.survivors(&mut self.log, &ranges(f, "RangeBase", "RangeBase"));
            }
            "GC/Stop" => {
                let dump = self.snapshot_of_gc();
                self.gc.stop(&mut self.log, dump);
                self.release_held();
            }
            "Type/BulkType" => self.snapshot.types(f),
            "GC/BulkNode" | "GC/BulkEdge" | "GC/BulkRootEdge" => {
                if let Decoded::Bulk(b) = &decoded {
                    match name {
                        "GC/BulkNode" => self.snapshot.nodes(b),
                        "GC/BulkEdge" => self.snapshot.edges(b),
                        _ => self.snapshot.root_edges(b),
                    }
                }
            }
            "GC/BulkRootStaticVar" => self.snapshot.static_roots(f),
            "GC/BulkRootConditionalWeakTableElementEdge" => self.snapshot.dependent_handles(f),
            _ => {}
        }
    }

    /// A sampled object's `!` record (and the survival tracker's note of
    /// it), now, or after the GC in progress when one is.
    fn sampled(&mut self, thread: u64, address: u64, stack: i32, size: u64) {
        if self.gc.in_gc() || self.gc.set_aside_reporting() {
            let followed = self.gc.reports_later_on_objects_made_now();
            if followed {
                self.gc.survival.allocated(address, size);
            }
            self.held.push(HeldSample { ms: self.event_ms, thread, address, stack, size, followed });
            return;
        }
        self.log.alloc(thread, address, stack);
        self.gc.survival.allocated(address, size);
    }

    /// The heap snapshot of the GC about to close: its walk, if it is a
    /// blocking gen-2 GC (else the walk is left out and counted).
    fn snapshot_of_gc(&mut self) -> Option<snapshot::Dump> {
        if !self.gc.walk_is_snapshot() {
            self.walks_left_out += u64::from(self.snapshot.leave_out());
            return None;
        }
        let dump = self.snapshot.take(&mut self.log, &self.allocation_type_names);
        self.snapshots += u64::from(dump.is_some());
        dump
    }

    /// The samples made during the GC just closed, at their times.
    fn release_held(&mut self) {
        for h in std::mem::take(&mut self.held) {
            self.log.tick(h.ms);
            self.log.alloc(h.thread, h.address, h.stack);
            if !h.followed {
                self.gc.survival.allocated(h.address, h.size);
            }
        }
    }

    /// `AllocationSampled` (.NET 10): one sampled object standing for the
    /// inverse of its probability of being sampled.
    fn allocation_sampled(&mut self, e: &Event<'_>, f: &Fields<'_>) {
        let handle = f.u64("TypeID").unwrap_or(0);
        let size = f.u64("ObjectSize").unwrap_or(0).clamp(1, i32::MAX as u64);
        let name = f.string("TypeName");
        if !name.is_empty() {
            self.allocation_type_names.entry(handle).or_insert_with(|| name.clone());
        }
        let type_id = self.log.type_id(handle, || name);
        let stack = self.log.alloc_stack(type_id, size as i32, &e.stack, self.methods);
        let address = f.u64("Address").unwrap_or(0);
        self.sampled(e.header.thread.0, address, stack, size);
        self.weights.push(allocation_sampled_weight(size) as f32);
        self.method = Some(SamplingMethod::AllocationSampled);
    }

    /// `GC/AllocationTick`: one sampled allocation standing for the bytes
    /// allocated since the previous tick of its heap and kind.
    fn allocation_tick(&mut self, e: &Event<'_>, f: &AllocationTick<'_>) {
        let amount = f.allocation_amount64.or(f.allocation_amount).unwrap_or(0);
        let handle = f.type_id.unwrap_or(0);
        let address = f.address.unwrap_or(0);
        let object_size = f.object_size.filter(|&s| s > 0);
        // The name is read (a UTF-16 string made a `String`) only for a
        // type not named yet.
        let known = self.log.knows_type(handle) && self.allocation_type_names.contains_key(&handle);
        let name = if known { String::new() } else { f.type_name.map(|n| n.to_string()).unwrap_or_default() };
        if !name.is_empty() {
            self.allocation_type_names.entry(handle).or_insert_with(|| name.clone());
        }
        // Events before version 2 name no type: they stand for bytes of
        // an unknown type.
        let type_id = self.log.type_id(handle, || if name.is_empty() { "(type not reported)".to_string() } else { name });
        let (size, weight) = match object_size {
            Some(s) => {
                let s = s.min(i32::MAX as u64);
                (s as i32, (amount.max(s) as f64 / s as f64) as f32)
            }
            None => {
                self.sizes_unknown = true;
                (amount.clamp(1, i32::MAX as u64) as i32, 1.0)
            }
        };
        let stack = self.log.alloc_stack(type_id, size, &e.stack, self.methods);
        self.sampled(e.header.thread.0, address, stack, object_size.unwrap_or(0));
        self.weights.push(weight);
        self.method = Some(SamplingMethod::AllocationTick);
    }
}
