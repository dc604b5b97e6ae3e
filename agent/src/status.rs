//! A one-line report for whoever started the process (`clrprof record`):
//! whether `Initialize` accepted the profiling session, and if not, why.
//!
//! The runtime says nothing when a profiler is refused or fails to start,
//! so `clrprof record` sets `CLRPROF_STATUS` to a file path and reads the
//! line back when the program has exited:
//!
//! ```text
//! ok stacks=shadow calls=0 output=/abs/app_20261121_101500.log
//! ok stacks=shadow calls=0 target=127.0.0.1:7420 spool=/tmp/clrprof_42.spool.log
//! ok stacks=shadow calls=0 target=127.0.0.1:7420 spool=/tmp/clrprof_42.spool.log spooling_from=1048576 because=...
//! error cannot create /ro/x.log: Permission denied (os error 13)
//! error /abs/app.log exists; the agent never overwrites a log (CLRPROF_FORCE=1 allows it)
//! ok stacks=shadow calls=0 output=/abs/app.log write_error=No_space_left_on_device_(os_error_28)
//! ```
//!
//! A failed write of the log file (the disk filled up) is appended as
//! `write_error=` (spaces as `_`), once.
//!
//! A streaming agent that starts writing its spool rewrites the line with
//! `spooling_from=` (the log offset at which the spool starts) and the
//! reason last, so the spool is named in the status. Its catch-up adds
//! `catching_up=SESSION` while the collector takes the spool,
//! `caught_up=yes` once the collector has stored the whole log, or
//! `catch_up_gave_up=WHY`.
//!
//! No file at all means the runtime never called `Initialize` (the program
//! is not a .NET program, or the runtime refused to load the library).

use std::sync::Mutex;

/// The reported line and what was amended to it (either may come first:
/// the spool can start before `Initialize` reports).
static LINE: Mutex<(String, String)> = Mutex::new((String::new(), String::new()));

fn lock() -> std::sync::MutexGuard<'static, (String, String)> {
    LINE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Writes `line` to the file named by `CLRPROF_STATUS`, if set. Errors are
/// ignored: the report must never disturb the host.
pub fn report(line: &str) {
    let mut l = lock();
    l.0 = line.to_string();
    write(&l);
}

fn write(l: &(String, String)) {
    if l.0.is_empty() {
        return;
    }
    let Some(path) = std::env::var_os("CLRPROF_STATUS").filter(|p| !p.is_empty()) else { return };
    let text = if l.1.is_empty() { format!("{}\n", l.0) } else { format!("{} {}\n", l.0, l.1) };
    // Replaced whole (a new file renamed over the old one): the process
    // may end while a thread rewrites the line, and a reader must then
    // find the previous line, not an empty file.
    // The temporary file is created exclusively under an unguessable
    // name, and the rename replaces a link at the path, never its target.
    let _ = clrprof_files::write_whole(std::path::Path::new(&path), text.as_bytes(), true);
}

/// Appends `extra` to the reported line (the spool's start and why),
/// keeping it one line.
pub fn amend(extra: &str) {
    let mut l = lock();
    l.1 = extra.chars().map(|c| if c == '\n' || c == '\r' { ' ' } else { c }).collect();
    write(&l);
}
