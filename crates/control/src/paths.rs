//! Where a process's sockets are.
//!
//! Both the runtime and the agent put their sockets in the process's own
//! temporary directory: `$TMPDIR` as the process sees it, else `/tmp`.
//! A client reads the process's environment (`/proc/PID/environ`, readable
//! by the same user) to find it, and falls back to its own.
//!
//! A process in another container (another mount namespace, another PID
//! namespace) names its sockets by the process id it has in its own
//! namespace (`NSpid` in `/proc/PID/status`), in a `/tmp` this process may
//! not see: [`place_of`] gives the folder as seen from here, through
//! `/proc/PID/root`, and that id.

use crate::Error;
use std::path::{Path, PathBuf};

/// The agent's control socket in `dir` for process `pid`.
pub fn control_socket(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("clrprof-agent-{pid}.sock"))
}

/// Agent control sockets in `dir` left by processes that no longer exist
/// (killed before the agent could remove its socket): files named
/// `clrprof-agent-PID.sock` that are sockets, belong to the calling user,
/// and whose PID has no `/proc` entry. A socket whose PID was given to
/// another process since is kept (a new agent in that process replaces it).
pub fn stale_control_sockets(dir: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    // Safety: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut stale = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("clrprof-agent-")).and_then(|n| n.strip_suffix(".sock")) else {
            continue;
        };
        if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) || pid.len() > 10 {
            continue;
        }
        let Ok(meta) = entry.path().symlink_metadata() else { continue };
        if meta.file_type().is_socket() && meta.uid() == me && !Path::new("/proc").join(pid).exists() {
            stale.push(entry.path());
        }
    }
    stale
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

/// Where process `pid`'s sockets are, as seen from this process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// Its temporary folder, reachable from here: `/proc/PID/root/...`
    /// when the process has another mount namespace than this one.
    pub dir: PathBuf,
    /// The process id it has in its own PID namespace: the one its
    /// sockets are named by (`pid` itself outside containers).
    pub ns_pid: u32,
    /// Whether the process is in another mount or PID namespace.
    pub other_namespace: bool,
}

/// Where process `pid`'s sockets are: its temporary folder
/// ([`temp_dir_of`]), through `/proc/PID/root` when its mount namespace is
/// not ours, and its process id in its own PID namespace.
pub fn place_of(pid: u32) -> Place {
    let dir = temp_dir_of(pid);
    let ns_pid = ns_pid_of(pid).unwrap_or(pid);
    let other_mounts = other_namespace(pid, "mnt");
    let dir = if other_mounts {
        let inner = dir.strip_prefix("/").unwrap_or(&dir).to_path_buf();
        PathBuf::from(format!("/proc/{pid}/root")).join(inner)
    } else {
        dir
    };
    Place { dir, ns_pid, other_namespace: other_mounts || ns_pid != pid }
}

/// The process id `pid` has in its innermost PID namespace: the last
/// number of `NSpid:` in `/proc/PID/status` (kernels before 4.1 lack the
/// line: `None`).
pub fn ns_pid_of(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    ns_pid_in_status(&status)
}

/// The last number of the `NSpid:` line of a `/proc/PID/status` text.
pub fn ns_pid_in_status(status: &str) -> Option<u32> {
    let line = status.lines().find_map(|l| l.strip_prefix("NSpid:"))?;
    line.split_whitespace().last()?.parse().ok()
}

/// Whether process `pid` is in another namespace of `kind` (`mnt`, `pid`)
/// than this process: their `/proc/*/ns/KIND` links differ. Unreadable
/// links count as the same namespace.
pub fn other_namespace(pid: u32, kind: &str) -> bool {
    match (std::fs::read_link(format!("/proc/self/ns/{kind}")), std::fs::read_link(format!("/proc/{pid}/ns/{kind}"))) {
        (Ok(mine), Ok(theirs)) => mine != theirs,
        _ => false,
    }
}

/// The runtime's diagnostics socket of `pid` in `dir`
/// (`dotnet-diagnostic-PID-KEY-socket`; the newest if several), whoever
/// made it. Use [`diagnostics_socket_of`] before talking to it.
pub fn diagnostics_socket(dir: &Path, pid: u32) -> Option<PathBuf> {
    candidates(dir, pid).into_iter().next()
}

/// The names a diagnostics socket of `pid` may have in `dir`, newest
/// first.
fn candidates(dir: &Path, pid: u32) -> Vec<PathBuf> {
    let prefix = format!("dotnet-diagnostic-{pid}-");
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(&prefix) && name.ends_with("-socket") {
            let when = entry.path().symlink_metadata().and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH);
            found.push((when, entry.path()));
        }
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    found.into_iter().map(|f| f.1).collect()
}

/// The diagnostics socket of process `pid` run by user `owner`: the
/// newest of its names in `dir` that is a socket owned by `owner`
/// ([`crate::trust::check_file`]). Names planted by anyone else, and
/// links, are passed over; if only such names are there, the newest is
/// refused with [`Error::Untrusted`]; if none, [`Error::NoDiagnosticsSocket`].
pub fn diagnostics_socket_of(dir: &Path, pid: u32, owner: u32) -> Result<PathBuf, Error> {
    let mut refused = None;
    for path in candidates(dir, pid) {
        match crate::trust::check_file(&path, owner) {
            Ok(()) => return Ok(path),
            Err(e) => {
                refused.get_or_insert(e);
            }
        }
    }
    Err(refused.unwrap_or_else(|| Error::NoDiagnosticsSocket { pid, dir: dir.to_path_buf() }))
}

/// The diagnostics socket of process `pid` (the host's id) run by user
/// `owner`, wherever its namespaces put it ([`place_of`]), checked as
/// [`diagnostics_socket_of`] does. The peer behind it must still be
/// checked against `pid`: the kernel names peers by the ids this process
/// sees ([`crate::trust::check_peer`]).
pub fn diagnostics_socket_for(pid: u32, owner: u32) -> Result<PathBuf, Error> {
    let place = place_of(pid);
    diagnostics_socket_of(&place.dir, place.ns_pid, owner).map_err(|e| match e {
        Error::NoDiagnosticsSocket { dir, .. } => Error::NoDiagnosticsSocket { pid, dir },
        e => e,
    })
}

/// The agent's control socket of process `pid` (the host's id), wherever
/// its namespaces put it ([`place_of`]).
pub fn control_socket_for(pid: u32) -> PathBuf {
    let place = place_of(pid);
    control_socket(&place.dir, place.ns_pid)
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

    #[test]
    fn namespaces() {
        assert_eq!(ns_pid_in_status("Name:\tdotnet\nNSpid:\t4242\t17\t1\nPPid:\t1\n"), Some(1));
        assert_eq!(ns_pid_in_status("Name:\tx\nNSpid:\t88\n"), Some(88));
        assert_eq!(ns_pid_in_status("Name:\tx\n"), None);
        // This process shares every namespace with itself.
        let me = std::process::id();
        let place = place_of(me);
        assert_eq!(place.ns_pid, ns_pid_of(me).unwrap_or(me));
        assert!(!other_namespace(me, "mnt"));
        assert_eq!(place.dir, temp_dir_of(me));
    }

    #[test]
    fn stale_sockets() {
        let dir = std::env::temp_dir().join(format!("clrprof-stale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // A process that has ended: its pid has no /proc entry any more.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let bind = |pid: u32| {
            let p = control_socket(&dir, pid);
            drop(std::os::unix::net::UnixListener::bind(&p).unwrap());
            p
        };
        let stale = bind(dead);
        let live = bind(std::process::id());
        // Not sockets, or not an agent's name: never touched.
        std::fs::write(dir.join(format!("clrprof-agent-{}.sock.txt", dead)), b"").unwrap();
        std::fs::write(dir.join("clrprof-agent-x1.sock"), b"").unwrap();
        let plain = dir.join(format!("clrprof-agent-{}.sock", dead + 1_000_000));
        std::fs::write(&plain, b"").unwrap();
        assert_eq!(stale_control_sockets(&dir), vec![stale]);
        assert!(live.exists() && plain.exists());
        assert_eq!(stale_control_sockets(&dir.join("missing")), Vec::<PathBuf>::new());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
