//! Saving a model in the cache and reading it back, against loading its
//! log, on a `--preset medium` log (3 M objects) generated once into a
//! temporary folder: `load` (the log parsed and simulated), `put` (the
//! model written as an entry) and `get` (the entry mapped, checked and read
//! back). `cargo bench -p clrprof-cache`.

use clrprof::model::{load, LoadOptions};
use clrprof_cache::Cache;
use clrprof_gen::{generate, Preset};
use criterion::{criterion_group, criterion_main, Criterion};

fn cache(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let log = dir.path().join("medium.log");
    let (bytes, _) = generate(&Preset::Medium.options(), Vec::new()).expect("generate");
    std::fs::write(&log, &bytes).expect("write the log");
    // The cache of this process: its own folder, every load worth saving.
    std::env::set_var("CLRPROF_CACHE_DIR", dir.path().join("cache"));
    std::env::set_var("CLRPROF_CACHE_MIN_MS", "0");
    let cache = Cache::from_env().expect("the cache is on");
    let key = cache.key(&log).expect("a key for a regular file");
    let model = load(&bytes, &LoadOptions::default()).expect("load");
    let mut g = c.benchmark_group("cache_medium");
    g.sample_size(10);
    g.bench_function("load", |b| b.iter(|| load(&bytes, &LoadOptions::default()).expect("load")));
    g.bench_function("put", |b| b.iter(|| cache.put(&key, &model)));
    g.bench_function("get", |b| b.iter(|| cache.get(&key).expect("a hit")));
    g.finish();
}

criterion_group!(benches, cache);
criterion_main!(benches);
