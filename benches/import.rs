//! Import throughput (bytes/s of input) into the model: a trace the
//! generator writes (`clrprof_gen::nettrace`, the `small` preset's program,
//! a `GC/AllocationTick` with its stack for every object) with its records
//! given straight to the model's builder (`load_trace`, what every command
//! does), the same trace made into log text and that text loaded
//! (`to_log` + `load_imported`, the way before), and a CLRProfiler log the
//! generator writes for a program of about the same size (`load`): bytes
//! of input per second of each, so that a trace's import can be set
//! against a log's load per byte. The whole-file figures (a 1 GiB trace
//! against a 1 GiB log, CPU and peak RSS, an 11 M-object heap walk) are in
//! the guide's Performance chapter, measured with `/usr/bin/time -v`.

use clrprof::model::{load, load_imported, load_trace};
use clrprof_gen::nettrace::{generate_nettrace, NetTraceOptions};
use clrprof_gen::{generate, GenOptions, Preset};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn import(c: &mut Criterion) {
    let objects: u64 = std::env::var("CLRPROF_BENCH_OBJECTS").ok().and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let opts = GenOptions { objects, ..Preset::Small.options() };
    let nt = NetTraceOptions { tick_bytes: 0, ..NetTraceOptions::default() };
    let (trace, _) = generate_nettrace(&opts, &nt, Vec::new()).expect("a generated trace");
    // A log of about the trace's size: the same program, more objects.
    let log_objects = objects * trace.len() as u64 / generate(&opts, std::io::sink()).expect("a log").1.log.bytes.max(1);
    let (log, _) = generate(&GenOptions { objects: log_objects, ..opts }, Vec::new()).expect("a generated log");
    eprintln!("import: a {}-byte trace of {objects} ticks, a {}-byte log of {log_objects} objects", trace.len(), log.len());

    let mut g = c.benchmark_group("import");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(trace.len() as u64));
    g.bench_function("trace_records", |b| b.iter(|| load_trace(&trace, &Default::default(), |_| {}).expect("imports").allocations().len()));
    g.bench_function("trace_via_text", |b| {
        b.iter(|| {
            let imported = clrprof::import::nettrace::to_log(&trace).expect("imports");
            load_imported(imported, &Default::default(), |_| {}).expect("loads").allocations().len()
        })
    });
    g.throughput(Throughput::Bytes(log.len() as u64));
    g.bench_function("log", |b| b.iter(|| load(&log, &Default::default()).expect("loads").allocations().len()));
    g.finish();
}

criterion_group!(benches, import);
criterion_main!(benches);
