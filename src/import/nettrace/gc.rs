//! A GC's events to `b`, `u`, `v` and `g` records.
//!
//! The runtime reports a GC as `GC/Start` (number, condemned generation,
//! reason), `GC/GenerationRange` for each generation's segments (once as
//! the GC starts, once as it ends), the surviving and moved object ranges
//! when asked for them (`GC/BulkSurvivingObjectRanges`,
//! `GC/BulkMovedObjectRanges`), `GC/HeapStats`, then `GC/Stop`.
//! CLRProfiler's log says the same with `b 1` (with the ranges at the
//! start), `u`/`v` lines, `b 0` (with the ranges at the end) and `g`
//! (the counts so far). The end line carries ranges only when the GC
//! reported its survivors: the model then removes every sampled object
//! in the condemned generations that no surviving or moved range covers;
//! without them, removing nothing is the only truthful reading.
//!
//! What a range claims is checked before anything is written: a range
//! ends inside the address space of the trace's pointer size (no wrap),
//! and the log's `u`/`v` lengths being 32-bit, a range longer than 1 GiB
//! takes one line per GiB out of a budget proportional to the trace's
//! size ([`GcState::new`]); a range beyond the budget is cut short and
//! counted ([`GcState::cut_ranges`]). A 609-byte trace claiming a range
//! of 2^64 - 1 bytes is a warning, not 2^34 lines.

use super::log_text::LogText;
use super::snapshot::Dump;
use super::survival::{Collected, Memory, Survival};
use crate::format::records::{GcBoundary, GcCounts, GenerationRange, Moved, Survived};
use crate::format::{Address, List, Record};

/// One generation range.
#[derive(Clone, Copy, Debug)]
pub(super) struct Range {
    pub generation: u32,
    pub start: u64,
    pub used: u64,
    pub reserved: u64,
}

/// The longest `u`/`v` line (the log's lengths are 32-bit).
const PIECE: u64 = 1 << 30;

/// Lines beyond the first of each range that any trace may spend, on top
/// of its share by size (ranges of more than a GiB are rare: an array
/// larger than a GiB that survives).
const EXTRA_LINES_BASE: u64 = 1 << 16;

/// Bytes of trace per extra line allowed: a line (about 40 bytes of text
/// and the model's work on it) for every 16 bytes of trace keeps the log
/// within a few times the trace's size.
const TRACE_BYTES_PER_EXTRA_LINE: u64 = 16;

/// The GC in progress and the counts so far.
pub(super) struct GcState {
    current: Option<Current>,
    /// GCs counted per generation (a gen-2 GC counts for 0 and 1 too).
    counts: [i64; 3],
    pub gcs: u64,
    pub survival_seen: bool,
    /// The sampled objects followed through the GCs.
    pub survival: Survival,
    /// The first address beyond the address space (2^32 for 4-byte
    /// pointers; 2^64 for 8-byte ones, as `None`).
    address_end: Option<u64>,
    /// Lines beyond the first of each range still allowed.
    extra_lines: u64,
    /// Ranges cut short: longer than the address space leaves, or than
    /// the budget of lines.
    pub cut_ranges: u64,
    /// A background GC set aside has reported ranges.
    aside_reporting: bool,
}

struct Current {
    condemned: u32,
    induced: bool,
    start_ranges: Vec<Range>,
    end_ranges: Vec<Range>,
    /// The `b 1` line was written (at the first range of survivors, or at
    /// the end).
    started: bool,
    survivors_reported: bool,
    /// A background GC (`GC/Start`'s `Type` 1): its survivor report, at
    /// its end, covers every generation ([`Collected::Background`]).
    background: bool,
}

/// How a GC came to be closed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Closed {
    /// By its `GC/Stop`: its report is whole.
    Stop,
    /// By a `GC/Start` inside it.
    Cut,
    /// By the end of the trace.
    TraceEnd,
}

/// GC reasons that are a program's or a tool's request
/// (`Induced`, `InducedNotForced`, `InducedLowMemory`,
/// `InducedCompacting`).
fn is_induced(reason: u64) -> bool {
    matches!(reason, 1 | 7 | 9 | 10)
}

impl GcState {
    /// The state of a trace of `trace_bytes` bytes whose pointers are
    /// `pointer_size` bytes.
    pub fn new(trace_bytes: usize, pointer_size: u32) -> GcState {
        GcState {
            current: None,
            counts: [0; 3],
            gcs: 0,
            survival_seen: false,
            survival: Survival::new(pointer_size),
            address_end: (pointer_size < 8).then(|| 1u64 << (8 * pointer_size.max(1))),
            extra_lines: EXTRA_LINES_BASE.saturating_add(trace_bytes as u64 / TRACE_BYTES_PER_EXTRA_LINE),
            cut_ranges: 0,
            aside_reporting: false,
        }
    }

    /// The length of a range at `old` (moved to `new`) that can be
    /// written: inside the address space at both ends, and within the
    /// budget of lines (which it takes from).
    fn writable_length(&mut self, old: u64, new: u64, length: u64) -> u64 {
        let room = |at: u64| match self.address_end {
            Some(end) => end.saturating_sub(at),
            // 2^64 - at, without overflow (at 0: every length fits).
            None => u64::MAX - at + u64::from(at > 0),
        };
        let fits = length.min(room(old)).min(room(new));
        let extra = fits.div_ceil(PIECE).saturating_sub(1);
        let allowed = extra.min(self.extra_lines);
        self.extra_lines -= allowed;
        let kept = if allowed < extra { (allowed + 1) * PIECE } else { fits };
        if kept < length {
            self.cut_ranges += 1;
        }
        kept
    }

    /// `GC/Start` (`kind`: its `Type`, 1 for a background GC, 2 for a
    /// foreground GC inside one).
    pub fn start(&mut self, log: &mut LogText<'_>, depth: u64, reason: u64, kind: u64) {
        // A start without a stop before it: the previous GC's end is
        // missing (lost events), or it is a background GC and this a
        // foreground GC inside it; close it as reported so far.
        if self.current.is_some() {
            self.cut(log);
        }
        // A background GC set aside ends with its own `GC/Stop`, after the
        // foreground GCs inside it. Those are ephemeral: .NET 5 and later
        // give them `Type` 2, CoreCLR 3.1 gives 0 (seen: a gen-0 GC
        // started 10 µs after the background GC, its report after the
        // gen-0 GC's stop). Another gen-2 GC means that stop was lost.
        if kind != 2 && depth >= 2 {
            self.survival.set_aside_ended(false);
        }
        if kind == 1 {
            self.survival.background_started(self.gcs.min(u64::from(u32::MAX)) as u32);
        }
        self.current = Some(Current {
            condemned: depth.min(2) as u32,
            induced: is_induced(reason),
            start_ranges: Vec::new(),
            end_ranges: Vec::new(),
            started: false,
            survivors_reported: false,
            background: kind == 1,
        });
    }

    /// `GC/GenerationRange`: the first set belongs to the start, ranges
    /// after the survivors (or after a generation repeats) to the end.
    pub fn range(&mut self, r: Range) {
        let Some(c) = self.current.as_mut() else { return };
        let r = Range { generation: r.generation.min(3), ..r };
        if !c.started && !c.survivors_reported {
            c.start_ranges.push(r);
        } else {
            c.end_ranges.push(r);
        }
    }

    /// Writes the `b 1` line if it is not written yet.
    fn write_start(&mut self, log: &mut LogText<'_>) {
        let Some(c) = self.current.as_mut() else { return };
        if c.started {
            return;
        }
        c.started = true;
        let ranges = record_ranges(&c.start_ranges);
        let ranges = List::Items(&ranges);
        log.record(&Record::GcBoundary(GcBoundary { is_start: true, induced: c.induced, condemned: c.condemned as i32, ranges }));
    }

    /// `GC/BulkMovedObjectRanges` / `GC/BulkSurvivingObjectRanges`: one
    /// `u` line per range (`old == new` for a survivor).
    pub fn survivors(&mut self, log: &mut LogText<'_>, ranges: &[(u64, u64, u64)]) {
        if self.current.is_none() {
            // The report of a background GC set aside (the log closed it).
            if self.survival.has_set_aside() {
                self.survival.reported(ranges.iter().copied());
                self.survival_seen = true;
                self.aside_reporting = true;
            }
            return;
        }
        self.survival.reported(ranges.iter().copied());
        self.write_start(log);
        self.survival_seen = true;
        if let Some(c) = self.current.as_mut() {
            c.survivors_reported = true;
        }
        for &(old, new, length) in ranges {
            // Lengths are 32-bit in the log: longer ranges in pieces, as
            // many as the budget allows.
            let length = self.writable_length(old, new, length);
            let mut done = 0u64;
            while done < length {
                let piece = (length - done).min(PIECE);
                let record = if old == new {
                    Record::Survived(Survived { start: Address(old + done), length: piece as u32 })
                } else {
                    Record::Moved(Moved { old: Address(old + done), new: Address(new + done), length: piece as u32 })
                };
                log.record(&record);
                done += piece;
            }
        }
    }

    /// Whether a heap walk made now is a snapshot of live objects: made in
    /// a blocking gen-2 GC, or in a GC whose start the trace does not
    /// hold. A lesser GC's walk (CoreCLR 3.1 walks the heap in any GC
    /// while the heap-dump keyword is on) still holds the dead objects of
    /// the generations it did not condemn; the runtime's own tools take
    /// the walk of the first blocking gen-2 GC only.
    pub fn walk_is_snapshot(&self) -> bool {
        self.current.as_ref().map_or(true, |c| c.condemned >= 2 && !c.background)
    }

    /// Whether a GC is in progress (a heap snapshot is written inside it).
    pub fn in_gc(&self) -> bool {
        self.current.is_some()
    }

    /// Whether the GC in progress will report on an object made now: a
    /// background GC that has not reported yet (it walks the heap at its
    /// end, with the program stopped; a blocking GC lets no object be
    /// made).
    pub fn reports_later_on_objects_made_now(&self) -> bool {
        self.current.as_ref().is_some_and(|c| c.background && !c.survivors_reported)
    }

    /// Whether a background GC set aside has begun its report: an object
    /// made now waits for its `GC/Stop` (its report does not cover it).
    pub fn set_aside_reporting(&self) -> bool {
        self.aside_reporting
    }

    /// `GC/Stop`: the `b 0` and `g` lines, after `before_end` (a heap
    /// snapshot taken in this GC).
    pub fn stop(&mut self, log: &mut LogText<'_>, before_end: Option<Dump>) {
        self.close(log, before_end, Closed::Stop);
    }

    /// The end of the trace inside a GC: closed as reported so far (its
    /// report may be cut short too: an object no range holds is unknown).
    pub fn trace_ended(&mut self, log: &mut LogText<'_>, before_end: Option<Dump>) {
        self.close(log, before_end, Closed::TraceEnd);
    }

    /// The end of the trace outside a GC: a background GC set aside is
    /// ended as reported so far.
    pub fn end_set_aside(&mut self) {
        self.survival.set_aside_ended(false);
        self.aside_reporting = false;
    }

    /// A `GC/Start` inside the GC in progress: it is closed as reported
    /// so far (its `GC/Stop` was lost, or a background GC let a
    /// foreground one run before its report).
    pub fn cut(&mut self, log: &mut LogText<'_>) {
        self.close(log, None, Closed::Cut);
    }

    fn close(&mut self, log: &mut LogText<'_>, before_end: Option<Dump>, closed: Closed) {
        if self.current.is_none() {
            // The stop of a background GC set aside (or, with none, of a
            // GC the trace began inside of: nothing to close).
            if closed != Closed::Cut {
                self.survival.set_aside_ended(closed == Closed::Stop);
                self.aside_reporting = false;
            }
            return;
        }
        self.write_start(log);
        let Some(c) = self.current.take() else { return };
        // A generation's memory: up to its reserved end (generation 0's
        // used length at a GC's start leaves out the allocation contexts
        // it is about to collect).
        // A background GC's report walks every segment or region at its
        // end, those made while it ran too: its end's ranges describe the
        // memory of the objects made during it (after those of its start,
        // which decide the generation of the rest).
        let end = if c.background && c.survivors_reported && closed == Closed::Stop { &c.end_ranges[..] } else { &[] };
        let memory: Vec<Memory> = c
            .start_ranges
            .iter()
            .map(|r| (r, r.start.saturating_add(r.used)))
            .chain(end.iter().map(|r| (r, r.start)))
            .map(|(r, in_use)| Memory {
                lo: r.start,
                hi: r.start.saturating_add(r.used.max(r.reserved)),
                in_use,
                generation: r.generation.min(3),
            })
            .collect();
        let number = self.gcs.min(u64::from(u32::MAX)) as u32;
        if c.background && !c.survivors_reported && closed == Closed::Cut {
            // A foreground GC inside it, or its stop lost (the next
            // `GC/Start` tells which).
            self.survival.set_aside(number, c.condemned, &memory);
        } else {
            let kind = if c.background { Collected::Background } else { Collected::Blocking };
            self.survival.gc_ended(number, c.condemned, kind, closed == Closed::Stop, &memory);
        }
        if closed == Closed::TraceEnd {
            self.survival.set_aside_ended(false);
        }
        if let Some(dump) = before_end {
            dump.write(log);
        }
        let ranges = if c.survivors_reported { record_ranges(&c.end_ranges) } else { Vec::new() };
        let ranges = List::Items(&ranges);
        log.record(&Record::GcBoundary(GcBoundary { is_start: false, induced: false, condemned: c.condemned as i32, ranges }));
        for g in 0..=c.condemned as usize {
            self.counts[g] += 1;
        }
        self.gcs += 1;
        let [gen0, gen1, gen2] = self.counts.map(|n| n as i32);
        log.record(&Record::GcCounts(GcCounts { gen0, gen1, gen2 }));
    }
}

/// The ranges of a `b` record (lengths as a log's signed numbers).
fn record_ranges(ranges: &[Range]) -> Vec<GenerationRange> {
    ranges
        .iter()
        .map(|r| GenerationRange {
            start: Address(r.start),
            length: r.used.min(i64::MAX as u64),
            reserved: r.reserved.min(i64::MAX as u64),
            generation: r.generation as i32,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{GcState, LogText, Range};
    use crate::format::{Style, TextSink};
    use crate::import::SampledFate;

    const GEN0: u64 = 0x1000_0000;
    const GEN2: u64 = 0x2000_0000;

    fn ranges(gc: &mut GcState) {
        gc.range(Range { generation: 2, start: GEN2, used: 0x10_0000, reserved: 0x10_0000 });
        gc.range(Range { generation: 0, start: GEN0, used: 0x10_0000, reserved: 0x10_0000 });
    }

    /// CoreCLR 3.1: a background GC, a gen-0 GC of `Type` 0 inside it
    /// (before its report), then the background GC's report and stop. The
    /// background GC is judged by its own report: what it reports lives,
    /// what it leaves out died; nothing is unknown.
    #[test]
    fn a_gen0_gc_of_type_0_inside_a_background_gc_leaves_it_its_report() {
        with_a_log(|log, gc| {
            // Two samples in gen 2, one in gen 0 that the gen-0 GC keeps.
            gc.survival.allocated(GEN2 + 0x100, 32);
            gc.survival.allocated(GEN2 + 0x200, 32);
            gc.survival.allocated(GEN0 + 0x100, 32);
            gc.start(log, 2, 4, 1);
            ranges(gc);
            gc.start(log, 0, 4, 0);
            ranges(gc);
            gc.survivors(log, &[(GEN0 + 0x100, GEN0 + 0x100, 32)]);
            gc.stop(log, None);
            // The background GC's report: the first gen-2 object and the
            // gen-0 one.
            gc.survivors(log, &[(GEN2 + 0x100, GEN2 + 0x100, 32), (GEN0 + 0x100, GEN0 + 0x100, 32)]);
            gc.stop(log, None);
            let fates = std::mem::take(&mut gc.survival).finish();
            assert_eq!(fates.len(), 3);
            assert!(matches!(fates[0], SampledFate::Alive), "{fates:?}");
            assert!(matches!(fates[1], SampledFate::Died { .. }), "{fates:?}");
            assert!(matches!(fates[2], SampledFate::Alive), "{fates:?}");
        });
    }

    /// Only a blocking gen-2 GC's heap walk is a snapshot (CoreCLR 3.1
    /// also walked the heap in a gen-0 GC that came first while a
    /// heap-dump session was on: two dumps in one file, one holding dead
    /// objects of the older generations).
    #[test]
    fn only_a_blocking_gen2_gcs_walk_is_a_snapshot() {
        with_a_log(|log, gc| {
            assert!(gc.walk_is_snapshot(), "outside a GC the trace shows the start of");
            for (depth, kind, snapshot) in [(0, 0, false), (1, 0, false), (2, 1, false), (2, 0, true), (2, 2, true)] {
                gc.start(log, depth, 1, kind);
                assert_eq!(gc.walk_is_snapshot(), snapshot, "depth {depth}, type {kind}");
                gc.stop(log, None);
            }
        });
    }

    /// Runs `f` on a GC state and a log to write to (a trace of 16 bytes,
    /// 8-byte pointers).
    fn with_a_log(f: impl FnOnce(&mut LogText<'_>, &mut GcState)) {
        let trace = [0u8; 16];
        let mut out = Vec::new();
        let mut sink = TextSink::new(&mut out, Style::BITS64);
        let mut log = LogText::new(&trace, &mut sink);
        let mut gc = GcState::new(trace.len(), 8);
        f(&mut log, &mut gc);
    }
}
