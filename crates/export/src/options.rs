//! What part of a log an export takes.

use clrprof::model::TickIndex;
use clrprof::query::Filter;

/// Options of every export.
///
/// - `filter`: the objects allocated in its time window by its threads
///   (as every `clrprof` query command selects them).
/// - `at`: the "in use" figures of pprof are the objects live at the end
///   of this tick slot instead of at the end of the log.
/// - `type_frames`: pprof also shows each sample's type as a leaf frame
///   (the type is always a label). Speedscope, which has no labels, always
///   shows the type as the leaf frame.
/// - `program`: the name pprof shows on its `File:` line (the profiled
///   program, or the log); without it pprof shows the first module the
///   samples name, often a framework DLL.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportOptions {
    /// The objects to export (default: all).
    pub filter: Filter,
    /// The moment of the "in use" figures (default: the end of the log).
    pub at: Option<TickIndex>,
    /// Types as leaf frames in pprof.
    pub type_frames: bool,
    /// The profile's main file in pprof (default: none).
    pub program: Option<String>,
}
