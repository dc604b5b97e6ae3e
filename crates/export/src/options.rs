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
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportOptions {
    /// The objects to export (default: all).
    pub filter: Filter,
    /// The moment of the "in use" figures (default: the end of the log).
    pub at: Option<TickIndex>,
    /// Types as leaf frames in pprof.
    pub type_frames: bool,
}
