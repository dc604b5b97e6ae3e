//! Generation throughput (bytes of log per second) of `clrprof gen`'s
//! presets, written to `io::sink()` so the disk does not count. The
//! whole-run figures for the large presets (`seed` takes seconds) are in
//! the guide (docs/src/gen.md), measured with the command line.

use clrprof_gen::{generate, Preset};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn gen(c: &mut Criterion) {
    let mut g = c.benchmark_group("gen");
    g.sample_size(10);
    for preset in [Preset::Tiny, Preset::Small] {
        let opts = preset.options();
        let (_, truth) = generate(&opts, std::io::sink()).expect("generate");
        g.throughput(Throughput::Bytes(truth.log.bytes));
        g.bench_function(preset.name(), |b| b.iter(|| generate(&opts, std::io::sink()).expect("generate").1.log.bytes));
        let calls = clrprof_gen::GenOptions { calls: true, ..opts };
        let (_, truth) = generate(&calls, std::io::sink()).expect("generate");
        g.throughput(Throughput::Bytes(truth.log.bytes));
        g.bench_function(format!("{}_calls", preset.name()), |b| {
            b.iter(|| generate(&calls, std::io::sink()).expect("generate").1.log.bytes)
        });
    }
    g.finish();
}

criterion_group!(benches, gen);
criterion_main!(benches);
