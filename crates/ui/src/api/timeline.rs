//! The Time Line: markers and address bands of a window, and the cell grid
//! the page draws (never per-object data).

use crate::{ApiError, App};
use axum::extract::{Path, Query, State};
use axum::response::Response;
use clrprof::model::Model;
use clrprof::query::timeline::{
    address_axis, changes_at_one_moment, changes_before, changes_span_ms, column_axis, comment_marks, end_ms, gc_marks, grid_on,
    Band, ColumnAxis, CommentMark, GcMark, GridSpec, GridType,
};
use clrprof::model::TickIndex;
use serde::{Deserialize, Serialize};

/// The window of a Time Line request.
#[derive(Deserialize)]
pub struct TimelineParams {
    /// Start, ms (default 0).
    #[serde(default, deserialize_with = "crate::params::lenient")]
    from: Option<f64>,
    /// End, ms (default: the end of the log).
    #[serde(default, deserialize_with = "crate::params::lenient")]
    to: Option<f64>,
    /// Grid columns (at most 4096).
    #[serde(default, deserialize_with = "crate::params::lenient")]
    columns: Option<u32>,
    /// Grid rows, at most (at most 4096).
    #[serde(default, deserialize_with = "crate::params::lenient")]
    rows: Option<u32>,
    /// Lowest address shown.
    #[serde(default, deserialize_with = "crate::params::lenient")]
    addr_from: Option<u64>,
    /// Highest address shown.
    #[serde(default, deserialize_with = "crate::params::lenient")]
    addr_to: Option<u64>,
}

impl TimelineParams {
    fn window(&self, model: &Model) -> Result<(f64, f64), ApiError> {
        let end = end_ms(model);
        let from = self.from.unwrap_or(0.0);
        let to = self.to.unwrap_or(end);
        if !from.is_finite() || !to.is_finite() || to < from {
            return Err(ApiError::bad_request(format!("the time window ends ({to} ms) before it starts ({from} ms)")));
        }
        Ok((from, to))
    }

    /// The columns' axis, as `clrprof timeline` picks it: time, unless
    /// every heap change of the log happened at one tick and no window
    /// was asked for; then the heap changes in log order.
    fn columns(&self, model: &Model) -> ColumnAxis {
        column_axis(model, self.from.is_some() || self.to.is_some())
    }

    fn address(&self) -> Option<(u64, u64)> {
        match (self.addr_from, self.addr_to) {
            (None, None) => None,
            (a, b) => Some((a.unwrap_or(0), b.unwrap_or(u64::MAX))),
        }
    }
}

/// `clrprof timeline --json` without the live types: the window, the GC
/// and comment markers in it and the address bands.
#[derive(Serialize)]
struct Markers {
    from_ms: f64,
    to_ms: f64,
    end_ms: f64,
    /// `"time"`, or `"log_order"` (see [`TimelineParams::columns`]).
    axis: ColumnAxis,
    /// Heap changes (sample entries) in the log.
    changes: u64,
    /// The time of the log's heap changes when they all happened at one
    /// tick.
    changes_ms: Option<f64>,
    gcs: Vec<GcMark>,
    /// With the log-order axis: how many heap changes came before each GC
    /// (where it sits on that axis).
    gc_changes: Vec<u64>,
    comments: Vec<CommentMark>,
    /// With the log-order axis: how many heap changes came before each
    /// comment.
    comment_changes: Vec<u64>,
    bands: Vec<Band>,
}

/// The window's markers and bands.
pub async fn markers(State(app): State<App>, Path(id): Path<u32>, Query(p): Query<TimelineParams>) -> Result<Response, ApiError> {
    app.answer(id, move |log| {
        let model = &log.model;
        let (from_ms, to_ms) = p.window(model)?;
        let columns = p.columns(model);
        let log_order = columns == ColumnAxis::LogOrder;
        let gcs = gc_marks(model, from_ms, to_ms);
        let comments = comment_marks(model, from_ms, to_ms);
        let before = |tick: u32| changes_before(model, TickIndex(tick));
        Ok(Markers {
            from_ms,
            to_ms,
            end_ms: end_ms(model),
            axis: columns,
            changes: model.samples().len() as u64,
            changes_ms: changes_at_one_moment(model).then(|| changes_span_ms(model).map_or(0.0, |s| s.1)),
            gc_changes: if log_order { gcs.iter().map(|g| before(g.tick)).collect() } else { Vec::new() },
            comment_changes: if log_order { comments.iter().map(|c| before(c.tick)).collect() } else { Vec::new() },
            gcs,
            comments,
            bands: address_axis(model, p.address(), usize::MAX).bands,
        })
    })
    .await
}

/// A grid row as the page gets it.
#[derive(Serialize)]
struct Row {
    low: u64,
    high: u64,
    band: u32,
}

/// `clrprof timeline --cells --json`'s `grid`, with the cells as runs
/// `[type id, count, type id, count, ...]` over the row-major cells.
#[derive(Serialize)]
struct CellGrid {
    from_ms: f64,
    to_ms: f64,
    columns: u32,
    grains_per_row: u64,
    column_ticks: Vec<u32>,
    rows: Vec<Row>,
    runs: Vec<i64>,
    types: Vec<GridType>,
}

/// The cell grid of a window.
pub async fn grid(State(app): State<App>, Path(id): Path<u32>, Query(p): Query<TimelineParams>) -> Result<Response, ApiError> {
    let columns = p.columns.unwrap_or(1000);
    let rows = p.rows.unwrap_or(600);
    if columns == 0 || rows == 0 || columns > 4096 || rows > 4096 {
        return Err(ApiError::bad_request("columns and rows must be between 1 and 4096"));
    }
    app.answer(id, move |log| {
        let model = &log.model;
        let (from_ms, to_ms) = p.window(model)?;
        let axis = address_axis(model, p.address(), usize::MAX);
        let spec = GridSpec { columns, rows, from_ms, to_ms };
        let g = grid_on(model, &axis, &spec, p.columns(model));
        let mut runs: Vec<i64> = Vec::new();
        let mut cur: Option<(i32, i64)> = None;
        for &c in &g.cells {
            cur = match cur {
                Some((t, n)) if t == c => Some((t, n + 1)),
                Some((t, n)) => {
                    runs.extend([t as i64, n]);
                    Some((c, 1))
                }
                None => Some((c, 1)),
            };
        }
        if let Some((t, n)) = cur {
            runs.extend([t as i64, n]);
        }
        Ok(CellGrid {
            from_ms: g.from_ms,
            to_ms: g.to_ms,
            columns: g.columns,
            grains_per_row: g.grains_per_row,
            column_ticks: g.column_ticks,
            rows: g.rows.iter().map(|r| Row { low: r.low, high: r.high, band: r.band }).collect(),
            runs,
            types: g.types,
        })
    })
    .await
}
