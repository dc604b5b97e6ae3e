//! Simulated time and the `i` lines.
//!
//! Time runs with allocation (a fixed allocation rate, in bytes per
//! millisecond) plus GC pauses. Like CLRProfiler's profiler, the generator
//! writes an `i` line before an allocation whenever the millisecond count
//! has changed, and a fresh one (strictly later) before every `b` line.
//! Values are written as `(tick_start + elapsed) mod 2^32`.

use super::emit::Emitter;
use super::reader_clock::ReaderClock;
use std::io;

/// The simulated clock.
pub struct Clock {
    tick_start: u64,
    bytes_per_ms: u64,
    pause_ms: u64,
    last: Option<u64>,
    /// Below this many allocated bytes, `now` is `current`.
    boundary: u64,
    current: u64,
    reader: ReaderClock,
    ticks_written: u64,
    first_value: Option<u32>,
    last_value: Option<u32>,
    wraps: u64,
}

impl Clock {
    /// A clock starting at `tick_start` ms, running at `mb_per_s`
    /// megabytes of allocation per second.
    pub fn new(tick_start: u64, mb_per_s: f64) -> Clock {
        let bytes_per_ms = ((mb_per_s * 1000.0) as u64).max(1);
        Clock {
            tick_start,
            bytes_per_ms,
            pause_ms: 0,
            last: None,
            boundary: 0,
            current: 0,
            reader: ReaderClock::default(),
            ticks_written: 0,
            first_value: None,
            last_value: None,
            wraps: 0,
        }
    }

    /// Elapsed ms after `alloc_bytes` of allocation.
    #[inline]
    pub fn now(&self, alloc_bytes: u64) -> u64 {
        alloc_bytes / self.bytes_per_ms + self.pause_ms
    }

    /// The last elapsed ms written (0 before any).
    pub fn last(&self) -> u64 {
        self.last.unwrap_or(0)
    }

    /// Before an allocation: writes an `i` line if the clock moved, and
    /// returns the elapsed ms the allocation happens at.
    #[inline]
    pub fn before_alloc(&mut self, alloc_bytes: u64, out: &mut Emitter) -> io::Result<u64> {
        if alloc_bytes < self.boundary {
            return Ok(self.current);
        }
        self.boundary = (alloc_bytes / self.bytes_per_ms + 1) * self.bytes_per_ms;
        let now = self.now(alloc_bytes);
        self.current = match self.last {
            Some(l) if now <= l => l,
            _ => {
                self.write(now, out)?;
                now
            }
        };
        Ok(self.current)
    }

    /// Writes a tick strictly later than the last one and at least
    /// `at_least`; returns it.
    pub fn fresh(&mut self, at_least: u64, out: &mut Emitter) -> io::Result<u64> {
        let t = match self.last {
            Some(l) => at_least.max(l + 1),
            None => at_least,
        };
        self.write(t, out)?;
        self.boundary = 0;
        Ok(t)
    }

    /// Makes time after `alloc_bytes` of allocation no earlier than `t`
    /// (a GC pause).
    pub fn hold_until(&mut self, alloc_bytes: u64, t: u64) {
        let now = self.now(alloc_bytes);
        if now < t {
            self.pause_ms += t - now;
        }
        self.boundary = 0;
    }

    fn write(&mut self, elapsed: u64, out: &mut Emitter) -> io::Result<()> {
        let value = self.tick_start.wrapping_add(elapsed) as u32;
        if let Some(prev) = self.last_value {
            if value < prev {
                self.wraps += 1;
            }
        }
        self.first_value.get_or_insert(value);
        self.last_value = Some(value);
        self.last = Some(elapsed);
        self.ticks_written += 1;
        self.reader.tick(value);
        out.tick(value)
    }

    /// Tells the reader model about a `z` line.
    pub fn note_comment(&mut self) {
        self.reader.comment();
    }

    /// The tick index CLRProfiler's reader is at.
    pub fn reader_index(&self) -> u64 {
        self.reader.index()
    }

    /// Facts about the ticks written, for the truth file.
    pub fn stats(&self) -> TickStats {
        TickStats {
            i_lines: self.ticks_written,
            start_offset: self.tick_start,
            first_written: self.first_value,
            last_written: self.last_value,
            last_elapsed_ms: self.last(),
            wraps: self.wraps,
        }
    }
}

/// Facts about the `i` lines of a log.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TickStats {
    /// `i` lines written.
    pub i_lines: u64,
    /// `--tick-start`.
    pub start_offset: u64,
    /// The first value written.
    pub first_written: Option<u32>,
    /// The last value written.
    pub last_written: Option<u32>,
    /// Elapsed ms at the last tick.
    pub last_elapsed_ms: u64,
    /// Times the written value wrapped past 2^32.
    pub wraps: u64,
}
