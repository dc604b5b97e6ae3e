//! The server's state and the token check every request passes through.

use crate::collector::SessionDir;
use crate::logs::{LoadedLog, LogId, LogSet};
use clrprof::model::LoadOptions;
use crate::token::{self, Token};
use crate::ApiError;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde::Serialize;
use std::sync::Arc;

/// The header a request may carry the token in (instead of `?token=`).
pub const TOKEN_HEADER: &str = "x-clrprof-token";

/// The server's state: the logs and the token.
#[derive(Clone)]
pub struct App {
    inner: Arc<Inner>,
}

struct Inner {
    token: Token,
    logs: Arc<LogSet>,
    collector: Option<SessionDir>,
    load_options: LoadOptions,
    /// `clrprof watch --json`'s file (`--watch FILE`).
    watch: std::sync::OnceLock<std::path::PathBuf>,
}

impl App {
    /// A server over these logs, answering requests that carry `token`.
    pub fn new(token: Token, logs: Arc<LogSet>) -> App {
        App { inner: Arc::new(Inner { token, logs, collector: None, load_options: LoadOptions::default(), watch: Default::default() }) }
    }

    /// A server over these logs and the sessions of the collector whose
    /// directory is `collector` (`clrprof ui --collector DIR`).
    pub fn with_collector(token: Token, logs: Arc<LogSet>, collector: SessionDir, load_options: LoadOptions) -> App {
        App { inner: Arc::new(Inner { token, logs, collector: Some(collector), load_options, watch: Default::default() }) }
    }

    /// A reference that does not keep the server's state alive.
    pub(crate) fn downgrade(&self) -> WeakApp {
        WeakApp(Arc::downgrade(&self.inner))
    }

    /// Shows the counters of `clrprof watch --json`'s file at `path`
    /// (`/api/watch`); only the first call counts.
    pub fn set_watch(&self, path: std::path::PathBuf) {
        let _ = self.inner.watch.set(path);
    }

    /// The file of counters shown, if any.
    pub fn watch(&self) -> Option<&std::path::Path> {
        self.inner.watch.get().map(|p| p.as_path())
    }

    /// The collector's directory, if the server shows its sessions.
    pub fn collector(&self) -> Option<&SessionDir> {
        self.inner.collector.as_ref()
    }

    /// The collector's directory, or the answer that there is none.
    pub(crate) fn sessions(&self) -> Result<&SessionDir, ApiError> {
        self.collector().ok_or_else(|| ApiError::not_found("the server was started without --collector: it shows no sessions"))
    }

    /// Loads the opened sessions' logs not loaded yet and reads what was
    /// added to those that grew (a blocking call; the server runs it every
    /// second).
    /// Gives the logs (re)loaded.
    pub fn refresh_sessions(&self) -> Vec<LogId> {
        match &self.inner.collector {
            Some(c) => self.inner.logs.refresh_sessions(&self.inner.load_options, |name| c.state_of(name)),
            None => Vec::new(),
        }
    }

    /// The token.
    pub fn token(&self) -> &Token {
        &self.inner.token
    }

    /// The logs.
    pub fn logs(&self) -> &Arc<LogSet> {
        &self.inner.logs
    }

    /// Every route, behind the token check (no `Host` check: for tests
    /// and benchmarks that call the router without a socket).
    pub fn router(&self) -> Router {
        crate::api::routes()
            .layer(axum::middleware::from_fn_with_state(self.clone(), kept_answer))
            .layer(axum::middleware::from_fn_with_state(self.clone(), require_token))
            .with_state(self.clone())
    }

    /// Every route as served on `local_addr` (the address the server is
    /// bound to): behind the `Host` check when that address is a loopback
    /// one (a request must name it or `localhost`, with its port, else 403;
    /// see `host.rs`), then the token check.
    pub fn router_at(&self, local_addr: std::net::SocketAddr) -> Router {
        match crate::host::AllowedHosts::for_addr(local_addr) {
            Some(allowed) => self
                .router()
                .layer(axum::middleware::from_fn_with_state(Arc::new(allowed), crate::host::require_host)),
            None => self.router(),
        }
    }

    /// Runs `answer` on the loaded log `id` on a blocking thread (queries
    /// use every core) and sends its value as JSON.
    pub(crate) async fn answer<T, F>(&self, id: u32, answer: F) -> Result<Response, ApiError>
    where
        T: Serialize,
        F: FnOnce(&LoadedLog) -> Result<T, ApiError> + Send + 'static,
    {
        let log = self.inner.logs.ready(LogId(id))?;
        tokio::task::spawn_blocking(move || answer(&log).and_then(|v| json(&v)))
            .await
            .map_err(|e| ApiError::internal(format!("the query failed: {e}")))?
    }

    /// Runs `answer` on two loaded logs.
    pub(crate) async fn answer2<T, F>(&self, a: u32, b: u32, answer: F) -> Result<Response, ApiError>
    where
        T: Serialize,
        F: FnOnce(&LoadedLog, &LoadedLog) -> Result<T, ApiError> + Send + 'static,
    {
        let la = self.inner.logs.ready(LogId(a))?;
        let lb = self.inner.logs.ready(LogId(b))?;
        tokio::task::spawn_blocking(move || answer(&la, &lb).and_then(|v| json(&v)))
            .await
            .map_err(|e| ApiError::internal(format!("the query failed: {e}")))?
    }
}

/// An [`App`] that may have gone away.
pub(crate) struct WeakApp(std::sync::Weak<Inner>);

impl WeakApp {
    /// The app, if it is still there.
    pub(crate) fn upgrade(&self) -> Option<App> {
        self.0.upgrade().map(|inner| App { inner })
    }
}

/// A JSON response, not to be cached.
pub(crate) fn json<T: Serialize>(v: &T) -> Result<Response, ApiError> {
    let body = serde_json::to_vec(v)?;
    Ok((
        [(header::CONTENT_TYPE, HeaderValue::from_static("application/json")), (header::CACHE_CONTROL, HeaderValue::from_static("no-store"))],
        body,
    )
        .into_response())
}

/// Refuses (403) any request without the server's token.
async fn require_token(State(app): State<App>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(TOKEN_HEADER)
        .and_then(|v| v.to_str().ok())
        .or_else(|| token::from_query(request.uri().query()));
    match given {
        Some(t) if app.token().matches(t) => next.run(request).await,
        _ => (StatusCode::FORBIDDEN, "clrprof ui: this request needs the token printed when the server started\n")
            .into_response(),
    }
}

/// Answers a `GET /api/log/{id}/...` from the log's kept answers when the
/// same request was answered before (for the same load of the log), and
/// keeps the answers it did not have.
async fn kept_answer(State(app): State<App>, request: Request, next: Next) -> Response {
    let log = (request.method() == axum::http::Method::GET)
        .then(|| request.uri().path().strip_prefix("/api/log/"))
        .flatten()
        .and_then(|rest| rest.split_once('/'))
        .and_then(|(id, _)| id.parse::<u32>().ok())
        .and_then(|id| app.logs().ready(LogId(id)).ok());
    let Some(log) = log else { return next.run(request).await };
    let key = crate::answer_cache::key(request.uri().path(), request.uri().query());
    if let Some(body) = log.answers.get(&key) {
        return json_body(axum::body::Body::from(axum::body::Bytes::from_owner(body)));
    }
    let response = next.run(request).await;
    if response.status() != StatusCode::OK {
        return response;
    }
    let (parts, body) = response.into_parts();
    match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => {
            if bytes.len() <= crate::answer_cache::MAX_ANSWER {
                log.answers.put(key, std::sync::Arc::from(bytes.as_ref()));
            }
            Response::from_parts(parts, axum::body::Body::from(bytes))
        }
        Err(e) => ApiError::internal(format!("cannot read the answer: {e}")).into_response(),
    }
}

fn json_body(body: axum::body::Body) -> Response {
    (
        [(header::CONTENT_TYPE, HeaderValue::from_static("application/json")), (header::CACHE_CONTROL, HeaderValue::from_static("no-store"))],
        body,
    )
        .into_response()
}
