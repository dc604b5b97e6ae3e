//! One drain's merge: the shared events (text, tick-marked [`Segments`]
//! contents) and every thread's binary records up to its [`Mark`], in
//! tick order, formatted to text, with an `i` line whenever the tick goes
//! up.
//!
//! The order is that of a stable sort of all segments by tick: on equal
//! ticks the events come first, then the threads in registration order;
//! each source keeps its own order. It is a k-way merge: the source whose
//! next record has the lowest tick (the first such source on a tie) gives
//! all its records of that tick, then the choice is made again.
//!
//! [`Segments`]: crate::segments::Segments

use crate::lines::Prefixes;
use crate::threadlog::{Mark, Reader};

/// Where a drain writes.
pub trait Output {
    /// Records of tick `t` follow (an `i` line if it is later than the
    /// last one written).
    fn tick(&mut self, t: u32);
    /// Whole lines.
    fn raw(&mut self, bytes: &[u8]);
    /// The buffer to format lines into, then a chance to hand it over.
    fn lines(&mut self, f: &mut dyn FnMut(&mut Vec<u8>));
}

/// One thread's records in this drain.
pub struct ThreadSource<'a> {
    /// The reading end.
    pub reader: &'a mut Reader,
    /// Read up to here.
    pub mark: Mark,
    /// The thread's line starts.
    pub prefixes: &'a Prefixes,
    /// Chunks the reader handed back so far.
    pub freed: usize,
}

/// Merges `events` (lines and their `(tick, offset)` marks) and `threads`
/// into `out`.
pub fn merge(out: &mut dyn Output, events: (&[u8], &[(u32, usize)]), threads: &mut [ThreadSource<'_>]) {
    let (bytes, marks) = events;
    let piece_end = |k: usize| marks.get(k + 1).map_or(bytes.len(), |m| m.1);
    let mut next_event = 0;
    loop {
        let mut best: Option<(u32, usize)> = None;
        while let Some(&(tick, start)) = marks.get(next_event) {
            if piece_end(next_event) > start {
                best = Some((tick, 0));
                break;
            }
            next_event += 1;
        }
        for (i, t) in threads.iter_mut().enumerate() {
            if let Some(tick) = t.reader.head(&t.mark, &mut t.freed) {
                if best.is_none_or(|(b, _)| tick < b) {
                    best = Some((tick, i + 1));
                }
            }
        }
        let Some((tick, source)) = best else { return };
        out.tick(tick);
        if source == 0 {
            out.raw(&bytes[marks[next_event].1..piece_end(next_event)]);
            next_event += 1;
        } else {
            let t = &mut threads[source - 1];
            let prefixes = t.prefixes;
            t.reader.run(&t.mark, &mut t.freed, |slots| out.lines(&mut |buf| crate::lines::format(buf, prefixes, slots)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segments::Segments;
    use crate::threadlog::{self, Slot, Writer};
    use clrprof::format::records::{Alloc, Call, Comment, Tick};
    use clrprof::format::{write_record, Address, Record, StackId, Style, ThreadId};
    use proptest::prelude::*;

    /// Text with `i` lines, as the agent's `Out` writes.
    #[derive(Default)]
    struct Text {
        bytes: Vec<u8>,
        last: Option<u32>,
    }

    impl Text {
        fn tick(&mut self, t: u32) {
            if self.last.is_none_or(|l| t > l) {
                write_record(&mut self.bytes, &Record::Tick(Tick { ms: t }), Style::BITS64);
                self.last = Some(t);
            }
        }
    }

    impl Output for Text {
        fn tick(&mut self, t: u32) {
            Text::tick(self, t)
        }
        fn raw(&mut self, bytes: &[u8]) {
            self.bytes.extend_from_slice(bytes);
        }
        fn lines(&mut self, f: &mut dyn FnMut(&mut Vec<u8>)) {
            f(&mut self.bytes)
        }
    }

    #[derive(Clone, Debug)]
    enum Rec {
        Alloc(u64, i32),
        Call(i32),
        Comment(String),
        /// A `h`-like line in the shared events.
        Event(u64),
    }

    /// What the agent did before binary records: every record formatted by
    /// `write_record` into its thread's tick-marked buffer (or the shared
    /// events'), and a drain's segments sorted stably by tick.
    fn text_of(tid: i32, r: &Rec) -> Vec<u8> {
        let mut out = Vec::new();
        let record = match r {
            Rec::Alloc(a, s) => Record::Alloc(Alloc { thread: Some(ThreadId(tid)), address: Address(*a), stack: StackId(*s) }),
            Rec::Call(s) => Record::Call(Call { thread: ThreadId(tid), stack: StackId(*s) }),
            Rec::Comment(t) => Record::Comment(Comment { text: t.as_bytes() }),
            Rec::Event(h) => {
                out.extend_from_slice(format!("j {tid} 0x{h:x} 0\n").as_bytes());
                return out;
            }
        };
        write_record(&mut out, &record, Style::BITS64);
        out
    }

    fn oracle_drain(out: &mut Text, sources: Vec<crate::segments::Taken>) {
        let mut pieces = Vec::new();
        for (s, (bytes, marks)) in sources.iter().enumerate() {
            for (k, &(tick, start)) in marks.iter().enumerate() {
                let end = marks.get(k + 1).map_or(bytes.len(), |m| m.1);
                if end > start {
                    pieces.push((tick, s, start, end));
                }
            }
        }
        pieces.sort_by_key(|p| p.0);
        for (tick, s, start, end) in pieces {
            out.tick(tick);
            out.bytes.extend_from_slice(&sources[s].0[start..end]);
        }
    }

    /// One step of the simulation: thread `thread` (or the events, for
    /// `Rec::Event`) records `rec` after its clock advanced by `dt`; or a
    /// drain.
    #[derive(Clone, Debug)]
    enum Step {
        Record { thread: usize, dt: u32, rec: Rec },
        Drain,
    }

    fn step() -> impl Strategy<Value = Step> {
        let rec = prop_oneof![
            6 => (any::<u64>(), 1i32..100_000).prop_map(|(a, s)| Rec::Alloc(a, s)),
            2 => (1i32..100_000).prop_map(Rec::Call),
            1 => "[a-z ]{0,12}".prop_map(Rec::Comment),
            1 => any::<u64>().prop_map(Rec::Event),
        ];
        prop_oneof![
            12 => (0usize..3, prop_oneof![3 => Just(0u32), 1 => 1u32..3], rec).prop_map(|(thread, dt, rec)| Step::Record { thread, dt, rec }),
            1 => Just(Step::Drain),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
        #[test]
        fn merged_text_equals_formatting_each_record_directly(steps in proptest::collection::vec(step(), 0..400)) {
            let tids = [4242, 17, 1_000_003];
            let mut logs: Vec<(Writer, Reader)> = (0..3).map(|_| threadlog::new()).collect();
            let prefixes: Vec<Prefixes> = tids.iter().map(|&t| Prefixes::new(t)).collect();
            let mut clocks = [0u32; 3];
            let mut events = Segments::default();
            let mut old: Vec<Segments> = (0..3).map(|_| Segments::default()).collect();
            let mut old_events = Segments::default();
            let (mut got, mut want) = (Text::default(), Text::default());
            let drain = |logs: &mut Vec<(Writer, Reader)>, events: &mut Segments, old: &mut Vec<Segments>, old_events: &mut Segments, got: &mut Text, want: &mut Text| {
                let (bytes, marks) = events.take();
                let mut threads: Vec<ThreadSource<'_>> = logs
                    .iter_mut()
                    .zip(&prefixes)
                    .map(|((_, r), p)| {
                        let mark = r.mark();
                        ThreadSource { reader: r, mark, prefixes: p, freed: 0 }
                    })
                    .collect();
                merge(got, (&bytes, &marks), &mut threads);
                let mut sources = vec![old_events.take()];
                sources.extend(old.iter_mut().map(|s| s.take()));
                oracle_drain(want, sources);
            };
            for s in &steps {
                match s {
                    Step::Record { thread, dt, rec } => {
                        clocks[*thread] += dt;
                        let tick = clocks[*thread];
                        let text = text_of(tids[*thread], rec);
                        match rec {
                            Rec::Event(_) => {
                                events.at(tick).extend_from_slice(&text);
                                old_events.at(tick).extend_from_slice(&text);
                                continue;
                            }
                            Rec::Alloc(a, st) => logs[*thread].0.push(tick, Slot::alloc(*a, *st)),
                            Rec::Call(st) => logs[*thread].0.push(tick, Slot::call(*st)),
                            Rec::Comment(_) => logs[*thread].0.push(tick, Slot::text(text.clone())),
                        };
                        old[*thread].at(tick).extend_from_slice(&text);
                    }
                    Step::Drain => drain(&mut logs, &mut events, &mut old, &mut old_events, &mut got, &mut want),
                }
            }
            drain(&mut logs, &mut events, &mut old, &mut old_events, &mut got, &mut want);
            prop_assert_eq!(String::from_utf8_lossy(&got.bytes), String::from_utf8_lossy(&want.bytes));
            for (_, r) in &mut logs {
                // Safety: the writers are not used any more.
                unsafe { r.free_all() };
            }
        }
    }
}
