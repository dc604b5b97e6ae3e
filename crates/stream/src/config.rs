//! A stream's settings: where to, with which token, where the spool
//! goes, and the bounds.

use std::path::PathBuf;

/// Streaming to a collector (`CLRPROF_TARGET`).
#[derive(Clone, Debug)]
pub struct StreamConfig {
    /// `CLRPROF_TARGET`: `HOST:PORT` or `unix:/path`.
    pub target: String,
    /// TLS to a collector started with `--tls` (`CLRPROF_TLS_FINGERPRINT`
    /// or `CLRPROF_TLS_CA`), or plain TCP.
    pub tls: Tls,
    /// `CLRPROF_TOKEN` (64 hex digits); `None` when missing or malformed
    /// (the agent then writes its spool and says why in its status).
    pub token: Option<clrprof_wire::Token>,
    /// `CLRPROF_SPOOL` (`%p` becomes the process id; default
    /// `clrprof_<pid>.spool.log` in the user's private temporary folder
    /// `$TMPDIR/clrprof-<uid>`): where the log goes on when the collector
    /// cannot be reached or goes away.
    pub spool: Spool,
    /// `CLRPROF_STREAM_BUFFER_MB` (default 64): log bytes kept in memory
    /// until the collector has stored them; more than this goes to the
    /// spool.
    pub buffer_bytes: usize,
    /// `CLRPROF_STREAM_LINGER_MS` (default 5000): at shutdown, how long to
    /// wait for the collector to confirm the end before spooling the rest.
    pub linger_ms: u64,
    /// `CLRPROF_RECONNECT_MS` (default 500): how often a spooling agent
    /// tries the collector, to catch it up from the spool.
    pub reconnect_ms: u64,
    /// What the stream's bytes are: the agent's log text; a NetTrace when
    /// `clrprof record --sampled` streams an EventPipe session.
    pub content: clrprof_wire::Content,
    /// How its messages on standard error begin (`clrprof agent`, or
    /// `clrprof record` for a sampled session's stream).
    pub speaker: &'static str,
    /// What the process around the client does with its status notes
    /// and the collector's commands.
    pub host: Host,
}

/// The process the client runs in: the agent reports the stream's turns
/// in its status line and runs the collector's commands; a sampled
/// session's stream does neither ([`Host::default`]).
#[derive(Clone, Copy, Debug)]
pub struct Host {
    /// Amends the status line with the spool's fields and why
    /// (`spooling_to=... spooling_from=... because=...`).
    pub status: fn(&str),
    /// Runs a command from the collector; the reply's text or why not.
    pub command: fn(&clrprof_wire::Command) -> Result<String, String>,
}

impl Default for Host {
    fn default() -> Host {
        Host { status: |_| {}, command: |_| Err("this stream takes no commands".to_string()) }
    }
}

/// Where a stream's spool goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Spool {
    /// A path the user chose (`CLRPROF_SPOOL`, or beside `clrprof record
    /// -o`): in the folder they chose.
    At(PathBuf),
    /// A file of this name in the user's private temporary folder
    /// (`clrprof_files::user_temp_dir`: `$TMPDIR/clrprof-<uid>`, mode
    /// 0700, or a fresh private folder when another user holds that
    /// name), never in a folder others can write to, where the name could
    /// be guessed and taken first.
    Private(String),
}

impl Spool {
    /// The path it names, for messages and the status line (for
    /// [`Spool::Private`], in the folder's usual place).
    pub fn shown(&self) -> PathBuf {
        match self {
            Spool::At(p) => p.clone(),
            Spool::Private(name) => clrprof_files::user_temp_path().join(name),
        }
    }
}

/// TLS or not, for a stream's connections.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Tls {
    /// Plain TCP (or a Unix socket).
    #[default]
    Plain,
    /// TLS, the collector known by its certificate's fingerprint or a CA.
    Verify(clrprof_wire::tls::Trust),
    /// The settings asked for TLS but do not read (a malformed
    /// fingerprint): the stream never connects, and says why; it never
    /// falls back to plain TCP.
    Invalid(String),
}

impl Tls {
    /// From `CLRPROF_TLS_FINGERPRINT` and `CLRPROF_TLS_CA` (either may be
    /// missing).
    pub fn from_settings(fingerprint: Option<&str>, ca: Option<&str>) -> Tls {
        match clrprof_wire::tls::Trust::from_settings(fingerprint, ca) {
            Ok(Some(t)) => Tls::Verify(t),
            Ok(None) => Tls::Plain,
            Err(e) => Tls::Invalid(e),
        }
    }
}
