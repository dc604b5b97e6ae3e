//! EventPipe sessions with a running .NET process, over the runtime's
//! diagnostics IPC (no profiler, no restart): the capture path beside the
//! agent.
//!
//! ```text
//!  clrprof record --sampled -p PID ──► dotnet-diagnostic-PID-*-socket
//!       CollectTracing2{providers, rundown}  ──►
//!       ◄── OK{session id}, then the trace: NetTrace bytes as the runtime writes them
//!  (Ctrl-C, --duration)  new connection: StopTracing{session id} ──►  the runtime writes
//!       its rundown (every method's name), then ends the stream
//! ```
//!
//! # API structure
//!
//! - [`protocol`]: the commands and replies (`CollectTracing`,
//!   `CollectTracing2`, `StopTracing`, `ResumeRuntime`) and [`Provider`].
//! - [`presets`]: the provider sets clrprof asks for: sampled allocations
//!   with GCs and named stacks; a heap snapshot (what `dotnet-gcdump` asks
//!   for).
//! - [`Session`]: a session with a process: started, read into a file as
//!   it arrives, stopped.
//! - [`launch`]: a program started suspended under a session
//!   (`DOTNET_DiagnosticPorts`), resumed once the session runs, so nothing
//!   is missed from its first allocation.
//! - [`port`]: the launch port served for the program's whole process
//!   tree (a .NET child connects and is resumed; no one else is
//!   answered), and [`tree`]: that tree, reaped and asked about.
//! - [`watch`]: the events of a trace as it arrives (to know when a heap
//!   walk has ended), cut into events by [`blocks`].
//! - [`counters`]: the runtime's counters (`System.Runtime`'s
//!   `EventCounters`) read out of a session as they arrive.
//! - [`listen`]: a diagnostics port clrprof listens on (`--diagnostic-port`),
//!   which runtimes in other containers connect to.
//! - [`Error`]: every failure, worded for the person who typed the PID.

#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod blocks;
pub mod counters;
mod error;
pub mod launch;
pub mod listen;
pub mod port;
pub mod presets;
pub mod protocol;
mod session;
pub mod tree;
pub mod watch;

pub use error::Error;
pub use protocol::Provider;
pub use session::{Cut, Session, Stop, Written, BUFFER_MB, GRACE, MAX_BYTES};
