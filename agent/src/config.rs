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
        Config { output, stacks, calls, flush_ms, no_inlining: flag("CLRPROF_NO_INLINING") }
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
    }
}
