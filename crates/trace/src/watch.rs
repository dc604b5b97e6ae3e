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
    /// `GC/Stop` events of blocking gen-2 GCs after the first
    /// `GC/BulkNode`: the heap walk is over once one is seen.
    pub stops_after_nodes: u64,
    /// The GC in progress is a blocking gen-2 GC (`GC/Start`'s `Depth` 2,
    /// `Type` not 1): the only kind whose heap walk is a snapshot of live
    /// objects. CoreCLR 3.1 also walks the heap in a gen-0 GC that comes
    /// first while the session is on; its walk is not the one asked for.
    full_gc: bool,
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
        let mut seen: Vec<(u32, bool)> = Vec::new();
        let runtime = &mut self.runtime;
        self.blocks.feed(bytes, |item| match item {
            Item::Metadata(m) => {
                if m.provider == crate::presets::RUNTIME {
                    runtime.insert(m.id.0, m.event_id);
                }
            }
            Item::Event(header, payload) => {
                if let Some(&id) = runtime.get(&header.metadata_id.0) {
                    seen.push((id, id == 1 && is_full_blocking(payload)));
                }
            }
        });
        for (id, full) in seen {
            self.saw(id, full);
        }
        self.broken.clone_from(&self.blocks.broken);
    }

    fn saw(&mut self, runtime_event: u32, full: bool) {
        match runtime_event {
            1 => {
                self.gc_starts += 1;
                self.full_gc = full;
            }
            2 => {
                self.gc_stops += 1;
                if self.node_batches > 0 && self.full_gc {
                    self.stops_after_nodes += 1;
                }
            }
            18 => self.node_batches += 1,
            _ => {}
        }
    }

    /// Whether a heap walk has been read to its end (its blocking gen-2
    /// GC stopped).
    pub fn heap_walk_done(&self) -> bool {
        self.stops_after_nodes > 0
    }
}

/// Whether a `GC/Start` payload (`Count`, `Depth`, `Reason`, `Type`, each
/// a 32-bit little-endian number) is of a blocking gen-2 GC. A payload
/// without `Type` (version 0) is taken as blocking.
fn is_full_blocking(payload: &[u8]) -> bool {
    let word = |k: usize| payload.get(4 * k..4 * k + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    word(1) == Some(2) && word(3) != Some(1)
}

#[cfg(test)]
mod tests {
    use super::is_full_blocking;

    fn start(depth: u32, kind: Option<u32>) -> Vec<u8> {
        let mut p: Vec<u8> = [7u32, depth, 1].iter().flat_map(|w| w.to_le_bytes()).collect();
        if let Some(k) = kind {
            p.extend(k.to_le_bytes());
            p.extend(0u16.to_le_bytes());
        }
        p
    }

    #[test]
    fn a_heap_walk_ends_with_a_blocking_gen2_gc() {
        assert!(is_full_blocking(&start(2, Some(0))));
        assert!(is_full_blocking(&start(2, None)), "version 0: no Type");
        assert!(!is_full_blocking(&start(2, Some(1))), "background");
        assert!(!is_full_blocking(&start(0, Some(0))));
        assert!(!is_full_blocking(&start(1, Some(0))));
        assert!(!is_full_blocking(&[]));
    }
}
