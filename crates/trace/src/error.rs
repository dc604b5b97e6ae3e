//! Why a session could not be had.

use std::path::PathBuf;

/// Every failure of a session, worded for the person who typed the PID.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Finding, checking or reaching the process (not a .NET process,
    /// another user's, no diagnostics socket, a planted socket).
    #[error(transparent)]
    Control(#[from] clrprof_control::Error),
    /// The runtime refused the command.
    #[error("the runtime of process {pid} refused {command}: {message} (HRESULT 0x{hresult:08X})")]
    Refused {
        /// The process.
        pid: u32,
        /// The command.
        command: &'static str,
        /// Its answer.
        hresult: u32,
        /// What that answer means.
        message: String,
    },
    /// The runtime answered something that is not the protocol.
    #[error("process {pid} answered {command} with {what}")]
    BadReply {
        /// The process.
        pid: u32,
        /// The command.
        command: &'static str,
        /// What was wrong.
        what: String,
    },
    /// A socket or file operation failed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: String,
        /// The socket or file.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// The program could not be started under a session, or did not
    /// connect.
    #[error("{0}")]
    Launch(String),
}

impl Error {
    pub(crate) fn io(what: impl Into<String>, path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io { what: what.into(), path: path.into(), source }
    }
}
