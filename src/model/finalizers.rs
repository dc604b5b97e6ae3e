//! Finalization: `l` records that named a live object.

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
}

impl FinalizerTable {
    pub(crate) fn matched(&mut self, f: Finalization) {
        self.events.push(f);
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

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.events.capacity() * std::mem::size_of::<Finalization>()
    }
}
