//! The collector's lines on standard error, written so that a reader
//! that went away (a `tee` that was stopped, a closed terminal pipe) never
//! stops the collector: a failed write is dropped, where `eprintln!` would
//! panic (and, with the default SIGPIPE disposition, the process would be
//! killed; `clrprof collect` ignores SIGPIPE for that reason).

/// Writes one line on standard error; a failed write is ignored.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}
