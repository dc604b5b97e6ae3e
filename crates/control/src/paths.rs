//! Where a process's sockets are.
//!
//! Both the runtime and the agent put their sockets in the process's own
//! temporary directory: `$TMPDIR` as the process sees it, else `/tmp`.
//! A client reads the process's environment (`/proc/PID/environ`, readable
//! by the same user) to find it, and falls back to its own.

use std::path::{Path, PathBuf};

/// The agent's control socket in `dir` for process `pid`.
pub fn control_socket(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("clrprof-agent-{pid}.sock"))
}

/// The temporary directory of the calling process: `$TMPDIR` unless
/// empty, else `/tmp`.
pub fn own_temp_dir() -> PathBuf {
    std::env::var_os("TMPDIR").filter(|v| !v.is_empty()).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/tmp"))
}

/// The temporary directory of process `pid`: its `TMPDIR`, else `/tmp`;
/// our own when its environment cannot be read.
pub fn temp_dir_of(pid: u32) -> PathBuf {
    match std::fs::read(format!("/proc/{pid}/environ")) {
        Ok(env) => env
            .split(|&b| b == 0)
            .find_map(|kv| kv.strip_prefix(b"TMPDIR="))
            .filter(|v| !v.is_empty())
            .map(|v| PathBuf::from(String::from_utf8_lossy(v).into_owned()))
            .unwrap_or_else(|| PathBuf::from("/tmp")),
        Err(_) => own_temp_dir(),
    }
}

/// The runtime's diagnostics socket of `pid` in `dir`
/// (`dotnet-diagnostic-PID-KEY-socket`; the newest if several).
pub fn diagnostics_socket(dir: &Path, pid: u32) -> Option<PathBuf> {
    let prefix = format!("dotnet-diagnostic-{pid}-");
    let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(&prefix) && name.ends_with("-socket") {
            let when = entry.metadata().and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH);
            if best.as_ref().is_none_or(|b| when > b.0) {
                best = Some((when, entry.path()));
            }
        }
    }
    best.map(|b| b.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(control_socket(Path::new("/tmp"), 42), PathBuf::from("/tmp/clrprof-agent-42.sock"));
        let dir = std::env::temp_dir().join(format!("clrprof-paths-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(diagnostics_socket(&dir, 77), None);
        std::fs::write(dir.join("dotnet-diagnostic-77-12345-socket"), b"").unwrap();
        std::fs::write(dir.join("dotnet-diagnostic-770-1-socket"), b"").unwrap();
        assert_eq!(diagnostics_socket(&dir, 77), Some(dir.join("dotnet-diagnostic-77-12345-socket")));
        // Our own process: its environment is readable.
        let mine = temp_dir_of(std::process::id());
        assert_eq!(mine, std::env::var_os("TMPDIR").filter(|v| !v.is_empty()).map(PathBuf::from).unwrap_or_else(|| "/tmp".into()));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
