//! A reader that hands out only some kinds (`NetTraceReader::only`, what
//! the importer's first pass reads methods with) against one that hands
//! out every event: the same events of those kinds, in the same order,
//! with the same counts; the positions it gives while leaving events out
//! grow and stay within the trace. On generated traces (several threads
//! merged by time), on the corpus's runtime-written traces, and on every
//! `.nettrace` in the folder named by `CLRPROF_IMPORT_DIFF_DIR` when it
//! is set (real runtime traces).

mod common;

use clrprof::eventpipe::{EventKind, NetTraceReader, Next};
use clrprof_gen::nettrace::{generate_nettrace, NetTraceOptions};
use clrprof_gen::{GenOptions, Preset};

/// The kinds the importer's first pass reads.
fn methods(k: &EventKind) -> bool {
    k.name.starts_with("Method/") || k.name.starts_with("Loader/") || k.name == "AllocationSampled"
}

/// About half of the kinds, whatever they are.
fn every_other(k: &EventKind) -> bool {
    k.metadata.id.0 % 2 == 0
}

fn ticks(k: &EventKind) -> bool {
    k.name == "GC/AllocationTick"
}

/// (offset, timestamp) of the events of the kinds `keep` takes, read
/// with every event handed out, and the number of events read.
fn all_then_filtered(bytes: &[u8], keep: fn(&EventKind) -> bool) -> (Vec<(u64, i64)>, u64) {
    let mut r = NetTraceReader::new(bytes).expect("a trace");
    let mut kept = Vec::new();
    while let Ok(Some(e)) = r.next_event() {
        if e.kind.is_some_and(keep) {
            kept.push((e.offset, e.header.timestamp.0));
        }
    }
    (kept, r.finish().events)
}

/// The same, read with `only(keep)`; checks the positions given.
fn only(bytes: &[u8], keep: fn(&EventKind) -> bool, step: u64) -> (Vec<(u64, i64)>, u64, u64) {
    let mut r = NetTraceReader::new(bytes).expect("a trace").only(keep);
    let (mut kept, mut positions, mut last) = (Vec::new(), 0, 0);
    while let Ok(Some(next)) = r.next_or_position(step) {
        match next {
            Next::Event(e) => {
                assert!(e.kind.is_some_and(keep), "a kind left out was handed out");
                kept.push((e.offset, e.header.timestamp.0));
            }
            Next::Position(at) => {
                assert!(at > last && at < bytes.len() as u64, "position {at} after {last}");
                last = at;
                positions += 1;
            }
        }
    }
    (kept, r.finish().events, positions)
}

fn compare(name: &str, bytes: &[u8]) -> usize {
    let mut handed = 0;
    for (label, keep) in [("methods", methods as fn(&EventKind) -> bool), ("every other kind", every_other), ("ticks", ticks)] {
        let (expected, events) = all_then_filtered(bytes, keep);
        let (got, counted, positions) = only(bytes, keep, 1 << 16);
        assert_eq!(counted, events, "{name}, {label}: events read");
        assert_eq!(got.len(), expected.len(), "{name}, {label}: events handed out");
        if let Some(k) = (0..got.len()).find(|&k| got[k] != expected[k]) {
            panic!("{name}, {label}: event {k} is {:?}, {:?} in a full read", got[k], expected[k]);
        }
        if bytes.len() > 1 << 20 && expected.len() < events as usize / 2 {
            assert!(positions > 0, "{name}, {label}: no position in {} bytes", bytes.len());
        }
        eprintln!("{name}, {label}: {} of {events} events, {positions} positions", got.len());
        handed += got.len();
    }
    handed
}

#[test]
fn generated_traces_hand_out_the_same_events_in_the_same_order() {
    for threads in [1, 4, 16] {
        let opts = GenOptions { objects: 60_000, threads, ..Preset::Small.options() };
        let nt = NetTraceOptions { tick_bytes: 0, ..NetTraceOptions::default() };
        let (trace, _) = generate_nettrace(&opts, &nt, Vec::new()).expect("a generated trace");
        assert!(compare(&format!("{threads} thread(s)"), &trace) > 60_000);
    }
}

#[test]
fn corpus_traces_hand_out_the_same_events_in_the_same_order() {
    let dir = common::repo_root().join("../shared/corpus/eventpipe");
    if !dir.is_dir() {
        common::missing(&dir.display().to_string());
        return;
    }
    let paths = common::nettraces_in(&dir);
    assert!(paths.len() >= 3);
    for path in paths {
        compare(&path.display().to_string(), &std::fs::read(&path).expect("a trace"));
    }
}

#[test]
fn real_runtime_traces_hand_out_the_same_events_in_the_same_order() {
    let Ok(dir) = std::env::var("CLRPROF_IMPORT_DIFF_DIR") else {
        eprintln!("(CLRPROF_IMPORT_DIFF_DIR not set: no more traces)");
        return;
    };
    let paths = common::nettraces_in(dir.as_ref());
    assert!(!paths.is_empty(), "no .nettrace in {dir}");
    for path in paths {
        compare(&path.display().to_string(), &std::fs::read(&path).expect("a trace"));
    }
}
