//! Two logs compared.

use crate::{ApiError, App};
use axum::extract::{Path, Query, State};
use axum::response::Response;
use serde::Deserialize;

/// Rows per list.
#[derive(Deserialize)]
pub struct CompareParams {
    /// Rows (0: all; default 20, as the CLI).
    #[serde(default, deserialize_with = "crate::params::lenient")]
    top: Option<usize>,
}

/// `clrprof diff A B --json` (B minus A).
pub async fn compare(State(app): State<App>, Path((a, b)): Path<(u32, u32)>, Query(p): Query<CompareParams>) -> Result<Response, ApiError> {
    let limit = match p.top {
        Some(0) => usize::MAX,
        Some(t) => t,
        None => 20,
    };
    app.answer2(a, b, move |la, lb| {
        let mut d = clrprof::query::diff(&la.model, &lb.model);
        for list in [&mut d.allocated_by_type, &mut d.final_heap_by_type, &mut d.functions_exclusive, &mut d.functions_inclusive] {
            list.truncate(limit);
        }
        Ok(d)
    })
    .await
}
