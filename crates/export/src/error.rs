//! What can go wrong while exporting.

use std::path::PathBuf;

/// An export error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Writing a file failed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Writing to a caller's writer failed.
    #[error("cannot write the export: {0}")]
    Write(#[from] std::io::Error),
    /// The Parquet or Arrow library refused a table.
    #[error("cannot write the Parquet table {table}: {message}")]
    Parquet {
        /// The table.
        table: &'static str,
        /// The library's message.
        message: String,
    },
    /// A query refused the selection.
    #[error("{0}")]
    Query(#[from] clrprof::query::TypeQueryError),
    /// JSON serialization failed.
    #[error("cannot write JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A folder to write in is not the user's own or could be redirected:
    /// a symbolic link, another user's folder, or one that other users
    /// can write to. Nothing was written in it.
    #[error("{0}")]
    Untrusted(std::io::Error),
    /// The output folder exists and holds files that are not this
    /// export's own (they are never overwritten).
    #[error("{path} exists and is not an empty folder or an earlier Parquet export (it holds {entry}); choose another output")]
    OutputNotEmpty {
        /// The folder.
        path: PathBuf,
        /// A file in it that the export would not write.
        entry: String,
    },
}

/// An error opening or making a folder to write in: a refusal of
/// [`clrprof_files::PrivateDir`] (a link, another user's folder, a folder
/// others can write to: its text names the folder and why) becomes
/// [`Error::Untrusted`], anything else [`Error::Io`] on `path`.
pub(crate) fn folder(path: &std::path::Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| {
        if clrprof_files::is_refusal(&source) {
            Error::Untrusted(source)
        } else {
            Error::Io { path: path.to_path_buf(), source }
        }
    }
}

/// A result of this crate.
pub type Result<T> = std::result::Result<T, Error>;
