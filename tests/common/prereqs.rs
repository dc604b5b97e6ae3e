//! What the tests that drive other software need, found by the build
//! scripts (`build.rs` of the core library, the CLI, the agent and the
//! exports include this file), so that a test whose prerequisite is missing
//! is marked `#[cfg_attr(no_THING, ignore = "...")]` and cargo's summary
//! counts it as ignored, not as passed.
//!
//! Under `CI=true` no such cfg is ever set: the tests run, and a missing
//! prerequisite fails them. `cargo test -- --ignored` runs the ignored ones
//! anyway (they then say SKIPPED and why, and pass).
//!
//! A build script reruns when `CI` changes and when a prerequisite it found
//! changes or goes; one installed where nothing was there to watch is
//! noticed after `touch build.rs` in the crate (cargo cannot watch a path
//! that does not exist yet).
#![allow(dead_code)] // each build script uses a part

use std::path::PathBuf;
use std::process::Command;

/// True under `CI=true` (or `CI=1`).
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// The repository's top folder, from the crate's manifest folder.
pub fn repo() -> PathBuf {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    manifest.ancestors().find(|d| d.join("corpus").is_dir() && d.join("crates").is_dir()).unwrap_or(&manifest).to_path_buf()
}

/// Declares `cfg(name)` and sets it when `found` is `None` outside CI;
/// when found, cargo reruns the script if one of the paths changes.
pub fn mark(name: &str, found: Option<Vec<PathBuf>>) {
    println!("cargo::rustc-check-cfg=cfg({name})");
    match found {
        Some(paths) => {
            for p in paths {
                println!("cargo::rerun-if-changed={}", p.display());
            }
        }
        None if !in_ci() => println!("cargo::rustc-cfg={name}"),
        None => {}
    }
}

/// The build script, this file and `CI`: what every script watches.
pub fn watch_basics() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed={}", repo().join("tests/common/prereqs.rs").display());
    println!("cargo::rerun-if-env-changed=CI");
}

/// `path` if it is a folder.
pub fn dir(path: PathBuf) -> Option<Vec<PathBuf>> {
    path.is_dir().then(|| vec![path])
}

/// `../shared/corpus/NAME` beside the repository (or
/// `$CLRPROF_SHARED/corpus/NAME`).
fn corpus(name: &str) -> Option<Vec<PathBuf>> {
    println!("cargo::rerun-if-env-changed=CLRPROF_SHARED");
    let mut candidates = vec![repo().join("../shared/corpus").join(name)];
    if let Some(s) = std::env::var_os("CLRPROF_SHARED") {
        candidates.insert(0, PathBuf::from(s).join("corpus").join(name));
    }
    candidates.into_iter().find_map(dir)
}

/// The reference corpus (CLRProfiler's logs and answers).
pub fn reference_corpus() -> Option<Vec<PathBuf>> {
    corpus("reference")
}

/// The EventPipe corpus (traces and a heap snapshot from .NET's tools).
pub fn eventpipe_corpus() -> Option<Vec<PathBuf>> {
    corpus("eventpipe")
}

/// Whether `program args` runs and succeeds.
pub fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program).args(args).output().is_ok_and(|o| o.status.success())
}

/// The first of `candidates` that is a file, as a watch list.
fn file(candidate: PathBuf) -> Option<Vec<PathBuf>> {
    candidate.is_file().then(|| vec![candidate])
}

/// Both .NET runtimes `scripts/setup-dotnet.sh` installs (where
/// `crates/cli/tests/common/dotnet.rs` looks for them): CoreCLR 3.1 and
/// .NET 8 in `$CLRPROF_DOTNET_VENV` or `target/dotnet-venv`.
pub fn dotnet_runtimes() -> Option<Vec<PathBuf>> {
    println!("cargo::rerun-if-env-changed=CLRPROF_DOTNET_VENV");
    let venv = std::env::var_os("CLRPROF_DOTNET_VENV").map(PathBuf::from).unwrap_or_else(|| repo().join("target/dotnet-venv"));
    let entries = std::fs::read_dir(venv.join("lib")).ok()?;
    entries.flatten().map(|e| e.path().join("site-packages")).find_map(|site| {
        let found = vec![site.join("dotnetcore2/bin/dotnet"), site.join("dnv/net/runtime/.net/dotnet")];
        found.iter().all(|f| f.is_file()).then_some(found)
    })
}

/// Node, Chromium (`$CLRPROF_CHROMIUM` or `/usr/bin/chromium`) and
/// `crates/ui/browser/node_modules` (`scripts/setup-ui-tests.sh`): the
/// browser tests'.
pub fn browser() -> Option<Vec<PathBuf>> {
    println!("cargo::rerun-if-env-changed=CLRPROF_CHROMIUM");
    let chromium = std::env::var_os("CLRPROF_CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    let modules = repo().join("crates/ui/browser/node_modules/playwright-core");
    (runs("node", &["--version"]) && chromium.is_file() && modules.is_dir()).then(|| vec![chromium, modules])
}

/// Go (`go tool pprof`), for the pprof export tests.
pub fn go() -> Option<Vec<PathBuf>> {
    runs("go", &["version"]).then(Vec::new)
}

/// Node with the speedscope schema's checker's packages
/// (`crates/export/tests/speedscope/node_modules`, npm ci).
pub fn speedscope_node() -> Option<Vec<PathBuf>> {
    let modules = repo().join("crates/export/tests/speedscope/node_modules");
    let ok =
        runs("node", &["--version"]) && modules.join("speedscope/package.json").is_file() && modules.join("ajv/package.json").is_file();
    ok.then(|| vec![modules])
}

/// The export tests' Python (`$CLRPROF_EXPORT_VENV` or
/// `target/export-venv`) with `module` importable.
pub fn export_python(module: &str) -> Option<Vec<PathBuf>> {
    println!("cargo::rerun-if-env-changed=CLRPROF_EXPORT_VENV");
    let venv = std::env::var_os("CLRPROF_EXPORT_VENV").map(PathBuf::from).unwrap_or_else(|| repo().join("target/export-venv"));
    let python = venv.join("bin/python");
    let ok = runs(&python.display().to_string(), &["-c", &format!("import {module}")]);
    if ok {
        file(python)
    } else {
        None
    }
}
