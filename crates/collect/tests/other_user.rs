//! Another local user, for tests of what such a user can plant in the
//! collector's directory: a second Unix account (`clrprof-other`, made
//! with `useradd` when the tests run as root) that runs shell commands
//! through `setpriv`.
//!
//! Where the tests do not run as root no second user can be made: the
//! tests that need one say what they could not do and pass, or fail under
//! `CI=true` (CI runs as root).
#![allow(dead_code)]

use std::process::Command;

/// The second user's name.
pub const NAME: &str = "clrprof-other";

/// The second user.
#[derive(Clone, Copy, Debug)]
pub struct OtherUser {
    /// Its user id.
    pub uid: u32,
    /// Its group id.
    pub gid: u32,
}

fn id(flag: &str) -> Option<u32> {
    let out = Command::new("id").args([flag, NAME]).output().ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

impl OtherUser {
    /// Runs `script` with `sh -c` as this user (no supplementary groups),
    /// `args` as `$1`, `$2`, ...; panics if it fails.
    pub fn sh(&self, script: &str, args: &[&std::ffi::OsStr]) {
        let out = Command::new("setpriv")
            .arg(format!("--reuid={}", self.uid))
            .arg(format!("--regid={}", self.gid))
            .arg("--clear-groups")
            .args(["sh", "-c", script, "sh"])
            .args(args)
            .current_dir("/")
            .output()
            .expect("run setpriv");
        assert!(out.status.success(), "as {NAME}: {script}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

/// True under `CI=true`.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// The second user, made if missing; `None` (or a panic under `CI=true`)
/// where this process cannot make one. `what` names the test's step that
/// needs it, for the message.
pub fn get(what: &str) -> Option<OtherUser> {
    let missing = |why: String| -> Option<OtherUser> {
        if in_ci() {
            panic!("CI=true and {what} cannot run as another local user: {why}");
        }
        eprintln!("NOT RUN: {what}, as another local user: {why}");
        None
    };
    // Safety: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return missing("it needs root to create the user clrprof-other".into());
    }
    for _ in 0..50 {
        if id("-u").is_some() {
            break;
        }
        let made = Command::new("useradd").args(["-M", "-r", "-s", "/usr/sbin/nologin", NAME]).status();
        match made.map(|s| s.code()) {
            // 9: the user exists (another test made it meanwhile).
            Ok(Some(0 | 9)) => break,
            // 10: /etc/passwd is locked by another useradd: try again.
            Ok(Some(10)) => std::thread::sleep(std::time::Duration::from_millis(100)),
            other => return missing(format!("useradd {NAME} failed: {other:?}")),
        }
    }
    match (id("-u"), id("-g")) {
        (Some(uid), Some(gid)) => Some(OtherUser { uid, gid }),
        _ => missing(format!("id {NAME} gave no ids")),
    }
}
