//! The collector's sessions (`--collector DIR`): the list (`clrprof
//! sessions --json`), opening one as a log of the server (then every view
//! works on it, and it is loaded again as it grows), and commands to a
//! live one (`clrprof ctl`).

use crate::collector::{CtlReply, ListedSession};
use crate::{ApiError, App};
use axum::extract::{Path, State};
use axum::response::Response;
use axum::Json;
use serde::{Deserialize, Serialize};

/// The list.
#[derive(Serialize)]
struct Sessions {
    /// The collector's directory, as given.
    dir: String,
    sessions: Vec<ListedSession>,
}

/// `clrprof sessions --json`, each session with its log id once opened.
pub async fn list(State(app): State<App>) -> Result<Response, ApiError> {
    let c = app.sessions()?.clone();
    let logs = app.logs().clone();
    let answer = tokio::task::spawn_blocking(move || -> Result<Sessions, ApiError> {
        let sessions = c
            .list()?
            .into_iter()
            .map(|record| {
                let log_id = logs.session_log(&record.session).map(|id| id.0);
                ListedSession { record, log_id }
            })
            .collect();
        Ok(Sessions { dir: c.dir().display().to_string(), sessions })
    })
    .await
    .map_err(|e| ApiError::internal(format!("listing the sessions failed: {e}")))??;
    crate::app::json(&answer)
}

/// Where an opened session is.
#[derive(Serialize)]
struct Opened {
    log: u32,
}

/// Opens a session: adds its log to the server (loaded in the background,
/// then loaded again whenever it grows); an open session keeps its id.
pub async fn open(State(app): State<App>, Path(name): Path<String>) -> Result<Response, ApiError> {
    let c = app.sessions()?;
    let (_, path) = c.session(&name)?;
    let (id, new) = app.logs().add_session(&name, path)?;
    if new {
        let app2 = app.clone();
        tokio::task::spawn_blocking(move || app2.refresh_sessions());
    }
    crate::app::json(&Opened { log: id.0 })
}

/// A command for a session.
#[derive(Deserialize)]
pub struct CtlBody {
    /// `dump`, `comment TEXT`, `allocations on|off`, `calls on|off`,
    /// `flush`.
    command: String,
}

/// Sends a command to a live session (`clrprof ctl DIR SESSION COMMAND`)
/// and gives the agent's answer, or the collector's refusal.
pub async fn ctl(State(app): State<App>, Path(name): Path<String>, Json(body): Json<CtlBody>) -> Result<Response, ApiError> {
    let c = app.sessions()?.clone();
    let reply: CtlReply = tokio::task::spawn_blocking(move || c.ctl(&name, &body.command))
        .await
        .map_err(|e| ApiError::internal(format!("the command failed: {e}")))??;
    crate::app::json(&reply)
}
