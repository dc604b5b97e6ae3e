//! Lifetime, ages (both histograms), CLRProfiler's Histogram by Age at a
//! time, survivors of a window and calls, on a loaded seed-scale model
//! (19.7 M objects). The seed preset has no `c` lines (with them its log is
//! 9.9 GB), so calls are measured on the medium preset generated with
//! `--calls` (3 M objects, about 100 M calls), in memory.

#[path = "common/seed.rs"]
mod seed;

use clrprof_gen::{generate, GenOptions, Preset};
use clrprof::model::{load, LoadOptions, TickIndex};
use clrprof::query::age_histogram::AgeBars;
use clrprof::query::{age_histogram_at, ages, call_tree, calls, lifetime, survivors, CallTreeOptions, Filter};
use criterion::{black_box, criterion_group, criterion_main, Criterion};

/// CPU seconds used by this process so far (user + system, from
/// `/proc/self/stat`; 0 where it cannot be read). On a shared machine wall
/// times depend on the load; CPU time much less.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    // Fields after the command name (which is in parentheses).
    let Some(rest) = stat.rfind(')').map(|k| &stat[k + 2..]) else { return 0.0 };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |k: usize| f.get(k).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line (11 and 12 here).
    (ticks(11) + ticks(12)) / 100.0
}

/// Prints the CPU time (all threads) per run of `f`, over `runs` runs.
fn report_cpu(name: &str, runs: u32, mut f: impl FnMut()) {
    let (c, t) = (cpu_seconds(), std::time::Instant::now());
    for _ in 0..runs {
        f();
    }
    let cpu = (cpu_seconds() - c) / runs as f64;
    let wall = t.elapsed().as_secs_f64() / runs as f64;
    eprintln!("cpu {name}: {:.0} ms CPU per run ({:.0} ms wall)", cpu * 1000.0, wall * 1000.0);
}

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
    report_cpu("medium_calls/calls", 50, || {
        black_box(calls(&model).expect("calls"));
    });
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
    report_cpu("seed/lifetime", 10, || {
        black_box(lifetime(&model, &all));
    });
    report_cpu("seed/ages", 10, || {
        black_box(ages(&model, &all));
    });
    report_cpu("seed/ages_at_middle", 10, || {
        black_box(age_histogram_at(&model, &all, mid, AgeBars::default()).expect("histogram"));
    });
    report_cpu("seed/survivors_20_40_at_end", 10, || {
        black_box(survivors(&model, &window, None, 20));
    });
}

criterion_group!(benches, bench_calls, bench_seed);
criterion_main!(benches);
