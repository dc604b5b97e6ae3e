//! The core library stays lean: an embedder compiles only what it uses.
//!
//! `cargo tree -e normal` of the core: at most 25 crates with default
//! features and with none, none of the tool's or the services' crates; the
//! capture agent gets the format layer only (no model, no rayon, no serde)
//! and, for streams to a collector, a TLS client.

use std::collections::BTreeSet;
use std::process::Command;

const LIMIT: usize = 25;
const NEVER: &[&str] = &[
    "clap", "indicatif", "anyhow", "png", "inferno", "tokio", "axum", "hyper", "rustls", "arrow", "parquet", "prost",
    "clrprof-gen", "clrprof-render", "clrprof-cli",
];

/// The crates in `cargo tree -e normal` for `args`.
fn tree(args: &[&str]) -> BTreeSet<String> {
    let out = Command::new(env!("CARGO"))
        .args(["tree", "-e", "normal", "--prefix", "none", "--color", "never"])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo tree");
    assert!(out.status.success(), "cargo tree {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.split_whitespace().next()).map(str::to_owned).collect()
}

#[test]
fn the_core_compiles_at_most_25_crates() {
    for args in [&["-p", "clrprof", "--no-default-features"][..], &["-p", "clrprof"][..]] {
        let crates = tree(args);
        assert!(crates.contains("clrprof") && crates.contains("memchr"), "{crates:?}");
        assert!(crates.len() <= LIMIT, "{args:?}: {} crates (limit {LIMIT}): {crates:?}", crates.len());
        for c in NEVER {
            assert!(!crates.contains(*c), "{args:?} pulls in {c}");
        }
    }
}

#[test]
fn the_agent_compiles_the_format_layer_only() {
    let crates = tree(&["-p", "clrprof-agent"]);
    assert!(crates.contains("clrprof"), "{crates:?}");
    // The agent verifies a collector over TLS (rustls, a client only): the
    // one crate of NEVER it may have.
    for c in ["rayon", "serde", "flate2", "zstd", "tokio", "hyper"].iter().chain(NEVER.iter().filter(|c| **c != "rustls")) {
        assert!(!crates.contains(*c), "the agent pulls in {c}: {crates:?}");
    }
}
