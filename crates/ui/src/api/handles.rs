//! `handles`: GC handles by the stack that created them.

use crate::params::WindowParams;
use crate::{ApiError, App};
use axum::extract::{Path, Query, State};
use axum::response::Response;
use clrprof::query::{handles_by_stack, HandleGroup};
use serde::Serialize;

/// `clrprof handles --json`: the totals, the groups (the first `top`), and
/// how many were left out.
#[derive(Serialize)]
struct Answer {
    created: u64,
    destroyed: u64,
    surviving: u64,
    groups: Vec<HandleGroup>,
    groups_left_out: usize,
}

/// `clrprof handles [--from --to --thread] --top N --json`.
pub async fn handles(State(app): State<App>, Path(id): Path<u32>, Query(p): Query<WindowParams>) -> Result<Response, ApiError> {
    app.answer(id, move |log| {
        let filter = p.filter(&log.model)?;
        let mut r = handles_by_stack(&log.model, &filter);
        let limit = p.limit();
        let left_out = r.groups.len().saturating_sub(limit);
        r.groups.truncate(limit);
        Ok(Answer { created: r.created, destroyed: r.destroyed, surviving: r.surviving, groups: r.groups, groups_left_out: left_out })
    })
    .await
}
