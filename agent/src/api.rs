//! Functions a program calls on itself through P/Invoke, as CLRProfiler's
//! `CLRProfilerControl` class allowed: a comment, a heap dump, allocation
//! and call logging off and on. `agent/dotnet/ClrProfControl.cs` wraps
//! them (and does nothing when the agent is not loaded).
//!
//! The library's soname is `libclrprof_agent.so` (see `build.rs`), so a
//! `DllImport("clrprof_agent")` reaches the copy the runtime loaded as
//! profiler. Strings are NUL-terminated UTF-16 (`CharSet.Unicode`).
//!
//! Results: 0 or more is success (a dump's index, a switch's previous
//! state); [`NOT_LOADED`], [`UNAVAILABLE`] and [`FAILED`] are errors.

use crate::control::{self, ControlError};

/// The agent is not running in this process.
pub const NOT_LOADED: i32 = -1;
/// Not possible in this agent's state (e.g. allocations after attach).
pub const UNAVAILABLE: i32 = -2;
/// Tried and failed.
pub const FAILED: i32 = -3;

/// Longest string read (UTF-16 units).
const MAX_UNITS: usize = 1 << 20;

fn code(e: ControlError) -> i32 {
    match e {
        ControlError::NotLoaded => NOT_LOADED,
        ControlError::Unavailable(_) => UNAVAILABLE,
        ControlError::Failed(_) => FAILED,
    }
}

/// Reads a NUL-terminated UTF-16 string (`None` for a null pointer).
///
/// # Safety
/// `p` is null or points to a NUL-terminated UTF-16 string.
unsafe fn wide(p: *const u16) -> Option<String> {
    if p.is_null() {
        return None;
    }
    let mut n = 0usize;
    // Safety: the caller promises a terminating NUL; MAX_UNITS bounds a bad one.
    while n < MAX_UNITS && unsafe { *p.add(n) } != 0 {
        n += 1;
    }
    // Safety: `n` units were just read.
    Some(String::from_utf16_lossy(unsafe { std::slice::from_raw_parts(p, n) }))
}

/// 1 when the agent is running in this process, else 0.
#[no_mangle]
pub extern "C" fn clrprof_active() -> i32 {
    crate::guard(0, || i32::from(crate::agent::get().is_some()))
}

/// Writes a `z` comment. 0, or an error code.
///
/// # Safety
/// `text` is null or a NUL-terminated UTF-16 string.
#[no_mangle]
pub unsafe extern "C" fn clrprof_comment(text: *const u16) -> i32 {
    crate::guard(FAILED, || {
        // Safety: forwarded from the caller.
        let text = unsafe { wide(text) }.unwrap_or_default();
        control::comment(&text).map_or_else(code, |_| 0)
    })
}

/// Takes a heap dump into the log, with an optional label (null for
/// none), and waits for it. The dump's index in the log, or an error code.
///
/// # Safety
/// `label` is null or a NUL-terminated UTF-16 string.
#[no_mangle]
pub unsafe extern "C" fn clrprof_dump_heap(label: *const u16) -> i32 {
    crate::guard(FAILED, || {
        // Safety: forwarded from the caller.
        let label = unsafe { wide(label) };
        match control::heap_dump(label.as_deref(), None) {
            Ok(d) => d.index.min(i32::MAX as u32) as i32,
            Err(e) => {
                eprintln!("clrprof agent: DumpHeap: {e}");
                code(e)
            }
        }
    })
}

/// Allocation logging on (1) or off (0). The state before (0/1), or an
/// error code.
#[no_mangle]
pub extern "C" fn clrprof_set_allocations(on: i32) -> i32 {
    crate::guard(FAILED, || control::set_allocations(on != 0).map_or_else(code, i32::from))
}

/// Call logging on (1) or off (0). The state before (0/1), or an error
/// code.
#[no_mangle]
pub extern "C" fn clrprof_set_calls(on: i32) -> i32 {
    crate::guard(FAILED, || control::set_calls(on != 0).map_or_else(code, i32::from))
}

/// Allocation logging is on: 1 or 0, or an error code.
#[no_mangle]
pub extern "C" fn clrprof_allocations() -> i32 {
    crate::guard(FAILED, || control::status().map_or_else(code, |s| i32::from(s.allocations)))
}

/// Call logging is on: 1 or 0, or an error code.
#[no_mangle]
pub extern "C" fn clrprof_calls() -> i32 {
    crate::guard(FAILED, || control::status().map_or_else(code, |s| i32::from(s.calls)))
}
