//! Tick-marked byte buffers and their merge into one time-ordered log.
//!
//! Each thread (and the shared event stream) appends whole formatted lines
//! to its own [`Segments`], marking where each new clock tick starts. A
//! drain takes every buffer and writes their segments in tick order (a
//! stable merge: segments of one source keep their order), emitting an
//! `i` line whenever the tick goes up. Records from different threads in
//! the same millisecond are concurrent, so any interleaving of them is a
//! serialization the program could have produced.

/// A buffer of whole lines, cut into segments by tick.
#[derive(Default)]
pub struct Segments {
    /// The formatted lines.
    pub bytes: Vec<u8>,
    /// `(tick, offset)`: the segment starting at `offset` has `tick`.
    pub marks: Vec<(u32, usize)>,
    /// A cleared buffer handed back by the last drain, reused next time.
    pub spare: Option<(Vec<u8>, Vec<(u32, usize)>)>,
}

impl Segments {
    /// Starts a segment for `tick` unless the current one has it (ticks
    /// never go backwards within one buffer).
    #[inline]
    pub fn at(&mut self, tick: u32) -> &mut Vec<u8> {
        match self.marks.last() {
            Some(&(t, _)) if t >= tick => {}
            _ => self.marks.push((tick, self.bytes.len())),
        }
        &mut self.bytes
    }

    /// True when nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Takes the contents, leaving the spare (or an empty buffer) behind.
    pub fn take(&mut self) -> (Vec<u8>, Vec<(u32, usize)>) {
        let (b, m) = self.spare.take().unwrap_or_default();
        (std::mem::replace(&mut self.bytes, b), std::mem::replace(&mut self.marks, m))
    }

    /// Gives a drained buffer back for reuse.
    pub fn give_back(&mut self, mut bytes: Vec<u8>, mut marks: Vec<(u32, usize)>) {
        const KEEP: usize = 16 << 20;
        if self.spare.is_none() && bytes.capacity() <= KEEP {
            bytes.clear();
            marks.clear();
            self.spare = Some((bytes, marks));
        }
    }
}

/// One segment of one drained source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// The tick.
    pub tick: u32,
    /// Which source.
    pub source: usize,
    /// Byte range in the source.
    pub start: usize,
    /// End of the byte range.
    pub end: usize,
}

/// Orders the segments of drained sources by tick, stably.
pub fn merge_order(sources: &[(Vec<u8>, Vec<(u32, usize)>)]) -> Vec<Piece> {
    let mut pieces = Vec::new();
    for (s, (bytes, marks)) in sources.iter().enumerate() {
        for (k, &(tick, start)) in marks.iter().enumerate() {
            let end = marks.get(k + 1).map_or(bytes.len(), |m| m.1);
            if end > start {
                pieces.push(Piece { tick, source: s, start, end });
            }
        }
    }
    // Stable: equal ticks keep source order, and a source's own pieces
    // have nondecreasing ticks.
    pieces.sort_by_key(|p| p.tick);
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_by_tick_keeping_source_order() {
        let mut a = Segments::default();
        a.at(1).extend_from_slice(b"a1\n");
        a.at(1).extend_from_slice(b"a1b\n");
        a.at(5).extend_from_slice(b"a5\n");
        let mut b = Segments::default();
        b.at(3).extend_from_slice(b"b3\n");
        b.at(5).extend_from_slice(b"b5\n");
        let sources = vec![a.take(), b.take()];
        let order = merge_order(&sources);
        let text: Vec<String> = order
            .iter()
            .map(|p| format!("{}:{}", p.tick, String::from_utf8_lossy(&sources[p.source].0[p.start..p.end]).trim()))
            .collect();
        assert_eq!(text, vec!["1:a1\na1b", "3:b3", "5:a5", "5:b5"]);
        assert!(a.is_empty());
    }
}
