//! Heap-dump queries on the seed-scale model (the `seed` preset writes two
//! heap dumps, of about 284,000 and 411,000 objects): the per-type table,
//! dominators with retained sizes, shortest paths to a type, and the
//! difference between the two dumps; retained sizes and the difference
//! grouped by type, allocation stack and allocating function (each dump
//! object linked to its allocation). With `--heap-dumps 3`
//! (`clrprof gen --preset seed --heap-dumps 3 -o /tmp/seed-dumps.log`,
//! then `CLRPROF_BENCH_SEED=/tmp/seed-dumps.log`) the first and last dumps
//! are compared.

use clrprof::query::dumps::{
    by_type, diff, diff_by, dominators, paths_to, retained, retained_by, DumpGraph, DumpIndex, SiteBy,
};
use criterion::{black_box, criterion_group, criterion_main, Criterion};

#[path = "common/seed.rs"]
mod seed;

fn dumps(c: &mut Criterion) {
    let model = seed::seed_model();
    let count = model.heap_dumps().dumps().len();
    assert!(count >= 2, "the seed preset should have two heap dumps");
    let last = DumpIndex(count as u32 - 1);
    let d = last.get(&model).expect("the dump");
    eprintln!(
        "dump {last}: {} objects; dump 0: {} objects",
        model.heap_dumps().object_count(d),
        model.heap_dumps().object_count(DumpIndex(0).get(&model).expect("dump 0"))
    );
    let mut g = c.benchmark_group("q_dumps");
    g.sample_size(10);
    g.bench_function("per_type_table", |b| b.iter(|| black_box(by_type(&model, last))));
    g.bench_function("graph_build", |b| b.iter(|| black_box(DumpGraph::build(&model, last))));
    let graph = DumpGraph::build(&model, last).expect("graph");
    g.bench_function("dominators_only", |b| b.iter(|| black_box(dominators(&graph.graph, graph.root()))));
    g.bench_function("retained_top20", |b| b.iter(|| black_box(retained(&model, last, 20))));
    g.bench_function("path_to_string_max10", |b| b.iter(|| black_box(paths_to(&model, last, "System.String", 10))));
    g.bench_function("diff_first_last", |b| b.iter(|| black_box(diff(&model, DumpIndex(0), last))));
    for (name, by) in [("type", SiteBy::Type), ("stack", SiteBy::Stack), ("function", SiteBy::Function)] {
        g.bench_function(format!("retained_by_{name}"), |b| b.iter(|| black_box(retained_by(&model, last, by))));
    }
    for (name, by) in [("stack", SiteBy::Stack), ("function", SiteBy::Function)] {
        g.bench_function(format!("diff_by_{name}_first_last"), |b| {
            b.iter(|| black_box(diff_by(&model, DumpIndex(0), last, by)))
        });
    }
    g.finish();
}

criterion_group!(benches, dumps);
criterion_main!(benches);
