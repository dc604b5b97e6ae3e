//! Allocation by code: functions, modules, classes, who allocated a type,
//! the Allocation Graph and the flame graph's tree.

use crate::params::{sort_by, WindowParams};
use crate::{ApiError, App};
use axum::extract::{Path, Query, State};
use axum::response::Response;
use clrprof::query::{allocation_graph, by_class, by_function, by_module, who_allocated, TypeMatch};
use serde::Deserialize;

/// Parameters of the figure tables.
#[derive(Deserialize)]
pub struct SortParams {
    #[serde(flatten)]
    window: WindowParams,
    /// inclusive or exclusive.
    sort: Option<String>,
}

/// `clrprof functions --json`.
pub async fn functions(State(app): State<App>, Path(id): Path<u32>, Query(p): Query<SortParams>) -> Result<Response, ApiError> {
    let by = sort_by(p.sort.as_deref())?;
    app.answer(id, move |log| {
        let rows = by_function(&log.model, &p.window.filter(&log.model)?, by);
        Ok(rows.into_iter().take(p.window.limit()).collect::<Vec<_>>())
    })
    .await
}

/// `clrprof modules --json`.
pub async fn modules(State(app): State<App>, Path(id): Path<u32>, Query(p): Query<SortParams>) -> Result<Response, ApiError> {
    let by = sort_by(p.sort.as_deref())?;
    app.answer(id, move |log| {
        let rows = by_module(&log.model, &p.window.filter(&log.model)?, by);
        Ok(rows.into_iter().take(p.window.limit()).collect::<Vec<_>>())
    })
    .await
}

/// `clrprof classes --json`.
pub async fn classes(State(app): State<App>, Path(id): Path<u32>, Query(p): Query<SortParams>) -> Result<Response, ApiError> {
    let by = sort_by(p.sort.as_deref())?;
    app.answer(id, move |log| {
        let rows = by_class(&log.model, &p.window.filter(&log.model)?, by);
        Ok(rows.into_iter().take(p.window.limit()).collect::<Vec<_>>())
    })
    .await
}

/// Parameters of `who`.
#[derive(Deserialize)]
pub struct WhoParams {
    #[serde(flatten)]
    window: WindowParams,
    sort: Option<String>,
    /// The type name or a part of it.
    #[serde(rename = "type")]
    pattern: String,
    /// Match the whole name.
    #[serde(default, deserialize_with = "crate::params::lenient")]
    exact: Option<bool>,
}

/// `clrprof who TYPE --json`.
pub async fn who(State(app): State<App>, Path(id): Path<u32>, Query(p): Query<WhoParams>) -> Result<Response, ApiError> {
    let by = sort_by(p.sort.as_deref())?;
    app.answer(id, move |log| {
        let filter = p.window.filter(&log.model)?;
        let pattern = if p.exact.unwrap_or(false) { TypeMatch::Exact(p.pattern) } else { TypeMatch::Contains(p.pattern) };
        let mut w = who_allocated(&log.model, &filter, &pattern, by);
        let limit = p.window.limit();
        w.types.truncate(limit);
        w.functions.truncate(limit);
        w.stacks.truncate(limit);
        Ok(w)
    })
    .await
}

/// Parameters of `graph`.
#[derive(Deserialize)]
pub struct GraphParams {
    #[serde(flatten)]
    window: WindowParams,
    /// Leave out nodes and edges under this many bytes.
    #[serde(default, deserialize_with = "crate::params::lenient")]
    min_bytes: Option<u64>,
    /// ... or under this percentage of all bytes (default 1, as the CLI's
    /// table).
    #[serde(default, deserialize_with = "crate::params::lenient")]
    min_percent: Option<f64>,
}

/// `clrprof graph --min-percent P --json`.
pub async fn graph(State(app): State<App>, Path(id): Path<u32>, Query(p): Query<GraphParams>) -> Result<Response, ApiError> {
    let pct = p.min_percent.unwrap_or(1.0);
    if !(0.0..=100.0).contains(&pct) {
        return Err(ApiError::bad_request("min_percent must be between 0 and 100"));
    }
    app.answer(id, move |log| {
        let g = allocation_graph(&log.model, &p.window.filter(&log.model)?);
        let min = p.min_bytes.unwrap_or(0).max((g.total_bytes as f64 * pct / 100.0).ceil() as u64);
        Ok(if min > 0 { g.prune(min) } else { g })
    })
    .await
}

/// Parameters of `flame`.
#[derive(Deserialize)]
pub struct FlameParams {
    #[serde(flatten)]
    window: WindowParams,
    /// The frames from the root to the node to show, joined by `;`.
    focus: Option<String>,
    /// Text to look for in frame names.
    search: Option<String>,
    /// Leave out frames under this fraction of the focus (default 0.001).
    #[serde(default, deserialize_with = "crate::params::lenient")]
    min_fraction: Option<f64>,
}

/// The flame graph's tree under a focus, pruned to what can be drawn.
pub async fn flame(State(app): State<App>, Path(id): Path<u32>, Query(p): Query<FlameParams>) -> Result<Response, ApiError> {
    let fraction = p.min_fraction.unwrap_or(0.001);
    if !(0.0..=1.0).contains(&fraction) {
        return Err(ApiError::bad_request("min_fraction must be between 0 and 1"));
    }
    let focus: Vec<String> = match p.focus.as_deref() {
        None | Some("") => Vec::new(),
        Some(f) => f.split(';').map(str::to_string).collect(),
    };
    app.answer(id, move |log| {
        let filter = p.window.filter(&log.model)?;
        let windowed;
        let tree = if filter.is_all() {
            log.flame_all()
        } else {
            windowed = log.flame_of(&filter);
            &*windowed
        };
        tree.view(&focus, fraction, 4000, p.search.as_deref())
            .ok_or_else(|| ApiError::not_found(format!("no stack goes through {:?}", focus.join(";"))))
    })
    .await
}
