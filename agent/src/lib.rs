//! The clrprof capture agent: a .NET profiler that writes CLRProfiler logs.
//!
//! The runtime loads `libclrprof_agent.so` when a process starts with
//!
//! ```text
//! CORECLR_ENABLE_PROFILING=1
//! CORECLR_PROFILER={BC620A3A-B286-4C9C-8138-256EE44F802D}
//! CORECLR_PROFILER_PATH=/abs/path/libclrprof_agent.so
//! ```
//!
//! and the agent writes every allocation, GC, move, survival, finalizer
//! queueing and handle to `CLRPROF_OUTPUT` (default `<program>_<pid>_<yyyyMMdd>_<HHmmss>.log`;
//! an existing file is never overwritten without `CLRPROF_FORCE=1`)
//! through `clrprof::format`'s writer. `CLRPROF_STACKS` picks the stack
//! source (`shadow`, the default: enter/leave hooks; `snapshot`:
//! `DoStackSnapshot`; `none`), `CLRPROF_CALLS=1` adds `c` lines. With
//! `CLRPROF_TARGET` and `CLRPROF_TOKEN` (printed by `clrprof collect`) it
//! streams the log to a collector instead, with a spool file for when the
//! collector cannot be reached (`CLRPROF_SPOOL`).
//!
//! # API structure
//!
//! - [`com`]: GUIDs, the class factory, `DllGetClassObject`.
//! - [`callback`]: the `ICorProfilerCallback11` object and its callbacks.
//! - [`info`]: the `ICorProfilerInfo` and `IMetaDataImport` calls.
//! - [`agent`]: buffers, tables, drains and the log file.
//! - [`sink`]: the log file behind its writer thread; [`logname`]: its
//!   name, and creating it without overwriting anything.
//! - streaming the log to a collector (`CLRPROF_TARGET`), with the spool
//!   when the collector is away, is crate `clrprof-stream`'s (shared with
//!   `clrprof record --sampled --target`); [`identity`] says who we are.
//! - [`commands`]: what the collector can ask for (comment, heap dump,
//!   allocations and calls on/off, flush).
//! - [`names`]: type and function names as CLRProfiler spells them.
//! - [`hooks`]: the enter/leave stubs and the shadow stack.
//! - [`thread`]: per-thread state; [`threadlog`]: a thread's binary
//!   records; [`lines`]: their text, formatted by the drain;
//!   [`merge`]: a drain's merge of all sources in tick order.
//! - [`exit`]: the log ended on every exit path (`Shutdown`, `atexit`,
//!   fatal signals).
//! - [`status`]: the start-up report `clrprof record` reads.
//! - [`dump`]: heap dumps (an induced GC writing `o` and `e` lines).
//! - [`control`]: what can be asked of a running agent (dump, comment,
//!   allocations/calls on|off, flush): the API the control socket, the
//!   program's P/Invoke calls and a collector share.
//! - [`control_socket`]: the per-process Unix socket in front of it.
//! - [`api`]: the C functions a program reaches by P/Invoke.
//!
//! No panic crosses the FFI boundary: every callback runs inside
//! [`guard`].

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod agent;
pub mod api;
pub mod callback;
pub mod com;
pub mod commands;
pub mod config;
pub mod control;
pub mod control_socket;
pub mod dump;
pub mod exit;
pub mod hooks;
pub mod identity;
pub mod info;
pub mod lines;
pub mod merge;
pub mod logname;
pub mod names;
pub mod segments;
pub mod sink;
pub mod statics;
pub mod status;
pub mod tables;
pub mod thread;
pub mod threadlog;

pub use com::CLSID_CLRPROF_AGENT;

/// The `CORECLR_PROFILER` value that loads this agent.
pub const PROFILER_GUID: &str = "{BC620A3A-B286-4C9C-8138-256EE44F802D}";

/// Runs `f`, turning a panic into `default` so that no unwind crosses into
/// the runtime.
#[inline]
pub fn guard<T>(default: T, f: impl FnOnce() -> T) -> T {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(default)
}
