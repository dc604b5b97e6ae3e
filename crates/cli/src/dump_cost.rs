//! What an agent-free heap dump costs the process dumped, and whether its
//! container has room for it.
//!
//! The runtime buffers the heap walk's events inside the process until
//! clrprof reads them; the session's buffer size caps that memory (events
//! that find the buffers full are dropped, and the dump says it is
//! incomplete). The cap is chosen from the process's resident memory:
//! `max(64 MB, 10 %)` of it (measured with `scripts/dump-cost.sh`, see the
//! guide's "What a dump costs the process"). `watch` compares that cost
//! with the room the process's memory cgroup leaves ([`headroom`]) and
//! skips a dump that would not fit.

use std::path::{Path, PathBuf};

/// The least buffer cap, MB.
pub const MIN_BUFFER_MB: u64 = 64;

/// What a dump may add besides the session's buffers, MB: the heap walk's
/// own bookkeeping in the runtime and the rundown (measured: see the
/// guide).
pub const OVERHEAD_MB: u64 = 16;

/// The session's buffer cap for a dump of `pid`, MB: `max(64, RSS / 10)`.
pub fn buffer_mb(pid: u32) -> u32 {
    buffer_mb_for(resident_bytes(pid).unwrap_or(0))
}

/// [`buffer_mb`] for a process of `rss` resident bytes.
pub fn buffer_mb_for(rss: u64) -> u32 {
    u32::try_from((rss >> 20).div_ceil(10).max(MIN_BUFFER_MB)).unwrap_or(u32::MAX)
}

/// What a dump of a process holding `rss` resident bytes is expected to
/// add to it at most, bytes: the buffer cap and the overhead.
pub fn expected_bytes(rss: u64) -> u64 {
    (u64::from(buffer_mb_for(rss)) + OVERHEAD_MB) << 20
}

/// The process's resident memory (`VmRSS`), bytes.
pub fn resident_bytes(pid: u32) -> Option<u64> {
    status_kb(pid, "VmRSS").map(|kb| kb << 10)
}

fn status_kb(pid: u32, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(':')?.split_whitespace().next()?.parse().ok())
}

/// The room a memory cgroup leaves a process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Headroom {
    /// The cgroup whose limit is the tightest (a folder under the cgroup
    /// file system).
    pub cgroup: PathBuf,
    /// Its limit, bytes.
    pub limit: u64,
    /// What it uses now, bytes.
    pub usage: u64,
}

impl Headroom {
    /// Bytes left before the limit.
    pub fn left(&self) -> u64 {
        self.limit.saturating_sub(self.usage)
    }
}

/// Limits at or above this are "no limit" (cgroup v1 writes 2^63 rounded
/// down to a page).
const NO_LIMIT: u64 = 1 << 60;

/// The tightest memory limit over the process's cgroup and its ancestors
/// (cgroup v2 `memory.max` / `memory.current`, else v1
/// `memory.limit_in_bytes` / `memory.usage_in_bytes`); `None` when no
/// limit applies or the cgroup cannot be read.
pub fn headroom(pid: u32) -> Option<Headroom> {
    let cgroups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    headroom_in(&cgroups, &mounts)
}

/// [`headroom`] from the text of `/proc/PID/cgroup` and of
/// `/proc/self/mountinfo`.
fn headroom_in(cgroups: &str, mounts: &str) -> Option<Headroom> {
    let mut best: Option<Headroom> = None;
    for line in cgroups.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (f.next(), f.next(), f.next()) else { continue };
        let v2 = id == "0" && controllers.is_empty();
        let v1 = controllers.split(',').any(|c| c == "memory");
        if !v2 && !v1 {
            continue;
        }
        let Some(mount) = mount_point(mounts, v2) else { continue };
        let (limit_file, usage_file) =
            if v2 { ("memory.max", "memory.current") } else { ("memory.limit_in_bytes", "memory.usage_in_bytes") };
        // The cgroup and each ancestor up to the mount's root.
        let mut dir = mount.join(path.trim_start_matches('/'));
        loop {
            if let (Some(limit), Some(usage)) = (read_u64(&dir.join(limit_file)), read_u64(&dir.join(usage_file))) {
                if limit < NO_LIMIT {
                    let h = Headroom { cgroup: dir.clone(), limit, usage };
                    if !best.as_ref().is_some_and(|b| b.left() <= h.left()) {
                        best = Some(h);
                    }
                }
            }
            if dir == mount || !dir.pop() || !dir.starts_with(&mount) {
                break;
            }
        }
    }
    best
}

/// Where the cgroup v2 hierarchy (or v1's memory controller) is mounted,
/// from mountinfo: `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ... - TYPE
/// SOURCE SUPEROPTIONS`.
fn mount_point(mounts: &str, v2: bool) -> Option<PathBuf> {
    mounts.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        let mut r = right.split_whitespace();
        let fstype = r.next()?;
        let superopts = r.nth(1).unwrap_or("");
        let mountpoint = left.split_whitespace().nth(4)?;
        let wanted = if v2 { fstype == "cgroup2" } else { fstype == "cgroup" && superopts.split(',').any(|o| o == "memory") };
        wanted.then(|| PathBuf::from(mountpoint))
    })
}

/// A file holding one number; "max" is no limit.
fn read_u64(path: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let t = text.trim();
    if t == "max" {
        return Some(u64::MAX);
    }
    t.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_is_64_mb_or_a_tenth() {
        assert_eq!(buffer_mb_for(0), 64);
        assert_eq!(buffer_mb_for(500 << 20), 64);
        assert_eq!(buffer_mb_for(2000 << 20), 200);
    }

    #[test]
    fn mountinfo_names_the_hierarchies() {
        let m = "30 25 0:26 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n\
                 35 25 0:31 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        assert_eq!(mount_point(m, false), Some(PathBuf::from("/sys/fs/cgroup/memory")));
        assert_eq!(mount_point(m, true), Some(PathBuf::from("/sys/fs/cgroup/unified")));
    }

    #[test]
    fn the_tightest_ancestor_counts() {
        let root = std::env::temp_dir().join(format!("clrprof-cgroup-test-{}", std::process::id()));
        let child = root.join("a/b");
        std::fs::create_dir_all(&child).unwrap();
        std::fs::write(root.join("a/memory.max"), "1000\n").unwrap();
        std::fs::write(root.join("a/memory.current"), "900\n").unwrap();
        std::fs::write(child.join("memory.max"), "max\n").unwrap();
        std::fs::write(child.join("memory.current"), "500\n").unwrap();
        let mounts = format!("35 25 0:31 / {} rw - cgroup2 cgroup2 rw\n", root.display());
        let h = headroom_in("0::/a/b\n", &mounts).unwrap();
        assert_eq!((h.limit, h.usage, h.left()), (1000, 900, 100));
        assert_eq!(h.cgroup, root.join("a"));
        assert_eq!(headroom_in("0::/a/b\n", "nothing here\n"), None);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
