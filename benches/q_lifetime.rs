//! Lifetime, ages (both histograms), CLRProfiler's Histogram by Age at a
//! time, survivors of a window and calls, on a loaded seed-scale model
//! (19.7 M objects). The seed preset has no `c` lines (with them its log is
//! 9.9 GB), so calls are measured on the medium preset generated with
//! `--calls` (3 M objects, about 100 M calls), in memory.

#[path = "common/seed.rs"]
mod seed;

use clrprof::gen::{generate, GenOptions, Preset};
use clrprof::model::{load, LoadOptions, TickIndex};
use clrprof::query::age_histogram::AgeBars;
use clrprof::query::{age_histogram_at, ages, call_tree, calls, lifetime, survivors, CallTreeOptions, Filter};
use criterion::{black_box, criterion_group, criterion_main, Criterion};

fn bench_calls(c: &mut Criterion) {
    let opts = GenOptions { calls: true, ..Preset::Medium.options() };
    let (log, _) = generate(&opts, Vec::new()).expect("generate the medium preset with calls");
    let model = load(&log, &LoadOptions::default()).expect("load it");
    drop(log);
    eprintln!("medium --calls: {} calls", model.histograms().calls.total());
    let mut g = c.benchmark_group("medium_calls");
    g.sample_size(10);
    g.bench_function("calls", |b| b.iter(|| black_box(calls(&model).expect("calls"))));
    g.bench_function("call_tree", |b| {
        b.iter(|| black_box(call_tree(&model, &CallTreeOptions::default()).expect("tree")))
    });
    g.finish();
}

fn bench_seed(c: &mut Criterion) {
    let model = seed::seed_model();
    let all = Filter::all();
    let last = model.time().len() as u32 - 1;
    let mid = TickIndex(last / 2);
    let window = Filter { from: TickIndex(last / 5), to: TickIndex(2 * last / 5), threads: None };
    let mut g = c.benchmark_group("seed");
    g.sample_size(10);
    g.bench_function("lifetime", |b| b.iter(|| black_box(lifetime(&model, &all))));
    g.bench_function("ages", |b| b.iter(|| black_box(ages(&model, &all))));
    g.bench_function("ages_at_middle", |b| {
        b.iter(|| black_box(age_histogram_at(&model, &all, mid, AgeBars::default()).expect("histogram")))
    });
    g.bench_function("ages_at_end_markers", |b| {
        b.iter(|| black_box(age_histogram_at(&model, &all, TickIndex(last), AgeBars::Markers).expect("histogram")))
    });
    g.bench_function("survivors_20_40_at_end", |b| b.iter(|| black_box(survivors(&model, &window, None, 20))));
    g.bench_function("survivors_20_40_at_middle", |b| b.iter(|| black_box(survivors(&model, &window, Some(mid), 20))));
    g.finish();
}

criterion_group!(benches, bench_calls, bench_seed);
criterion_main!(benches);
