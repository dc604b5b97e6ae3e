//! GC handles: `h` created, `j` destroyed.

use super::ids::{ThreadRef, TickIndex};
use crate::format::{Address, HandleId, StackId};
use std::collections::HashMap;

/// One `h` or `j` record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HandleEvent {
    /// When.
    pub tick: TickIndex,
    /// The thread.
    pub thread: ThreadRef,
    /// The handle.
    pub handle: HandleId,
    /// The object it first referred to (creation only; 0 otherwise).
    pub object: Address,
    /// The stack id as written (handles are not renumbered).
    pub stack: StackId,
}

/// Handle events and the handles alive at the end.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct HandleTable {
    created: Vec<HandleEvent>,
    destroyed: Vec<HandleEvent>,
    /// For each destroyed event, the index in `created` of the handle it
    /// removed (`NONE` for an unknown id).
    removed: Vec<u32>,
    live: HashMap<u64, u32>,
}

const NONE: u32 = u32::MAX;

impl HandleTable {
    pub(crate) fn create(&mut self, e: HandleEvent) {
        self.live.insert(e.handle.0, self.created.len() as u32);
        self.created.push(e);
    }

    pub(crate) fn destroy(&mut self, e: HandleEvent) {
        let removed = self.live.remove(&e.handle.0).unwrap_or(NONE);
        self.removed.push(removed);
        self.destroyed.push(e);
    }

    /// `h` records applied.
    pub fn created(&self) -> &[HandleEvent] {
        &self.created
    }

    /// `j` records applied (unknown handles included).
    pub fn destroyed(&self) -> &[HandleEvent] {
        &self.destroyed
    }

    /// The creation a `j` record removed: for `destroyed()[k]`, the `h`
    /// record of the live handle with that id then (`None` when the id was
    /// not live: CLRProfiler ignores such a `j`, but still counts it).
    pub fn creation_of_destroyed(&self, k: usize) -> Option<&HandleEvent> {
        self.removed.get(k).and_then(|&i| self.created.get(i as usize))
    }

    /// Handles created and not destroyed (a reused id counts once).
    pub fn surviving(&self) -> impl Iterator<Item = &HandleEvent> + '_ {
        self.live.values().map(|&i| &self.created[i as usize])
    }

    /// Number of surviving handles.
    pub fn surviving_count(&self) -> usize {
        self.live.len()
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        (self.created.capacity() + self.destroyed.capacity()) * std::mem::size_of::<HandleEvent>()
            + self.removed.capacity() * 4
            + self.live.capacity() * 12
    }
}
