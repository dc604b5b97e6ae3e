//! The Time Line queries on the seed-scale model: the cell grid at
//! 1000 x 600 over the whole log, live bytes by type at mid-log (exact,
//! and CLRProfiler's grain estimate alone), the address axis, and drawing
//! the picture (grid, legend, markers, labels) plus PNG encoding.

#[path = "common/seed.rs"]
mod seed;

use clrprof::query::timeline::{address_axis, end_ms, grid, tick_at_ms, GridSpec};
use clrprof::query::{estimated_live_at, live_at, Filter};
use clrprof_render::{render_timeline, TimelineOptions};
use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let m = seed::seed_model();
    let end = end_ms(&m);
    let mut g = c.benchmark_group("q_timeline");
    g.sample_size(10);
    g.bench_function("address_axis", |b| b.iter(|| black_box(address_axis(&m, None, 150))));
    let axis = address_axis(&m, None, 150);
    g.bench_function("grid_1000x600", |b| {
        b.iter(|| black_box(grid(&m, &axis, &GridSpec { columns: 1000, rows: 600, from_ms: 0.0, to_ms: end })))
    });
    let mid = tick_at_ms(&m, end / 2.0);
    g.bench_function("live_at_mid", |b| b.iter(|| black_box(live_at(&m, mid, &Filter::all()))));
    g.bench_function("estimated_live_at_mid", |b| b.iter(|| black_box(estimated_live_at(&m, mid))));
    let opts =
        TimelineOptions {
            width: 1200,
            height: 700,
            from_ms: 0.0,
            to_ms: end,
            address: None,
            title: "seed".into(),
            axis: Default::default(),
        };
    g.bench_function("render_1200x700", |b| b.iter(|| black_box(render_timeline(&m, &opts).expect("render"))));
    let pic = render_timeline(&m, &opts).expect("render");
    g.bench_function("png_encode_1200x700", |b| {
        b.iter(|| {
            let mut out = Vec::with_capacity(1 << 20);
            pic.canvas.write_png(&mut out).expect("encode");
            black_box(out.len())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
