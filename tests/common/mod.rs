//! Helpers shared by the integration tests of the whole repository: the
//! repository root and the reference corpus folder. The command-line tool's
//! tests (crates/cli/tests) include this file and add their own runner.
#![allow(dead_code)] // each test binary uses a part

use std::path::{Path, PathBuf};

/// The repository's top folder (where `corpus/` and `../shared` are found).
pub fn repo_root() -> PathBuf {
    let mut dir = Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf();
    while !dir.join("corpus").is_dir() {
        if !dir.pop() {
            panic!("no folder above {} holds corpus/", env!("CARGO_MANIFEST_DIR"));
        }
    }
    dir
}

/// True when the tests run in CI (`CI=true`): there, whatever a test needs
/// must be present, and a missing prerequisite fails the test.
pub fn in_ci() -> bool {
    std::env::var("CI").map(|v| v == "true" || v == "1").unwrap_or(false)
}

/// Says that a test cannot run for want of `what`: a failure under CI, a
/// visible skip (on standard error) elsewhere.
pub fn missing(what: &str) {
    if in_ci() {
        panic!("CI=true and {what} is missing: this test cannot run");
    }
    eprintln!("SKIPPED: {what} is missing");
}

/// The `.nettrace` files of a folder, by name.
pub fn nettraces_in(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "nettrace"))
        .collect();
    paths.sort();
    paths
}

/// `../shared/corpus/reference/`, or `None` (with a message) when absent.
pub fn reference_dir() -> Option<PathBuf> {
    let dir = repo_root().join("../shared/corpus/reference");
    if dir.is_dir() {
        Some(dir)
    } else {
        missing(&format!("the reference corpus ({})", dir.display()));
        None
    }
}

/// A small deterministic generator (xorshift), for the tests that damage
/// their input at random places.
pub struct Rng(pub u64);

impl Rng {
    /// The next number.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}
