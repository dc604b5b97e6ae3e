//! The process tree of a program clrprof started: the program, its
//! children, their children, and every descendant whose parent ended
//! before it (this process is made their reaper, `PR_SET_CHILD_SUBREAPER`,
//! so they are re-parented to it rather than to init and stay ours to
//! wait for).
//!
//! What the program was given in its environment (the launch port's
//! address) is inherited by the whole tree, so whatever serves that
//! address must live as long as the tree does, and may believe a caller
//! only if it is in the tree: [`Tree::contains`] walks a process's
//! parents up to the program (or to this process, for re-parented
//! orphans).
//!
//! Once watched, every child of this process is reaped by the watch (one
//! thread in `waitpid(-1)`); nothing else may wait for them.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// Makes this process the reaper of its orphaned descendants: a process
/// whose parent ends is re-parented to this one instead of init. Call it
/// before the program is started.
pub fn adopt_orphans() -> std::io::Result<()> {
    // Safety: PR_SET_CHILD_SUBREAPER takes an integer and touches no
    // memory of this process.
    let rc = unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong)
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[derive(Default)]
struct State {
    /// The program's exit status, once it was reaped.
    root: Option<ExitStatus>,
    /// No child is left: the whole tree has ended.
    empty: bool,
}

/// A program and its descendants, reaped as they end.
pub struct Tree {
    root: u32,
    shared: Arc<(Mutex<State>, Condvar)>,
}

impl Tree {
    /// Watches the tree of `root`, a child of this process: from now on
    /// every child of this process is reaped here (the program's
    /// `std::process::Child` must not be waited for).
    pub fn watch(root: u32) -> Tree {
        let shared = Arc::new((Mutex::new(State::default()), Condvar::new()));
        let reaper = shared.clone();
        std::thread::spawn(move || loop {
            let mut status: libc::c_int = 0;
            // Safety: waitpid writes only to `status`, a local.
            let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
            if pid > 0 {
                if pid as u32 == root {
                    lock(&reaper.0).root = Some(ExitStatus::from_raw(status));
                    reaper.1.notify_all();
                }
                continue;
            }
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            // ECHILD: no child is left, and none can come (only a
            // process of the tree could start one).
            lock(&reaper.0).empty = true;
            reaper.1.notify_all();
            return;
        });
        Tree { root, shared }
    }

    /// The program.
    pub fn root(&self) -> u32 {
        self.root
    }

    /// Waits for the program to end: its exit status (`None` if it was
    /// reaped before the watch began).
    pub fn wait_root(&self) -> Option<ExitStatus> {
        let mut s = lock(&self.shared.0);
        while s.root.is_none() && !s.empty {
            s = self.shared.1.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.root
    }

    /// Whether every process of the tree has ended.
    pub fn is_empty(&self) -> bool {
        lock(&self.shared.0).empty
    }

    /// Waits until every process of the tree has ended (true), or until
    /// `give_up` says so (false; it is asked every 100 ms).
    pub fn wait_all(&self, give_up: &dyn Fn() -> bool) -> bool {
        let mut s = lock(&self.shared.0);
        while !s.empty {
            if give_up() {
                return false;
            }
            s = self.shared.1.wait_timeout(s, Duration::from_millis(100)).map(|(g, _)| g).unwrap_or_else(|e| e.into_inner().0);
        }
        true
    }

    /// Whether process `pid` is in the tree: the program, or a process
    /// whose parents lead to the program or (re-parented orphans) to this
    /// process.
    pub fn contains(&self, pid: u32) -> bool {
        let me = std::process::id();
        let mut p = pid;
        for _ in 0..4096 {
            if p == self.root {
                return true;
            }
            if p == me {
                // This process itself is not in the tree; its children
                // other than the program are adopted orphans of it.
                return pid != me;
            }
            match parent_of(p) {
                Some(q) if q > 1 => p = q,
                _ => return false,
            }
        }
        false
    }
}

/// Whether this process still has children (after `adopt_orphans`: any
/// descendant of a program it started, alive or not yet reaped); those
/// that have ended are reaped on the way. For a program that was waited
/// for without a [`Tree`].
pub fn others_remain() -> bool {
    loop {
        let mut status: libc::c_int = 0;
        // Safety: waitpid writes only to `status`, a local.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        match pid {
            0 => return true,
            p if p > 0 => continue,
            _ if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) => continue,
            _ => return false,
        }
    }
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The parent of process `pid` (`/proc/PID/stat`'s fourth field).
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid ...`: the name may hold spaces and brackets.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents() {
        let me = std::process::id();
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        assert_eq!(parent_of(child.id()), Some(me));
        let tree = Tree { root: child.id(), shared: Arc::new((Mutex::new(State::default()), Condvar::new())) };
        assert!(tree.contains(child.id()));
        assert!(!tree.contains(me), "clrprof itself is not in the tree");
        assert!(!tree.contains(1));
        let _ = child.kill();
        let _ = child.wait();
    }
}
