//! The protocol between the clrprof capture agent and `clrprof collect`.
//!
//! Both sides use this crate: the agent (plain threads and blocking
//! sockets) and the collector (tokio). It only builds and checks bytes; it
//! does no I/O (but for reading a CA file in [`tls`]).
//!
//! # API structure
//!
//! - [`token`]: the 256-bit shared secret, a session's own key, and the
//!   HMAC proofs made with them.
//! - [`handshake`]: the collector's challenge line, the client's `HELLO`
//!   line, the collector's `OK` line.
//! - [`frame`]: the frames that follow the handshake (log data, end,
//!   acknowledgements, commands, replies).
//! - [`command`]: what a collector can ask a connected agent to do.
//! - [`tls`]: how a client knows a collector started with `--tls` (its
//!   certificate's fingerprint, or a CA), for the rustls settings of both
//!   sides.
//!
//! # A connection
//!
//! ```text
//! collector                                   agent
//!    |-- "CLRPROF-COLLECT 1 <server nonce>\n" -->|
//!    |<-- "HELLO <mac> <fields>\n" --------------|  mac = HMAC(token, server nonce, fields)
//!    |   (wrong mac, bad line, timeout: closed, nothing more is written)
//!    |-- "OK <proof> <session>\n" -------------->|  proof = HMAC(token, client nonce, server nonce)
//!    |<== D frames (log bytes), E frame (end) ===|
//!    |== A frames (bytes stored), C frames ====>|
//!    |<== R frames (command replies) ===========|
//! ```
//!
//! The token itself never crosses the connection: each side proves that it
//! knows it by a MAC over nonces the other side chose, so a recorded
//! handshake cannot be replayed and an impostor collector cannot pass
//! itself off as the real one.
//!
//! Every profiled program holds the token, so a `resume` (an agent whose
//! stream broke, naming its session) must also prove the session's own
//! key, derived by both sides from the session's first handshake (see
//! [`handshake`], "Session keys and resumes").

#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod command;
pub mod error;
pub mod frame;
pub mod handshake;
pub mod tls;
pub mod token;

pub use command::Command;
pub use error::WireError;
pub use frame::{FrameHeader, FrameKind};
pub use handshake::{Content, Hello, Role};
pub use token::{Nonce, SessionKey, Token};
