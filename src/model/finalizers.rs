//! Finalization: `l` records that named a live object.
//!
//! An object is counted once, however many `l` records name it. The
//! runtime reports the whole f-reachable queue at every GC (CoreCLR's
//! `CFinalize::WalkFReachableObjects`, called from each GC's mark phase,
//! calls `FinalizeableObjectQueued` for every object still waiting for its
//! finalizer, not only the ones queued by this GC), and a profiler writes
//! one `l` per call (CLRProfiler's `ProfilerCallback::FinalizeableObjectQueued`
//! does, and so does the agent). When the finalizer thread lags behind,
//! as it does while a heap dump's GC holds the process, the same live
//! object is named again at the next GC. CLRProfiler's reader counts every
//! `l` that names a live object, so it would count such an object once per
//! GC that saw it on the queue; this table counts it at its first `l`
//! only (the heap simulation keeps the object's identity through moves, so
//! a repeat at a new address is still recognized) and counts the repeats
//! apart ([`FinalizerTable::repeated_count`]). On logs without repeats,
//! such as every reference log, the figures are CLRProfiler's.

use super::ids::{ObjectId, TickIndex};

/// An object queued for finalization.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Finalization {
    /// The object.
    pub object: ObjectId,
    /// When.
    pub tick: TickIndex,
    /// A critical finalizer.
    pub critical: bool,
}

/// The `l` records that matched a live object, in log order, and how many
/// did not.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct FinalizerTable {
    events: Vec<Finalization>,
    unmatched: u64,
    #[serde(default)]
    repeated: u64,
    /// Objects already queued, one bit per [`ObjectId`] (only needed while
    /// the log is read).
    #[serde(skip)]
    queued: Vec<u64>,
}

impl FinalizerTable {
    /// Records `f` unless its object was queued before; returns whether it
    /// was recorded (a first finalization).
    pub(crate) fn matched(&mut self, f: Finalization) -> bool {
        let i = f.object.index();
        let (word, bit) = (i / 64, 1u64 << (i % 64));
        if word >= self.queued.len() {
            self.queued.resize((word + 1).max(self.queued.len() * 2), 0);
        }
        if self.queued[word] & bit != 0 {
            self.repeated += 1;
            return false;
        }
        self.queued[word] |= bit;
        self.events.push(f);
        true
    }

    pub(crate) fn unmatched(&mut self) {
        self.unmatched += 1;
    }

    /// Finalizations of live objects.
    pub fn events(&self) -> &[Finalization] {
        &self.events
    }

    /// `l` records naming no live object start.
    pub fn unmatched_count(&self) -> u64 {
        self.unmatched
    }

    /// `l` records naming an object already queued for finalization (the
    /// runtime reports the f-reachable queue at every GC: see the module
    /// documentation); not counted as finalizations.
    pub fn repeated_count(&self) -> u64 {
        self.repeated
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.events.capacity() * std::mem::size_of::<Finalization>() + self.queued.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use crate::model::load;
    use crate::query::summary::summary;

    /// Two `Session` objects; the first is queued at GC 1, still on the
    /// f-reachable queue at GC 2 (moved by GC 1, named again at its new
    /// address) and at GC 3, the second is queued at GC 2 only.
    const LOG: &str = "t 1 1 Session\nn 1 1 1 24\ni 1\n! 1 0x1000 1\n! 1 0x1018 1\n\
i 2\nb 1 0 0 0x1000 0x30 0x10000 0\nl 0 0x1000\nu 0x1000 0x2000 0x30\nb 0 0 0 0x2000 0x30 0x10000 0\n\
i 3\nb 1 0 1 0x2000 0x30 0x10000 1\nl 0 0x2000\nl 1 0x2018\nv 0x2000 0x30\nb 0 0 1 0x2000 0x30 0x10000 1\n\
i 4\nb 1 0 1 0x2000 0x30 0x10000 1\nl 0 0x2000\nv 0x2000 0x30\nb 0 0 1 0x2000 0x30 0x10000 1\n";

    #[test]
    fn an_object_is_finalized_once_however_often_it_is_named() {
        let model = load(LOG.as_bytes(), &Default::default()).expect("load");
        let f = model.finalizers();
        let objects: Vec<u32> = f.events().iter().map(|e| e.object.0).collect();
        assert_eq!(objects, [0, 1], "each object once, at its first `l`");
        assert!(f.events()[1].critical);
        assert_eq!((f.repeated_count(), f.unmatched_count()), (2, 0));
        let s = summary(&model);
        assert_eq!((s.objects_finalized, s.critical_objects_finalized), (Some(2), Some(1)));
    }

    #[test]
    fn a_new_object_at_a_finalized_objects_address_is_another_object() {
        // The first object dies at GC 2 (nothing covers it); a new one is
        // allocated at its address and queued: two finalizations.
        let log = "t 1 1 Session\nn 1 1 1 24\ni 1\n! 1 0x1000 1\n\
i 2\nb 1 0 0 0x1000 0x18 0x10000 0\nl 0 0x1000\nb 0 0 0 0x1000 0x18 0x10000 0\n\
i 3\nb 1 0 0 0x1000 0x18 0x10000 0\nb 0 0 0 0x1000 0 0x10000 0\n\
i 4\n! 1 0x1000 1\nb 1 0 0 0x1000 0x18 0x10000 0\nl 0 0x1000\nb 0 0 0 0x1000 0x18 0x10000 0\n";
        let model = load(log.as_bytes(), &Default::default()).expect("load");
        assert_eq!(model.finalizers().events().len(), 2);
        assert_eq!(model.finalizers().repeated_count(), 0);
    }
}
