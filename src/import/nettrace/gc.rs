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

use super::log_text::{dec, LogText};
use crate::format::hex_lower;

/// One generation range.
#[derive(Clone, Copy, Debug)]
pub(super) struct Range {
    pub generation: u32,
    pub start: u64,
    pub used: u64,
    pub reserved: u64,
}

/// The GC in progress and the counts so far.
#[derive(Default)]
pub(super) struct GcState {
    current: Option<Current>,
    /// GCs counted per generation (a gen-2 GC counts for 0 and 1 too).
    counts: [i64; 3],
    pub gcs: u64,
    pub survival_seen: bool,
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
}

/// GC reasons that are a program's or a tool's request
/// (`Induced`, `InducedNotForced`, `InducedLowMemory`,
/// `InducedCompacting`).
fn is_induced(reason: u64) -> bool {
    matches!(reason, 1 | 7 | 9 | 10)
}

impl GcState {
    /// `GC/Start`.
    pub fn start(&mut self, log: &mut LogText, depth: u64, reason: u64) {
        // A start without a stop before it: the previous GC's end is
        // missing (lost events); close it as reported so far.
        if self.current.is_some() {
            self.stop(log, None);
        }
        self.current = Some(Current {
            condemned: depth.min(2) as u32,
            induced: is_induced(reason),
            start_ranges: Vec::new(),
            end_ranges: Vec::new(),
            started: false,
            survivors_reported: false,
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
    fn write_start(&mut self, log: &mut LogText) {
        let Some(c) = self.current.as_mut() else { return };
        if c.started {
            return;
        }
        c.started = true;
        let mut line = Vec::with_capacity(64);
        line.extend_from_slice(b"b 1 ");
        line.extend_from_slice(if c.induced { b"1 " } else { b"0 " });
        dec(&mut line, i64::from(c.condemned));
        write_ranges(&mut line, &c.start_ranges);
        line.push(b'\n');
        log.raw(&line);
    }

    /// `GC/BulkMovedObjectRanges` / `GC/BulkSurvivingObjectRanges`: one
    /// `u` line per range (`old == new` for a survivor).
    pub fn survivors(&mut self, log: &mut LogText, ranges: impl Iterator<Item = (u64, u64, u64)>) {
        if self.current.is_none() {
            return;
        }
        self.write_start(log);
        self.survival_seen = true;
        if let Some(c) = self.current.as_mut() {
            c.survivors_reported = true;
        }
        let mut line = Vec::with_capacity(64);
        for (old, new, length) in ranges {
            // Lengths are 32-bit in the log: longer ranges in pieces.
            let mut done = 0u64;
            while done < length {
                let piece = (length - done).min(1 << 30);
                line.clear();
                if old == new {
                    line.extend_from_slice(b"v ");
                    hex_lower(&mut line, old + done);
                } else {
                    line.extend_from_slice(b"u ");
                    hex_lower(&mut line, old + done);
                    line.push(b' ');
                    hex_lower(&mut line, new + done);
                }
                line.push(b' ');
                dec(&mut line, piece as i64);
                line.push(b'\n');
                log.raw(&line);
                done += piece;
            }
        }
    }

    /// Whether a GC is in progress (a heap snapshot is written inside it).
    pub fn in_gc(&self) -> bool {
        self.current.is_some()
    }

    /// `GC/Stop` (or the end of the trace with `ms = None`): the `b 0` and
    /// `g` lines, after `before_end` (a heap snapshot taken in this GC).
    pub fn stop(&mut self, log: &mut LogText, before_end: Option<&[u8]>) {
        if self.current.is_none() {
            // A stop without a start (the trace began inside a GC): nothing
            // to close.
            return;
        }
        self.write_start(log);
        let Some(c) = self.current.take() else { return };
        if let Some(text) = before_end {
            log.raw(text);
        }
        let mut line = Vec::with_capacity(64);
        line.extend_from_slice(b"b 0 0 ");
        dec(&mut line, i64::from(c.condemned));
        if c.survivors_reported {
            write_ranges(&mut line, &c.end_ranges);
        }
        line.push(b'\n');
        for g in 0..=c.condemned as usize {
            self.counts[g] += 1;
        }
        self.gcs += 1;
        line.extend_from_slice(b"g ");
        dec(&mut line, self.counts[0]);
        line.push(b' ');
        dec(&mut line, self.counts[1]);
        line.push(b' ');
        dec(&mut line, self.counts[2]);
        line.push(b'\n');
        log.raw(&line);
    }
}

fn write_ranges(line: &mut Vec<u8>, ranges: &[Range]) {
    for r in ranges {
        line.push(b' ');
        hex_lower(line, r.start);
        line.push(b' ');
        dec(line, r.used.min(i64::MAX as u64) as i64);
        line.push(b' ');
        dec(line, r.reserved.min(i64::MAX as u64) as i64);
        line.push(b' ');
        dec(line, i64::from(r.generation));
    }
}
