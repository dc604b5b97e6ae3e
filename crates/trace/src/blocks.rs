//! A trace's bytes as they arrive, cut into its events: the block still
//! arriving is kept, complete blocks are read (metadata blocks name the
//! event kinds, event blocks give one event header and payload at a time)
//! and dropped.

use clrprof::eventpipe::{parse_metadata, read_block, read_header, BlockKind, EventBlobs, EventHeader, EventMetadata};

/// What a complete block holds, one item at a time.
pub enum Item<'a> {
    /// An event kind's description.
    Metadata(EventMetadata),
    /// An event: its header and payload.
    Event(&'a EventHeader, &'a [u8]),
}

/// Reads a trace as it arrives.
#[derive(Default)]
pub struct Blocks {
    /// Bytes from `base` on (the block still arriving).
    pending: Vec<u8>,
    /// The trace offset of `pending[pad]`.
    base: u64,
    /// 0-3 filler bytes before the block, so that offsets in `pending`
    /// are the trace's modulo 4 (blocks are aligned to the trace's start).
    pad: usize,
    header_read: bool,
    /// The trace could not be read (the session goes on).
    pub broken: Option<String>,
}

impl Blocks {
    /// Takes the next bytes of the trace; `f` sees every item of the
    /// blocks they complete.
    pub fn feed(&mut self, bytes: &[u8], mut f: impl FnMut(Item<'_>)) {
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
            let next = match read_block(&pending, at) {
                Ok(Some(b)) => {
                    if b.kind == BlockKind::Metadata || b.kind == BlockKind::Event {
                        let metadata = b.kind == BlockKind::Metadata;
                        if let Ok(blobs) = EventBlobs::new(b.body, b.body_offset) {
                            for item in blobs {
                                let Ok((offset, header, payload)) = item else { break };
                                if metadata {
                                    if let Ok(m) = parse_metadata(payload, offset) {
                                        f(Item::Metadata(m));
                                    }
                                } else {
                                    f(Item::Event(&header, payload));
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
}
