//! `GC/AllocationTick` read straight from the payload
//! (`Event::allocation_tick`, what the importer reads millions of ticks
//! with) against the general decoder (`Event::fields`, looked up by
//! name): the same values, field by field, and an error exactly when the
//! general decoder gives one. On generated traces (64- and 32-bit), on
//! every version of the event with both pointer sizes and every cut of
//! its payload, on the corpus's runtime-written traces, and on every
//! `.nettrace` in the folder named by `CLRPROF_IMPORT_DIFF_DIR` when it is
//! set (real runtime traces).

mod common;
#[path = "common/nettrace_v6.rs"]
mod nettrace_v6;

use clrprof::eventpipe::{AllocationTick, Event, Field, NetTraceReader, Value};
use clrprof_gen::nettrace::{generate_nettrace, NetTraceOptions};
use clrprof_gen::{GenOptions, PointerBits, Preset};
use nettrace_v6::{utf16z, Ev, Label, Meta, Thread, Writer};

/// The general decoder's fields as the typed read gives them.
fn by_name<'a>(fields: &[Field<'a>]) -> AllocationTick<'a> {
    let u = |name: &str| fields.iter().find(|f| f.name == name).and_then(|f| f.value.as_u64());
    AllocationTick {
        allocation_amount: u("AllocationAmount"),
        allocation_kind: u("AllocationKind"),
        clr_instance_id: u("ClrInstanceID"),
        allocation_amount64: u("AllocationAmount64"),
        type_id: u("TypeID"),
        type_name: fields.iter().find(|f| f.name == "TypeName").and_then(|f| match f.value {
            Value::Str(s) => Some(s),
            _ => None,
        }),
        heap_index: u("HeapIndex"),
        address: u("Address"),
        object_size: u("ObjectSize"),
    }
}

/// What [`compare`] saw.
#[derive(Debug, Default, PartialEq, Eq)]
struct Seen {
    /// Ticks read both ways, the same.
    typed: u64,
    /// Ticks whose payload both ways found too short.
    errors: u64,
    /// Ticks the typed read left to the general decoder.
    general: u64,
}

fn compare_event(name: &str, e: &Event<'_>, seen: &mut Seen) {
    if e.name() != "GC/AllocationTick" {
        assert!(e.allocation_tick().is_none(), "{name}: {} read as a tick", e.name());
        return;
    }
    match (e.allocation_tick(), e.fields()) {
        (Some(Ok(typed)), Ok(Some(fields))) => {
            assert_eq!(typed, by_name(&fields), "{name}: the tick at {}", e.offset);
            seen.typed += 1;
        }
        (Some(Err(_)), Err(_)) => seen.errors += 1,
        (None, _) => seen.general += 1,
        (typed, general) => panic!("{name}: the tick at {}: {typed:?} read, {general:?} decoded", e.offset),
    }
}

/// Every event of a trace both ways.
fn compare(name: &str, bytes: &[u8]) -> Seen {
    let mut reader = NetTraceReader::new(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut seen = Seen::default();
    while let Ok(Some(e)) = reader.next_event() {
        compare_event(name, &e, &mut seen);
    }
    eprintln!("{name}: {seen:?}");
    seen
}

#[test]
fn generated_ticks_read_the_same_both_ways() {
    for bits in [PointerBits::Bits64, PointerBits::Bits32] {
        let opts = GenOptions { objects: 30_000, pointer_bits: bits, ..Preset::Small.options() };
        let nt = NetTraceOptions { tick_bytes: 0, ..NetTraceOptions::default() };
        let (trace, counts) = generate_nettrace(&opts, &nt, Vec::new()).expect("a generated trace");
        let seen = compare(&format!("{} bits", bits.bits()), &trace);
        assert_eq!(seen, Seen { typed: counts.counts.allocation_ticks, errors: 0, general: 0 });
        assert!(seen.typed >= 30_000);
    }
}

/// A tick of `version` (0-4) with `ptr`-byte pointers, its payload cut to
/// `cut` bytes when given.
fn tick_payload(version: u8, ptr: u32) -> Vec<u8> {
    let p = |v: &mut Vec<u8>, x: u64| v.extend(&x.to_le_bytes()[..ptr as usize]);
    let mut v = 100_123u32.to_le_bytes().to_vec();
    v.extend(1u32.to_le_bytes()); // AllocationKind
    if version >= 1 {
        v.extend(9u16.to_le_bytes()); // ClrInstanceID
    }
    if version >= 2 {
        v.extend(0x1_0000_0001u64.to_le_bytes());
        p(&mut v, 0x7f00_1234_5678_9abc);
        utf16z(&mut v, "System.Byte[]");
        v.extend(3u32.to_le_bytes()); // HeapIndex
    }
    if version >= 3 {
        p(&mut v, 0x7f00_0000_8000_0010);
    }
    if version >= 4 {
        v.extend(85_032u64.to_le_bytes());
    }
    // A newer version's fields: left undecoded both ways.
    v.extend([0xee; 5]);
    v
}

/// A V6 trace of ticks of every version, both pointer sizes, every cut
/// of every payload, and one labelled with another version.
#[test]
fn every_version_and_every_cut_reads_the_same_both_ways() {
    for ptr in [4u32, 8] {
        let mut w = Writer::new(ptr, 1_000_000, 10_000_000, &[]);
        let metas: Vec<Meta> = (0..5u8).map(|v| Meta::runtime(u32::from(v) + 1, 10, v)).collect();
        w.metadata(&metas);
        w.threads(&[Thread { index: 0, tid: Some(10), pid: Some(1), ..Thread::default() }]);
        w.labels(1, &[vec![Label::Version(2)]]);
        let mut events = Vec::new();
        let mut seq = 0;
        for version in 0..5u8 {
            let full = tick_payload(version, ptr);
            for cut in (0..=full.len()).rev() {
                seq += 1;
                events.push(Ev {
                    metadata: u32::from(version) + 1,
                    seq,
                    timestamp: 1_000_000 + u64::from(seq),
                    payload: full[..cut].to_vec(),
                    ..Ev::default()
                });
            }
        }
        // Declared version 4, labelled version 2: the general decoder's.
        seq += 1;
        events.push(Ev {
            metadata: 5,
            seq,
            timestamp: 1_000_000 + u64::from(seq),
            label_list: 1,
            payload: tick_payload(2, ptr),
            ..Ev::default()
        });
        w.events(&events, true);
        let (bytes, _, _) = w.finish();
        let seen = compare(&format!("V6, {ptr}-byte pointers"), &bytes);
        assert_eq!(seen.general, 1, "the labelled tick is the general decoder's");
        assert_eq!(seen.typed + seen.errors + seen.general, events.len() as u64);
        assert!(seen.errors > 20 && seen.typed > 20, "{seen:?}");
    }
}

#[test]
fn corpus_ticks_read_the_same_both_ways() {
    let dir = common::repo_root().join("../shared/corpus/eventpipe");
    if !dir.is_dir() {
        common::missing(&dir.display().to_string());
        return;
    }
    let mut typed = 0;
    for path in common::nettraces_in(&dir) {
        let seen = compare(&path.display().to_string(), &std::fs::read(&path).expect("a trace"));
        assert_eq!(seen.errors + seen.general, 0);
        typed += seen.typed;
    }
    assert!(typed > 0, "the corpus's traces hold no tick");
}

#[test]
fn real_runtime_ticks_read_the_same_both_ways() {
    let Ok(dir) = std::env::var("CLRPROF_IMPORT_DIFF_DIR") else {
        eprintln!("(CLRPROF_IMPORT_DIFF_DIR not set: no more traces)");
        return;
    };
    let paths = common::nettraces_in(dir.as_ref());
    assert!(!paths.is_empty(), "no .nettrace in {dir}");
    for path in paths {
        let seen = compare(&path.display().to_string(), &std::fs::read(&path).expect("a trace"));
        assert_eq!(seen.general, 0);
    }
}
