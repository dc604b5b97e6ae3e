//! Parse throughput (bytes/s) on a synthetic 256 MB log, 1 and 2 threads,
//! against the memchr line count that bounds it (what `wc -l` does).

mod common;

use clrprof::format::{parse_chunks, ChunkOptions, Kind, RecordReader};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

fn count_records(r: &mut RecordReader<'_>) -> [u64; Kind::COUNT] {
    let mut counts = [0u64; Kind::COUNT];
    for p in r {
        counts[p.record.kind().index()] += 1;
    }
    counts
}

fn parse(c: &mut Criterion) {
    let mb: usize = std::env::var("CLRPROF_BENCH_MB").ok().and_then(|s| s.parse().ok()).unwrap_or(256);
    let log = common::synthetic_log(mb << 20);
    let mut g = c.benchmark_group("parse");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(log.len() as u64));
    g.bench_function("memchr_count_lines", |b| b.iter(|| memchr::memchr_iter(b'\n', &log).count()));
    for threads in [1usize, 2] {
        g.bench_with_input(BenchmarkId::new("records", threads), &threads, |b, &threads| {
            let opts = ChunkOptions { threads: Some(threads), ..ChunkOptions::default() };
            b.iter(|| {
                let mut total = 0u64;
                parse_chunks(&log, &opts, count_records, |c, _| total += c.iter().sum::<u64>());
                total
            })
        });
    }
    g.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
