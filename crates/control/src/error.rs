//! The errors of talking to a live process.

use std::path::PathBuf;

/// Why a live process could not be reached or did not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No process has this id.
    #[error("no process with id {0}")]
    NoSuchProcess(u32),
    /// The process belongs to another user.
    #[error("permission denied: process {pid} belongs to user {owner}, not to you (user {me}); run clrprof as that user")]
    OtherUser {
        /// The process.
        pid: u32,
        /// Its owner's uid.
        owner: u32,
        /// Our uid.
        me: u32,
    },
    /// The process has not loaded the CoreCLR runtime.
    #[error("process {pid} ({name}) is not a .NET (CoreCLR) process: it has not loaded libcoreclr.so")]
    NotDotnet {
        /// The process.
        pid: u32,
        /// Its command name.
        name: String,
    },
    /// The runtime is older than what attaching needs.
    #[error("process {pid} runs .NET {version}, which cannot load a profiler into a running process (attach needs .NET Core 3.0 or later)")]
    RuntimeTooOld {
        /// The process.
        pid: u32,
        /// The runtime version seen in its memory maps.
        version: String,
    },
    /// The runtime's diagnostics socket is missing.
    #[error("process {pid} has no diagnostics socket in {dir} (the runtime is older than .NET Core 3.0, or diagnostics are disabled with DOTNET_EnableDiagnostics=0)")]
    NoDiagnosticsSocket {
        /// The process.
        pid: u32,
        /// Where it was looked for.
        dir: PathBuf,
    },
    /// A socket refused us for lack of permission.
    #[error("permission denied on {path}: {source}")]
    Permission {
        /// The socket.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// The runtime refused to attach the profiler.
    #[error("the runtime refused to attach the agent: {message} (HRESULT 0x{hresult:08X})")]
    AttachRefused {
        /// The HRESULT it answered.
        hresult: u32,
        /// What that code means.
        message: String,
    },
    /// A peer sent something that is not the protocol.
    #[error("bad reply from {peer}: {what}")]
    BadReply {
        /// Which peer.
        peer: String,
        /// What was wrong.
        what: String,
    },
    /// The agent answered a request with an error.
    #[error("the agent in process {pid}: {message}")]
    Agent {
        /// The process.
        pid: u32,
        /// The agent's message.
        message: String,
    },
    /// Input/output on a socket or file failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The system's error.
        source: std::io::Error,
    },
    /// A socket failed the checks of [`crate::trust`]: planted by another
    /// user, a link, or answered by another process. Nothing was sent to it.
    #[error("refused {path}: it {why}; nothing was sent to it (another user may have planted it)")]
    Untrusted {
        /// The socket.
        path: PathBuf,
        /// What failed.
        why: String,
    },
    /// Waiting took too long.
    #[error("timed out: {0}")]
    Timeout(String),
}

impl Error {
    /// An I/O error with context (permission errors get their own kind).
    pub fn io(what: impl Into<String>, path: &std::path::Path, source: std::io::Error) -> Error {
        if source.kind() == std::io::ErrorKind::PermissionDenied {
            Error::Permission { path: path.to_path_buf(), source }
        } else {
            Error::Io { what: what.into(), source }
        }
    }
}
