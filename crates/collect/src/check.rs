//! Asking a collector whether it takes a token, before anything is
//! started: `clrprof record --target ADDR --token-file F` runs this first,
//! so that a wrong token is found before the program runs, not after it
//! has spooled its whole log.
//!
//! The client does the agents' handshake with the role `check`; the
//! collector answers `OK` (with its proof of the token) and closes, making
//! no session and no file. A collector that does not take the token closes
//! without an answer.

use crate::address::ListenAddr;
use crate::CollectError;
use clrprof_stream::conn::{Conn, ConnectError};
use clrprof_stream::Tls;
use clrprof_wire::handshake::{self, Hello, Role, MAX_LINE};
use clrprof_wire::Token;
use std::io::{BufRead, BufReader, Read, Write};
use std::time::Duration;

/// What a collector said of a token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenCheck {
    /// It took the token and proved it knows it too.
    Accepted,
    /// It closed the connection without accepting: the token is not its
    /// token (or it is no clrprof collector of this version).
    Refused(String),
    /// Over TLS, its certificate is not the expected one (or TLS failed):
    /// nothing was sent to it.
    Untrusted(String),
    /// Without TLS, it sent no challenge (a collector started with
    /// `--tls` waits for TLS): nothing was sent to it.
    Silent(String),
}

/// Connects to the collector at `addr` (with `tls`, over TLS, the
/// collector's certificate checked first) and checks `token` with it,
/// waiting up to `timeout` for each step. An error means the collector
/// could not be reached or asked (the caller decides whether to go on, as
/// an agent does, spooling); [`TokenCheck::Refused`] means it answered no,
/// or its certificate is not the expected one (then nothing was sent).
pub fn check_token(addr: &ListenAddr, tls: &Tls, token: &Token, timeout: Duration) -> Result<TokenCheck, CollectError> {
    let conn = match Conn::connect(&addr.to_string(), tls, timeout, timeout) {
        Ok(c) => c,
        Err(ConnectError::Tls(why)) => return Ok(TokenCheck::Untrusted(why)),
        Err(ConnectError::Unreachable { why, .. }) => {
            return Err(CollectError::Invalid(format!("cannot reach the collector at {addr}: {why}")))
        }
    };
    conn.set_write_timeout(Some(timeout));
    let w = conn.try_clone().map_err(CollectError::io("socket"))?;
    ask(conn, w, addr, tls, token)
}

/// The hello of the `clrprof` tool itself (not an agent: no program, no
/// session) in `role`, with a fresh nonce.
pub(crate) fn tool_hello(role: Role) -> Result<(clrprof_wire::Nonce, Hello), CollectError> {
    let nonce = crate::token_file::random_nonce()?;
    let hello = Hello {
        role,
        nonce: clrprof_wire::token::to_hex(&nonce.0),
        pid: std::process::id(),
        program: "clrprof".into(),
        runtime: String::new(),
        session: None,
        spool: None,
        spool_from: None,
        catch_up: false,
        resume_mac: None,
        content: Default::default(),
    };
    Ok((nonce, hello))
}

fn ask(r: impl Read, mut w: impl Write, addr: &ListenAddr, tls: &Tls, token: &Token) -> Result<TokenCheck, CollectError> {
    let bad = |what: String| CollectError::Invalid(format!("the collector at {addr}: {what}"));
    let mut r = BufReader::new(r);
    let mut line = Vec::new();
    let read = (&mut r).take(MAX_LINE as u64).read_until(b'\n', &mut line);
    if *tls == Tls::Plain && (line.is_empty() || read.is_err()) {
        // A collector started with --tls says nothing until TLS is up.
        let why = match read {
            Err(e) => format!("no challenge from it ({e})"),
            Ok(_) => "it closed the connection without a challenge".to_string(),
        };
        return Ok(TokenCheck::Silent(why));
    }
    read.map_err(CollectError::io(format!("reading from {addr}")))?;
    let server = handshake::parse_challenge(&line).map_err(|e| bad(format!("no collector's challenge ({e})")))?;
    let (nonce, hello) = tool_hello(Role::Check)?;
    let h = handshake::hello_line(token, &server, &hello).map_err(|e| bad(e.to_string()))?;
    w.write_all(h.as_bytes()).map_err(CollectError::io(format!("writing to {addr}")))?;
    line.clear();
    match (&mut r).take(MAX_LINE as u64).read_until(b'\n', &mut line) {
        Ok(0) => return Ok(TokenCheck::Refused("it closed the connection without accepting the token".into())),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
            return Ok(TokenCheck::Refused("it closed the connection without accepting the token".into()))
        }
        Err(e) => return Err(CollectError::io(format!("reading from {addr}"))(e)),
    }
    match handshake::parse_ok(&line, token, &nonce, &server) {
        Ok(_) => Ok(TokenCheck::Accepted),
        Err(e) => Ok(TokenCheck::Refused(format!("its answer does not prove the same token ({e})"))),
    }
}
