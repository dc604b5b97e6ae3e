//! Time order across threads: traces whose file order is not their time
//! order, as the runtime writes them (each thread's buffered events in a
//! run, the run's first event marked sorted, sequence points between
//! regions), read in time order by default and in file order on request;
//! and the importer's GCs in time order. Also the real traces of the
//! corpus: in time order their timestamps never go back.

#[path = "common/nettrace_v6.rs"]
mod nettrace_v6;

use clrprof::eventpipe::{NetTraceReader, Order, ReadOptions, Warning};
use nettrace_v6::{Ev, Meta, Thread, Writer};
use std::path::PathBuf;

const SYNC: u64 = 1_000_000;
const FREQ: u64 = 10_000_000;

fn gc_start(count: u32, depth: u32) -> Vec<u8> {
    let mut v = count.to_le_bytes().to_vec();
    v.extend(depth.to_le_bytes());
    v.extend(1u32.to_le_bytes()); // Reason: induced
    v.extend(0u32.to_le_bytes()); // Type
    v.extend(9u16.to_le_bytes());
    v.extend(0u64.to_le_bytes()); // ClientSequenceNumber
    v
}

fn gc_stop(count: u32, depth: u32) -> Vec<u8> {
    let mut v = count.to_le_bytes().to_vec();
    v.extend(depth.to_le_bytes());
    v.extend(9u16.to_le_bytes());
    v
}

/// An event of thread index `thread` (OS thread `100 + thread`).
fn ev(metadata: u32, thread: u64, seq: u32, ts: u64, sorted: bool, payload: Vec<u8>) -> Ev {
    Ev { metadata, seq, capture_thread: thread, thread, timestamp: SYNC + ts, sorted, payload, ..Ev::default() }
}

fn threads(w: &mut Writer, n: u64) {
    let rows: Vec<Thread> = (0..n).map(|i| Thread { index: i, tid: Some(100 + i), pid: Some(1), ..Thread::default() }).collect();
    w.threads(&rows);
}

/// Three threads in runs; a thread removed while its events wait; a
/// sequence point; a second region.
fn runs_trace(compressed: bool) -> Vec<u8> {
    let mut w = Writer::new(8, SYNC, FREQ, &[]);
    w.metadata(&[Meta::runtime(1, 1, 2)]);
    threads(&mut w, 3);
    let p = || gc_start(1, 0);
    w.events(
        &[
            ev(1, 0, 1, 10, true, p()),
            ev(1, 0, 2, 40, false, p()),
            ev(1, 0, 3, 70, false, p()),
            ev(1, 1, 1, 20, true, p()),
            ev(1, 1, 2, 50, false, p()),
        ],
        compressed,
    );
    w.events(&[ev(1, 1, 3, 80, false, p()), ev(1, 2, 1, 30, true, p()), ev(1, 2, 2, 60, false, p())], compressed);
    // Thread 2 ends while its events still wait to be merged.
    w.remove_threads(&[(2, 2)]);
    w.sequence_point(SYNC + 90, 0, &[(0, 3), (1, 3)]);
    w.events(
        &[ev(1, 1, 4, 100, true, p()), ev(1, 1, 5, 130, false, p()), ev(1, 0, 4, 110, true, p()), ev(1, 0, 5, 120, false, p())],
        compressed,
    );
    w.finish().0
}

/// (OS thread, time) of every event, and the read's warnings.
fn read(bytes: &[u8], options: ReadOptions) -> (Vec<(u64, u64)>, Vec<Warning>) {
    let mut r = NetTraceReader::with_options(bytes, options).unwrap();
    let mut out = Vec::new();
    while let Some(e) = r.next_event().unwrap() {
        out.push((e.header.thread.0, e.header.timestamp.0 as u64 - SYNC));
    }
    let s = r.finish();
    assert_eq!(s.events, out.len() as u64);
    (out, s.warnings)
}

#[test]
fn threads_are_merged_by_time_within_each_region() {
    for compressed in [true, false] {
        let bytes = runs_trace(compressed);
        let (time, warnings) = read(&bytes, ReadOptions::default());
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            time,
            vec![
                (100, 10),
                (101, 20),
                (102, 30),
                (100, 40),
                (101, 50),
                (102, 60),
                (100, 70),
                (101, 80),
                (101, 100),
                (100, 110),
                (100, 120),
                (101, 130)
            ],
            "compressed: {compressed}"
        );
        // The default reader is the time-ordered one.
        let mut r = NetTraceReader::new(&bytes).unwrap();
        assert_eq!(r.order(), Order::Time);
        assert_eq!(r.next_event().unwrap().map(|e| e.header.timestamp.0 as u64 - SYNC), Some(10));
        // File order, on request.
        let (file, _) = read(&bytes, ReadOptions { order: Order::File, ..ReadOptions::default() });
        let ts: Vec<u64> = file.iter().map(|e| e.1).collect();
        assert_eq!(ts, vec![10, 40, 70, 20, 50, 80, 30, 60, 100, 130, 110, 120]);
    }
}

#[test]
fn past_the_bound_events_go_out_at_once_with_a_warning() {
    let bytes = runs_trace(true);
    let (out, warnings) = read(&bytes, ReadOptions { order: Order::Time, max_pending: 2 });
    assert_eq!(out.len(), 12, "no event is lost");
    assert!(warnings.iter().any(|w| matches!(w, Warning::OrderCap { .. })), "{warnings:?}");
    assert!(warnings.iter().any(|w| w.to_string().contains("out of time order")));
}

#[test]
fn a_trace_cut_short_still_gives_its_waiting_events() {
    let mut bytes = runs_trace(true);
    // Without its end mark: the last region's events wait for a sequence
    // point that never comes, and still come out, in time order.
    let (good, _) = read(&bytes, ReadOptions::default());
    let cut = bytes.len() - 4;
    bytes.truncate(cut);
    let mut r = NetTraceReader::new(&bytes).unwrap();
    let mut n = 0;
    let mut last = 0;
    while let Ok(Some(e)) = r.next_event() {
        assert!(e.header.timestamp.0 >= last);
        last = e.header.timestamp.0;
        n += 1;
    }
    assert_eq!(n, good.len(), "every event of complete blocks");
    assert!(r.finish().warnings.iter().any(|w| matches!(w, Warning::Truncated { .. })));
}

/// GC/Start and GC/Stop of GCs started by different threads: file order
/// gives generations 0, 2, 1; time order 0, 1, 2.
#[test]
fn the_importer_sees_gcs_in_time_order() {
    let mut w = Writer::new(8, SYNC, FREQ, &[]);
    w.metadata(&[Meta::runtime(1, 1, 2), Meta::runtime(2, 2, 1)]);
    threads(&mut w, 2);
    w.events(
        &[
            ev(1, 0, 1, 10, true, gc_start(1, 0)),
            ev(2, 0, 2, 15, false, gc_stop(1, 0)),
            ev(1, 0, 3, 40, false, gc_start(3, 2)),
            ev(2, 0, 4, 45, false, gc_stop(3, 2)),
            ev(1, 1, 1, 20, true, gc_start(2, 1)),
            ev(2, 1, 2, 25, false, gc_stop(2, 1)),
        ],
        true,
    );
    let bytes = w.finish().0;
    let imported = clrprof::import::nettrace::to_log(&bytes).unwrap();
    let log = String::from_utf8_lossy(&imported.log);
    let ends: Vec<&str> = log.lines().filter_map(|l| l.strip_prefix("b 0 0 ")).map(|r| r.split(' ').next().unwrap_or("")).collect();
    assert_eq!(ends, vec!["0", "1", "2"], "{log}");
    assert_eq!(imported.facts.gcs, 3);
}

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/eventpipe")
}

/// Events whose timestamp is below the one before.
fn backwards(bytes: &[u8], order: Order) -> (u64, u64) {
    let mut r = NetTraceReader::with_options(bytes, ReadOptions { order, ..ReadOptions::default() }).unwrap();
    let (mut back, mut n, mut last) = (0, 0, i64::MIN);
    while let Some(e) = r.next_event().unwrap() {
        back += u64::from(e.header.timestamp.0 < last);
        last = e.header.timestamp.0;
        n += 1;
    }
    (back, n)
}

#[test]
#[cfg_attr(no_eventpipe_corpus, ignore = "needs ../shared/corpus/eventpipe, missing when built (touch build.rs after installing)")]
fn corpus_traces_in_time_order_never_go_back() {
    for name in [
        "eventpipe-dotnetcore3.0-win-x64-objver4.nettrace",
        "eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace",
        "eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace",
    ] {
        let bytes = std::fs::read(corpus().join(name)).unwrap();
        let (back, n) = backwards(&bytes, Order::Time);
        assert_eq!(back, 0, "{name}: {back} of {n} events go back in time");
        let (file_back, file_n) = backwards(&bytes, Order::File);
        assert_eq!(n, file_n);
        eprintln!("{name}: {n} events; in file order {file_back} go back in time, in time order 0");
        if name.contains("3.0") {
            // A trace of several threads: its file order is not time order.
            assert!(file_back > 0, "{name}");
        }
    }
}

/// An allocation tick of `name`, 100 KB, at `address`.
fn tick(name: &str, address: u64) -> Vec<u8> {
    let mut p = Vec::new();
    clrprof_gen::nettrace::events::AllocationTick { amount: 100_000, large: false, type_id: 0x100, type_name: name, address, size: 24 }
        .encode(&mut clrprof_gen::nettrace::events::Payload::new(&mut p, 8));
    p
}

/// A background GC (`GC/Start`'s `Type` 1): started by one thread, ended
/// by the GC's own thread, while another thread goes on allocating. A
/// sample made between the GC's start and its end (in time order) was
/// allocated after the GC began: it belongs to the interval after the GC
/// (the time line puts the GC at its start, before the sample, even when
/// one of the GC's own events shares the sample's millisecond) and is not
/// subject to it (it follows the GC's end in the log). Placing the GC at
/// its `GC/Stop` put a program's samples made after `GC.Collect` had
/// returned before that GC (the EventPipe matrix, .NET 8: 3-33 ticks of a
/// phase in the interval before it).
#[test]
fn samples_made_during_a_background_gc_come_after_it() {
    const MS: u64 = FREQ / 1000;
    let mut background = gc_start(1, 2);
    background[12..16].copy_from_slice(&1u32.to_le_bytes()); // Type: background
    let mut range = vec![0u8]; // Generation
    range.extend(0x10_0000u64.to_le_bytes()); // RangeStart
    range.extend(0x1000u64.to_le_bytes()); // RangeUsedLength
    range.extend(0x10_0000u64.to_le_bytes()); // RangeReservedLength
    range.extend(9u16.to_le_bytes());
    let mut w = Writer::new(8, SYNC, FREQ, &[]);
    w.metadata(&[Meta::runtime(1, 1, 2), Meta::runtime(2, 2, 1), Meta::runtime(3, 10, 4), Meta::runtime(4, 23, 0)]);
    threads(&mut w, 3);
    w.events(
        &[
            ev(3, 1, 1, 5 * MS, true, tick("Before", 0x1000)),
            ev(3, 1, 2, 20 * MS + 5, false, tick("During", 0x2000)),
            ev(3, 1, 3, 40 * MS, false, tick("After", 0x3000)),
            ev(1, 0, 1, 10 * MS, true, background),
            ev(4, 2, 1, 20 * MS, true, range),
            ev(2, 2, 2, 30 * MS, false, gc_stop(1, 2)),
        ],
        true,
    );
    let bytes = w.finish().0;
    let imported = clrprof::import::nettrace::to_log(&bytes).unwrap();
    let log = String::from_utf8_lossy(&imported.log);
    let line_of = |prefix: &str| log.lines().position(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no {prefix:?} in {log}"));
    let gc_end = line_of("g 1 1 1");
    let allocs: Vec<usize> = log.lines().enumerate().filter(|(_, l)| l.starts_with("! ")).map(|(i, _)| i).collect();
    assert_eq!(allocs.len(), 3, "{log}");
    assert!(allocs[0] < gc_end && gc_end < allocs[1] && allocs[1] < allocs[2], "Before, the GC, During, After: {log}");
    // The time line: the GC is before the sample made during it.
    let m = clrprof::model::load_trace(&bytes, &Default::default(), |_| {}).expect("load");
    let marks = clrprof::query::timeline::gc_marks(&m, 0.0, f64::MAX);
    assert_eq!(marks.len(), 1, "{marks:?}");
    assert_eq!(marks[0].ms, 10.0, "the GC at its start; its sample at 20 ms");
}
