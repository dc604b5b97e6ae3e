//! The client that streams a log (the capture agent's) or a trace
//! (`clrprof record --sampled --target`) to `clrprof collect`: the token
//! handshake, acknowledged bytes, the spool file when the collector is
//! away, and the catch-up that sends the spool once it is back.
//!
//! # API structure
//!
//! - [`config`]: a stream's settings ([`StreamConfig`]), where its spool
//!   goes ([`Spool`]) and what the process around it does with status
//!   notes and commands ([`Host`]).
//! - [`stream`]: the [`Streamer`] a writer thread hands bytes to, the
//!   handshake and the network threads.
//! - [`catch_up`]: sending the spool to a collector that is back.
//! - [`conn`]: a connection (TCP, TLS or a Unix socket); [`tls_conn`]:
//!   TLS over a blocking socket that one thread reads and one writes.
//!
//! The client never waits on the network in [`Streamer::write`], and no
//! panic leaves its threads (each runs inside [`guard`]), so the agent can
//! run it inside a profiled process.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod catch_up;
pub mod config;
pub mod conn;
pub mod stream;
pub mod tls_conn;

pub use config::{Host, Spool, StreamConfig, Tls};
pub use stream::{Identity, Outcome, Streamer};

/// Runs `f`, giving `default` if it panics: a thread of the client never
/// takes a panic into the host process.
pub fn guard<T>(default: T, f: impl FnOnce() -> T) -> T {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(default)
}
