//! Errors: of a request (an HTTP status and a message, as JSON) and of the
//! server as a whole.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use std::path::PathBuf;

/// A request that cannot be answered: the status and a message saying why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong, for the page.
    pub message: String,
}

impl ApiError {
    /// 400: a parameter the request got wrong.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::BAD_REQUEST, message: message.into() }
    }

    /// 404: no such log, dump or object.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::NOT_FOUND, message: message.into() }
    }

    /// 503: the log is still loading (or failed to load).
    pub fn unavailable(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::SERVICE_UNAVAILABLE, message: message.into() }
    }

    /// 500: the server failed.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::INTERNAL_SERVER_ERROR, message: message.into() }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(serde_json::json!({ "error": self.message }))).into_response()
    }
}

impl From<serde_json::Error> for ApiError {
    fn from(e: serde_json::Error) -> ApiError {
        ApiError::internal(format!("cannot encode the answer: {e}"))
    }
}

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum UiError {
    /// No log was given.
    #[error("give at least one log to show, or --collector DIR")]
    NoLogs,
    /// A log could not be opened.
    #[error("cannot open {path}: {error}")]
    Open {
        /// The log.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {error}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// Why.
        error: std::io::Error,
    },
    /// No random token could be made.
    #[error("cannot make a random token: {0}")]
    Token(getrandom::Error),
    /// The async runtime or the server failed.
    #[error("server: {0}")]
    Io(#[from] std::io::Error),
}
