//! The packed sample table: encode throughput, and decode by id (random)
//! and in order (sequential), in samples per second, with the bytes per
//! sample printed. The samples come from a reference log when
//! `../shared/corpus/reference/gen-small.log` is present (a real mix of
//! allocations, moves and GC removals), repeated to a million; otherwise
//! from a synthetic history of the same shape.

use clrprof::format::TypeId;
use clrprof::model::{self, PackedSamples, Sample, SampleId, TickIndex};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::path::Path;

const TARGET: usize = 1 << 20;

fn real_samples() -> Option<Vec<Sample>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/reference/gen-small.log");
    let data = std::fs::read(path).ok()?;
    let m = model::load(&data, &Default::default()).ok()?;
    let v: Vec<Sample> = m.samples().samples().iter().map(|(_, s)| s).collect();
    (!v.is_empty()).then_some(v)
}

fn synthetic_samples() -> Vec<Sample> {
    let mut out: Vec<Sample> = Vec::with_capacity(TARGET);
    let mut tick = 1u32;
    let mut x = 0x2545F4914F6CDD1Du64;
    while out.len() < TARGET {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let i = out.len() as u32;
        let back = 1 + (x % 60_000) as u32;
        let prev = (i > back).then(|| SampleId(i - back));
        match x % 10 {
            0 => {
                // a GC removal over 200 grains
                tick += 1;
                for k in 0..200 {
                    let i = out.len() as u32;
                    let prev = (i > back).then(|| SampleId(i - back + k));
                    out.push(Sample { type_id: TypeId(0), change: TickIndex(tick), alloc: TickIndex(0), prev });
                }
            }
            1 => {
                for k in 0..40 {
                    let i = out.len() as u32;
                    let prev = (i > back).then(|| SampleId(i - back + k));
                    out.push(Sample { type_id: TypeId(9), change: TickIndex(tick), alloc: TickIndex(tick), prev });
                }
            }
            _ => out.push(Sample {
                type_id: TypeId((x >> 20) as i32 % 500),
                change: TickIndex(tick),
                alloc: TickIndex(tick),
                prev,
            }),
        }
    }
    out.truncate(TARGET);
    out
}

fn samples() -> (Vec<Sample>, &'static str) {
    match real_samples() {
        Some(base) => {
            // Repeat the real history, shifting ids so prev stays valid.
            let mut out = Vec::with_capacity(TARGET);
            while out.len() < TARGET {
                let off = out.len() as u32;
                for s in &base {
                    out.push(Sample { prev: s.prev.map(|p| SampleId(p.0 + off)), ..*s });
                }
            }
            out.truncate(TARGET);
            (out, "gen-small")
        }
        None => (synthetic_samples(), "synthetic"),
    }
}

fn encode(v: &[Sample]) -> PackedSamples {
    let mut p = PackedSamples::new();
    for s in v {
        let _ = p.push(*s);
    }
    p.finish();
    p
}

fn bench(c: &mut Criterion) {
    let (v, source) = samples();
    let packed = encode(&v);
    println!(
        "sample_table ({source}): {} samples, {:.2} bytes per sample (plain records: {} bytes)",
        v.len(),
        packed.heap_bytes() as f64 / v.len() as f64,
        std::mem::size_of::<Sample>()
    );
    let mut g = c.benchmark_group("sample_table");
    g.sample_size(20);
    g.throughput(Throughput::Elements(v.len() as u64));
    g.bench_function("encode", |b| b.iter(|| encode(&v).len()));
    g.bench_function("decode_sequential", |b| {
        b.iter(|| packed.iter().fold(0u64, |a, (_, s)| a.wrapping_add(s.change.0 as u64)))
    });
    let ids: Vec<u32> = {
        let mut x = 88172645463325252u64;
        (0..v.len())
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % v.len() as u64) as u32
            })
            .collect()
    };
    g.bench_function("decode_random", |b| {
        b.iter(|| ids.iter().fold(0u64, |a, &i| a.wrapping_add(packed.get(SampleId(i)).map_or(0, |s| s.change.0 as u64))))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
