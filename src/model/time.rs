//! The time table: CLRProfiler's "tick indices".
//!
//! Every event is stamped with a slot of this table, never with
//! milliseconds. `i` records add a slot when the clock moved on by about a
//! millisecond or more (the resolution halves every 1,048,575 slots, up to
//! 8,388,607 slots), with 32-bit wraparound correction; `z` comments take a
//! slot of their own at the same time while fewer than 4,194,303 exist.
//! Times are kept as CLRProfiler computes them (`f64` seconds: the `i32`
//! value times 0.001, plus 4294967.296 per wrap), so that they compare
//! bit-exactly with its output. Section 1 of `docs/src/reference-reader.md`.

use super::ids::TickIndex;

/// At most this many slots exist.
pub const MAX_SLOTS: usize = 8_388_607;
/// Comments take a slot only while fewer than this many exist.
pub const COMMENT_SLOT_LIMIT: usize = MAX_SLOTS / 2;
const STEP: usize = MAX_SLOTS / 8;

/// The time table.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct TimeTable {
    seconds: Vec<f64>,
    offsets: Vec<u64>,
    current: u32,
    max_assigned: u32,
}

impl Default for TimeTable {
    fn default() -> Self {
        TimeTable { seconds: vec![0.0], offsets: vec![0], current: 0, max_assigned: 0 }
    }
}

impl TimeTable {
    pub(crate) fn new() -> Self {
        TimeTable::default()
    }

    /// The current tick index (the latest `i` or `z` result).
    #[inline]
    pub(crate) fn current(&self) -> TickIndex {
        TickIndex(self.current)
    }

    fn newest(&self) -> u32 {
        (self.seconds.len() - 1) as u32
    }

    /// An `i` record with value `value` (read as `i32`) at byte `offset`.
    pub(crate) fn on_tick(&mut self, value: i32, offset: u64) {
        let mut t = value as f64 * 0.001;
        let last = *self.seconds.last().unwrap_or(&0.0);
        let half = 2147483648.0f64 * 0.001;
        let full = 4294967296.0f64 * 0.001;
        // A wrap adds 2^32 ms, once per wrap as the reference adds it. Only a
        // log with thousands of wraps (adversarial) takes the shortcut, which
        // may differ from the reference in the last bit of the time.
        let wraps = (last - half - t) / full;
        if wraps > 4096.0 && wraps.is_finite() {
            t += (wraps.floor() - 2.0) * full;
        }
        while t + half < last {
            t += full;
        }
        if t >= last {
            let k = self.seconds.len() / STEP;
            let increment = 0.000999 * (1u64 << k) as f64;
            if self.seconds.len() < MAX_SLOTS && t - last >= increment {
                self.seconds.push(t);
                self.offsets.push(offset);
            }
        }
        self.set_current();
    }

    /// A `z` record at byte `offset`.
    pub(crate) fn on_comment(&mut self, offset: u64) {
        if self.seconds.len() < COMMENT_SLOT_LIMIT {
            let last = *self.seconds.last().unwrap_or(&0.0);
            self.seconds.push(last);
            self.offsets.push(offset);
        }
        self.set_current();
    }

    fn set_current(&mut self) {
        self.current = self.newest();
        self.max_assigned = self.max_assigned.max(self.current);
    }

    /// Number of slots (CLRProfiler's `time_pos_count`).
    pub fn len(&self) -> usize {
        self.seconds.len()
    }

    /// Never true: slot 0 always exists.
    pub fn is_empty(&self) -> bool {
        self.seconds.is_empty()
    }

    /// The largest tick index assigned by an `i` or `z` record.
    pub fn max_assigned(&self) -> TickIndex {
        TickIndex(self.max_assigned)
    }

    /// The time of a slot in seconds (`None` beyond the table).
    pub fn seconds(&self, tick: TickIndex) -> Option<f64> {
        self.seconds.get(tick.index()).copied()
    }

    /// The time of a slot in milliseconds, rounded.
    pub fn millis(&self, tick: TickIndex) -> Option<u64> {
        self.seconds(tick).map(|s| (s * 1000.0).round() as u64)
    }

    /// The byte offset of the record that created a slot.
    pub fn offset(&self, tick: TickIndex) -> Option<u64> {
        self.offsets.get(tick.index()).copied()
    }

    /// The last slot whose time is at most `seconds` (slot 0 for earlier
    /// times), compared in milliseconds with a millionth of one to spare:
    /// a time read back from the tool's output finds the slot it was shown
    /// for (`9 * 0.001`, a slot's time, is a bit more than `9.0 / 1000.0`).
    pub fn tick_at(&self, seconds: f64) -> TickIndex {
        let ms = seconds * 1000.0 + 1e-6;
        let k = self.seconds.partition_point(|&s| s * 1000.0 <= ms);
        TickIndex(k.saturating_sub(1) as u32)
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.seconds.capacity() * 8 + self.offsets.capacity() * 8
    }

    pub(crate) fn shrink(&mut self) {
        self.seconds.shrink_to_fit();
        self.offsets.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_as_shown_finds_its_slot() {
        // 9 * 0.001 is a bit more than 9.0 / 1000.0: compared as read,
        // the tick at 9 ms was not "at or before" 9 ms.
        let mut t = TimeTable::new();
        t.on_tick(5, 10);
        t.on_tick(9, 20);
        t.on_comment(30);
        assert_eq!(t.tick_at(9.0 / 1000.0), TickIndex(3), "the comment's slot at 9 ms, the last at 9 ms");
        assert_eq!(t.tick_at(8.0 / 1000.0), TickIndex(1));
        assert_eq!(t.tick_at(-1.0), TickIndex(0));
        for ms in 1..2000u32 {
            let mut t = TimeTable::new();
            t.on_tick(ms as i32, 0);
            assert_eq!(t.tick_at(f64::from(ms) / 1000.0), TickIndex(1), "{ms} ms");
        }
    }

    #[test]
    fn wraparound_example() {
        // Section 1.2, quirk-q6_ticks.
        let mut t = TimeTable::new();
        let steps: [(u32, u32); 8] = [
            (1000, 1),
            (2147483000, 2),
            (2147484000, 3),
            (4294967000, 4),
            (5, 5),
            (100, 6),
            (4294967295, 6),
            (50, 6),
        ];
        for (v, want) in steps {
            t.on_tick(v as i32, 0);
            assert_eq!(t.current(), TickIndex(want), "value {v}");
        }
        assert_eq!(t.len(), 7);
        assert_eq!(t.seconds(TickIndex(3)), Some(-2147483.296 + 4294967.296));
    }

    #[test]
    fn merging_and_comments() {
        let mut t = TimeTable::new();
        t.on_comment(0);
        assert_eq!(t.current(), TickIndex(1));
        t.on_tick(1, 0);
        t.on_tick(5, 0);
        t.on_tick(5, 0);
        t.on_tick(3, 0);
        assert_eq!(t.current(), TickIndex(3));
        t.on_comment(0);
        assert_eq!(t.current(), TickIndex(4));
        assert_eq!(t.seconds(TickIndex(4)), Some(0.005));
    }
}
