//! Parsing a log in parallel, delivering results in file order.
//!
//! The log is cut into chunks after line ends. Each chunk is parsed on the
//! rayon pool by a caller's function that drains a [`RecordReader`] over it;
//! results come back to the calling thread in file order, so a consumer that
//! must see records in log order (the heap simulation) runs while the pool
//! parses ahead. At most `in_flight` chunks are parsed ahead of the consumer,
//! which bounds memory.
//!
//! A line end is almost always a record boundary, but not quite: a name with
//! an unbalanced `<` is read across line ends. So chunking is speculative:
//! when the record before a chunk ends past the chunk's start, that chunk's
//! result is thrown away and it is parsed again from the true boundary, on
//! the calling thread. The result is the same as one sequential pass.

use super::diagnostics::Diagnostics;
use super::reader::{DumpState, RecordReader};
use std::collections::BTreeMap;

/// How to cut and schedule the work.
#[derive(Clone, Debug)]
pub struct ChunkOptions {
    /// Target chunk size in bytes.
    pub chunk_bytes: usize,
    /// Threads to parse with; `None` uses rayon's global pool.
    pub threads: Option<usize>,
    /// Chunks parsed ahead of the consumer, at most (0 = 4 per thread).
    pub in_flight: usize,
}

impl Default for ChunkOptions {
    fn default() -> Self {
        ChunkOptions { chunk_bytes: 1 << 20, threads: None, in_flight: 0 }
    }
}

/// Cuts `data` into ranges of about `chunk_bytes`, each ending after a `\n`
/// (the last one at the end of the data).
pub fn cut(data: &[u8], chunk_bytes: usize) -> Vec<(usize, usize)> {
    Cuts::new(data, chunk_bytes).collect()
}

/// The ranges of [`cut`], found one at a time. The loader finds a chunk's
/// end only when the chunk is about to be parsed: looking for every line
/// end up front would touch the whole of a mapped log before the first
/// record is read, and each such touch can map a large part of the file
/// (the kernel maps the whole cached folio around a faulting page), which
/// the loader could give back only after the fact.
struct Cuts<'a> {
    data: &'a [u8],
    chunk_bytes: usize,
    start: usize,
}

impl<'a> Cuts<'a> {
    fn new(data: &'a [u8], chunk_bytes: usize) -> Self {
        Cuts { data, chunk_bytes: chunk_bytes.max(1), start: 0 }
    }
}

impl Iterator for Cuts<'_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        let (data, start) = (self.data, self.start);
        if start >= data.len() {
            return None;
        }
        let target = start.saturating_add(self.chunk_bytes);
        let end = if target >= data.len() {
            data.len()
        } else {
            match memchr::memchr(b'\n', &data[target..]) {
                Some(k) => target + k + 1,
                None => data.len(),
            }
        };
        self.start = end;
        Some((start, end))
    }
}

struct Done<T> {
    value: T,
    diagnostics: Diagnostics,
    end: usize,
    initial: DumpState,
    dependent: bool,
    state: DumpState,
}

fn run<'a, T, M>(data: &'a [u8], start: usize, stop: usize, state: DumpState, map: &M) -> Done<T>
where
    M: Fn(&mut RecordReader<'a>) -> T,
{
    let mut r = RecordReader::range_with_state(data, start, stop, state);
    let value = map(&mut r);
    // The map function may stop early; finish the range so that `end` is
    // the true boundary.
    while r.next_record().is_some() {}
    Done {
        value,
        end: r.offset(),
        initial: state,
        dependent: r.depended_on_initial_state(),
        state: r.state(),
        diagnostics: r.take_diagnostics(),
    }
}

/// Parses `data` in chunks on the pool with `map`, and hands each result to
/// `sink` in file order, with the number of bytes consumed so far. Returns
/// the warnings of the whole log (line numbers not yet resolved).
pub fn parse_chunks<'a, T, M, S>(data: &'a [u8], options: &ChunkOptions, map: M, mut sink: S) -> Diagnostics
where
    T: Send,
    M: Fn(&mut RecordReader<'a>) -> T + Sync,
    S: FnMut(T, usize),
{
    let mut cuts = Cuts::new(data, options.chunk_bytes);
    let first = cuts.next();
    let mut diagnostics = Diagnostics::new(super::diagnostics::DEFAULT_KEPT_WARNINGS);
    let single = first.map_or(true, |(_, e)| e >= data.len());
    if single || options.threads == Some(1) {
        // One thread: parse chunk after chunk on the calling thread.
        let mut boundary = 0usize;
        let mut state = DumpState::default();
        for (s, e) in first.into_iter().chain(cuts) {
            let d = run(data, boundary.max(s), e.max(boundary), state, &map);
            boundary = d.end;
            state = merge_state(state, d.state);
            diagnostics.merge(d.diagnostics);
            sink(d.value, boundary);
        }
        return diagnostics;
    }
    let threads = options.threads.unwrap_or_else(rayon::current_num_threads).max(1);
    let in_flight = if options.in_flight == 0 { 4 * threads } else { options.in_flight };
    let cuts = first.into_iter().chain(cuts);
    let map = &map;
    let sink = &mut sink;
    let diags = &mut diagnostics;
    match options.threads {
        Some(n) => match rayon::ThreadPoolBuilder::new().num_threads(n).build() {
            Ok(pool) => pool.in_place_scope(|s| drive(s, data, cuts, in_flight, map, sink, diags)),
            Err(_) => rayon::in_place_scope(|s| drive(s, data, cuts, in_flight, map, sink, diags)),
        },
        None => rayon::in_place_scope(|s| drive(s, data, cuts, in_flight, map, sink, diags)),
    }
    diagnostics
}

fn drive<'scope, 'a: 'scope, T, M, S>(
    scope: &rayon::Scope<'scope>,
    data: &'a [u8],
    mut cuts: impl Iterator<Item = (usize, usize)>,
    in_flight: usize,
    map: &'scope M,
    sink: &mut S,
    diagnostics: &mut Diagnostics,
) where
    T: Send + 'scope,
    M: Fn(&mut RecordReader<'a>) -> T + Sync,
    S: FnMut(T, usize),
{
    let (tx, rx) = std::sync::mpsc::channel::<(usize, Done<T>)>();
    let spawn = |idx: usize, (s, e): (usize, usize)| {
        let tx = tx.clone();
        scope.spawn(move |_| {
            let done = run(data, s, e, DumpState::default(), map);
            let _ = tx.send((idx, done));
        });
    };
    // Every range found is spawned at once: at most `in_flight` ahead of
    // the consumer.
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    while ranges.len() < in_flight {
        let Some(r) = cuts.next() else { break };
        spawn(ranges.len(), r);
        ranges.push(r);
    }
    let mut pending: BTreeMap<usize, Done<T>> = BTreeMap::new();
    let mut boundary = 0usize;
    let mut state = DumpState::default();
    let mut idx = 0;
    while let Some(&(s, e)) = ranges.get(idx) {
        let done = loop {
            if let Some(d) = pending.remove(&idx) {
                break d;
            }
            match rx.recv() {
                Ok((i, d)) => {
                    pending.insert(i, d);
                }
                // Cannot happen while `tx` lives; parse here to be safe.
                Err(_) => break run(data, s.max(boundary), e.max(boundary), state, map),
            }
        };
        let valid = boundary == s && (done.initial == state || !done.dependent);
        let done = if valid { done } else { run(data, boundary.max(s), e.max(boundary), state, map) };
        boundary = done.end;
        state = merge_state(state, done.state);
        diagnostics.merge(done.diagnostics);
        sink(done.value, boundary);
        if let Some(r) = cuts.next() {
            spawn(ranges.len(), r);
            ranges.push(r);
        }
        idx += 1;
    }
}

/// The state after a chunk: what was set before it or by it stays set.
fn merge_state(before: DumpState, after: DumpState) -> DumpState {
    DumpState {
        root_seen: before.root_seen || after.root_seen,
        dump_started: before.dump_started || after.dump_started,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_after_line_ends() {
        let data = b"a 1 1\nb 1 0 0\ni 5\n";
        let c = cut(data, 3);
        assert_eq!(c, vec![(0, 6), (6, 14), (14, 18)]);
        for w in c.windows(2) {
            assert_eq!(w[0].1, w[1].0);
        }
    }

    #[test]
    fn record_spanning_chunks_is_reparsed() {
        // The type name has an unbalanced '<' and runs over the next lines.
        let data = b"t 1 0 A<b\ni 5\nc> x\ni 7\n";
        let opts = ChunkOptions { chunk_bytes: 2, threads: Some(2), in_flight: 0 };
        let mut kinds = Vec::new();
        parse_chunks(
            data,
            &opts,
            |r| r.map(|p| p.record.kind().letter()).collect::<Vec<_>>(),
            |v, _| kinds.extend(v),
        );
        let (seq, _) = crate::format::read_all(data);
        let seq: Vec<_> = seq.iter().map(|p| p.record.kind().letter()).collect();
        assert_eq!(kinds, seq);
    }
}
