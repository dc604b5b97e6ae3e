//! The collector's directory (`clrprof ui --collector DIR`): its sessions
//! as `clrprof sessions` lists them, the log file of one of them, and
//! commands to a live one through the collector's admin socket, as
//! `clrprof ctl` sends them.
//!
//! Only sessions can be reached: a name is taken only if it is a name the
//! collector could have made and `DIR/<name>.json` is a session record;
//! its log is then `DIR/<name>.log`, a regular file (not a link). Nothing
//! else in the directory (the token, the socket, other files) is served.
//!
//! The directory and what is in it are trusted as the collector trusts
//! them (`clrprof_collect::files`): the directory must be the user's own
//! and closed to other users (sticky or not), and records and logs are
//! believed only when they are regular files of the user's own; another
//! user's record is neither listed nor opened.

use crate::ApiError;
use clrprof_collect::admin::{self, Request};
use clrprof_collect::record::{self, SessionRecord, SessionState};
use std::path::{Path, PathBuf};

/// The collector's directory.
#[derive(Clone, Debug)]
pub struct SessionDir {
    dir: PathBuf,
}

/// A session as the page lists it: its record, and the log id it has in
/// the server once opened.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ListedSession {
    /// The record (`clrprof sessions --json`).
    #[serde(flatten)]
    pub record: SessionRecord,
    /// The session's log id in the server, once opened.
    pub log_id: Option<u32>,
}

/// The agent's answer to a command.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CtlReply {
    /// The session.
    pub session: String,
    /// The command sent.
    pub command: String,
    /// What the agent answered (`ok ...`).
    pub reply: String,
}

impl SessionDir {
    /// The collector's directory `dir`, which must exist, belong to this
    /// process's user and be closed to other users
    /// (`clrprof_collect::files::check_own_dir`).
    pub fn new(dir: &Path) -> Result<SessionDir, std::io::Error> {
        clrprof_collect::files::check_own_dir(dir).map_err(|e| std::io::Error::new(std::io::ErrorKind::PermissionDenied, e.to_string()))?;
        Ok(SessionDir { dir: dir.to_path_buf() })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every session record, oldest first (a live session with the bytes
    /// stored so far).
    pub fn list(&self) -> Result<Vec<SessionRecord>, ApiError> {
        record::list(&self.dir).map_err(|e| ApiError::unavailable(e.to_string()))
    }

    /// The record of session `name` and its log's path; 404 for anything
    /// that is not a session of this directory.
    pub fn session(&self, name: &str) -> Result<(SessionRecord, PathBuf), ApiError> {
        let missing = || ApiError::not_found(format!("no session {name:?} in the collector's directory"));
        if !record::is_session_name(name) {
            return Err(missing());
        }
        let rec_path = record::record_path(&self.dir, name);
        if !std::fs::symlink_metadata(&rec_path).is_ok_and(|m| m.file_type().is_file()) {
            return Err(missing());
        }
        let rec = record::read(&self.dir, name).map_err(|_| missing())?;
        if rec.session != name {
            return Err(missing());
        }
        let log = record::data_path(&self.dir, &rec).ok_or_else(missing)?;
        if !record::is_own_file(&log) {
            return Err(ApiError::not_found(format!("session {name:?} has no log file")));
        }
        Ok((rec, log))
    }

    /// The record state of session `name` (`live`, `ended`, `cut`).
    pub fn state_of(&self, name: &str) -> Option<String> {
        let rec = record::read(&self.dir, name).ok()?;
        Some(
            match rec.state {
                SessionState::Live => "live",
                SessionState::Ended => "ended",
                SessionState::Cut => "cut",
            }
            .to_string(),
        )
    }

    /// Sends `command` (`dump`, `comment TEXT`, `allocations on|off`,
    /// `calls on|off`, `flush`) to the live session `name` through the
    /// collector's admin socket with the collector's token, as
    /// `clrprof ctl --dir DIR` does, and waits for the agent's answer
    /// (a blocking call). The collector's refusal (the session is not
    /// live, it ended before answering) is a 409 with its words; a
    /// collector that cannot be reached, a 503.
    pub fn ctl(&self, name: &str, command: &str) -> Result<CtlReply, ApiError> {
        self.session(name)?;
        clrprof_wire::Command::parse(command).map_err(|e| ApiError::bad_request(e.to_string()))?;
        let token_file = self.dir.join(clrprof_collect::TOKEN_FILE);
        let token = clrprof_collect::token_file::read(&token_file).map_err(|e| ApiError::unavailable(e.to_string()))?;
        let socket = self.dir.join(clrprof_collect::ADMIN_SOCKET);
        let reply = admin::request(&socket, &token, &Request::Ctl { session: name.to_string(), command: command.to_string() })
            .map_err(|e| ApiError::unavailable(format!("cannot reach the collector: {e}")))?;
        if !reply.ok {
            return Err(ApiError {
                status: axum::http::StatusCode::CONFLICT,
                message: format!("{name}: {command}: {}", reply.error.unwrap_or_else(|| "refused".into())),
            });
        }
        Ok(CtlReply { session: name.to_string(), command: command.to_string(), reply: reply.reply.unwrap_or_default() })
    }
}
