//! The agent's settings: read once from the environment at `Initialize`,
//! or from the client data of an attach request (`KEY=VALUE` lines with
//! the same names) at `InitializeForAttach`.

use clrprof_stream::{Host, Spool, StreamConfig, Tls};
use std::path::PathBuf;
use std::time::Duration;

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

/// `CLRPROF_FLOOR`: what `ObjectAllocated` does when measuring the floor
/// of the agent's cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Floor {
    /// Normal operation.
    Off,
    /// Return at once.
    Return,
    /// Ask the object's size, then return.
    Size,
}

/// Settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// The log file (`CLRPROF_OUTPUT`; `%p` becomes the process id;
    /// default `<program>_<pid>_<yyyyMMdd>_<HHmmss>.log`, see
    /// [`crate::logname`]). `None` only for an agent attached to take heap
    /// dumps into files of their own.
    pub output: Option<PathBuf>,
    /// `output` is the default name (not given by `CLRPROF_OUTPUT`).
    pub output_default: bool,
    /// `CLRPROF_FORCE=1`: an existing log may be overwritten.
    pub force: bool,
    /// `CLRPROF_FLOOR=return|size`: a measuring build of the agent's cost
    /// (agent/bench/overhead.sh): `ObjectAllocated` only returns, or also
    /// asks the object's size, and logs nothing.
    pub floor: Floor,
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
    /// `CLRPROF_ALLOCATIONS=0`: start with allocation logging off (the
    /// program switches it on around the part of interest).
    pub allocations: bool,
    /// `CLRPROF_HEAP_DUMP_EVERY=SECONDS`: a heap dump into the log every
    /// so many seconds (fractions allowed).
    pub heap_dump_every: Option<Duration>,
    /// `CLRPROF_CONTROL=0`: no control socket.
    pub control: bool,
    /// Loaded into a running process (`InitializeForAttach`).
    pub attached: bool,
}

impl Config {
    /// Reads the environment.
    pub fn from_env() -> Config {
        Self::from_lookup(|k| std::env::var(k).ok(), std::process::id())
    }

    /// Reads an attach request's client data: `KEY=VALUE` lines. Without
    /// `CLRPROF_OUTPUT` the agent has no log (it only takes dumps into
    /// files named by each request).
    pub fn from_client_data(data: &[u8], pid: u32) -> Config {
        let text = String::from_utf8_lossy(data);
        let get = |k: &str| text.lines().find_map(|l| l.split_once('=').filter(|(key, _)| key.trim() == k).map(|(_, v)| v.to_string()));
        let has_log = get("CLRPROF_OUTPUT").is_some_and(|v| !v.is_empty());
        let mut c = Self::from_lookup(get, pid);
        if !has_log {
            c.output = None;
        }
        // Neither hooks nor allocation events can be enabled after start.
        c.stacks = StackMode::None;
        c.calls = false;
        c.allocations = false;
        c.no_inlining = false;
        c.attached = true;
        c
    }

    /// Reads settings through `get` (for tests).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>, pid: u32) -> Config {
        let given = get("CLRPROF_OUTPUT").filter(|s| !s.is_empty());
        let output_default = given.is_none();
        let output = match given {
            Some(p) => PathBuf::from(p.replace("%p", &pid.to_string())),
            None => crate::logname::default_name(pid),
        };
        let stacks = match get("CLRPROF_STACKS").as_deref().map(str::trim) {
            Some("snapshot") => StackMode::Snapshot,
            Some("none") | Some("0") | Some("off") => StackMode::None,
            _ => StackMode::Shadow,
        };
        let flag = |k: &str| matches!(get(k).as_deref().map(str::trim), Some("1") | Some("true") | Some("yes"));
        let off = |k: &str| matches!(get(k).as_deref().map(str::trim), Some("0") | Some("false") | Some("no") | Some("off"));
        let calls = flag("CLRPROF_CALLS");
        let flush_ms = get("CLRPROF_FLUSH_MS").and_then(|s| s.trim().parse().ok()).filter(|&v| v > 0).unwrap_or(200);
        let number = |k: &str, default: u64| get(k).and_then(|s| s.trim().parse().ok()).filter(|&v: &u64| v > 0).unwrap_or(default);
        let stream = get("CLRPROF_TARGET").map(|t| t.trim().to_string()).filter(|t| !t.is_empty()).map(|target| StreamConfig {
            target,
            tls: Tls::from_settings(get("CLRPROF_TLS_FINGERPRINT").as_deref(), get("CLRPROF_TLS_CA").as_deref()),
            token: get("CLRPROF_TOKEN").and_then(|t| clrprof_wire::Token::from_hex(&t).ok()),
            spool: match get("CLRPROF_SPOOL").filter(|s| !s.is_empty()) {
                Some(p) => Spool::At(PathBuf::from(p.replace("%p", &pid.to_string()))),
                None => Spool::Private(format!("clrprof_{pid}.spool.log")),
            },
            buffer_bytes: (number("CLRPROF_STREAM_BUFFER_MB", 64) as usize).saturating_mul(1 << 20),
            linger_ms: number("CLRPROF_STREAM_LINGER_MS", 5000),
            reconnect_ms: number("CLRPROF_RECONNECT_MS", 500),
            content: clrprof_wire::Content::Log,
            speaker: "clrprof agent",
            host: Host { status: crate::status::amend, command: crate::commands::run },
        });
        let heap_dump_every = get("CLRPROF_HEAP_DUMP_EVERY")
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|&s| s.is_finite() && s > 0.0)
            .map(|s| Duration::from_secs_f64(s.max(0.01)));
        let floor = match get("CLRPROF_FLOOR").as_deref().map(str::trim) {
            Some("return") => Floor::Return,
            Some("size") => Floor::Size,
            _ => Floor::Off,
        };
        Config {
            output: Some(output),
            output_default,
            force: flag("CLRPROF_FORCE"),
            floor,
            stacks,
            calls,
            flush_ms,
            no_inlining: flag("CLRPROF_NO_INLINING"),
            allocations: !off("CLRPROF_ALLOCATIONS"),
            heap_dump_every,
            control: !off("CLRPROF_CONTROL"),
            attached: false,
            stream,
        }
    }

    /// Where the log goes, for the status line: `output=PATH` or
    /// `target=ADDR spool=PATH`.
    pub fn destination(&self) -> String {
        match (&self.stream, &self.output) {
            (Some(s), _) => format!("target={} spool={}", s.target, s.spool.shown().display()),
            (None, Some(p)) => format!("output={}", p.display()),
            (None, None) => "output=".to_string(),
        }
    }

    /// True when enter/leave hooks are installed.
    pub fn hooks(&self) -> bool {
        cfg!(target_arch = "x86_64") && (self.stacks == StackMode::Shadow || self.calls)
    }

    /// The stack mode's name.
    pub fn stack_name(&self) -> &'static str {
        match self.stacks {
            StackMode::Shadow => "shadow",
            StackMode::Snapshot => "snapshot",
            StackMode::None => "none",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let c = Config::from_lookup(|_| None, 42);
        let name = c.output.as_ref().unwrap().to_string_lossy().into_owned();
        assert!(name.contains("_42_") && name.ends_with(".log") && c.output_default && !c.force, "{name}");
        assert_eq!(c.floor, Floor::Off);
        assert_eq!(c.stacks, StackMode::Shadow);
        assert!(!c.calls && c.allocations && c.control && !c.attached);
        assert_eq!(c.heap_dump_every, None);
        let c = Config::from_lookup(
            |k| match k {
                "CLRPROF_OUTPUT" => Some("/tmp/x_%p.log".into()),
                "CLRPROF_STACKS" => Some("none".into()),
                "CLRPROF_CALLS" => Some("1".into()),
                "CLRPROF_ALLOCATIONS" => Some("0".into()),
                "CLRPROF_HEAP_DUMP_EVERY" => Some("2.5".into()),
                "CLRPROF_CONTROL" => Some("off".into()),
                _ => None,
            },
            7,
        );
        assert_eq!(c.output, Some(PathBuf::from("/tmp/x_7.log")));
        assert_eq!(c.stacks, StackMode::None);
        assert!(c.calls && !c.allocations && !c.control);
        assert_eq!(c.heap_dump_every, Some(Duration::from_millis(2500)));
        assert_eq!(Config::from_lookup(|k| (k == "CLRPROF_HEAP_DUMP_EVERY").then(|| "-1".into()), 1).heap_dump_every, None);
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
        assert_eq!((s.target.as_str(), &s.spool, s.buffer_bytes), ("127.0.0.1:7420", &Spool::At("/tmp/s_7.log".into()), 2 << 20));
        assert_eq!(s.token.as_ref().map(|t| t.to_hex()), Some(token));
        assert_eq!(c.destination(), "target=127.0.0.1:7420 spool=/tmp/s_7.log");
        let c = Config::from_lookup(|k| (k == "CLRPROF_TARGET").then(|| "unix:/x".to_string()), 7);
        let s = c.stream.unwrap();
        assert!(s.token.is_none());
        // No spool given: in the user's private folder, never in $TMPDIR itself.
        assert_eq!(s.spool, Spool::Private("clrprof_7.spool.log".into()));
        assert_eq!(s.spool.shown(), clrprof_files::user_temp_path().join("clrprof_7.spool.log"));
    }

    #[test]
    fn client_data() {
        let c = Config::from_client_data(b"CLRPROF_OUTPUT=/tmp/r.log\nCLRPROF_STACKS=shadow\nCLRPROF_HEAP_DUMP_EVERY=3\n", 9);
        assert_eq!(c.output, Some(PathBuf::from("/tmp/r.log")));
        assert!(c.attached && !c.allocations && !c.calls);
        assert_eq!(c.stacks, StackMode::None);
        assert_eq!(c.heap_dump_every, Some(Duration::from_secs(3)));
        let c = Config::from_client_data(b"", 9);
        assert_eq!(c.output, None);
    }
}
