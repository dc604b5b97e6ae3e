//! Marks the tests that run real .NET programs as ignored when the .NET
//! runtimes `scripts/setup-dotnet.sh` installs are absent, so that cargo's
//! summary counts them as ignored rather than passed: the `no_dotnet` cfg,
//! which those tests carry as `#[cfg_attr(no_dotnet, ignore = ...)]`.
//!
//! Under `CI=true` the cfg is never set: the tests run and fail there when
//! something is missing. `cargo test -- --ignored` runs them anyway (they
//! then say SKIPPED and why).
//!
//! Cargo reruns this script when `CI` or `CLRPROF_DOTNET_VENV` changes or
//! an installed runtime changes or goes; a first install, where nothing
//! existed to watch, is noticed after `touch crates/cli/build.rs`.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo::rustc-check-cfg=cfg(no_dotnet)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=CI");
    println!("cargo::rerun-if-env-changed=CLRPROF_DOTNET_VENV");
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let repo = manifest.ancestors().nth(2).unwrap_or(&manifest).to_path_buf();
    let venv = std::env::var_os("CLRPROF_DOTNET_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo.join("target/dotnet-venv"));
    match runtimes(&venv) {
        Some(found) => {
            for f in found {
                println!("cargo::rerun-if-changed={}", f.display());
            }
        }
        None if !ci => println!("cargo::rustc-cfg=no_dotnet"),
        None => {}
    }
}

/// Both runtimes' executables, where `crates/cli/tests/common/dotnet.rs`
/// looks for them.
fn runtimes(venv: &Path) -> Option<[PathBuf; 2]> {
    let entries = std::fs::read_dir(venv.join("lib")).ok()?;
    entries.flatten().map(|e| e.path().join("site-packages")).find_map(|site| {
        let found = [site.join("dotnetcore2/bin/dotnet"), site.join("dnv/net/runtime/.net/dotnet")];
        found.iter().all(|f| f.is_file()).then_some(found)
    })
}
