//! The page, its embedded files, and the logs' load status.

use crate::assets::{find, INDEX_HTML};
use crate::{ApiError, App};
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue};
use axum::response::{Html, IntoResponse, Response};

/// The page, with the token it needs for its requests.
pub async fn index(State(app): State<App>) -> Html<String> {
    Html(INDEX_HTML.replace("{{TOKEN}}", app.token().as_str()))
}

/// One embedded file, by name (there is nothing else to reach).
pub async fn asset(Path(name): Path<String>) -> Result<Response, ApiError> {
    let a = find(&name).ok_or_else(|| ApiError::not_found(format!("no asset named {name:?}")))?;
    Ok((
        [(header::CONTENT_TYPE, HeaderValue::from_static(a.content_type)), (header::CACHE_CONTROL, HeaderValue::from_static("no-cache"))],
        a.body,
    )
        .into_response())
}

/// Each log's name and load progress.
pub async fn logs(State(app): State<App>) -> Result<Response, ApiError> {
    crate::app::json(&app.logs().statuses())
}
