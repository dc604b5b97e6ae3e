//! The admin endpoint: a Unix socket in the collector's directory (mode
//! 0600) that takes the same token, with the same handshake, as agents
//! (role `admin`). After the handshake the client sends one JSON request
//! line and reads one JSON reply line:
//!
//! ```text
//! {"op":"list"}                                      -> {"ok":true,"sessions":[...records...]}
//! {"op":"ctl","session":"app_42_...","command":"dump"} -> {"ok":true,"reply":"ok"}
//!                                                    or {"ok":false,"error":"..."}
//! ```

use crate::record::{self, SessionRecord};
use crate::server::Handshaken;
use crate::CollectError;
use clrprof_wire::handshake::{self, MAX_LINE};
use clrprof_wire::{Command, Role, Token};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use tokio::io::AsyncWriteExt;

/// A request on the admin socket.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Request {
    /// Every session record, live ones marked `live`.
    List,
    /// Send `command` to the live session `session` and wait for the
    /// agent's reply.
    Ctl {
        /// The session name.
        session: String,
        /// The command's text (`dump`, `comment TEXT`, ...).
        command: String,
    },
}

/// The reply.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Reply {
    /// Whether the request succeeded.
    pub ok: bool,
    /// For `ctl`: the agent's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// For `list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<Vec<SessionRecord>>,
}

fn failed(e: impl Into<String>) -> Reply {
    Reply { ok: false, error: Some(e.into()), ..Default::default() }
}

pub(crate) async fn serve(mut c: Handshaken) {
    if c.accept("admin").await.is_err() {
        return;
    }
    let reply = match c.read_line().await {
        Err(e) => failed(e),
        Ok(line) => match serde_json::from_slice::<Request>(&line) {
            Err(e) => failed(format!("bad request: {e}")),
            Ok(Request::List) => match record::list_own(&c.ctx.opts.dir) {
                Ok(s) => Reply { ok: true, sessions: Some(s), ..Default::default() },
                Err(e) => failed(e.to_string()),
            },
            Ok(Request::Ctl { session, command }) => ctl(&c, &session, &command).await,
        },
    };
    let mut text = serde_json::to_string(&reply).unwrap_or_else(|_| "{\"ok\":false}".into());
    text.push('\n');
    let _ = c.writer.write_all(text.as_bytes()).await;
    let _ = c.writer.flush().await;
}

async fn ctl(c: &Handshaken, session: &str, command: &str) -> Reply {
    let cmd = match Command::parse(command) {
        Ok(cmd) => cmd,
        Err(e) => return failed(e.to_string()),
    };
    let Some(tx) = c.ctx.registry.commands(session) else {
        return failed(format!("session {session:?} is not live"));
    };
    let (to, from) = tokio::sync::oneshot::channel();
    if tx.send((cmd, to)).await.is_err() {
        return failed(format!("session {session:?} ended"));
    }
    match tokio::time::timeout(c.ctx.opts.reply_timeout, from).await {
        Err(_) => failed(format!("the agent did not reply within {} s", c.ctx.opts.reply_timeout.as_secs())),
        Ok(Err(_)) => failed("the session ended before the agent replied"),
        Ok(Ok(Err(e))) => failed(format!("the agent: {e}")),
        Ok(Ok(Ok(r))) => Reply { ok: true, reply: Some(r), ..Default::default() },
    }
}

/// Sends `request` to the collector whose admin socket is `socket` (a
/// blocking client, for the command line).
pub fn request(socket: &Path, token: &Token, request: &Request) -> Result<Reply, CollectError> {
    let bad = |what: String| CollectError::Invalid(format!("admin socket {}: {what}", socket.display()));
    let s = std::os::unix::net::UnixStream::connect(socket)
        .map_err(CollectError::io(format!("cannot connect to the collector's admin socket {}", socket.display())))?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(120))).map_err(CollectError::io("socket"))?;
    let mut w = s.try_clone().map_err(CollectError::io("socket"))?;
    let mut r = BufReader::new(s);
    let mut line = Vec::new();
    let read_line = |r: &mut BufReader<_>, line: &mut Vec<u8>| -> Result<(), CollectError> {
        line.clear();
        let n = std::io::Read::take(&mut *r as &mut BufReader<std::os::unix::net::UnixStream>, MAX_LINE as u64 * 1024)
            .read_until(b'\n', line)
            .map_err(CollectError::io("reading from the admin socket"))?;
        if n == 0 {
            return Err(CollectError::Invalid("the collector closed the connection (wrong token?)".into()));
        }
        Ok(())
    };
    read_line(&mut r, &mut line)?;
    let server = handshake::parse_challenge(&line).map_err(|e| bad(e.to_string()))?;
    let (nonce, hello) = crate::check::tool_hello(Role::Admin)?;
    let h = handshake::hello_line(token, &server, &hello).map_err(|e| bad(e.to_string()))?;
    w.write_all(h.as_bytes()).map_err(CollectError::io("writing to the admin socket"))?;
    read_line(&mut r, &mut line).map_err(|_| bad("the collector refused the token".into()))?;
    handshake::parse_ok(&line, token, &nonce, &server).map_err(|e| bad(format!("the collector's answer: {e}")))?;
    let mut req = serde_json::to_string(request).map_err(|e| bad(e.to_string()))?;
    req.push('\n');
    w.write_all(req.as_bytes()).map_err(CollectError::io("writing to the admin socket"))?;
    read_line(&mut r, &mut line)?;
    serde_json::from_slice(&line).map_err(|e| bad(format!("bad reply: {e}")))
}
