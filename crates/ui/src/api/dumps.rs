//! Heap dumps: the list, one dump's types, retained sizes, the dominator
//! tree explorer, paths from roots, and the difference of two dumps.

use crate::params::WindowParams;
use crate::{ApiError, App};
use axum::extract::{Path, Query, State};
use axum::response::Response;
use clrprof::query::dumps::{self, DumpIndex};
use serde::Deserialize;

fn missing(log: &crate::logs::LoadedLog, n: u32) -> ApiError {
    ApiError::not_found(format!("no heap dump {n} (the log has {})", log.model.heap_dumps().dumps().len()))
}

/// `clrprof dumps --json`.
pub async fn list(State(app): State<App>, Path(id): Path<u32>, Query(p): Query<WindowParams>) -> Result<Response, ApiError> {
    app.answer(id, move |log| {
        let model = &log.model;
        let filter = p.filter(model)?;
        let all = model.heap_dumps().dumps();
        Ok(dumps::list(model)
            .into_iter()
            .filter(|i| all.get(i.index.0 as usize).is_some_and(|d| filter.has_tick(d.tick)))
            .take(p.limit())
            .collect::<Vec<_>>())
    })
    .await
}

/// `clrprof dump N --json`.
pub async fn types(State(app): State<App>, Path((id, n)): Path<(u32, u32)>) -> Result<Response, ApiError> {
    app.answer(id, move |log| dumps::by_type(&log.model, DumpIndex(n)).ok_or_else(|| missing(log, n))).await
}

/// Rows to give.
#[derive(Deserialize)]
pub struct TopParams {
    /// Rows (0: all; default 20).
    #[serde(default, deserialize_with = "crate::params::lenient")]
    top: Option<usize>,
}

/// `clrprof dump N --retained --json`.
pub async fn retained(State(app): State<App>, Path((id, n)): Path<(u32, u32)>, Query(p): Query<TopParams>) -> Result<Response, ApiError> {
    let top = match p.top {
        Some(0) => usize::MAX,
        Some(t) => t,
        None => 20,
    };
    app.answer(id, move |log| dumps::retained(&log.model, DumpIndex(n), top).ok_or_else(|| missing(log, n))).await
}

/// Parameters of `tree`.
#[derive(Deserialize)]
pub struct TreeParams {
    /// The node to expand (default: the virtual root of all roots).
    #[serde(default, deserialize_with = "crate::params::lenient")]
    node: Option<u32>,
    /// Children to give at most (default 50).
    #[serde(default, deserialize_with = "crate::params::lenient")]
    limit: Option<usize>,
}

/// A node of the dominator tree and its children by retained bytes.
pub async fn tree(State(app): State<App>, Path((id, n)): Path<(u32, u32)>, Query(p): Query<TreeParams>) -> Result<Response, ApiError> {
    app.answer(id, move |log| {
        let t = log.dominators.get(&log.model, n).ok_or_else(|| missing(log, n))?;
        let node = p.node.unwrap_or_else(|| t.root());
        t.expand(&log.model, node, p.limit.unwrap_or(50))
            .ok_or_else(|| ApiError::not_found(format!("dump {n} has no reachable node {node}")))
    })
    .await
}

/// Parameters of `paths`.
#[derive(Deserialize)]
pub struct PathParams {
    /// The type (exact name, or else a part of it).
    #[serde(rename = "type")]
    pattern: String,
    /// Paths at most (default 10).
    #[serde(default, deserialize_with = "crate::params::lenient")]
    max: Option<usize>,
}

/// `clrprof dump N --path-to TYPE --json`.
pub async fn paths(State(app): State<App>, Path((id, n)): Path<(u32, u32)>, Query(p): Query<PathParams>) -> Result<Response, ApiError> {
    app.answer(id, move |log| {
        dumps::paths_to(&log.model, DumpIndex(n), &p.pattern, p.max.unwrap_or(10)).ok_or_else(|| missing(log, n))
    })
    .await
}

/// `clrprof dump-diff A B --json`.
pub async fn diff(State(app): State<App>, Path((id, a, b)): Path<(u32, u32, u32)>) -> Result<Response, ApiError> {
    app.answer(id, move |log| {
        dumps::diff(&log.model, DumpIndex(a), DumpIndex(b))
            .ok_or_else(|| ApiError::not_found(format!("no heap dumps {a} and {b} (the log has {})", log.model.heap_dumps().dumps().len())))
    })
    .await
}
