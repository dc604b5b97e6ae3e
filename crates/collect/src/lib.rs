//! `clrprof collect`: a collector for logs streamed by clrprof capture
//! agents.
//!
//! Agents started with `CLRPROF_TARGET` and `CLRPROF_TOKEN` connect, prove
//! that they know the token (see [`clrprof_wire`]: the token itself never
//! crosses the connection), and stream their log. Each session is stored
//! as it arrives in `DIR/<program>_<pid>_<yyyyMMdd>_<HHmmss>.log` (whole
//! lines only, never over an existing file) with a session record beside
//! it (`.json`: pid, program, runtime, start, end, bytes, how it ended)
//! and the session's own key (`.key`), which an agent resuming the session
//! must prove; all mode 0600, in a directory only the collector's user
//! can change (see [`files`]).
//! While a session is connected, `clrprof ctl` sends it commands through
//! the admin endpoint (a Unix socket in `DIR`, same token).
//!
//! # API structure
//!
//! - [`Options`], [`Collector::bind`], [`Collector::serve`]: the service.
//! - [`address`]: where it listens (`HOST:PORT` or `unix:/path`).
//! - [`token_file`]: the token, made and kept in a file only its user reads.
//! - [`tls`]: `--tls`: the collector's key and certificate, made or loaded.
//! - [`record`]: session records and file names.
//! - [`key_file`]: each session's own key, which a resume must prove.
//! - [`files`]: the directory's rules (owner, mode) and files made and
//!   opened without following links or trusting another user's files.
//! - [`session`]: one agent connection, frame by frame.
//! - [`admin`]: the admin endpoint and its client (`ctl`, `sessions`).
//! - [`check`]: asking a collector whether it takes a token, before a
//!   program is started to stream to it.
//! - [`refusals`]: the rate-limited log of refused connections.
//! - [`waiting`]: connections before their handshake: a deadline, a cap,
//!   the one waiting longest closed first, no spinning out of files.
//! - [`buffers`]: the cap on what all sessions hold for unfinished lines.
//!
//! ```no_run
//! # async fn f() -> Result<(), clrprof_collect::CollectError> {
//! let opts = clrprof_collect::Options { dir: "sessions".into(), ..Default::default() };
//! let collector = clrprof_collect::Collector::bind(opts).await?;
//! println!("CLRPROF_TARGET={}", collector.target());
//! collector.serve(std::future::pending()).await
//! # }
//! ```

#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod address;
pub mod admin;
pub mod buffers;
pub mod check;
mod conn;
mod error;
pub mod files;
pub mod key_file;
pub mod record;
pub mod refusals;
mod registry;
pub mod say;
mod server;
pub mod session;
pub mod tls;
pub mod token_file;
pub mod waiting;

pub use address::ListenAddr;
pub use error::CollectError;
pub use record::{SessionRecord, SessionState};
pub use server::{run, Collector, OnEnded, OnEndedFn, Options, ADMIN_SOCKET, TOKEN_FILE};
