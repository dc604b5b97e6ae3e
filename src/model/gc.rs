//! Garbage collections: the GC list and CLRProfiler's GC bookkeeping.
//!
//! Two independent sets of counters exist in CLRProfiler's reader (section 5
//! of `docs/src/reference-reader.md`): the heap simulation's collection counts
//! (kept by [`super::heap`]) and the reader's own bookkeeping kept here,
//! which decides the induced count, the heap sizes and the "Unknown"
//! figures. The [`GcTable`] lists every GC the simulation acted on.

use super::error::Problem;
use super::ids::{GcIndex, TickIndex};

/// How a GC was logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum GcSource {
    /// A `b 0` end line.
    EndLine,
    /// A `g` line with counts, acted on while no start/end pair was counted.
    Counts,
    /// A `g` line without counts (or cut by the end of the log).
    Simple,
}

/// One generation range of a `b` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct GenerationRange {
    /// The generation (3: large object heap).
    pub generation: i32,
    /// First address.
    pub start: u64,
    /// Bytes in use.
    pub length: u64,
    /// Bytes reserved.
    pub reserved: u64,
}

/// One GC as the heap simulation saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Gc {
    /// When it ended.
    pub end: TickIndex,
    /// When the latest `b` start line before it (since the previous GC)
    /// was read, if any.
    pub start: Option<TickIndex>,
    /// The condemned generation (as read from the end line, or computed from
    /// `g` counts).
    pub generation: i32,
    /// The start line said "induced".
    pub induced: bool,
    /// CLRProfiler's bookkeeping counted it (its start line was accepted).
    pub counted: bool,
    /// How it was logged.
    pub source: GcSource,
    /// Objects allocated before it ended.
    pub objects_before: u32,
}

/// The GCs in log order, with the generation ranges of their end lines.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct GcTable {
    gcs: Vec<Gc>,
    range_start: Vec<u32>,
    ranges: Vec<GenerationRange>,
}

impl GcTable {
    pub(crate) fn push(&mut self, gc: Gc, ranges: &[GenerationRange]) {
        self.gcs.push(gc);
        self.range_start.push(self.ranges.len() as u32);
        self.ranges.extend_from_slice(ranges);
    }

    /// Number of GCs.
    pub fn len(&self) -> usize {
        self.gcs.len()
    }

    /// True when no GC happened.
    pub fn is_empty(&self) -> bool {
        self.gcs.is_empty()
    }

    /// A GC.
    pub fn get(&self, gc: GcIndex) -> Option<&Gc> {
        self.gcs.get(gc.index())
    }

    /// All GCs in log order.
    pub fn iter(&self) -> impl Iterator<Item = (GcIndex, &Gc)> + '_ {
        self.gcs.iter().enumerate().map(|(i, g)| (GcIndex(i as u32), g))
    }

    /// The generation ranges of a GC's end line.
    pub fn ranges(&self, gc: GcIndex) -> &[GenerationRange] {
        let i = gc.index();
        let Some(&a) = self.range_start.get(i) else { return &[] };
        let b = self.range_start.get(i + 1).copied().unwrap_or(self.ranges.len() as u32);
        &self.ranges[a as usize..b as usize]
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.gcs.capacity() * std::mem::size_of::<Gc>()
            + self.range_start.capacity() * 4
            + self.ranges.capacity() * std::mem::size_of::<GenerationRange>()
    }

    pub(crate) fn shrink(&mut self) {
        self.gcs.shrink_to_fit();
        self.range_start.shrink_to_fit();
        self.ranges.shrink_to_fit();
    }
}

/// An event list that keeps an entry only when its tick is strictly later
/// than the previous kept one's (CLRProfiler's `EventList.AddEvent`).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct EventTicks {
    ticks: Vec<u32>,
}

impl EventTicks {
    pub(crate) fn add(&mut self, tick: u32) -> bool {
        if self.ticks.last().is_some_and(|&t| tick <= t) {
            return false;
        }
        self.ticks.push(tick);
        true
    }

    pub(crate) fn len(&self) -> usize {
        self.ticks.len()
    }
}

/// The reader's own GC bookkeeping (section 5.1).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct GcBookkeeping {
    events: EventTicks,
    event_is_new: bool,
    induced: [u64; 3],
    count: [u64; 4],
    size: [u64; 4],
    cumulative: [u64; 4],
}

impl GcBookkeeping {
    /// The header of a `b` line: counts induced GCs and, at an end line,
    /// adds the previous line's sizes. Returns whether the line belongs to
    /// an accepted GC.
    pub(crate) fn begin_line(&mut self, is_start: bool, induced: bool, condemned: i32, tick: u32) -> Result<bool, Problem> {
        if is_start {
            self.event_is_new = self.events.add(tick);
        }
        if self.event_is_new {
            if is_start {
                if induced && condemned >= 0 {
                    for g in 0..=condemned {
                        let Some(c) = self.induced.get_mut(g as usize) else {
                            return Err(Problem::InducedGenerationOutOfRange { condemned });
                        };
                        *c += 1;
                    }
                }
            } else {
                let top = if condemned == 2 { 3 } else { condemned };
                if top >= 0 {
                    for g in 0..=top {
                        let g = g as usize;
                        if g >= 4 {
                            return Err(Problem::CondemnedGenerationOutOfRange { condemned });
                        }
                        self.cumulative[g] = self.cumulative[g].wrapping_add(self.size[g]);
                        self.count[g] += 1;
                    }
                }
            }
        }
        self.size = [0; 4];
        Ok(self.event_is_new)
    }

    /// A range of a `b` line (after the heap simulation saw it).
    pub(crate) fn range(&mut self, generation: i32, length: u64) -> Result<(), Problem> {
        match self.size.get_mut(generation as usize) {
            Some(s) if generation >= 0 => {
                *s = s.wrapping_add(length);
                Ok(())
            }
            _ => Err(Problem::GenerationOutOfRange { generation }),
        }
    }

    /// GCs counted per generation (0-2, and 3 for the large object heap).
    pub fn counts(&self) -> [u64; 4] {
        self.count
    }

    /// Induced GCs per generation.
    pub fn induced(&self) -> [u64; 3] {
        self.induced
    }

    /// Sums of range lengths added at counted GCs.
    pub fn cumulative_sizes(&self) -> [u64; 4] {
        self.cumulative
    }

    /// Range lengths of the last `b` line.
    pub fn last_sizes(&self) -> [u64; 4] {
        self.size
    }

    /// Accepted GC starts.
    pub fn accepted_starts(&self) -> usize {
        self.events.len()
    }
}
