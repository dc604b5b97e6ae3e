//! The threads of a log: what each one allocated, and when it first and
//! last allocated (the ids `--thread` takes).
//!
//! A thread is known from the records that the model keeps a thread of
//! (`!`, `h`, `j`, `y`); every such thread is listed, also when it
//! allocated nothing in the window. Objects of the older `a` record carry no thread: they are
//! counted in a row whose `thread_id` is `None`, listed only when it has
//! objects.

use crate::model::{Model, StackRef, ThreadRef, TickIndex};
use crate::query::objects::{apportion, par_fold, RowTypes, Tally};
use crate::query::types::Uncertainty;
use crate::query::Filter;
use serde::Serialize;
use std::collections::HashMap;

/// One thread's line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThreadRow {
    /// The thread id as written in the log (`None`: objects of `a` records,
    /// which name no thread).
    pub thread_id: Option<i32>,
    /// Objects and bytes it allocated in the window.
    pub allocated: Tally,
    /// For a sampled trace: the samples its figures rest on and their 95%
    /// range.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<Uncertainty>,
    /// The tick index of its first allocation in the window.
    pub first_tick: Option<u32>,
    /// The tick index of its last allocation in the window.
    pub last_tick: Option<u32>,
    /// The time of `first_tick`, ms.
    pub first_ms: Option<f64>,
    /// The time of `last_tick`, ms.
    pub last_ms: Option<f64>,
}

#[derive(Clone, Copy, Default)]
struct Acc {
    tally: Tally,
    /// Objects of the log read (samples, for a trace).
    samples: u64,
    first: Option<u32>,
    last: Option<u32>,
}

impl Acc {
    fn merge(&mut self, o: &Acc) {
        self.tally.merge(o.tally);
        self.samples += o.samples;
        self.first = match (self.first, o.first) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.last = self.last.max(o.last);
    }
}

/// Every thread with what it allocated in the filter's window (the
/// filter's thread set applies too): most bytes first, then by thread id.
pub fn threads(model: &Model, filter: &Filter) -> Vec<ThreadRow> {
    let n = model.threads().len().max(1);
    let types = RowTypes::new(model);
    let table = model.allocations();
    let per_thread = par_fold(
        filter.object_range(model),
        || vec![Acc::default(); n],
        |acc, range| {
            for row in table.rows_in(range) {
                if !filter.has_thread(row.thread) {
                    continue;
                }
                let (_, size) = types.get(row.stack);
                if let Some(a) = acc.get_mut(row.thread.index()) {
                    a.tally.add_n(types.weight(row.stack), size);
                    a.samples += 1;
                    a.first.get_or_insert(row.tick.0);
                    a.last = Some(row.tick.0);
                }
            }
        },
        |mut a, b| {
            for (x, y) in a.iter_mut().zip(&b) {
                x.merge(y);
            }
            a
        },
    );
    let mut per_thread = per_thread;
    if model.sampling().is_some() {
        // Each stack row's estimate split among the threads that sampled
        // it, so that the threads add up to every other view's total.
        let mut by_row: HashMap<u32, Vec<(usize, u64)>> = HashMap::new();
        for row in table.rows_in(filter.object_range(model)) {
            if !filter.has_thread(row.thread) {
                continue;
            }
            let v = by_row.entry(row.stack.0).or_default();
            match v.iter_mut().find(|(t, _)| *t == row.thread.index()) {
                Some((_, n)) => *n += 1,
                None => v.push((row.thread.index(), 1)),
            }
        }
        for a in per_thread.iter_mut() {
            a.tally = Tally::default();
        }
        for (r, v) in by_row {
            let row = StackRef(r);
            let size = types.size(row);
            let raw: Vec<u64> = v.iter().map(|&(_, n)| n).collect();
            for (&(t, _), n) in v.iter().zip(apportion(model, row, &raw)) {
                if let Some(a) = per_thread.get_mut(t) {
                    a.tally.add_n(n, size);
                }
            }
        }
    }
    let ms = |t: Option<u32>| t.and_then(|t| model.time().seconds(TickIndex(t))).map(|s| (s * 1000.0).round());
    let mut rows: Vec<ThreadRow> = per_thread
        .iter()
        .enumerate()
        .filter_map(|(i, a)| {
            let r = ThreadRef(i as u32);
            let id = model.threads().id(r).map(|t| t.0);
            if id.is_none() && a.tally.is_empty() {
                return None;
            }
            if id.is_some() && !filter.has_thread(r) {
                return None;
            }
            Some(ThreadRow {
                thread_id: id,
                allocated: a.tally,
                uncertainty: Uncertainty::of(model, a.samples, a.tally.bytes.min(i64::MAX as u64) as i64, a.tally.objects),
                first_tick: a.first,
                last_tick: a.last,
                first_ms: ms(a.first),
                last_ms: ms(a.last),
            })
        })
        .collect();
    rows.sort_by(|a, b| b.allocated.bytes.cmp(&a.allocated.bytes).then(a.thread_id.cmp(&b.thread_id)));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::TimeWindow;

    fn model() -> Model {
        let log = b"t 1 0 A\nn 1 1 1 100\nn 2 1 1 2000\ni 5\n! 7 0x1000 1\n! 9 0x2000 2\ni 10\n! 7 0x3000 1\n\
a 0x4000 1\ny 11 1 x.dll\ni 20\n";
        crate::model::load(log, &Default::default()).expect("loads")
    }

    #[test]
    fn per_thread_figures_and_times() {
        let m = model();
        let rows = threads(&m, &Filter::all());
        // Thread 9: one 2,000-byte object; thread 7: two of 100; the `a`
        // record; thread 11 (an assembly load) allocated nothing.
        let ids: Vec<Option<i32>> = rows.iter().map(|r| r.thread_id).collect();
        assert_eq!(ids, [Some(9), Some(7), None, Some(11)]);
        assert_eq!(rows[0].allocated, Tally { objects: 1, bytes: 2000 });
        assert_eq!(rows[1].allocated, Tally { objects: 2, bytes: 200 });
        assert_eq!((rows[1].first_ms, rows[1].last_ms), (Some(5.0), Some(10.0)));
        assert_eq!(rows[2].allocated, Tally { objects: 1, bytes: 100 });
        assert_eq!((rows[3].allocated, rows[3].first_tick), (Tally::default(), None));
    }

    #[test]
    fn the_filter_applies() {
        let m = model();
        let f = Filter::resolve(&m, &TimeWindow::Millis { from: Some(8.0), to: None }, &[7]).expect("filter");
        let rows = threads(&m, &f);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].thread_id, Some(7));
        assert_eq!(rows[0].allocated, Tally { objects: 1, bytes: 100 });
        assert_eq!(rows[0].first_ms, Some(10.0));
    }
}
