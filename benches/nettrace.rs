//! NetTrace read throughput (bytes/s and events/s) on the largest corpus
//! trace (.NET Core 3.0, 4.8 MB, 105,540 events) repeated in memory to
//! about 100 MB (`CLRPROF_BENCH_MB`): its header once, its blocks N times,
//! the end mark. Two passes: the events alone (headers, metadata, stacks,
//! sequence points) and the events with every payload decoded into fields.
//! Compare with `benches/parse.rs` (the CLRProfiler log parser, bytes/s).
//!
//! A second group reads a trace the generator writes (`clrprof_gen::nettrace`,
//! the `small` preset's program, 60,000 objects, a `GC/AllocationTick` with
//! its stack for every object: about 6 MB): the events alone, and the
//! events with every tick's fields decoded. The whole-file figures (a
//! trace over 1 GiB against a log of the same size, peak RSS) come from
//! `scripts/bench-nettrace.sh`.

use clrprof::eventpipe::{read_block, read_header, NetTraceReader};
use clrprof_gen::nettrace::{generate_nettrace, NetTraceOptions};
use clrprof_gen::{GenOptions, Preset};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::path::PathBuf;

fn repeated(mb: usize) -> (Vec<u8>, u64) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/corpus/eventpipe/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace");
    let one = std::fs::read(path).expect("the corpus trace");
    let start = read_header(&one).expect("header").end_offset as usize;
    let mut end = start as u64;
    while let Some(b) = read_block(&one, end).expect("blocks") {
        end = b.end_offset;
    }
    let blocks = &one[start..end as usize];
    let mut out = one[..start].to_vec();
    // Blocks are 4-byte aligned by file offset: keep each copy's offset
    // congruent to the original's.
    while out.len() < mb << 20 {
        out.extend_from_slice(blocks);
        if out.len() % 4 != start % 4 {
            filler(&mut out, start % 4);
        }
    }
    out.push(1);
    let mut r = NetTraceReader::new(&out).expect("header");
    let mut n = 0;
    while r.next_event().expect("events").is_some() {
        n += 1;
    }
    assert!(r.is_complete());
    (out, n)
}

/// Appends an object of an unknown type (skipped by the reader with a
/// warning) that brings the end of `out` to `target` modulo 4.
fn filler(out: &mut Vec<u8>, target: usize) {
    // The body starts 4-aligned, so the object ends at body size + 1 mod 4.
    let body = (target + 3) % 4;
    let mut o = vec![5, 5, 1, 1, 0, 0, 0, 1, 0, 0, 0, 6, 0, 0, 0];
    o.extend(b"Filler");
    o.push(6);
    o.extend((body as u32).to_le_bytes());
    let at = out.len() + o.len();
    o.extend(std::iter::repeat(0).take((4 - at % 4) % 4 + body));
    o.push(6);
    out.extend(o);
    assert_eq!(out.len() % 4, target);
}

fn nettrace(c: &mut Criterion) {
    let mb: usize = std::env::var("CLRPROF_BENCH_MB").ok().and_then(|s| s.parse().ok()).unwrap_or(100);
    let (trace, events) = repeated(mb);
    eprintln!("nettrace: {} bytes, {events} events", trace.len());
    let mut g = c.benchmark_group("nettrace");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(trace.len() as u64));
    g.bench_function("events_bytes", |b| {
        b.iter(|| {
            let mut r = NetTraceReader::new(&trace).expect("header");
            let mut n = 0u64;
            while let Some(e) = r.next_event().expect("events") {
                n += u64::from(e.header.payload_size);
            }
            n
        })
    });
    g.bench_function("decoded_bytes", |b| {
        b.iter(|| {
            let mut r = NetTraceReader::new(&trace).expect("header");
            let mut n = 0usize;
            while let Some(e) = r.next_event().expect("events") {
                n += e.fields().expect("fields").map_or(0, |f| f.len());
            }
            n
        })
    });
    g.throughput(Throughput::Elements(events));
    g.bench_function("events_count", |b| {
        b.iter(|| {
            let mut r = NetTraceReader::new(&trace).expect("header");
            let mut n = 0u64;
            while r.next_event().expect("events").is_some() {
                n += 1;
            }
            n
        })
    });
    g.finish();
}

fn generated(c: &mut Criterion) {
    let opts = GenOptions { objects: 60_000, ..Preset::Small.options() };
    let nt = NetTraceOptions { tick_bytes: 0, ..NetTraceOptions::default() };
    let (trace, report) = generate_nettrace(&opts, &nt, Vec::new()).expect("a generated trace");
    eprintln!("nettrace_generated: {} bytes, {} events", trace.len(), report.writer.events);
    let mut g = c.benchmark_group("nettrace_generated");
    g.sample_size(20);
    g.throughput(Throughput::Bytes(trace.len() as u64));
    g.bench_function("events_bytes", |b| {
        b.iter(|| {
            let mut r = NetTraceReader::new(&trace).expect("header");
            let mut n = 0u64;
            while let Some(e) = r.next_event().expect("events") {
                n += e.stack.len() as u64;
            }
            n
        })
    });
    g.bench_function("ticks_decoded_bytes", |b| {
        b.iter(|| {
            let mut r = NetTraceReader::new(&trace).expect("header");
            let mut n = 0usize;
            while let Some(e) = r.next_event().expect("events") {
                if e.name() == "GC/AllocationTick" {
                    n += e.fields().expect("fields").map_or(0, |f| f.len());
                }
            }
            assert_eq!(n as u64, report.counts.allocation_ticks * 9);
            n
        })
    });
    g.throughput(Throughput::Elements(report.writer.events));
    g.bench_function("events_count", |b| {
        b.iter(|| {
            let mut r = NetTraceReader::new(&trace).expect("header");
            let mut n = 0u64;
            while r.next_event().expect("events").is_some() {
                n += 1;
            }
            assert_eq!(n, report.writer.events);
            n
        })
    });
    g.finish();
}

criterion_group!(benches, nettrace, generated);
criterion_main!(benches);
