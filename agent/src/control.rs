//! What can be asked of a running agent: the operations behind the
//! control socket ([`crate::control_socket`]), the program's own P/Invoke
//! calls ([`crate::api`]), the periodic dump timer, and a collector's
//! control channel.
//!
//! Every function here may be called from any thread, managed or native,
//! at any time after the runtime loaded the agent; none may be called from
//! inside a runtime callback (a heap dump waits for a GC). When the agent
//! is not loaded (or did not start) every function answers
//! [`ControlError::NotLoaded`].
//!
//! ```text
//! heap_dump(label, output) -> DumpInfo   a GC-time heap dump (o/e lines), waits for it
//! comment(text)                          a `z` line, in the caller's own time order
//! set_allocations(on) -> previous        `!` lines on/off (not after attach)
//! set_calls(on) -> previous              `c` lines on/off (CLRPROF_CALLS=1 at start)
//! flush()                                everything buffered is in the file on return
//! status() -> Status                     pid, log, switches, dumps so far
//! stop()                                 an attached agent stops recording
//! ```

use crate::agent::{self, lock, Agent};
use clrprof_control::protocol::{DumpInfo, Request, Reply, Status};
use std::path::Path;
use std::sync::atomic::Ordering;

/// Why a control operation was not done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControlError {
    /// The agent is not loaded in this process, or did not start.
    NotLoaded,
    /// The operation is not possible in this agent's state; the text says
    /// why.
    Unavailable(String),
    /// The operation was tried and failed; the text says how.
    Failed(String),
}

impl std::fmt::Display for ControlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ControlError::NotLoaded => f.write_str("the clrprof agent is not running in this process"),
            ControlError::Unavailable(s) | ControlError::Failed(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for ControlError {}

fn agent() -> Result<&'static Agent, ControlError> {
    agent::get().ok_or(ControlError::NotLoaded)
}

/// Takes a heap dump and waits until it is written. `label` is written as
/// a `z` comment just before it; `output` names a file of its own for the
/// dump (it then loads alone), else the dump goes into the agent's log.
pub fn heap_dump(label: Option<&str>, output: Option<&Path>) -> Result<DumpInfo, ControlError> {
    let a = agent()?;
    crate::dump::heap_dump(a, label, output).map_err(ControlError::Failed)
}

/// Writes a `z` comment into the log, ordered after what the calling
/// thread logged before and before what it logs after.
pub fn comment(text: &str) -> Result<(), ControlError> {
    let a = agent()?;
    if lock(&a.log).is_none() {
        return Err(ControlError::Unavailable("this agent has no log to write a comment into".into()));
    }
    a.comment(text);
    Ok(())
}

/// Switches allocation logging (`!` lines) on or off; returns the state
/// before. Allocation events cannot be enabled in an attached agent.
pub fn set_allocations(on: bool) -> Result<bool, ControlError> {
    let a = agent()?;
    if on && a.config.attached {
        return Err(ControlError::Unavailable(
            "allocations cannot be logged by an agent attached to a running process (the runtime allows allocation events only from start-up)".into(),
        ));
    }
    Ok(a.allocations_on.swap(on, Ordering::AcqRel))
}

/// Switches call logging (`c` lines) on or off; returns the state before.
/// Call logging needs `CLRPROF_CALLS=1` at start (the enter/leave hooks
/// cannot be installed later).
pub fn set_calls(on: bool) -> Result<bool, ControlError> {
    let a = agent()?;
    if on && !a.config.calls {
        return Err(ControlError::Unavailable(
            "call logging was not enabled at start (CLRPROF_CALLS=1, `clrprof record --calls`); it can only be switched off and on again".into(),
        ));
    }
    Ok(a.calls_on.swap(on, Ordering::AcqRel))
}

/// Writes everything buffered to the log file and waits until it is
/// written.
pub fn flush() -> Result<(), ControlError> {
    agent()?.flush();
    Ok(())
}

/// The agent's state.
pub fn status() -> Result<Status, ControlError> {
    let a = agent()?;
    Ok(Status {
        pid: std::process::id(),
        log: lock(&a.log).clone(),
        attached: a.config.attached,
        allocations: a.allocations_on.load(Ordering::Acquire),
        calls: a.calls_on.load(Ordering::Acquire),
        dumps: a.dumps_in_log.load(Ordering::Acquire),
        version: env!("CARGO_PKG_VERSION").to_string(),
    })
}

/// Stops an attached agent's recording (`clrprof record -p PID
/// --duration S`): the log is flushed and closed. The agent stays loaded
/// and answers dumps into files of their own.
pub fn stop() -> Result<(), ControlError> {
    let a = agent()?;
    if !a.config.attached {
        return Err(ControlError::Unavailable(
            "only an attached agent can stop recording (one loaded at start records until the process ends)".into(),
        ));
    }
    // GC events stay on: the runtime lets an attached profiler switch them
    // on only while it attaches (it turns concurrent GC off then), and
    // later dumps need them.
    a.close_log();
    Ok(())
}

/// Does what a control request asks (the socket and a collector's channel
/// share this).
pub fn handle(req: &Request) -> Reply {
    let done = match req {
        Request::Dump { label, output } => {
            heap_dump(label.as_deref(), output.as_deref()).map(|d| Reply { dump: Some(d), ..Reply::ok() })
        }
        Request::Comment { text } => comment(text).map(|_| Reply::ok()),
        Request::Allocations { on } => set_allocations(*on).map(|p| Reply { previous: Some(p), ..Reply::ok() }),
        Request::Calls { on } => set_calls(*on).map(|p| Reply { previous: Some(p), ..Reply::ok() }),
        Request::Flush => flush().map(|_| Reply::ok()),
        Request::Status => status().map(|s| Reply { status: Some(s), ..Reply::ok() }),
        Request::Stop => stop().map(|_| Reply::ok()),
    };
    done.unwrap_or_else(|e| Reply::error(e.to_string()))
}
