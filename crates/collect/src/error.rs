//! The collector's error type.

/// What went wrong starting or talking to a collector.
#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    /// A file or socket operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, with the path or address.
        what: String,
        /// The system's error.
        source: std::io::Error,
    },
    /// Bad input (an address, a token file, a reply).
    #[error("{0}")]
    Invalid(String),
}

impl CollectError {
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> CollectError {
        let what = what.into();
        move |source| CollectError::Io { what, source }
    }
}
