//! The events of a trace as it arrives, for what a session must react to:
//! the end of the heap walk it asked for.
//!
//! The trace's bytes are fed in as they come; complete blocks are read
//! (metadata blocks name the event kinds, event blocks are looked at one
//! event header at a time) and dropped: only the block still arriving is
//! kept.

use clrprof::eventpipe::{parse_metadata, read_block, read_header, BlockKind, EventBlobs};
use std::collections::HashMap;

/// Reads a trace as it arrives.
#[derive(Default)]
pub struct Watch {
    /// Bytes from `base` on (the block still arriving).
    pending: Vec<u8>,
    /// The trace offset of `pending[pad]`.
    base: u64,
    /// 0-3 filler bytes before the block, so that offsets in `pending`
    /// are the trace's modulo 4 (blocks are aligned to the trace's start).
    pad: usize,
    header_read: bool,
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
        if self.broken.is_some() {
            return;
        }
        self.pending.extend_from_slice(bytes);
        if !self.header_read {
            match read_header(&self.pending) {
                Ok(h) => {
                    self.header_read = true;
                    self.advance(h.end_offset);
                }
                // Not all of it yet (the header is small: a failure past
                // a kilobyte is a broken trace).
                Err(e) => {
                    if self.pending.len() > 4096 {
                        self.broken = Some(e.to_string());
                    }
                    return;
                }
            }
        }
        loop {
            let at = self.pad as u64;
            let pending = std::mem::take(&mut self.pending);
            let read = read_block(&pending, at);
            let next = match read {
                Ok(Some(b)) => {
                    if b.kind == BlockKind::Metadata || b.kind == BlockKind::Event {
                        let metadata = b.kind == BlockKind::Metadata;
                        if let Ok(blobs) = EventBlobs::new(b.body, b.body_offset) {
                            for item in blobs {
                                let Ok((offset, header, payload)) = item else { break };
                                if metadata {
                                    if let Ok(m) = parse_metadata(payload, offset) {
                                        if m.provider == crate::presets::RUNTIME {
                                            self.runtime.insert(m.id.0, m.event_id);
                                        }
                                    }
                                } else if let Some(&id) = self.runtime.get(&header.metadata_id.0) {
                                    self.saw(id);
                                }
                            }
                        }
                    }
                    Some((b.end_offset - at) as usize)
                }
                // The end mark, or a block not all here yet.
                Ok(None) | Err(_) => None,
            };
            self.pending = pending;
            let Some(consumed) = next else { return };
            let trace_end = self.base + consumed as u64;
            self.pending.drain(..self.pad + consumed);
            self.pad = 0;
            self.base = trace_end;
            self.realign();
        }
    }

    /// Drops the bytes before trace offset `to` (the header).
    fn advance(&mut self, to: u64) {
        let n = (to.saturating_sub(self.base) as usize).min(self.pending.len());
        self.pending.drain(..n);
        self.base += n as u64;
        self.realign();
    }

    /// Puts `base % 4` filler bytes in front of `pending` (which has none).
    fn realign(&mut self) {
        let want = (self.base % 4) as usize;
        if want > 0 {
            self.pending.splice(0..0, std::iter::repeat_n(0u8, want));
        }
        self.pad = want;
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
