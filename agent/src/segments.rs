//! A tick-marked byte buffer: the shared event stream (`h`, `j`, `y`
//! lines from any thread) appends whole formatted lines to [`Segments`],
//! marking where each new clock tick starts. A drain merges its segments
//! with the threads' records in tick order (see `Agent::drain`), emitting
//! an `i` line whenever the tick goes up. Records from different threads
//! in the same millisecond are concurrent, so any interleaving of them is
//! a serialization the program could have produced.

/// Lines and their `(tick, offset)` marks, as taken from [`Segments`].
pub type Taken = (Vec<u8>, Vec<(u32, usize)>);

/// A buffer of whole lines, cut into segments by tick.
#[derive(Default)]
pub struct Segments {
    /// The formatted lines.
    pub bytes: Vec<u8>,
    /// `(tick, offset)`: the segment starting at `offset` has `tick`.
    pub marks: Vec<(u32, usize)>,
    /// A cleared buffer handed back by the last drain, reused next time.
    pub spare: Option<Taken>,
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
    pub fn take(&mut self) -> Taken {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_ticks_and_reuses_buffers() {
        let mut a = Segments::default();
        a.at(1).extend_from_slice(b"a1\n");
        a.at(1).extend_from_slice(b"a1b\n");
        a.at(5).extend_from_slice(b"a5\n");
        let (bytes, marks) = a.take();
        assert_eq!(bytes, b"a1\na1b\na5\n");
        assert_eq!(marks, vec![(1, 0), (5, 7)]);
        assert!(a.is_empty());
        a.give_back(bytes, marks);
        a.at(6).extend_from_slice(b"a6\n");
        let (bytes, marks) = a.take();
        assert_eq!((bytes, marks), (b"a6\n".to_vec(), vec![(6, 0)]));
    }
}
