//! Leaks: the verdict of `clrprof leaks` on a log's own dumps (a log with
//! periodic dumps, a trace with several heap walks), from the same query,
//! with each holder's root named as the CLI names it and, when the log
//! has allocation stacks, the stacks that allocate each leaking type.

use crate::{ApiError, App};
use axum::extract::{Path, State};
use axum::response::Response;
use clrprof::model::Model;
use clrprof::query::dumps::{leaks, series_in, LeakReport, LeakRule};
use clrprof::query::{allocations_unknown, canonical_type_name, who_allocated, Filter, SortBy, TypeMatch};
use serde::Serialize;

/// The answer: `clrprof leaks LOG --json`, with per leak the root as a
/// path names it and its allocation stacks.
#[derive(Serialize)]
struct Answer {
    #[serde(flatten)]
    report: LeakReport,
    /// Per leak, in the report's order: its holder's root as a path names
    /// it (`[static Orders.All]`), or `None`.
    root_labels: Vec<Option<String>>,
    /// Per leak, in the report's order: the stacks that allocated the
    /// type, the most bytes first (bytes, objects, frames from the
    /// allocating function outwards); empty when the log has none.
    stacks: Vec<Vec<(u64, u64, Vec<String>)>>,
    /// Why the stacks are missing, when they are.
    #[serde(skip_serializing_if = "Option::is_none")]
    stacks_unknown: Option<String>,
}

/// At most this many stacks per leak.
const STACKS: usize = 3;

fn stacks_of(model: &Model, name: &str) -> Vec<(u64, u64, Vec<String>)> {
    // The log's own spelling of the type.
    let raw = model.types().iter().map(|(id, _)| model.type_name(id).into_owned()).find(|n| canonical_type_name(n) == name);
    match raw {
        Some(raw) => who_allocated(model, &Filter::all(), &TypeMatch::Exact(raw), SortBy::Inclusive)
            .stacks
            .iter()
            .take(STACKS)
            .map(|r| (r.bytes, r.count, r.frames.clone()))
            .collect(),
        None => Vec::new(),
    }
}

/// `clrprof leaks LOG --json` on the log's dumps.
pub async fn leaks_in_log(State(app): State<App>, Path(id): Path<u32>) -> Result<Response, ApiError> {
    app.answer(id, move |log| {
        let model = &log.model;
        let report = leaks(&series_in(model), LeakRule::default());
        let root_labels = report.leaks.iter().map(|l| l.holder.as_ref().and_then(|h| h.root.as_ref()).map(|r| r.label())).collect();
        let stacks_unknown = allocations_unknown(model);
        let stacks =
            report.leaks.iter().map(|l| if stacks_unknown.is_some() { Vec::new() } else { stacks_of(model, &l.series.name) }).collect();
        Ok(Answer { report, root_labels, stacks, stacks_unknown })
    })
    .await
}
