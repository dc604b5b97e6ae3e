//! The generator's logs, recounted independently (`gen_common` replays them
//! with a plain `BTreeMap` heap), must agree with the truth the generator
//! wrote beside them, and must be heap-consistent for CLRProfiler's reader.

mod gen_common;

use clrprof_gen::{generate, GenOptions, PointerBits, Preset, Truth};
use gen_common::{replay, Recount};
use std::collections::HashMap;
use std::fs;

/// Generates into a file in a temporary directory (as `clrprof gen`
/// does), and reads it back.
fn generate_file(opts: &GenOptions) -> (Vec<u8>, Truth) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("gen.log");
    let file = fs::File::create(&path).expect("create the log");
    let (_, truth) = generate(opts, file).expect("generate");
    let bytes = fs::read(&path).expect("read the log back");
    (bytes, truth)
}

/// Compares every figure the replay recounted with the truth.
fn check(log: &[u8], truth: &Truth) -> Recount {
    assert_eq!(truth.log.bytes, log.len() as u64, "truth log bytes");
    assert_eq!(truth.log.lines, log.iter().filter(|&&b| b == b'\n').count() as u64, "truth log lines");
    let rc = replay(log);

    // Allocation, per type and in total.
    assert_eq!(rc.allocated_total.objects, truth.allocated.objects);
    assert_eq!(rc.allocated_total.bytes, truth.allocated.bytes);
    let by_id: HashMap<i32, _> = truth.types.iter().map(|t| (t.id, t)).collect();
    assert_eq!(by_id.len(), rc.type_names.len(), "every defined type is in the truth");
    for (id, name) in &rc.type_names {
        let t = by_id[id];
        assert_eq!(&t.name, name, "type {id}");
        let a = rc.allocated.get(id).copied().unwrap_or_default();
        assert_eq!((a.objects, a.bytes), (t.allocated_objects, t.allocated_bytes), "allocated {name}");
        let r = rc.relocated.get(id).copied().unwrap_or_default();
        assert_eq!((r.objects, r.bytes), (t.relocated_objects, t.relocated_bytes), "relocated {name}");
        let d = rc.reclaimed.get(id).copied().unwrap_or_default();
        assert_eq!((d.objects, d.bytes), (t.reclaimed_objects, t.reclaimed_bytes), "reclaimed {name}");
        let f = rc.final_heap.get(id).copied().unwrap_or_default();
        assert_eq!((f.objects, f.bytes), (t.objects_at_end, t.bytes_at_end), "alive at the end {name}");
    }
    // Deaths by generation.
    for g in &truth.deaths.by_generation {
        let r = rc.reclaimed_by_gen[g.generation as usize];
        assert_eq!((r.objects, r.bytes), (g.objects, g.bytes), "deaths in generation {}", g.generation);
    }
    assert_eq!(rc.final_heap_total.objects, truth.final_heap.objects);
    assert_eq!(rc.final_heap_total.bytes, truth.final_heap.bytes);
    assert_eq!(rc.allocated_total.objects, truth.deaths.objects + truth.final_heap.objects, "every object dies or survives");

    // GCs.
    let total: u64 = rc.gcs_by_condemned.iter().sum();
    assert_eq!(total, truth.gcs.total as u64);
    assert_eq!(rc.gcs_by_condemned.map(|c| c as u32), truth.gcs.by_condemned_generation);
    assert_eq!(rc.induced, truth.gcs.induced as u64);
    let last_g = rc.g_lines.last().copied().unwrap_or([0, 0, 0]);
    assert_eq!(last_g.map(|c| c as u32), truth.gcs.cumulative_per_generation, "the last g line");
    assert_eq!(rc.g_lines.len(), truth.gcs.total as usize, "one g line per GC");

    // CLRProfiler's Summary, from the recount.
    let s = &truth.summary_as_clrprofiler;
    assert_eq!(s.allocated_bytes, rc.allocated_total.bytes);
    assert_eq!(s.relocated_bytes, rc.relocated_total.bytes);
    assert_eq!(s.final_heap_bytes, rc.final_heap_total.bytes);
    let gen0 = total;
    let gen1 = rc.gcs_by_condemned[1] + rc.gcs_by_condemned[2];
    let gen2 = rc.gcs_by_condemned[2];
    assert_eq!((s.gen0_collections, s.gen1_collections, s.gen2_collections), (gen0 as i64, gen1 as i64, gen2 as i64));
    if rc.heap_bytes_known {
        assert_eq!(s.induced_collections, Some(rc.induced_counted));
        assert_eq!(s.objects_finalized, Some(rc.finalized));
        assert_eq!(s.critical_objects_finalized, Some(rc.critical_finalized));
        assert_eq!(
            [s.gen0_heap_bytes, s.gen1_heap_bytes, s.gen2_heap_bytes, s.loh_bytes],
            rc.heap_bytes.map(Some),
            "heap bytes per generation"
        );
    }
    if rc.handles_created > 0 {
        assert_eq!(s.handles_created, Some(rc.handles_created));
        assert_eq!(s.handles_destroyed, Some(rc.handles_destroyed));
        assert_eq!(s.handles_surviving, Some(rc.handles_surviving));
    } else {
        assert_eq!(s.handles_created, None);
    }
    assert_eq!(s.comments, rc.comments);
    assert_eq!(s.heap_dumps, rc.heap_dumps_counted);
    assert_eq!(truth.heap_dumps.written, rc.heap_dumps);
    assert_eq!(truth.finalization.queued_objects, rc.finalized);
    assert_eq!(truth.stacks.distinct_n_lines, rc.stacks as u64);
    // Every GC's counted flag agrees with the recount's slot model.
    let counted_gcs = truth.gcs.list.iter().filter(|g| g.counted_by_clrprofiler).count() as u64;
    assert!(counted_gcs <= total);
    rc
}

#[test]
fn tiny_matches_its_truth() {
    let opts = Preset::Tiny.options();
    let (log, truth) = generate_file(&opts);
    let rc = check(&log, &truth);
    assert_eq!(truth.allocated.objects, 20_000);
    assert_eq!(truth.gcs.total, 8);
    assert_eq!(rc.heap_dumps, 1);
    assert!(rc.dump_objects > 0);
    assert!(rc.finalized > 0, "finalizers at work");
    assert!(rc.handles_created > 0 && rc.handles_destroyed > 0);
    assert!(rc.relocated_total.bytes > 0);
    assert!(truth.allocated.loh_objects > 0 || truth.allocated.bytes < 10_000_000);
}

#[test]
fn small_matches_its_truth() {
    let opts = Preset::Small.options();
    let (log, truth) = generate_file(&opts);
    let rc = check(&log, &truth);
    assert_eq!(truth.allocated.objects, 300_000);
    assert_eq!(truth.gcs.total, 16);
    assert!(truth.gcs.by_condemned_generation.iter().all(|&c| c > 0), "gen 0, 1 and 2 GCs: {:?}", truth.gcs);
    assert!(truth.allocated.loh_objects > 0, "large objects");
    assert!(truth.deaths.by_generation[3].objects > 0, "large objects reclaimed by a gen-2 GC");
    assert_eq!(rc.heap_dumps, 2);
    assert!(rc.finalized > 100 && rc.critical_finalized > 20, "finalizers: {} ({} critical)", rc.finalized, rc.critical_finalized);
    assert!(truth.gcs.list.iter().any(|g| g.v_lines > 0), "some survivors stay in place");
    // The mean size is on target (about 100 bytes).
    let mean = truth.allocated.mean_size;
    assert!((85.0..115.0).contains(&mean), "mean size {mean}");
}

#[test]
fn call_logging_and_options_stay_consistent() {
    let opts = GenOptions {
        objects: 30_000,
        calls: true,
        calls_per_alloc: 6.0,
        threads: 5,
        gcs: 10,
        induced: 4,
        heap_dumps: 2,
        comments: 5,
        seed: 77,
        ..Preset::Tiny.options()
    };
    let (log, truth) = generate_file(&opts);
    let rc = check(&log, &truth);
    assert!(truth.calls.c_lines > 100_000, "c lines: {}", truth.calls.c_lines);
    assert_eq!(rc.comments, 5);
    assert_eq!(truth.threads.count, 5);
}

#[test]
fn without_handles_finalizers_or_gcs() {
    let opts = GenOptions {
        objects: 8_000,
        gcs: 0,
        induced: 0,
        heap_dumps: 0,
        handles_per_million: 0.0,
        finalizers: false,
        comments: 0,
        ..Preset::Tiny.options()
    };
    let (log, truth) = generate_file(&opts);
    let rc = check(&log, &truth);
    let s = &truth.summary_as_clrprofiler;
    assert_eq!(rc.finalized, 0);
    assert_eq!(s.gen0_collections, 0);
    assert_eq!(s.induced_collections, None, "unknown without GCs or handles");
    assert_eq!(s.handles_created, None);
    assert_eq!(s.final_heap_bytes, s.allocated_bytes, "nothing was collected");
}

#[test]
fn pointer_bits_32_fit_and_align() {
    let opts = GenOptions { pointer_bits: PointerBits::Bits32, seed: 5, ..Preset::Tiny.options() };
    let (log, truth) = generate_file(&opts);
    let rc = check(&log, &truth);
    assert!(rc.max_address < 1 << 32, "addresses fit in 32 bits");
    for t in &truth.types {
        if t.allocated_objects > 0 {
            assert_eq!(t.allocated_bytes % 4, 0);
        }
    }
    let text = String::from_utf8_lossy(&log);
    let b = text.lines().find(|l| l.starts_with("b ")).expect("a b line");
    assert!(b.split(' ').nth(4).is_some_and(|a| a.len() == 10), "8-digit %p addresses: {b}");
}

#[test]
fn ticks_can_cross_the_32_bit_wraparound() {
    let start = (1u64 << 32) - 25;
    let opts = GenOptions { tick_start: start, seed: 9, ..Preset::Tiny.options() };
    let (log, truth) = generate_file(&opts);
    let rc = check(&log, &truth);
    assert_eq!(rc.ticks.first().copied(), Some(start as u32));
    assert!(rc.ticks.windows(2).any(|w| w[1] < w[0]), "the written values wrap");
    assert!(truth.ticks.wraps >= 1);
    // Across the signed boundary too (where CLRProfiler's reader wraps).
    let opts = GenOptions { tick_start: (1 << 31) - 25, seed: 9, ..Preset::Tiny.options() };
    let (log, truth) = generate_file(&opts);
    let rc = check(&log, &truth);
    assert_eq!(truth.summary_as_clrprofiler.heap_dumps, 1);
    assert_eq!(rc.induced_counted, rc.induced, "every start counts across the signed boundary");
}

#[test]
fn the_same_seed_gives_the_same_bytes() {
    let opts = Preset::Tiny.options();
    let (a, ta) = generate(&opts, Vec::new()).expect("generate");
    let (b, tb) = generate(&opts, Vec::new()).expect("generate");
    assert!(a == b, "two runs differ");
    assert_eq!(ta.to_json().expect("json"), tb.to_json().expect("json"));
    let (file_bytes, _) = generate_file(&opts);
    assert!(a == file_bytes, "a file and a vector get the same bytes");
    let (c, _) = generate(&GenOptions { seed: 2, ..opts }, Vec::new()).expect("generate");
    assert!(a != c, "another seed, another log");
}
