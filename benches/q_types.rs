//! Type histograms (each kind; allocated in a window; live at the middle of
//! the log), CLRProfiler's size classes, and handles by creating stack, on a
//! loaded seed-scale model (19.7 M objects).

#[path = "common/seed.rs"]
mod seed;

use clrprof::model::TickIndex;
use clrprof::query::{
    by_bytes, group_by_name, handles_by_stack, size_buckets, type_counts, BucketScale, Filter, HistogramKind,
    TypeSelection,
};
use criterion::{black_box, criterion_group, criterion_main, Criterion};

fn bench_seed(c: &mut Criterion) {
    let model = seed::seed_model();
    let all = Filter::all();
    let last = model.time().len() as u32 - 1;
    let mid = TickIndex(last / 2);
    let window = Filter { from: TickIndex(last / 5), to: TickIndex(2 * last / 5), threads: None };
    let types = |sel: TypeSelection, f: &Filter| {
        let counts = type_counts(&model, &sel, f).expect("counts");
        by_bytes(group_by_name(&model, counts.iter()))
    };
    let mut g = c.benchmark_group("seed_types");
    g.sample_size(10);
    for (kind, name) in HistogramKind::ALL {
        g.bench_function(name, |b| b.iter(|| black_box(types(TypeSelection { kind, at: None }, &all))));
    }
    g.bench_function("allocated_window_20_40", |b| {
        b.iter(|| black_box(types(TypeSelection { kind: HistogramKind::Allocated, at: None }, &window)))
    });
    g.bench_function("final_at_middle", |b| {
        b.iter(|| black_box(types(TypeSelection { kind: HistogramKind::FinalHeap, at: Some(mid) }, &all)))
    });
    g.bench_function("final_at_end", |b| {
        b.iter(|| black_box(types(TypeSelection { kind: HistogramKind::FinalHeap, at: Some(TickIndex(last)) }, &all)))
    });
    g.bench_function("buckets_allocated", |b| {
        b.iter(|| black_box(size_buckets(&model, HistogramKind::Allocated.of(&model), BucketScale::Coarse)))
    });
    g.bench_function("buckets_allocated_very_fine", |b| {
        b.iter(|| black_box(size_buckets(&model, HistogramKind::Allocated.of(&model), BucketScale::VeryFine)))
    });
    eprintln!("seed: {} handles created", model.handles().created().len());
    g.bench_function("handles", |b| b.iter(|| black_box(handles_by_stack(&model, &all))));
    g.finish();
}

criterion_group!(benches, bench_seed);
criterion_main!(benches);
