//! Helpers for the command-line tool's tests: the shared helpers of the
//! repository's tests, running the `clrprof` binary, and golden files.
#![allow(dead_code)] // each test binary uses a part

pub mod dotnet;
#[path = "../../../../tests/common/other_user.rs"]
pub mod other_user;
#[path = "../../../../tests/common/mod.rs"]
mod shared;
pub use shared::*;

use std::path::Path;
use std::process::{Command, Output};

/// Runs `clrprof` from the repository root.
pub fn clrprof(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("run clrprof")
}

/// Compares `actual` with `crates/cli/tests/golden/NAME`, or writes it when
/// `UPDATE_GOLDEN` is set.
pub fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).expect("write golden");
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDEN=1 to create it)", path.display()));
    assert_eq!(actual, expected, "output differs from {}", path.display());
}

/// Kills a child process when the test ends, however it ends.
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The Chromium the browser tests drive (`CLRPROF_CHROMIUM`, else Debian's).
pub fn chromium() -> std::path::PathBuf {
    std::env::var_os("CLRPROF_CHROMIUM").map_or_else(|| std::path::PathBuf::from("/usr/bin/chromium"), std::path::PathBuf::from)
}

/// Whether `node` runs.
pub fn has_node() -> bool {
    Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success())
}
