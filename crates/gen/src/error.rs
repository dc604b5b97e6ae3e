//! What can stop the generator.

use std::io;

/// An error from the generator.
#[derive(Debug, thiserror::Error)]
pub enum GenError {
    /// Writing the log failed.
    #[error("cannot write the log: {0}")]
    Io(#[from] io::Error),
    /// The options contradict each other or are out of range.
    #[error("invalid generator option: {0}")]
    Options(String),
    /// The simulated heap outgrew the address range the layout gives it
    /// (only plausible with 32-bit addresses and a large live heap).
    #[error("the simulated {area} outgrew its {bits}-bit address range (try fewer objects or --pointer-bits 64)")]
    AddressSpace {
        /// Which heap: "small-object heap" or "large-object heap".
        area: &'static str,
        /// The pointer width.
        bits: u32,
    },
    /// A table outgrew the id space the log format allows.
    #[error("the generator ran out of {0} ids")]
    Limit(&'static str),
}
