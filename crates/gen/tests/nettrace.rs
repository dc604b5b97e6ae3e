//! The generator's NetTrace output read back by the library's reader
//! (`clrprof::eventpipe::NetTraceReader`): no warning, every event of the
//! report, and the same simulation as the CLRProfiler log of the same
//! options (objects, bytes, types, GCs), with every stack frame inside a
//! method that a `Method/LoadVerbose` event named before.

use clrprof::eventpipe::{Event, NetTraceReader, Value};
use clrprof_gen::nettrace::{generate_nettrace, NetTraceOptions, NetTraceReport, WriterOptions};
use clrprof_gen::{generate, GenOptions, PointerBits, Preset, Truth};
use std::collections::{BTreeMap, HashMap};

fn field<'a>(e: &Event<'a>, name: &str) -> Value<'a> {
    let fields = e.fields().expect("decodable").expect("known fields");
    fields.into_iter().find(|f| f.name == name).unwrap_or_else(|| panic!("{} has no {name}", e.name())).value
}

fn num(e: &Event<'_>, name: &str) -> u64 {
    field(e, name).as_u64().unwrap_or_else(|| panic!("{name} is not a number"))
}

fn text(e: &Event<'_>, name: &str) -> String {
    match field(e, name) {
        Value::Str(s) => s.to_string(),
        v => panic!("{name} is not a string: {v:?}"),
    }
}

/// What the reader found.
#[derive(Default, Debug)]
struct Seen {
    by_name: BTreeMap<String, u64>,
    tick_objects_by_type: HashMap<String, u64>,
    tick_bytes_by_type: HashMap<String, u64>,
    ticked_bytes: u64,
    large_ticks: u64,
    gc_counts: Vec<u64>,
    gc_depths: [u32; 3],
    induced: u32,
    frames: u64,
    methods: u64,
    heap_stats_gen_bytes: u64,
    events: u64,
}

fn read(trace: &[u8], pointer_size: u32) -> Seen {
    let mut r = NetTraceReader::new(trace).expect("header");
    assert_eq!(r.header().pointer_size, pointer_size);
    let mut s = Seen::default();
    // Code ranges named so far: start -> end.
    let mut code: BTreeMap<u64, u64> = BTreeMap::new();
    let mut last_ts = 0;
    while let Some(e) = r.next_event().expect("events") {
        s.events += 1;
        assert!(e.header.timestamp.0 >= last_ts, "time goes back at {}", e.offset);
        last_ts = e.header.timestamp.0;
        assert_eq!(e.provider(), "Microsoft-Windows-DotNETRuntime");
        *s.by_name.entry(e.name().to_string()).or_default() += 1;
        match e.name() {
            "Method/LoadVerbose" => {
                let start = num(&e, "MethodStartAddress");
                code.insert(start, start + num(&e, "MethodSize"));
                assert!(!text(&e, "MethodName").is_empty());
                assert!(!text(&e, "MethodNamespace").is_empty());
                s.methods += 1;
            }
            "GC/AllocationTick" => {
                // Version 4 (.NET 5 and later), which the reader knows.
                let kind = e.kind.expect("kind");
                assert_eq!((kind.metadata.version, kind.schema_is_exact()), (4, Some(true)));
                let ty = text(&e, "TypeName");
                let amount = num(&e, "AllocationAmount64");
                assert_eq!(num(&e, "AllocationAmount"), amount.min(u64::from(u32::MAX)));
                // ObjectSize, the V4 field, ends the payload.
                let size = num(&e, "ObjectSize");
                assert_eq!(size, u64::from_le_bytes(e.payload[e.payload.len() - 8..].try_into().expect("8 bytes")));
                if num(&e, "AllocationKind") == 1 {
                    s.large_ticks += 1;
                    assert!(size >= 85_000);
                }
                assert!(num(&e, "Address") != 0 && num(&e, "TypeID") != 0);
                *s.tick_objects_by_type.entry(ty.clone()).or_default() += 1;
                *s.tick_bytes_by_type.entry(ty).or_default() += size;
                s.ticked_bytes += amount;
                // Only the runtime's own allocations before `Main` (the
                // preallocated exceptions) have no managed frame.
                assert!(!e.stack.is_empty() || code.is_empty(), "a tick without a stack at {}", e.offset);
                for ip in e.stack.frames() {
                    let (_, &end) = code.range(..=ip).next_back().unwrap_or_else(|| panic!("frame {ip:#x} before any method"));
                    assert!(ip < end, "frame {ip:#x} outside every method");
                    s.frames += 1;
                }
            }
            "GC/Start" => {
                let count = num(&e, "Count");
                assert_eq!(count, s.gc_counts.len() as u64 + 1);
                s.gc_counts.push(count);
                s.gc_depths[num(&e, "Depth") as usize] += 1;
                s.induced += u32::from(num(&e, "Reason") == 1);
            }
            "GC/Stop" => assert_eq!(num(&e, "Count"), *s.gc_counts.last().expect("a GC started")),
            "GC/HeapStats" => {
                s.heap_stats_gen_bytes += (0..4).map(|g| num(&e, &format!("GenerationSize{g}"))).sum::<u64>();
            }
            "Loader/ModuleLoad" => assert!(text(&e, "ModuleILPath").contains(".dll") || text(&e, "ModuleILPath").contains(".exe")),
            other => panic!("unexpected event {other}"),
        }
    }
    assert!(r.is_complete());
    let summary = r.finish();
    assert_eq!(summary.warnings, vec![]);
    assert_eq!(summary.lost_events, 0);
    assert_eq!(summary.events, s.events);
    s
}

fn both(opts: &GenOptions, nt: &NetTraceOptions) -> (Vec<u8>, NetTraceReport, Truth) {
    let (trace, report) = generate_nettrace(opts, nt, Vec::new()).expect("trace");
    let (_, truth) = generate(opts, std::io::sink()).expect("log");
    assert_eq!(report.writer.bytes, trace.len() as u64);
    (trace, report, truth)
}

fn check_counts(s: &Seen, report: &NetTraceReport, truth: &Truth) {
    let c = &report.counts;
    let n = |k: &str| s.by_name.get(k).copied().unwrap_or(0);
    assert_eq!(n("GC/AllocationTick"), c.allocation_ticks);
    assert_eq!(n("Method/LoadVerbose"), c.method_loads);
    assert_eq!(n("Loader/ModuleLoad"), c.module_loads);
    assert_eq!(s.events, report.writer.events);
    // The GCs of the log's simulation.
    assert_eq!(n("GC/Start"), u64::from(truth.gcs.total));
    assert_eq!(n("GC/Stop"), u64::from(truth.gcs.total));
    assert_eq!(n("GC/HeapStats"), u64::from(truth.gcs.total));
    assert_eq!(s.gc_depths, truth.gcs.by_condemned_generation);
    assert_eq!(s.induced, truth.gcs.induced);
    assert!(s.heap_stats_gen_bytes > 0);
    assert_eq!(c.objects, truth.allocated.objects);
    assert_eq!(c.bytes, truth.allocated.bytes);
    assert_eq!(s.ticked_bytes, c.ticked_bytes);
    assert!(s.methods > 10 && s.frames > s.methods);
}

#[test]
fn a_tick_per_object_is_the_log_s_allocations() {
    let opts = GenOptions { objects: 60_000, ..Preset::Tiny.options() };
    // Small blocks and regions: many blocks, stacks re-interned after
    // every sequence point.
    let nt = NetTraceOptions { tick_bytes: 0, writer: WriterOptions { block_bytes: 8 * 1024, sequence_point_bytes: 256 * 1024 }, lose_every: 0 };
    let (trace, report, truth) = both(&opts, &nt);
    assert!(report.writer.sequence_points >= 10, "{report:?}");
    let s = read(&trace, 8);
    check_counts(&s, &report, &truth);
    assert_eq!(report.counts.allocation_ticks, truth.allocated.objects);
    assert_eq!(s.ticked_bytes, truth.allocated.bytes);
    assert_eq!(s.large_ticks, truth.allocated.loh_objects);
    for t in truth.types.iter().filter(|t| t.allocated_objects > 0) {
        assert_eq!(s.tick_objects_by_type.get(&t.name).copied().unwrap_or(0), t.allocated_objects, "{}", t.name);
        assert_eq!(s.tick_bytes_by_type.get(&t.name).copied().unwrap_or(0), t.allocated_bytes, "{}", t.name);
    }
}

#[test]
fn sampled_ticks_as_the_runtime_writes_them() {
    let opts = Preset::Small.options();
    let (trace, report, truth) = both(&opts, &NetTraceOptions::default());
    let s = read(&trace, 8);
    check_counts(&s, &report, &truth);
    // One tick per 100 KB per thread and kind: what is left below the
    // threshold on each thread is not ticked.
    let ticks = report.counts.allocation_ticks;
    assert!(ticks > 0 && ticks <= truth.allocated.bytes / 100_000, "{ticks}");
    assert!(s.ticked_bytes <= truth.allocated.bytes);
    assert!(truth.allocated.bytes - s.ticked_bytes < 2 * u64::from(opts.threads) * 100_000);
}

#[test]
fn thirty_two_bit_traces() {
    let opts = GenOptions { pointer_bits: PointerBits::Bits32, ..Preset::Tiny.options() };
    let nt = NetTraceOptions { tick_bytes: 0, ..NetTraceOptions::default() };
    let (trace, report, truth) = both(&opts, &nt);
    let s = read(&trace, 4);
    check_counts(&s, &report, &truth);
    assert_eq!(report.counts.allocation_ticks, truth.allocated.objects);
}

#[test]
fn same_options_same_bytes() {
    let opts = Preset::Tiny.options();
    let nt = NetTraceOptions { tick_bytes: 1000, ..NetTraceOptions::default() };
    let (a, _) = generate_nettrace(&opts, &nt, Vec::new()).expect("trace");
    let (b, _) = generate_nettrace(&opts, &nt, Vec::new()).expect("trace");
    assert_eq!(a, b);
    let (c, _) = generate_nettrace(&GenOptions { seed: 99, ..opts }, &nt, Vec::new()).expect("trace");
    assert_ne!(a, c);
}
