//! `summary`: CLRProfiler's 18 Summary figures.

use crate::{ApiError, App};
use axum::extract::{Path, State};
use axum::response::Response;

/// `clrprof summary --json`.
pub async fn summary(State(app): State<App>, Path(id): Path<u32>) -> Result<Response, ApiError> {
    app.answer(id, |log| Ok(clrprof::query::summary(&log.model))).await
}
