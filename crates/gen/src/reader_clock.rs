//! CLRProfiler's tick-index bookkeeping, replayed so the truth file can say
//! exactly which GCs and heap dumps its Summary counts.
//!
//! The reference reader turns `i` values into "time slots": a value read
//! as a signed 32-bit number, corrected for wraparound when it looks more
//! than 2^31 ms earlier than the last slot, ignored when still earlier,
//! and given a new slot only when at least about 1 ms later (the
//! resolution halves every 1,048,575 slots). Every `z` comment takes a slot
//! of its own while fewer than half the slots are in use. A GC start or a
//! heap dump counts only when its slot is later than the previous one's.
//! See `FORMAT.md`, "Time, addresses and the sample table".

/// Slots the reference reader can hold.
const MAX_SLOTS: u64 = (1 << 23) - 1;
/// Slots per halving of the time resolution.
const SLOTS_PER_RESOLUTION_STEP: u64 = MAX_SLOTS / 8;

/// The reference reader's current tick index.
#[derive(Clone, Debug)]
pub struct ReaderClock {
    /// Time of the newest slot, in ms as the reader unwrapped it.
    last_ms: i64,
    /// Slots in use (the reader starts with one slot at time 0).
    slots: u64,
}

impl Default for ReaderClock {
    fn default() -> Self {
        ReaderClock { last_ms: 0, slots: 1 }
    }
}

impl ReaderClock {
    /// An `i` line with this value.
    pub fn tick(&mut self, value: u32) {
        let mut t = value as i32 as i64;
        while t + (1i64 << 31) < self.last_ms {
            t += 1i64 << 32;
        }
        if t < self.last_ms {
            return;
        }
        // The reader compares seconds against 0.000999 * 2^k.
        let step = 999i64 << (self.slots / SLOTS_PER_RESOLUTION_STEP).min(40);
        if self.slots < MAX_SLOTS && (t - self.last_ms) * 1000 >= step {
            self.last_ms = t;
            self.slots += 1;
        }
    }

    /// A `z` line.
    pub fn comment(&mut self) {
        if self.slots < MAX_SLOTS / 2 {
            self.slots += 1;
        }
    }

    /// The tick index the reader gives the next record.
    pub fn index(&self) -> u64 {
        self.slots - 1
    }
}

/// CLRProfiler's event lists (GCs, heap dumps): an event counts only when
/// its tick index is later than the last counted one's.
#[derive(Clone, Debug, Default)]
pub struct EventGate {
    last: Option<u64>,
}

impl EventGate {
    /// Offers an event at `index`; true when the reader would count it.
    pub fn offer(&mut self, index: u64) -> bool {
        if matches!(self.last, Some(l) if index <= l) {
            return false;
        }
        self.last = Some(index);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_follow_the_reference_rules() {
        let mut c = ReaderClock::default();
        c.tick(0);
        assert_eq!(c.index(), 0, "same time as the initial slot");
        c.tick(5);
        assert_eq!(c.index(), 1);
        c.tick(5);
        assert_eq!(c.index(), 1);
        c.tick(3);
        assert_eq!(c.index(), 1, "backward jumps are ignored");
        c.comment();
        assert_eq!(c.index(), 2);
        c.tick(6);
        assert_eq!(c.index(), 3);
    }

    #[test]
    fn wraparound_is_corrected() {
        let mut c = ReaderClock::default();
        c.tick(0x7FFF_FFF0);
        assert_eq!(c.index(), 1);
        c.tick(0x8000_0005); // negative as i32, but 21 ms later
        assert_eq!(c.index(), 2);
        c.tick(0xFFFF_FFFF);
        assert_eq!(c.index(), 3);
        c.tick(3); // past 2^32
        assert_eq!(c.index(), 4);
    }

    #[test]
    fn a_first_tick_past_2_31_is_ignored() {
        let mut c = ReaderClock::default();
        c.tick(0xFFFF_0000);
        assert_eq!(c.index(), 0);
        c.tick(10);
        assert_eq!(c.index(), 1);
    }

    #[test]
    fn events_need_later_indices() {
        let mut g = EventGate::default();
        assert!(g.offer(0));
        assert!(!g.offer(0));
        assert!(g.offer(3));
        assert!(!g.offer(2));
    }
}
