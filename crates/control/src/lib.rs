//! Talking to a live .NET process on Linux.
//!
//! Two sockets lead into a running .NET process:
//!
//! ```text
//!  clrprof heap-dump PID ──► $TMPDIR/clrprof-agent-PID.sock   (the agent's control socket, text lines)
//!                       └──► $TMPDIR/dotnet-diagnostic-PID-*-socket (the runtime's diagnostics IPC:
//!                                                               AttachProfiler loads the agent)
//! ```
//!
//! # API structure
//!
//! - [`protocol`]: the control socket's requests and replies (one line
//!   each way), shared by the agent (server) and the CLI.
//! - [`paths`]: where a process's sockets are (its own `$TMPDIR`).
//! - [`process`]: what a PID is: running, whose, a .NET process, which
//!   runtime version.
//! - [`client`]: a connection to an agent's control socket.
//! - [`diagnostics`]: the runtime's diagnostics IPC, `AttachProfiler`.
//! - [`trust`]: the checks a socket passes before anything is sent to it
//!   (its owner and type, and the peer's credentials).
//! - [`Error`]: every failure, worded for the person who typed the PID.

#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod client;
pub mod diagnostics;
mod error;
pub mod paths;
pub mod process;
pub mod protocol;
pub mod trust;

pub use error::Error;
