//! GC handles: `h` created, `j` destroyed.

use super::ids::{ThreadRef, TickIndex};
use crate::format::{Address, HandleId, StackId};
use std::collections::HashMap;

/// One `h` or `j` record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
#[derive(Clone, Debug, Default)]
pub struct HandleTable {
    created: Vec<HandleEvent>,
    destroyed: Vec<HandleEvent>,
    live: HashMap<u64, u32>,
}

impl HandleTable {
    pub(crate) fn create(&mut self, e: HandleEvent) {
        self.live.insert(e.handle.0, self.created.len() as u32);
        self.created.push(e);
    }

    pub(crate) fn destroy(&mut self, e: HandleEvent) {
        self.live.remove(&e.handle.0);
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
            + self.live.capacity() * 12
    }
}
