//! A one-line report for whoever started the process (`clrprof record`):
//! whether `Initialize` accepted the profiling session, and if not, why.
//!
//! The runtime says nothing when a profiler is refused or fails to start,
//! so `clrprof record` sets `CLRPROF_STATUS` to a file path and reads the
//! line back when the program has exited:
//!
//! ```text
//! ok stacks=shadow calls=0 output=/abs/app_20261121_101500.log
//! error cannot create /ro/x.log: Permission denied (os error 13)
//! ```
//!
//! No file at all means the runtime never called `Initialize` (the program
//! is not a .NET program, or the runtime refused to load the library).

/// Writes `line` to the file named by `CLRPROF_STATUS`, if set. Errors are
/// ignored: the report must never disturb the host.
pub fn report(line: &str) {
    let Some(path) = std::env::var_os("CLRPROF_STATUS").filter(|p| !p.is_empty()) else { return };
    let _ = std::fs::write(path, format!("{line}\n"));
}
