//! The simulation's write-only output, built off its thread.
//!
//! Two tables are written by the heap simulation but never read by it while
//! a log loads: the allocation table's columns (stack, thread, address,
//! tick of every object) with the allocated-objects histogram, and the
//! sample table (the history of every 1 KB grain). Only the order of the
//! writes matters (sample ids are numbered in creation order), so the
//! simulation hands them over as a stream of [`Deferred`] records, in
//! order, and a [`Recorder`] applies that stream to the tables:
//!
//! ```text
//! parsing threads --ops--> simulation thread --Deferred batches--> recorder thread
//!                          (live store, intervals,                 (allocation columns,
//!                           fates, GCs, histograms)                 allocated counts,
//!                                                                   sample table)
//! ```
//!
//! [`Outbox`] is the simulation's end: with a recorder inside (a builder
//! fed by hand), every record is applied at once, so an error of the sample
//! table comes at the record that caused it; without one (the loader), the
//! records are queued and [`crate::model::load`] sends each chunk's batch
//! to a recorder on its own thread. The sample table's range check is made
//! on the simulation's side, so the only error the recorder can meet is
//! the table's size limit (2^32 samples), and then the loader runs again
//! with the recorder inline to report it at its record.

use super::allocations::AllocationTable;
use super::error::Problem;
use super::histogram::StackCounts;
use super::ids::{StackRef, ThreadRef, TickIndex};
use super::samples::SampleTable;

/// One write for the recorder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Deferred {
    /// An object allocated (its row in the allocation table is the next).
    Object { address: u64, row: u32, thread: u32, tick: u32 },
    /// A sample-table change of `[start, end)` (section 4.2
    /// `record_change`; `type_id` 0 and `alloc` 0: freed).
    Change { start: u64, end: u64, change: u32, alloc: u32, type_id: i32 },
    /// A GC's generation and tick (the sample table's GC list).
    GcTick { generation: i32, tick: u32 },
}

/// The tables the deferred records build.
#[derive(Clone, Debug, Default)]
pub(crate) struct Recorder {
    /// The allocation table's columns (its fates are kept by the builder).
    pub columns: AllocationTable,
    /// Objects allocated per stack row.
    pub allocated: StackCounts,
    pub samples: SampleTable,
    /// The first error met (the sample table's size limit).
    pub failed: Option<Problem>,
}

impl Recorder {
    pub(crate) fn new() -> Self {
        Recorder { samples: SampleTable::new(), ..Default::default() }
    }

    /// Applies one record.
    #[inline]
    pub(crate) fn apply(&mut self, d: &Deferred) -> Result<(), Problem> {
        match *d {
            Deferred::Object { address, row, thread, tick } => {
                // The builder counts objects and stops at the limit, so
                // there is always a row for this one.
                let _ = self.columns.push(StackRef(row), ThreadRef(thread), address, TickIndex(tick));
                self.allocated.add(StackRef(row));
                Ok(())
            }
            Deferred::Change { start, end, change, alloc, type_id } => self.samples.record_change(start, end, change, alloc, type_id),
            Deferred::GcTick { generation, tick } => {
                self.samples.gc_tick(generation, tick);
                Ok(())
            }
        }
    }

    /// Applies a batch; after an error, only the allocation columns are
    /// kept up (the load is run again to report the error).
    pub(crate) fn apply_all(&mut self, batch: &[Deferred]) {
        for d in batch {
            if self.failed.is_some() {
                if let Deferred::Object { .. } = d {
                    let _ = self.apply(d);
                }
                continue;
            }
            if let Err(p) = self.apply(d) {
                self.failed = Some(p);
            }
        }
    }

    /// Freezes the tables (shrinks them).
    pub(crate) fn finish(&mut self) {
        self.columns.finish();
        self.samples.finish();
    }
}

/// The simulation's end of the stream (see the module documentation; the
/// default queues).
#[derive(Clone, Debug, Default)]
pub(crate) struct Outbox {
    /// `Some`: records are applied at once.
    inline: Option<Box<Recorder>>,
    queue: Vec<Deferred>,
}

impl Outbox {
    /// An outbox applying every record at once.
    pub(crate) fn inline() -> Self {
        Outbox { inline: Some(Box::new(Recorder::new())), queue: Vec::new() }
    }

    /// Raises the most bytes the inline recorder's sample table may take
    /// (see [`crate::limits::history_bytes`]).
    pub(crate) fn allow_history(&mut self, bytes: u64) {
        if let Some(r) = &mut self.inline {
            r.samples.allow(bytes);
        }
    }

    /// Records queued and not yet handed over.
    #[inline]
    pub(crate) fn queue_len(&self) -> usize {
        self.queue.len()
    }

    /// Takes the recorder out: records are queued from now on.
    pub(crate) fn take_recorder(&mut self) -> Option<Box<Recorder>> {
        self.inline.take()
    }

    /// Puts a recorder back (the queue is applied to it first).
    pub(crate) fn put_recorder(&mut self, mut r: Box<Recorder>) {
        r.apply_all(&self.queue);
        self.queue.clear();
        self.inline = Some(r);
    }

    /// The queued records, replaced by `spare` (emptied).
    pub(crate) fn swap_queue(&mut self, mut spare: Vec<Deferred>) -> Vec<Deferred> {
        spare.clear();
        std::mem::replace(&mut self.queue, spare)
    }

    /// Records queued so far.
    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        self.queue.len()
    }

    #[inline]
    fn send(&mut self, d: Deferred) -> Result<(), Problem> {
        match &mut self.inline {
            Some(r) => r.apply(&d),
            None => {
                self.queue.push(d);
                Ok(())
            }
        }
    }

    /// An object allocated.
    #[inline]
    pub(crate) fn object(&mut self, row: StackRef, thread: ThreadRef, address: u64, tick: TickIndex) {
        let _ = self.send(Deferred::Object { address, row: row.0, thread: thread.0, tick: tick.0 });
    }

    /// An object placed at `[start, end)` (allocation or move destination).
    #[inline]
    pub(crate) fn insert(&mut self, start: u64, end: u64, now: u32, alloc: u32, type_id: i32) -> Result<(), Problem> {
        if SampleTable::crosses_grain(start, end) {
            SampleTable::check_range(start, end)?;
            self.send(Deferred::Change { start, end, change: now, alloc, type_id })
        } else {
            Ok(())
        }
    }

    /// `[start, end)` became free.
    #[inline]
    pub(crate) fn free(&mut self, start: u64, end: u64, now: u32) -> Result<(), Problem> {
        self.insert(start, end, now, 0, 0)
    }

    /// A GC: its generation and tick.
    pub(crate) fn gc_tick(&mut self, generation: i32, tick: u32) {
        let _ = self.send(Deferred::GcTick { generation, tick });
    }

    /// The recorder, after the queue is applied to it (a builder without
    /// its recorder gets an empty one: only a loader that lost its
    /// recorder thread can get there, and it reports that).
    pub(crate) fn into_recorder(mut self) -> Box<Recorder> {
        let mut r = self.inline.take().unwrap_or_default();
        r.apply_all(&self.queue);
        r
    }

    /// Bytes held (the queue, and the inline recorder's tables).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.queue.capacity() * std::mem::size_of::<Deferred>()
            + self.inline.as_ref().map_or(0, |r| r.samples.heap_bytes() + r.columns.heap_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_small() {
        assert!(std::mem::size_of::<Deferred>() <= 32);
    }

    #[test]
    fn queued_equals_inline() {
        // The same writes, applied at once and through a queue.
        let mut a = Outbox::inline();
        let mut b = Outbox::inline();
        let rec = b.take_recorder();
        for k in 0..5000u64 {
            for o in [&mut a, &mut b] {
                o.object(StackRef((k % 7) as u32), ThreadRef((k % 3) as u32), 0x1000 + 24 * k, TickIndex((k / 100) as u32));
                o.insert(0x1000 + 700 * k, 0x1000 + 700 * k + 2000, (k / 100) as u32, (k / 90) as u32, (k % 5) as i32).unwrap();
                if k % 1000 == 999 {
                    o.gc_tick((k % 3) as i32, (k / 100) as u32);
                    o.free(0x1000, 0x1000 + 300 * k, (k / 100) as u32).unwrap();
                }
            }
        }
        assert!(b.queued() > 0);
        let mut rec = rec.unwrap();
        let q = b.swap_queue(Vec::new());
        rec.apply_all(&q);
        b.put_recorder(rec);
        let (mut ra, mut rb) = (a.into_recorder(), b.into_recorder());
        ra.finish();
        rb.finish();
        assert_eq!(ra.allocated, rb.allocated);
        assert_eq!(ra.samples.len(), rb.samples.len());
        assert!(ra.samples.len() > 1000);
        let sa: Vec<_> = ra.samples.samples().iter().collect();
        let sb: Vec<_> = rb.samples.samples().iter().collect();
        assert_eq!(sa, sb);
        assert_eq!(ra.samples.gc_ticks(), rb.samples.gc_ticks());
        assert_eq!(ra.samples.last_change(), rb.samples.last_change());
        assert!(ra.columns.addresses().eq(rb.columns.addresses()));
        assert_eq!(ra.columns.len(), 5000);
    }

    #[test]
    fn range_check_on_the_simulation_side() {
        let mut b = Outbox::inline();
        let _rec = b.take_recorder();
        // More than 2^28 grains in one range: refused before queueing.
        assert!(b.free(0, 1 << 40, 1).is_err());
        assert_eq!(b.queued(), 0);
    }
}
