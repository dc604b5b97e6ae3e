//! `/api/watch`: the counters and firings of `clrprof watch --json`'s
//! file (`clrprof ui --watch FILE`), read again at each request.

use crate::{ApiError, App};
use axum::extract::State;
use axum::response::Response;

/// The series and firings.
pub async fn series(State(app): State<App>) -> Result<Response, ApiError> {
    let path =
        app.watch().ok_or_else(|| ApiError::not_found("the server was started without --watch: it shows no counters"))?.to_path_buf();
    let w = tokio::task::spawn_blocking(move || crate::watch_series::read(&path).map_err(|e| (path, e)))
        .await
        .map_err(|e| ApiError::internal(format!("reading the counters failed: {e}")))?
        .map_err(|(p, e)| ApiError::internal(format!("cannot read {}: {e}", p.display())))?;
    crate::app::json(&w)
}
