//! A log read as it grows (`GrowingLog`, what `clrprof ui` does for a
//! collector's live session) against loading it again, on the medium
//! preset (3 M objects): what one more megabyte of log costs, what a
//! model of the state so far costs, and the whole log read in 1 MB parts
//! against one load.

use clrprof::model::{load, GrowingLog, LoadOptions};
use clrprof_gen::{generate, Preset};
use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion};

const MB: usize = 1 << 20;

fn bench_growing(c: &mut Criterion) {
    let (log, _) = generate(&Preset::Medium.options(), Vec::new()).expect("generate the medium preset");
    eprintln!("medium preset: {} MB", log.len() / MB);
    // The log up to 1 MB before its end, read in 1 MB parts.
    let upto = log.len() - MB;
    let mut before = GrowingLog::new();
    for part in log[..upto].chunks(MB) {
        before.extend(part).expect("read the medium log");
    }
    let mut whole = before.clone();
    whole.extend(&log[upto..]).expect("read its last megabyte");

    let mut g = c.benchmark_group("growing_medium");
    g.sample_size(10);
    g.bench_function("load", |b| b.iter(|| black_box(load(&log, &LoadOptions::default()).expect("load"))));
    g.bench_function("extend_1mb", |b| {
        b.iter_batched(
            || before.clone(),
            |mut g| {
                g.extend(&log[upto..]).expect("extend");
                g
            },
            BatchSize::LargeInput,
        )
    });
    g.bench_function("model", |b| b.iter(|| black_box(whole.model().expect("model"))));
    g.bench_function("whole_in_1mb_parts", |b| {
        b.iter(|| {
            let mut g = GrowingLog::new();
            for part in log.chunks(MB) {
                g.extend(part).expect("extend");
            }
            black_box(g.parsed_bytes())
        })
    });
    g.finish();
}

criterion_group!(benches, bench_growing);
criterion_main!(benches);
