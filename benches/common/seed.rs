//! A seed-scale model for the query benchmarks: `clrprof gen --preset seed`
//! written once to `$CLRPROF_BENCH_SEED` (default
//! `target/tmp/clrprof-bench-seed.log`, Cargo's folder for benchmarks'
//! files: never a guessable name in a shared `/tmp`, where another user
//! could plant a link or a log of their own) and loaded.
#![allow(dead_code)] // each benchmark uses a part

use clrprof_gen::{generate, Preset};
use clrprof::model::{load, LoadOptions, Model};
use std::path::PathBuf;

/// Where the seed log lives.
pub fn seed_path() -> PathBuf {
    std::env::var_os("CLRPROF_BENCH_SEED").map_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("clrprof-bench-seed.log"), PathBuf::from)
}

/// The seed log's bytes, generated on first use.
pub fn seed_log() -> Vec<u8> {
    let path = seed_path();
    if let Ok(bytes) = std::fs::read(&path) {
        if !bytes.is_empty() {
            return bytes;
        }
        // An empty file left by an interrupted run: made anew below.
        let _ = std::fs::remove_file(&path);
    }
    eprintln!("generating the seed preset into {} (once)", path.display());
    let file = std::io::BufWriter::new(std::fs::File::options().write(true).create_new(true).open(&path).expect("create the seed log"));
    let (file, _) = generate(&Preset::Seed.options(), file).expect("generate the seed log");
    file.into_inner().expect("write the seed log");
    std::fs::read(&path).expect("read the seed log")
}

/// The seed log, loaded.
pub fn seed_model() -> Model {
    let log = seed_log();
    let t = std::time::Instant::now();
    let model = load(&log, &LoadOptions::default()).expect("load the seed log");
    eprintln!("seed model: {} objects, loaded in {:.2?}", model.allocations().len(), t.elapsed());
    model
}
