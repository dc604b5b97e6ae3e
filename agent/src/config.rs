//! The agent's settings, read once from the environment at `Initialize`.

use std::path::PathBuf;

/// Where stacks come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackMode {
    /// Enter/leave hooks keep a shadow stack per thread (the default).
    Shadow,
    /// `DoStackSnapshot` at each allocation.
    Snapshot,
    /// No frames: allocation stacks carry only type and size.
    None,
}

/// Streaming to a collector (`CLRPROF_TARGET`).
#[derive(Clone, Debug)]
pub struct StreamConfig {
    /// `CLRPROF_TARGET`: `HOST:PORT` or `unix:/path`.
    pub target: String,
    /// `CLRPROF_TOKEN` (64 hex digits); `None` when missing or malformed
    /// (the agent then writes its spool and says why in its status).
    pub token: Option<clrprof_wire::Token>,
    /// `CLRPROF_SPOOL` (`%p` becomes the process id; default
    /// `$TMPDIR/clrprof_<pid>.spool.log`): where the log goes on when the
    /// collector cannot be reached or goes away.
    pub spool: PathBuf,
    /// `CLRPROF_STREAM_BUFFER_MB` (default 64): log bytes kept in memory
    /// until the collector has stored them; more than this goes to the
    /// spool.
    pub buffer_bytes: usize,
    /// `CLRPROF_STREAM_LINGER_MS` (default 5000): at shutdown, how long to
    /// wait for the collector to confirm the end before spooling the rest.
    pub linger_ms: u64,
    /// `CLRPROF_RECONNECT_MS` (default 500): how often a spooling agent
    /// tries to tell the collector where its spool is.
    pub reconnect_ms: u64,
}

/// Settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// The log file (`CLRPROF_OUTPUT`; `%p` becomes the process id;
    /// default `clrprof_<pid>.log`).
    pub output: PathBuf,
    /// `CLRPROF_STACKS=shadow|snapshot|none`.
    pub stacks: StackMode,
    /// `CLRPROF_CALLS=1`: a `c` line at every call (needs shadow stacks).
    pub calls: bool,
    /// `CLRPROF_FLUSH_MS`: the timer's period (default 200 ms).
    pub flush_ms: u64,
    /// `CLRPROF_NO_INLINING=1`: ask the JIT not to inline, so that every
    /// call shows in stacks.
    pub no_inlining: bool,
    /// Set when `CLRPROF_TARGET` is: stream to a collector instead of
    /// writing `output`.
    pub stream: Option<StreamConfig>,
}

impl Config {
    /// Reads the environment.
    pub fn from_env() -> Config {
        Self::from_lookup(|k| std::env::var(k).ok(), std::process::id())
    }

    /// Reads settings through `get` (for tests).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>, pid: u32) -> Config {
        let output = match get("CLRPROF_OUTPUT").filter(|s| !s.is_empty()) {
            Some(p) => PathBuf::from(p.replace("%p", &pid.to_string())),
            None => PathBuf::from(format!("clrprof_{pid}.log")),
        };
        let stacks = match get("CLRPROF_STACKS").as_deref().map(str::trim) {
            Some("snapshot") => StackMode::Snapshot,
            Some("none") | Some("0") | Some("off") => StackMode::None,
            _ => StackMode::Shadow,
        };
        let flag = |k: &str| matches!(get(k).as_deref().map(str::trim), Some("1") | Some("true") | Some("yes"));
        let calls = flag("CLRPROF_CALLS");
        let flush_ms = get("CLRPROF_FLUSH_MS").and_then(|s| s.trim().parse().ok()).filter(|&v| v > 0).unwrap_or(200);
        let number = |k: &str, default: u64| get(k).and_then(|s| s.trim().parse().ok()).filter(|&v: &u64| v > 0).unwrap_or(default);
        let stream = get("CLRPROF_TARGET").map(|t| t.trim().to_string()).filter(|t| !t.is_empty()).map(|target| StreamConfig {
            target,
            token: get("CLRPROF_TOKEN").and_then(|t| clrprof_wire::Token::from_hex(&t).ok()),
            spool: match get("CLRPROF_SPOOL").filter(|s| !s.is_empty()) {
                Some(p) => PathBuf::from(p.replace("%p", &pid.to_string())),
                None => std::env::temp_dir().join(format!("clrprof_{pid}.spool.log")),
            },
            buffer_bytes: (number("CLRPROF_STREAM_BUFFER_MB", 64) as usize).saturating_mul(1 << 20),
            linger_ms: number("CLRPROF_STREAM_LINGER_MS", 5000),
            reconnect_ms: number("CLRPROF_RECONNECT_MS", 500),
        });
        Config { output, stacks, calls, flush_ms, no_inlining: flag("CLRPROF_NO_INLINING"), stream }
    }

    /// Where the log goes, for the status line: `output=PATH` or
    /// `target=ADDR spool=PATH`.
    pub fn destination(&self) -> String {
        match &self.stream {
            None => format!("output={}", self.output.display()),
            Some(s) => format!("target={} spool={}", s.target, s.spool.display()),
        }
    }

    /// True when enter/leave hooks are installed.
    pub fn hooks(&self) -> bool {
        cfg!(target_arch = "x86_64") && (self.stacks == StackMode::Shadow || self.calls)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let c = Config::from_lookup(|_| None, 42);
        assert_eq!(c.output, PathBuf::from("clrprof_42.log"));
        assert_eq!(c.stacks, StackMode::Shadow);
        assert!(!c.calls);
        let c = Config::from_lookup(
            |k| match k {
                "CLRPROF_OUTPUT" => Some("/tmp/x_%p.log".into()),
                "CLRPROF_STACKS" => Some("none".into()),
                "CLRPROF_CALLS" => Some("1".into()),
                _ => None,
            },
            7,
        );
        assert_eq!(c.output, PathBuf::from("/tmp/x_7.log"));
        assert_eq!(c.stacks, StackMode::None);
        assert!(c.calls);
        assert!(c.stream.is_none());
        let token = "ab".repeat(32);
        let c = Config::from_lookup(
            |k| match k {
                "CLRPROF_TARGET" => Some("127.0.0.1:7420".into()),
                "CLRPROF_TOKEN" => Some(token.clone()),
                "CLRPROF_SPOOL" => Some("/tmp/s_%p.log".into()),
                "CLRPROF_STREAM_BUFFER_MB" => Some("2".into()),
                _ => None,
            },
            7,
        );
        let s = c.stream.as_ref().unwrap();
        assert_eq!((s.target.as_str(), s.spool.as_path(), s.buffer_bytes), ("127.0.0.1:7420", std::path::Path::new("/tmp/s_7.log"), 2 << 20));
        assert_eq!(s.token.as_ref().map(|t| t.to_hex()), Some(token));
        assert_eq!(c.destination(), "target=127.0.0.1:7420 spool=/tmp/s_7.log");
        let c = Config::from_lookup(|k| (k == "CLRPROF_TARGET").then(|| "unix:/x".to_string()), 7);
        assert!(c.stream.unwrap().token.is_none());
    }
}
