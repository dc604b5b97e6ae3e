//! The corpus's traces and heap snapshot opened as models (what every
//! command and the UI load): the samples, GCs and estimates of a real
//! .NET Core 3.0 trace against the trace's own events, counted here with
//! the reader; the small traces without allocations; the `.gcdump` as one
//! heap dump of PerfView's graph.

use clrprof::eventpipe::NetTraceReader;
use clrprof::model::{load_path, Model};
use clrprof::query::{estimates, summary};
use std::path::PathBuf;

fn corpus(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/eventpipe").join(name);
    assert!(p.exists() || std::env::var("CI").is_err(), "CI=true and {} is missing", p.display());
    p
}

fn load(name: &str) -> Option<Model> {
    let p = corpus(name);
    if !p.exists() {
        eprintln!("SKIPPED: {} is missing", p.display());
        return None;
    }
    Some(load_path(&p, &Default::default()).unwrap_or_else(|e| panic!("{name}: {e}")))
}

/// What the reader says of the 3.0 trace: allocation ticks and the bytes
/// they stand for, GCs by condemned generation, induced GCs.
struct Counted {
    ticks: u64,
    amount: u64,
    gcs_by_depth: [i64; 3],
    induced: u64,
}

fn count(bytes: &[u8]) -> Counted {
    let mut c = Counted { ticks: 0, amount: 0, gcs_by_depth: [0; 3], induced: 0 };
    let mut r = NetTraceReader::new(bytes).expect("header");
    while let Some(e) = r.next_event().expect("event") {
        let field = |f: &[clrprof::eventpipe::Field<'_>], n: &str| f.iter().find(|x| x.name == n).and_then(|x| x.value.as_u64());
        match e.name() {
            "GC/AllocationTick" => {
                let f = e.fields().expect("fields").expect("decodable");
                c.ticks += 1;
                c.amount += field(&f, "AllocationAmount64").expect("amount");
            }
            "GC/Start" => {
                let f = e.fields().expect("fields").expect("decodable");
                let depth = field(&f, "Depth").expect("depth").min(2) as usize;
                c.gcs_by_depth[depth] += 1;
                if matches!(field(&f, "Reason"), Some(1 | 7 | 9 | 10)) {
                    c.induced += 1;
                }
            }
            _ => {}
        }
    }
    c
}

#[test]
#[cfg_attr(no_eventpipe_corpus, ignore = "needs ../shared/corpus/eventpipe, missing when built (touch build.rs after installing)")]
fn core30_trace_becomes_a_model_of_its_samples() {
    let name = "eventpipe-dotnetcore3.0-win-x64-objver4.nettrace";
    let Some(m) = load(name) else { return };
    let bytes = std::fs::read(corpus(name)).expect("read");
    let c = count(&bytes);
    assert_eq!(c.ticks, 35_458, "the baseline's GC/AllocationTick count");
    // One sampled object per tick; each stands for the bytes since the
    // previous tick (version 3: no object size, so the sample is one row
    // of that many bytes).
    assert_eq!(m.allocations().len() as u64, c.ticks);
    let s = summary(&m);
    assert_eq!(s.allocated_bytes, c.amount, "allocated bytes = the ticks' AllocationAmount64, summed");
    assert!(s.estimated);
    // GCs: exactly the trace's, by generation (a gen-2 GC counts for 0 and
    // 1 too, as GC.CollectionCount does).
    assert_eq!(m.gcs().len(), 478);
    let [g0, g1, g2] = c.gcs_by_depth;
    assert_eq!((s.gen0_collections, s.gen1_collections, s.gen2_collections), (g0 + g1 + g2, g1 + g2, g2));
    assert_eq!(s.induced_collections, Some(c.induced));
    let e = estimates(&m).expect("a sampled trace has estimates");
    assert_eq!(e.samples, c.ticks);
    assert!(e.sizes_unknown && e.survival_known, "{e:?}");
    let facts = m.imported().expect("facts");
    assert_eq!(facts.gcs, 478);
    assert!(facts.survival_known);
    assert_eq!(facts.lost_events, 0);
    assert!(facts.warnings.is_empty(), "{:?}", facts.warnings);
    // Every frame is named from the trace's own method events (JIT and
    // ReadyToRun entry points): no address-only function.
    assert_eq!(facts.unresolved_frames, 0);
    for f in m.functions().iter() {
        let name = m.names().get(f.name);
        assert!(!name.starts_with("?!"), "unnamed frame {name}");
    }
    // Survivors are followed: the GCs' moved ranges keep some samples alive
    // and let others die.
    let lifetime = clrprof::query::lifetime(&m, &clrprof::query::Filter::all());
    let total = lifetime.rows.iter().fold((0u64, 0u64), |(a, d), r| (a + r.alive_at_end.objects, d + r.reclaimed().objects));
    assert!(total.0 > 0 && total.1 > 0, "alive and reclaimed samples: {total:?}");
}

#[test]
#[cfg_attr(no_eventpipe_corpus, ignore = "needs ../shared/corpus/eventpipe, missing when built (touch build.rs after installing)")]
fn traces_without_allocations_load_without_estimates() {
    for name in ["eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace", "eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace"] {
        let Some(m) = load(name) else { return };
        assert_eq!(m.allocations().len(), 0, "{name}");
        assert!(m.sampling().is_none() && estimates(&m).is_none(), "{name}");
        // Unknown, with the reason, never 0.
        assert!(!summary(&m).allocations_known, "{name}");
        let why = clrprof::query::allocations_unknown(&m).unwrap_or_default();
        assert!(why.contains("no allocation events"), "{name}: {why}");
        assert!(m.imported().is_some(), "{name}");
    }
}

#[test]
#[cfg_attr(no_eventpipe_corpus, ignore = "needs ../shared/corpus/eventpipe, missing when built (touch build.rs after installing)")]
fn gcdump_becomes_one_heap_dump_of_perfviews_graph() {
    let Some(m) = load("test1.gcdump") else { return };
    let dumps = m.heap_dumps();
    assert_eq!(dumps.dumps().len(), 1);
    let d = &dumps.dumps()[0];
    let (objects, bytes) = dumps.objects(d).fold((0u64, 0u64), |(n, b), o| (n + 1, b + u64::from(o.size)));
    // PerfView: NumNodes 6,482 (the root pseudo-node among them),
    // TotalSize 1,009,270.
    assert_eq!((objects, bytes), (6_481, 1_009_270));
    assert!(m.sampling().is_none());
    assert_eq!(m.imported().map(|f| f.heap_snapshots), Some(1));
    assert!(clrprof::query::allocations_unknown(&m).is_some_and(|w| w.contains(".gcdump")));
}

/// `AllocationSampled` (.NET 10; no runtime here writes it, so the trace is
/// made with the generator's NetTrace writer, the payload laid out as the
/// runtime's manifest has it): each sample stands for `1 / (1 - q^size)`
/// objects, and when a trace has both, the ticks are left out (a session
/// may ask for both; counting both would count the bytes twice).
#[test]
fn allocation_sampled_is_weighted_by_its_chance_and_preferred_to_ticks() {
    use clrprof::eventpipe::{ThreadId, Timestamp};
    use clrprof_gen::nettrace::{utf16z, EventOut, KindDef, NetTraceWriter, TraceInfo, WriterOptions};
    let info = TraceInfo {
        sync_time_utc: [2026, 11, 5, 27, 7, 0, 0, 0],
        sync_time_qpc: Timestamp(1_000),
        qpc_frequency: 1_000_000_000,
        pointer_size: 8,
        process_id: 42,
        processors: 2,
        expected_cpu_sampling_rate: 1000,
    };
    let mut w = NetTraceWriter::new(Vec::new(), &info, WriterOptions::default()).expect("writer");
    let runtime = "Microsoft-Windows-DotNETRuntime";
    let kind = |event_id, version, level| KindDef { provider: runtime, event_id, name: "", keywords: 1, version, level, opcode: None };
    let sampled = w.define(&kind(303, 0, 4));
    let tick = w.define(&kind(10, 4, 5));
    // (type handle, name, object size, samples)
    let types: [(u64, &str, u64, u64); 2] = [(0x100, "Small", 24, 40), (0x200, "Big", 200_000, 5)];
    let mut payload = Vec::new();
    let mut ts = 2_000;
    for &(handle, name, size, samples) in &types {
        for k in 0..samples {
            payload.clear();
            payload.extend_from_slice(&0u32.to_le_bytes()); // AllocationKind
            payload.extend_from_slice(&9u16.to_le_bytes()); // ClrInstanceID
            payload.extend_from_slice(&handle.to_le_bytes()); // TypeID
            utf16z(&mut payload, name);
            payload.extend_from_slice(&(0x10_0000 + handle * 0x1000 + k * 0x100).to_le_bytes()); // Address
            payload.extend_from_slice(&size.to_le_bytes()); // ObjectSize
            payload.extend_from_slice(&(size / 2).to_le_bytes()); // SampledByteOffset
            ts += 10;
            w.event(&EventOut { kind: sampled, thread: ThreadId(7), processor: 0, timestamp: Timestamp(ts), stack: &[], payload: &payload })
                .expect("event");
        }
    }
    // A tick as well, which must not be counted.
    let mut p = Vec::new();
    clrprof_gen::nettrace::events::AllocationTick {
        amount: 100_000,
        large: false,
        type_id: 0x300,
        type_name: "Ticked",
        address: 0x90_0000,
        size: 24,
    }
    .encode(&mut clrprof_gen::nettrace::events::Payload::new(&mut p, 8));
    w.event(&EventOut { kind: tick, thread: ThreadId(7), processor: 0, timestamp: Timestamp(ts + 10), stack: &[], payload: &p })
        .expect("tick");
    let (bytes, _) = w.finish().expect("finish");

    let m = clrprof::model::load_trace(&bytes, &Default::default(), |_| {}).expect("load");
    let e = estimates(&m).expect("estimates");
    assert_eq!(e.method, "AllocationSampled");
    assert_eq!(e.samples, 45, "the tick is left out");
    let rows = clrprof::query::by_type(&m, clrprof::query::HistogramKind::Allocated);
    assert!(rows.iter().all(|r| r.name != "Ticked"), "{rows:?}");
    for &(_, name, size, samples) in &types {
        let weight = clrprof::import::nettrace::allocation_sampled_weight(size);
        let want = (samples as f64 * weight).round() as u64;
        let row = rows.iter().find(|r| r.name == name).unwrap_or_else(|| panic!("no {name}: {rows:?}"));
        assert_eq!(row.count, want, "{name}: objects");
        assert_eq!(row.bytes as u64, want * size, "{name}: bytes");
    }
    // The weight itself: a 24-byte object is sampled with probability
    // about 24/102400; an object far larger than 100 KB almost surely.
    let small = clrprof::import::nettrace::allocation_sampled_weight(24);
    assert!((small - 102_400.0 / 24.0).abs() / small < 0.001, "{small}");
    let big = clrprof::import::nettrace::allocation_sampled_weight(10_000_000);
    assert!((big - 1.0).abs() < 1e-9, "{big}");
}
