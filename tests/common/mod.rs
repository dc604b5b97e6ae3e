//! Helpers shared by the integration tests: the reference corpus folder,
//! running the `clrprof` binary, and golden files.
#![allow(dead_code)] // each test binary uses a part

pub mod dotnet;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `../shared/corpus/reference/`, or `None` (with a message) when absent.
pub fn reference_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/reference");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("skipping: {} is absent", dir.display());
        None
    }
}

/// Runs `clrprof` from the repository root.
pub fn clrprof(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run clrprof")
}

/// Compares `actual` with `tests/golden/NAME`, or writes it when
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
