//! What a process id names: whether it runs, whose it is, and whether it
//! is a .NET (CoreCLR) process and of which version (from the path of the
//! `libcoreclr.so` it mapped, `.../Microsoft.NETCore.App/8.0.4/libcoreclr.so`).

use crate::Error;
use std::os::unix::fs::MetadataExt;

/// A running process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Process {
    /// Its id.
    pub pid: u32,
    /// Its command name (`/proc/PID/comm`).
    pub name: String,
    /// Its owner.
    pub uid: u32,
}

/// The user running this program.
pub fn my_uid() -> u32 {
    // Safety: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Looks the process up: [`Error::NoSuchProcess`], or
/// [`Error::OtherUser`] when it is not ours (unless we are root).
pub fn find(pid: u32) -> Result<Process, Error> {
    if pid == 0 {
        return Err(Error::NoSuchProcess(pid));
    }
    let dir = format!("/proc/{pid}");
    let meta = std::fs::metadata(&dir).map_err(|_| Error::NoSuchProcess(pid))?;
    let name = std::fs::read_to_string(format!("{dir}/comm")).map(|s| s.trim().to_string()).unwrap_or_default();
    let me = my_uid();
    if meta.uid() != me && me != 0 {
        return Err(Error::OtherUser { pid, owner: meta.uid(), me });
    }
    Ok(Process { pid, name, uid: meta.uid() })
}

/// The runtime a process has loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Runtime {
    /// The directory of `libcoreclr.so`.
    pub dir: String,
    /// Its version as the directory names it (`8.0.4`), if it does.
    pub version: Option<String>,
}

impl Runtime {
    /// The major version, if known.
    pub fn major(&self) -> Option<u32> {
        self.version.as_deref()?.split('.').next()?.parse().ok()
    }
}

/// The CoreCLR runtime mapped by the process, or [`Error::NotDotnet`].
pub fn runtime(p: &Process) -> Result<Runtime, Error> {
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", p.pid))
        .map_err(|e| Error::io(format!("cannot read the memory maps of process {}", p.pid), std::path::Path::new("/proc"), e))?;
    runtime_in_maps(&maps).ok_or_else(|| Error::NotDotnet { pid: p.pid, name: p.name.clone() })
}

/// Finds `libcoreclr.so` in the text of a `/proc/PID/maps` file.
pub fn runtime_in_maps(maps: &str) -> Option<Runtime> {
    let path = maps.lines().filter_map(|l| l.split_whitespace().nth(5)).find(|p| p.ends_with("/libcoreclr.so"))?;
    let dir = path.rsplit_once('/').map_or("", |d| d.0).to_string();
    let last = dir.rsplit('/').next().unwrap_or("");
    let version = last.chars().next().filter(char::is_ascii_digit).map(|_| last.to_string());
    Some(Runtime { dir, version })
}

/// Every .NET (CoreCLR) process this user may look at: its own, or every
/// one when run as root. Processes whose memory maps cannot be read are
/// passed over.
pub fn dotnet_processes() -> Vec<(Process, Runtime)> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        if pid == std::process::id() {
            continue;
        }
        let Ok(p) = find(pid) else { continue };
        if let Ok(rt) = runtime(&p) {
            found.push((p, rt));
        }
    }
    found.sort_by_key(|(p, _)| p.pid);
    found
}

/// Checks the process is ours, runs CoreCLR, and the runtime can attach.
pub fn attachable(pid: u32) -> Result<(Process, Runtime), Error> {
    let p = find(pid)?;
    let rt = runtime(&p)?;
    check_version(pid, &rt)?;
    Ok((p, rt))
}

/// [`Error::RuntimeTooOld`] for a runtime before .NET Core 3.0 (no
/// diagnostics IPC, no attach); an unknown version is let through (the
/// diagnostics socket then decides).
pub fn check_version(pid: u32, rt: &Runtime) -> Result<(), Error> {
    match rt.major() {
        Some(major) if major < 3 => Err(Error::RuntimeTooOld { pid, version: rt.version.clone().unwrap_or_default() }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_from_maps() {
        let maps = "7f00-7f10 r-xp 00000000 08:01 1 /usr/lib/libc.so.6\n\
                    7f20-7f30 r-xp 00000000 08:01 2 /opt/dn/shared/Microsoft.NETCore.App/8.0.4/libcoreclr.so\n";
        let rt = runtime_in_maps(maps).unwrap();
        assert_eq!(rt.version.as_deref(), Some("8.0.4"));
        assert_eq!(rt.major(), Some(8));
        let old = runtime_in_maps("1-2 r-xp 0 0:0 1 /x/Microsoft.NETCore.App/2.2.8/libcoreclr.so\n").unwrap();
        assert_eq!(old.major(), Some(2));
        let odd = runtime_in_maps("1-2 r-xp 0 0:0 1 /x/bin/libcoreclr.so\n").unwrap();
        assert_eq!(odd.version, None);
        let e = check_version(5, &old).unwrap_err().to_string();
        assert!(e.contains("runs .NET 2.2.8, which cannot load a profiler into a running process"), "{e}");
        assert!(check_version(5, &rt).is_ok() && check_version(5, &odd).is_ok());
        assert_eq!(runtime_in_maps("1-2 r-xp 0 0:0 1 /usr/lib/libc.so.6\n"), None);
    }

    #[test]
    fn processes() {
        assert!(matches!(find(0), Err(Error::NoSuchProcess(0))));
        assert!(matches!(find(u32::MAX - 1), Err(Error::NoSuchProcess(_))));
        let me = find(std::process::id()).unwrap();
        assert_eq!(me.uid, my_uid());
        // This test program is not a .NET process.
        assert!(matches!(runtime(&me), Err(Error::NotDotnet { .. })));
        // pid 1 belongs to root: another user's process, unless we are root.
        if my_uid() != 0 {
            if let Ok(m) = std::fs::metadata("/proc/1") {
                if m.uid() != my_uid() {
                    assert!(matches!(find(1), Err(Error::OtherUser { pid: 1, .. })));
                }
            }
        }
    }
}
