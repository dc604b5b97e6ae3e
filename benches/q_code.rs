//! Allocation-by-code queries on a loaded seed-scale model (19.7 M objects):
//! by function, module and class, "who allocated" a type, the allocation
//! graph and the folded stacks of the flame graph, over the whole log and
//! (for functions) with a time window, which counts the objects per stack
//! row from the allocation columns instead of the allocated histogram.

use clrprof::model::TickIndex;
use clrprof::query::{self, Filter, SortBy, TypeMatch};
use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;

#[path = "common/seed.rs"]
mod seed;

fn bench(c: &mut Criterion) {
    let model = seed::seed_model();
    let all = Filter::all();
    let last = model.time().len() as u32;
    let half = Filter { from: TickIndex(0), to: TickIndex(last / 2), threads: None };
    let mut g = c.benchmark_group("q_code");
    g.sample_size(10);
    g.bench_function("functions", |b| b.iter(|| black_box(query::by_function(&model, &all, SortBy::Inclusive))));
    g.bench_function("functions_half_window", |b| {
        b.iter(|| black_box(query::by_function(&model, &half, SortBy::Inclusive)))
    });
    g.bench_function("modules", |b| b.iter(|| black_box(query::by_module(&model, &all, SortBy::Inclusive))));
    g.bench_function("classes", |b| b.iter(|| black_box(query::by_class(&model, &all, SortBy::Inclusive))));
    let string = TypeMatch::Exact("System.String".to_string());
    g.bench_function("who_string", |b| {
        b.iter(|| black_box(query::who_allocated(&model, &all, &string, SortBy::Inclusive)))
    });
    g.bench_function("graph", |b| b.iter(|| black_box(query::allocation_graph(&model, &all))));
    g.bench_function("folded_stacks", |b| b.iter(|| black_box(query::folded_stacks(&model, &all))));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
