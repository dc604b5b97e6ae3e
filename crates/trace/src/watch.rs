//! The events of a trace as it arrives, for what a session must react to:
//! the end of the heap walk it asked for.
//!
//! The trace's bytes are fed in as they come ([`crate::blocks`]); only
//! the block still arriving is kept.

use crate::blocks::{Blocks, Item};
use std::collections::HashMap;

/// Reads a trace as it arrives.
#[derive(Default)]
pub struct Watch {
    blocks: Blocks,
    /// Metadata id -> the runtime event id, for the runtime's events.
    runtime: HashMap<u32, u32>,
    /// Events seen, by kind.
    pub gc_starts: u64,
    /// `GC/Stop` events seen.
    pub gc_stops: u64,
    /// `GC/BulkNode` events seen.
    pub node_batches: u64,
    /// `GC/Stop` events after the first `GC/BulkNode`: the heap walk is
    /// over once one is seen.
    pub stops_after_nodes: u64,
    /// The trace could not be read (the session goes on; the file is
    /// written as it comes).
    pub broken: Option<String>,
}

impl Watch {
    /// A watch of a trace from its first byte.
    pub fn new() -> Watch {
        Watch::default()
    }

    /// Takes the next bytes of the trace.
    pub fn feed(&mut self, bytes: &[u8]) {
        let mut seen = Vec::new();
        let runtime = &mut self.runtime;
        self.blocks.feed(bytes, |item| match item {
            Item::Metadata(m) => {
                if m.provider == crate::presets::RUNTIME {
                    runtime.insert(m.id.0, m.event_id);
                }
            }
            Item::Event(header, _) => {
                if let Some(&id) = runtime.get(&header.metadata_id.0) {
                    seen.push(id);
                }
            }
        });
        for id in seen {
            self.saw(id);
        }
        self.broken.clone_from(&self.blocks.broken);
    }

    fn saw(&mut self, runtime_event: u32) {
        match runtime_event {
            1 => self.gc_starts += 1,
            2 => {
                self.gc_stops += 1;
                if self.node_batches > 0 {
                    self.stops_after_nodes += 1;
                }
            }
            18 => self.node_batches += 1,
            _ => {}
        }
    }

    /// Whether a heap walk has been read to its end (its GC stopped).
    pub fn heap_walk_done(&self) -> bool {
        self.stops_after_nodes > 0
    }
}
