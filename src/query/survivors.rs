//! Survivors of a time window (the leak question): the objects allocated
//! in the filter's window that are still alive at a later time, by type and
//! by allocating stack.
//!
//! An object is alive at tick `C` when it was allocated at or before `C`,
//! is not under 12 bytes (CLRProfiler's heap never holds those), and its
//! death tick ([`crate::model::Model::death_tick`]: the end of the GC that
//! reclaimed it, or the tick it was erased at) is after `C`. Alive at the end
//! of the log means never reclaimed.
//!
//! ```
//! use clrprof::query::{survivors, Filter, TimeWindow};
//! let log = b"t 1 0 T\nn 1 1 1 24\ni 5\n! 7 0x1000 1\ni 10\n! 7 0x1018 1\n";
//! let model = clrprof::model::load(log, &Default::default()).unwrap();
//! let f = Filter::resolve(&model, &TimeWindow::Millis { from: Some(6.0), to: None }, &[]).unwrap();
//! let s = survivors(&model, &f, None, 10);
//! assert_eq!(s.surviving.objects, 1);
//! assert_eq!(s.by_type[0].name, "T");
//! ```

use super::objects::{par_fold, Clock, RowTypes, Tally};
use super::types::Uncertainty;
use super::Filter;
use crate::model::{Fate, Model, ObjectId, StackRef, TickIndex};
use serde::Serialize;

/// Survivors of one type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SurvivorType {
    /// The type name.
    pub name: String,
    /// Objects of the type allocated in the window.
    pub allocated: Tally,
    /// Of those, alive at the given time.
    pub surviving: Tally,
    /// For a sampled trace: the surviving samples and the 95% range of
    /// the surviving figures.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<Uncertainty>,
    /// Of those, neither known alive nor known dead then.
    pub unknown: Tally,
}

/// Survivors allocated with one stack.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SurvivorStack {
    /// The stack id as the log's `n` record numbered it (after CLRProfiler's
    /// renumbering, if any).
    pub stack: u32,
    /// The allocated type.
    pub type_name: String,
    /// The frames, innermost (the allocating function) first.
    pub frames: Vec<String>,
    /// Objects alive at the given time.
    pub surviving: Tally,
    /// For a sampled trace: the surviving samples and the 95% range of
    /// the surviving figures.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<Uncertainty>,
}

/// The answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Survivors {
    /// The window's first tick index.
    pub from_tick: u32,
    /// Its last tick index (`None`: to the end).
    pub to_tick: Option<u32>,
    /// The tick the objects must be alive at (`None`: the end of the log).
    pub alive_at_tick: Option<u32>,
    /// Its time, ms.
    pub alive_at_ms: f64,
    /// Objects allocated in the window.
    pub allocated: Tally,
    /// Of those, alive at the given time.
    pub surviving: Tally,
    /// For a sampled trace: the surviving samples and the 95% range of
    /// the surviving total.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub surviving_range: Option<Uncertainty>,
    /// Of those, neither known alive nor known dead then (a trace's
    /// sampled objects in memory a GC condemned without reporting its
    /// survivors).
    pub unknown: Tally,
    /// By type, by surviving bytes (largest first); types with no survivor
    /// are left out.
    pub by_type: Vec<SurvivorType>,
    /// Stacks with survivors, by surviving bytes (at most the limit asked
    /// for).
    pub by_stack: Vec<SurvivorStack>,
    /// Stacks with survivors in all (before the limit).
    pub stacks_with_survivors: usize,
}

/// Sampled (or, in a log, all) objects per stack row while folding:
/// allocated, surviving. Estimates are made per row at the end, as every
/// other view makes them ([`Model::estimate_count`]), so that the totals
/// agree with `types` to the object.
#[derive(Default)]
struct SurvivorAcc {
    /// Per row: allocated, surviving, unknown (neither known alive nor
    /// known dead).
    by_row: Vec<[u64; 3]>,
}

impl SurvivorAcc {
    fn add(&mut self, row: usize, state: usize) {
        if self.by_row.len() <= row {
            self.by_row.resize(row + 1, [0; 3]);
        }
        self.by_row[row][0] += 1;
        if state > 0 {
            self.by_row[row][state] += 1;
        }
    }

    fn merge(mut self, o: SurvivorAcc) -> SurvivorAcc {
        if self.by_row.len() < o.by_row.len() {
            self.by_row.resize(o.by_row.len(), [0; 3]);
        }
        for (x, y) in self.by_row.iter_mut().zip(o.by_row) {
            for (p, q) in x.iter_mut().zip(y) {
                *p += q;
            }
        }
        self
    }
}

/// The name of a function for display (`???? function N` when undefined).
pub(crate) fn function_name(model: &Model, f: crate::format::FunctionId) -> String {
    match model.functions().get(f) {
        Some(func) => model.names().get(func.name).to_string(),
        None => format!("???? function {}", f.0),
    }
}

/// The objects the filter keeps (by allocation time and thread) that are
/// alive at tick `alive_at` (`None`: at the end of the log); at most
/// `stack_limit` stacks are listed.
pub fn survivors(model: &Model, filter: &Filter, alive_at: Option<TickIndex>, stack_limit: usize) -> Survivors {
    let types = RowTypes::new(model);
    let clock = Clock::new(model);
    let table = model.allocations();
    let born_by_then = alive_at.map_or(ObjectId(u32::MAX), |c| table.allocated_between(TickIndex(0), c).end);
    let acc = par_fold(
        filter.object_range(model),
        SurvivorAcc::default,
        |acc, range| {
            table.for_each_in(range, |row, fate| {
                if !filter.has_thread(row.thread) {
                    return;
                }
                // 0 dead (or not yet born), 1 alive, 2 unknown.
                if let Fate::Unknown { gc } = fate {
                    let known_alive = row.id < born_by_then && alive_at.is_some_and(|c| clock.known_alive_at(gc, c));
                    if !known_alive {
                        acc.add(row.stack.index(), if row.id < born_by_then { 2 } else { 0 });
                        return;
                    }
                }
                let alive = match (fate, alive_at) {
                    (Fate::Untracked, _) => false,
                    (Fate::Unknown { .. }, _) => true,
                    (Fate::Alive, _) => row.id < born_by_then,
                    (f, None) => clock.death_tick(f).is_none(),
                    (f, Some(c)) => row.id < born_by_then && clock.death_tick(f).map_or(true, |d| d > c),
                };
                acc.add(row.stack.index(), usize::from(alive));
            });
        },
        SurvivorAcc::merge,
    );
    // Per row: the objects the samples stand for, then per type and in all.
    let mut by_type = vec![[Tally::default(); 3]; types.len()];
    let mut samples = vec![0u64; types.len()];
    let mut by_stack = vec![Tally::default(); acc.by_row.len()];
    let (mut allocated, mut surviving, mut unknown) = (Tally::default(), Tally::default(), Tally::default());
    let mut surviving_samples = 0u64;
    for (r, &[a, s, u]) in acc.by_row.iter().enumerate() {
        surviving_samples += s;
        let row = StackRef(r as u32);
        let (slot, size) = types.get(row);
        let (a, s_est, u_est) = (model.estimate_count(row, a), model.estimate_count(row, s), model.estimate_count(row, u));
        allocated.add_n(a, size);
        surviving.add_n(s_est, size);
        unknown.add_n(u_est, size);
        if let (Some(t), Some(k)) = (by_type.get_mut(slot), samples.get_mut(slot)) {
            t[0].add_n(a, size);
            t[1].add_n(s_est, size);
            t[2].add_n(u_est, size);
            *k += s;
        }
        by_stack[r].add_n(s_est, size);
    }
    let mut types_out: Vec<SurvivorType> = by_type
        .into_iter()
        .enumerate()
        .filter(|(_, [_, s, u])| !s.is_empty() || !u.is_empty())
        .map(|(k, [a, s, u])| SurvivorType {
            name: types.names[k].clone(),
            allocated: a,
            surviving: s,
            uncertainty: Uncertainty::of(model, samples[k], s.bytes.min(i64::MAX as u64) as i64, s.objects),
            unknown: u,
        })
        .collect();
    types_out.sort_by(|a, b| b.surviving.bytes.cmp(&a.surviving.bytes).then_with(|| a.name.cmp(&b.name)));
    let mut stacks: Vec<(usize, Tally)> = by_stack.into_iter().enumerate().filter(|(_, t)| !t.is_empty()).collect();
    let stacks_with_survivors = stacks.len();
    stacks.sort_by(|a, b| b.1.bytes.cmp(&a.1.bytes).then(b.1.objects.cmp(&a.1.objects)).then(a.0.cmp(&b.0)));
    stacks.truncate(stack_limit);
    let st = model.stacks();
    let by_stack = stacks
        .into_iter()
        .map(|(r, t)| {
            let row = StackRef(r as u32);
            SurvivorStack {
                stack: st.stack_index(row),
                type_name: types.names[types.slot(row)].clone(),
                frames: st.frames(row).map(|f| function_name(model, f)).collect(),
                surviving: t,
                uncertainty: Uncertainty::of_tally(model, acc.by_row.get(r).map_or(0, |c| c[1]), t.bytes, t.objects),
            }
        })
        .collect();
    let alive_tick = alive_at.map_or(clock.last(), |c| TickIndex(c.0.min(clock.last().0)));
    Survivors {
        from_tick: filter.from.0,
        to_tick: (filter.to.0 != u32::MAX).then_some(filter.to.0),
        alive_at_tick: alive_at.map(|c| c.0),
        alive_at_ms: clock.seconds(alive_tick) * 1000.0,
        allocated,
        surviving,
        surviving_range: Uncertainty::of_tally(model, surviving_samples, surviving.bytes, surviving.objects),
        unknown,
        by_type: types_out,
        by_stack,
        stacks_with_survivors,
    }
}
