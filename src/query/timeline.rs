//! CLRProfiler's Time Line view as a query: which type occupied each piece
//! of the heap at each moment, with the GCs and comments of the window.
//!
//! The answer comes from the packed sample table ([`crate::model::SampleTable`]):
//! the history of every 1 KB grain of address space, each entry valid from
//! its change tick until the grain's next entry (section 4.5 of
//! `docs/src/reference-reader.md`).
//!
//! # The address axis
//!
//! Address space is mostly empty, so, as CLRProfiler's view does, only the
//! used ranges are shown, packed together: the grains that have a history
//! are taken in address order and joined into one *band* while the next
//! one starts less than 64 KB after the last ([`BAND_GAP_BYTES`], the
//! reference's "allowable gap"); the empty grains inside a band are kept,
//! the gaps between bands are left out. When more bands than the caller
//! allows come out (scattered heaps), the allowed gap is doubled until they
//! fit. Higher addresses are shown higher, the highest band on top.
//!
//! # The grid
//!
//! A [`Grid`] is `rows x columns` cells. Columns split the time window into
//! equal spans; each column shows the heap at the last tick index at or
//! before the end of its span (the last column at the window's end). Every
//! row covers the same number of grains (the smallest number that lets all
//! bands fit in the rows asked for; a band starts on a new row) and shows
//! its lowest grain that has a history, as CLRProfiler draws one grain per
//! pixel row. A cell holds the type of that grain's entry valid at the
//! column's tick, or 0 (free) when the entry is free or the grain had no
//! entry yet.
//!
//! # Log order
//!
//! A log whose heap changes all happened at one tick (one `i` line, as
//! CLRProfiler's profiler writes for a short program) has no history on a
//! time axis: every column but the last shows an empty heap. Its sample
//! entries are still numbered in the order they were made, so
//! [`grid_in_log_order`] lays the columns over that order instead: column
//! `c` of `n` shows every grain as the first `(c + 1) / n` of the entries
//! left it. [`changes_span_ms`] tells when time says nothing, and
//! [`changes_before`] places a GC or a comment on such an axis.

use crate::format::TypeId;
use crate::model::{Model, Sample, SampleId, TickIndex};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::HashMap;

/// Bytes per grain of the sample table.
pub const GRAIN_BYTES: u64 = 1024;

/// Two recorded grains belong to the same band when the second starts at
/// most this many bytes after the first (CLRProfiler's value).
pub const BAND_GAP_BYTES: u64 = 64 * 1024 - 1;

/// A run of address space shown as one piece of the vertical axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Band {
    /// Address of its first grain.
    pub low: u64,
    /// Address of its last grain (inclusive).
    pub high: u64,
    /// Grains it spans, empty ones included.
    pub grains: u64,
    /// Grains with a history.
    pub recorded: u64,
}

/// The packed address axis: bands, and the recorded grains inside them.
#[derive(Clone, Debug, Default)]
pub struct AddressAxis {
    /// The bands, lowest address first.
    pub bands: Vec<Band>,
    /// The largest gap (bytes between a band's grains) that was joined.
    pub gap_bytes: u64,
    grains: Vec<u64>,
}

impl AddressAxis {
    /// The recorded grains inside the bands, ascending.
    pub fn grains(&self) -> &[u64] {
        &self.grains
    }

    /// Grains spanned by all bands.
    pub fn total_grains(&self) -> u64 {
        self.bands.iter().map(|b| b.grains).sum()
    }
}

/// Builds the address axis over the grains that overlap `range` (`[low,
/// high)` addresses; `None`: all), with at most `max_bands` bands (at least
/// one).
pub fn address_axis(model: &Model, range: Option<(u64, u64)>, max_bands: usize) -> AddressAxis {
    let (lo, hi) = range.unwrap_or((0, u64::MAX));
    let grains: Vec<u64> = model
        .samples()
        .grains()
        .grains_in_order()
        .map(|(g, _)| g)
        .filter(|&g| g.saturating_add(GRAIN_BYTES) > lo && g < hi)
        .collect();
    let mut gap = BAND_GAP_BYTES;
    let mut bands = join(grains.iter().map(|&g| Band { low: g, high: g, grains: 1, recorded: 1 }), gap);
    while bands.len() > max_bands.max(1) {
        gap = gap.saturating_mul(2).saturating_add(1);
        bands = join(bands.into_iter(), gap);
    }
    AddressAxis { bands, gap_bytes: gap, grains }
}

fn join(parts: impl Iterator<Item = Band>, gap: u64) -> Vec<Band> {
    let mut out: Vec<Band> = Vec::new();
    for p in parts {
        match out.last_mut() {
            Some(b) if p.low - b.high <= gap => {
                b.high = p.high;
                b.recorded += p.recorded;
                b.grains = (b.high - b.low) / GRAIN_BYTES + 1;
            }
            _ => out.push(p),
        }
    }
    out
}

/// What the columns of a [`Grid`] stand for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ColumnAxis {
    /// Equal spans of time ([`grid`]).
    #[default]
    Time,
    /// Equal numbers of heap changes (sample entries) in the order the log
    /// made them ([`grid_in_log_order`]).
    LogOrder,
}

/// What grid to compute.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridSpec {
    /// Columns (time); at least 1.
    pub columns: u32,
    /// Rows (address) at most; at least 1. Fewer come out when the bands
    /// need fewer; more only when there are more bands than rows.
    pub rows: u32,
    /// Window start, ms.
    pub from_ms: f64,
    /// Window end, ms.
    pub to_ms: f64,
}

/// One row of a [`Grid`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct GridRow {
    /// Index of its band in [`AddressAxis::bands`].
    pub band: u32,
    /// Address of its first grain.
    pub low: u64,
    /// Address of its last grain (inclusive).
    pub high: u64,
    /// The grain it shows (its lowest grain with a history), if any.
    pub grain: Option<u64>,
}

impl GridRow {
    /// Bytes of address space the row stands for.
    pub fn bytes(&self) -> u64 {
        (self.high - self.low) / GRAIN_BYTES * GRAIN_BYTES + GRAIN_BYTES
    }
}

/// A type seen in a grid.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GridType {
    /// The type id (as in the log).
    pub type_id: i32,
    /// Its name.
    pub name: String,
    /// Cells it occupies.
    pub cells: u64,
    /// Bytes it occupies on average over the window's columns: each cell
    /// counts its row's bytes, divided by the number of columns.
    pub bytes: u64,
}

/// The Time Line grid (see the module documentation).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Grid {
    /// Window start, ms.
    pub from_ms: f64,
    /// Window end, ms.
    pub to_ms: f64,
    /// Columns.
    pub columns: u32,
    /// Grains per row.
    pub grains_per_row: u64,
    /// The tick index each column shows.
    pub column_ticks: Vec<u32>,
    /// The rows, top (highest addresses) first.
    pub rows: Vec<GridRow>,
    /// Type id per cell (0: free), row-major, top row first.
    pub cells: Vec<i32>,
    /// The types occupying cells, by bytes (most first), then name.
    pub types: Vec<GridType>,
    /// What the columns stand for.
    pub axis: ColumnAxis,
    /// With [`ColumnAxis::LogOrder`]: how many heap changes (sample
    /// entries, in log order) each column shows; empty on a time axis.
    pub column_changes: Vec<u32>,
}

impl Grid {
    /// The type of a cell (0: free or outside the grid).
    pub fn cell(&self, row: usize, column: usize) -> i32 {
        if column >= self.columns as usize {
            return 0;
        }
        self.cells.get(row * self.columns as usize + column).copied().unwrap_or(0)
    }
}

/// The time of a tick index in ms (whole: `i` records count whole ms).
pub fn tick_ms(model: &Model, tick: TickIndex) -> f64 {
    (model.time().seconds(tick).unwrap_or(0.0) * 1000.0).round()
}

/// The log's last tick index.
pub fn last_tick(model: &Model) -> TickIndex {
    TickIndex(model.time().len().saturating_sub(1) as u32)
}

/// The time of the log's last tick index, ms.
pub fn end_ms(model: &Model) -> f64 {
    tick_ms(model, last_tick(model))
}

/// The last tick index at or before `ms`.
pub fn tick_at_ms(model: &Model, ms: f64) -> TickIndex {
    model.time().tick_at(ms / 1000.0)
}

/// The tick index each of `columns` columns over `[from_ms, to_ms]` shows.
pub fn column_ticks(model: &Model, columns: u32, from_ms: f64, to_ms: f64) -> Vec<TickIndex> {
    let n = columns.max(1);
    let span = (to_ms - from_ms).max(0.0);
    (0..n)
        .map(|c| {
            let end = if c + 1 == n { to_ms.max(from_ms) } else { from_ms + span * (c + 1) as f64 / n as f64 };
            tick_at_ms(model, end)
        })
        .collect()
}

/// The smallest grains-per-row that lets every band fit in `rows` rows.
fn grains_per_row(bands: &[Band], rows: u64) -> u64 {
    let need = |g: u64| -> u64 { bands.iter().map(|b| b.grains.div_ceil(g)).sum() };
    let max = bands.iter().map(|b| b.grains).max().unwrap_or(1).max(1);
    if need(max) > rows {
        return max;
    }
    let (mut lo, mut hi) = (1u64, max);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if need(mid) <= rows {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// The rows of a grid over `axis` with at most `rows` rows, top first.
pub fn grid_rows(axis: &AddressAxis, rows: u32) -> (u64, Vec<GridRow>) {
    let gpr = grains_per_row(&axis.bands, rows.max(1) as u64);
    let step = gpr.saturating_mul(GRAIN_BYTES);
    let mut out = Vec::new();
    for (bi, b) in axis.bands.iter().enumerate().rev() {
        let n = b.grains.div_ceil(gpr);
        for k in (0..n).rev() {
            let low = b.low + k * step;
            let high = (low + (gpr - 1) * GRAIN_BYTES).min(b.high);
            let i = axis.grains.partition_point(|&g| g < low);
            let grain = axis.grains.get(i).copied().filter(|&g| g <= high);
            out.push(GridRow { band: bi as u32, low, high, grain });
        }
    }
    (gpr, out)
}

/// The times (ms) of the first and the last heap change (sample entry)
/// of the log, `None` when it has none. Equal times mean that time carries
/// no information about the heap's history: see [`grid_in_log_order`].
pub fn changes_span_ms(model: &Model) -> Option<(f64, f64)> {
    let samples = model.samples();
    let n = samples.len();
    let first = samples.get(SampleId(0))?;
    let last = samples.get(SampleId(n.checked_sub(1)? as u32))?;
    Some((tick_ms(model, first.change), tick_ms(model, last.change)))
}

/// Whether time says nothing about the log's heap history: it made more
/// than one heap change, all at one tick. A picture of the whole log then
/// lays its columns over the changes in log order ([`grid_in_log_order`]).
pub fn changes_at_one_moment(model: &Model) -> bool {
    model.samples().len() > 1 && changes_span_ms(model).is_some_and(|(first, last)| first == last)
}

/// The axis of a Time Line's columns: time, unless no time window was
/// asked for (`windowed` false) and [`changes_at_one_moment`]; then the
/// heap changes in log order.
pub fn column_axis(model: &Model, windowed: bool) -> ColumnAxis {
    if !windowed && changes_at_one_moment(model) {
        ColumnAxis::LogOrder
    } else {
        ColumnAxis::Time
    }
}

/// The cell grid with its columns on `columns`: [`grid`] or
/// [`grid_in_log_order`].
pub fn grid_on(model: &Model, axis: &AddressAxis, spec: &GridSpec, columns: ColumnAxis) -> Grid {
    match columns {
        ColumnAxis::Time => grid(model, axis, spec),
        ColumnAxis::LogOrder => grid_in_log_order(model, axis, spec),
    }
}

/// How many heap changes (sample entries) the log made before tick index
/// `tick` (entries are made in log order, so their change ticks never go
/// down): where a GC or a comment of that tick sits in log order.
pub fn changes_before(model: &Model, tick: TickIndex) -> u64 {
    let samples = model.samples();
    let (mut lo, mut hi) = (0u32, samples.len() as u32);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match samples.get(SampleId(mid)) {
            Some(s) if s.change < tick => lo = mid + 1,
            _ => hi = mid,
        }
    }
    lo as u64
}

/// The Time Line grid over an address axis (see the module documentation).
pub fn grid(model: &Model, axis: &AddressAxis, spec: &GridSpec) -> Grid {
    let columns = spec.columns.max(1);
    let ticks = column_ticks(model, columns, spec.from_ms, spec.to_ms);
    // Column c shows the entries with a change tick at or before its tick.
    let limits: Vec<u32> = ticks.iter().map(|t| t.0).collect();
    fill(model, axis, spec, &limits, |_, s| s.change.0, ColumnAxis::Time, Vec::new())
}

/// The Time Line grid with its columns over the heap changes in log order
/// instead of time (see "Log order" in the module documentation);
/// `spec.from_ms` and `spec.to_ms` are kept in the answer but do not
/// select anything.
pub fn grid_in_log_order(model: &Model, axis: &AddressAxis, spec: &GridSpec) -> Grid {
    let columns = spec.columns.max(1) as u64;
    let n = model.samples().len() as u64;
    // Column c shows the entries numbered below (c + 1) * n / columns.
    let counts: Vec<u32> = (0..columns).map(|c| ((c + 1) * n / columns) as u32).collect();
    // Entry ids against counts: entry `id` is shown when `id < count`, i.e.
    // `id + 1 <= count`.
    fill(model, axis, spec, &counts, |id, _| id.0 + 1, ColumnAxis::LogOrder, counts.clone())
}

/// Fills a grid: column `c` shows, in each row's grain, the newest entry
/// whose `key(id, entry)` is at most `limits[c]` (limits never go down).
fn fill(
    model: &Model,
    axis: &AddressAxis,
    spec: &GridSpec,
    limits: &[u32],
    key: impl Fn(SampleId, &Sample) -> u32 + Sync,
    column_axis: ColumnAxis,
    column_changes: Vec<u32>,
) -> Grid {
    let ncol = limits.len().max(1);
    let (gpr, rows) = grid_rows(axis, spec.rows);
    let mut cells = vec![0i32; rows.len() * ncol];
    let samples = model.samples();
    cells.par_chunks_mut(ncol).zip(rows.par_iter()).for_each(|(line, row)| {
        let Some(grain) = row.grain else { return };
        // The grain's entries, oldest first: (key, type).
        let mut chain: Vec<(u32, i32)> = samples.history(grain).map(|(id, s)| (key(id, &s), s.type_id.0)).collect();
        chain.reverse();
        let mut k = 0usize;
        let mut current = 0i32;
        for (cell, &limit) in line.iter_mut().zip(limits) {
            while k < chain.len() && chain[k].0 <= limit {
                current = chain[k].1;
                k += 1;
            }
            *cell = current;
        }
    });
    let column_ticks: Vec<u32> = match column_axis {
        ColumnAxis::Time => limits.to_vec(),
        ColumnAxis::LogOrder => limits
            .iter()
            .map(|&c| c.checked_sub(1).and_then(|id| samples.get(SampleId(id))).map_or(0, |s| s.change.0))
            .collect(),
    };
    let mut per_type: HashMap<i32, (u64, u128)> = HashMap::new();
    for (row, line) in rows.iter().zip(cells.chunks(ncol)) {
        let bytes = row.bytes() as u128;
        let mut run_type = 0i32;
        let mut run = 0u64;
        for &c in line.iter().chain(std::iter::once(&0)) {
            if c != run_type {
                if run_type != 0 {
                    let e = per_type.entry(run_type).or_default();
                    e.0 += run;
                    e.1 += run as u128 * bytes;
                }
                run_type = c;
                run = 0;
            }
            run += 1;
        }
    }
    let mut types: Vec<GridType> = per_type
        .into_iter()
        .map(|(t, (n, b))| GridType {
            type_id: t,
            name: model.type_name(TypeId(t)).into_owned(),
            cells: n,
            bytes: (b / ncol as u128).min(u64::MAX as u128) as u64,
        })
        .collect();
    types.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)).then(a.type_id.cmp(&b.type_id)));
    Grid {
        from_ms: spec.from_ms,
        to_ms: spec.to_ms,
        columns: ncol as u32,
        grains_per_row: gpr,
        column_ticks,
        rows,
        cells,
        types,
        axis: column_axis,
        column_changes,
    }
}

/// A GC marker.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct GcMark {
    /// 1-based number among all GCs of the log.
    pub number: u32,
    /// 1-based number among the GCs of this generation or higher (as
    /// CLRProfiler labels them: "gc #7 (gen 1#3)").
    pub number_in_generation: u32,
    /// The condemned generation (as read or computed).
    pub generation: i32,
    /// Its tick index.
    pub tick: u32,
    /// Its time, ms.
    pub ms: f64,
}

/// The GCs in `[from_ms, to_ms]`, oldest first (the sample table's GC tick
/// list).
pub fn gc_marks(model: &Model, from_ms: f64, to_ms: f64) -> Vec<GcMark> {
    let mut per_gen = [0u32; 3];
    let mut out = Vec::new();
    for (i, &(generation, tick)) in model.samples().gc_ticks().iter().enumerate() {
        for (g, n) in per_gen.iter_mut().enumerate() {
            if generation >= g as i32 {
                *n += 1;
            }
        }
        let ms = tick_ms(model, tick);
        if ms < from_ms || ms > to_ms {
            continue;
        }
        let number_in_generation = per_gen[generation.clamp(0, 2) as usize];
        out.push(GcMark { number: i as u32 + 1, number_in_generation, generation, tick: tick.0, ms });
    }
    out
}

/// A comment marker.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CommentMark {
    /// Its tick index.
    pub tick: u32,
    /// Its time, ms.
    pub ms: f64,
    /// Its text.
    pub text: String,
}

/// The comments CLRProfiler keeps, in `[from_ms, to_ms]`.
pub fn comment_marks(model: &Model, from_ms: f64, to_ms: f64) -> Vec<CommentMark> {
    model
        .comments()
        .kept()
        .iter()
        .map(|c| (c, tick_ms(model, c.tick)))
        .filter(|&(_, ms)| ms >= from_ms && ms <= to_ms)
        .map(|(c, ms)| CommentMark { tick: c.tick.0, ms, text: model.names().get(c.text).to_string() })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two 2 KB objects far apart, one dies at a GC, a comment.
    fn model() -> Model {
        let log = b"t 1 0 Big\nt 2 0 Other\nn 1 1 1 2048\nn 2 1 2 3000\n\
i 10\n! 7 0x100000 1\ni 20\n! 7 0x900000 2\nz half\ni 30\n\
b 1 0 0 0x100000 0x10000 0x10000 0\nv 0x900000 3000\nb 0 0 0 0x100000 0x10000 0x10000 0\ni 40\n";
        crate::model::load(log, &Default::default()).expect("loads")
    }

    #[test]
    fn bands_rows_cells_and_markers() {
        let m = model();
        let axis = address_axis(&m, None, 16);
        assert_eq!(axis.bands.len(), 2, "{:?}", axis.bands);
        assert_eq!(axis.bands[0].low, 0x100000);
        assert_eq!(axis.bands[1].low, 0x900000);
        let g = grid(&m, &axis, &GridSpec { columns: 4, rows: 10, from_ms: 0.0, to_ms: 40.0 });
        // Columns end at 10, 20, 30, 40 ms.
        assert_eq!(g.column_ticks.len(), 4);
        assert_eq!(g.grains_per_row, 1);
        // Top band: the `Other` object at 0x900000 (3000 bytes: 3 grains),
        // from 20 ms on, surviving.
        assert_eq!(g.rows[0].band, 1);
        let top: Vec<i32> = (0..4).map(|c| g.cell(0, c)).collect();
        assert_eq!(top, vec![0, 2, 2, 2]);
        // Bottom band: `Big` from 10 ms, dead at the GC at 30 ms.
        let last = g.rows.len() - 1;
        let bottom: Vec<i32> = (0..4).map(|c| g.cell(last, c)).collect();
        assert_eq!(bottom, vec![1, 1, 0, 0]);
        assert_eq!(g.types[0].name, "Other");
        let gcs = gc_marks(&m, 0.0, 40.0);
        assert_eq!(gcs.len(), 1);
        assert_eq!((gcs[0].generation, gcs[0].ms), (0, 30.0));
        let cs = comment_marks(&m, 0.0, 40.0);
        assert_eq!(cs.len(), 1);
        assert_eq!(cs[0].text, "half");
        // Squeezed to one band, and to one row.
        let one = address_axis(&m, None, 1);
        assert_eq!(one.bands.len(), 1);
        let g = grid(&m, &one, &GridSpec { columns: 2, rows: 1, from_ms: 0.0, to_ms: 40.0 });
        assert_eq!(g.rows.len(), 1);
        assert_eq!(g.rows[0].grain, Some(0x100000));
    }

    /// Two 2 KB objects at one tick: time shows them only in the last
    /// column; log order shows the first, then both.
    #[test]
    fn log_order_when_time_says_nothing() {
        let log = b"t 1 0 A\nt 2 0 B\nn 1 1 1 2048\nn 2 1 2 2048\ni 10\n! 7 0x100000 1\nz between\n! 7 0x200000 2\n";
        let m = crate::model::load(log, &Default::default()).expect("loads");
        assert_eq!(m.samples().len(), 4);
        assert_eq!(changes_span_ms(&m), Some((10.0, 10.0)));
        assert!(changes_at_one_moment(&m));
        // A second tick between the objects: time tells their order.
        let timed = b"t 1 0 A\nt 2 0 B\nn 1 1 1 2048\nn 2 1 2 2048\ni 10\n! 7 0x100000 1\ni 20\n! 7 0x200000 2\n";
        assert!(!changes_at_one_moment(&crate::model::load(timed, &Default::default()).expect("loads")));
        let axis = address_axis(&m, None, 1);
        let spec = GridSpec { columns: 2, rows: 2000, from_ms: 0.0, to_ms: 10.0 };
        let count = |g: &Grid, c: usize, t: i32| (0..g.rows.len()).filter(|&r| g.cell(r, c) == t).count();
        let by_time = grid(&m, &axis, &spec);
        assert_eq!(by_time.axis, ColumnAxis::Time);
        assert_eq!((count(&by_time, 0, 1), count(&by_time, 0, 2)), (0, 0));
        let by_order = grid_in_log_order(&m, &axis, &spec);
        assert_eq!(by_order.axis, ColumnAxis::LogOrder);
        assert_eq!(by_order.column_changes, vec![2, 4]);
        assert_eq!((count(&by_order, 0, 1), count(&by_order, 0, 2)), (2, 0));
        assert_eq!((count(&by_order, 1, 1), count(&by_order, 1, 2)), (2, 2));
        // The comment sits after the first object's two entries.
        let c = &m.comments().kept()[0];
        assert_eq!(changes_before(&m, c.tick), 2);
        assert_eq!(changes_before(&m, TickIndex(0)), 0);
        assert_eq!(changes_before(&m, TickIndex(99)), 4);
    }
}
