//! Damaged traces, deterministically: generated NetTraces (64- and 32-bit,
//! small blocks and sequence-point regions so that every kind of object
//! occurs many times) cut at thousands of lengths and with thousands of
//! bytes changed. Whatever the damage, the reader returns (no panic),
//! hands out at most one event per input byte (no loop), and decodes every
//! event's fields and stack without panicking. The fuzz target
//! `fuzz/fuzz_targets/nettrace.rs` does the same at random.

use clrprof::eventpipe::NetTraceReader;
use clrprof_gen::nettrace::{generate_nettrace, NetTraceOptions, WriterOptions};
use clrprof_gen::{GenOptions, PointerBits, Preset};

mod common;
use common::Rng;

fn traces() -> Vec<Vec<u8>> {
    let small = WriterOptions { block_bytes: 2048, sequence_point_bytes: 16 * 1024 };
    let nt = NetTraceOptions { tick_bytes: 0, writer: small, ..NetTraceOptions::default() };
    let opts = GenOptions { objects: 400, gcs: 2, ..Preset::Tiny.options() };
    let b32 = GenOptions { pointer_bits: PointerBits::Bits32, seed: 7, ..opts.clone() };
    [opts, b32].iter().map(|o| generate_nettrace(o, &nt, Vec::new()).expect("a generated trace").0).collect()
}

/// Reads everything the reader gives; returns (events, whether it ended
/// with an error).
fn read_all(bytes: &[u8]) -> (u64, bool) {
    let Ok(mut r) = NetTraceReader::new(bytes) else { return (0, true) };
    let mut n = 0u64;
    let failed = loop {
        match r.next_event() {
            Ok(Some(e)) => {
                n += 1;
                let _ = e.name();
                let _ = e.stack.frames().count();
                if let Ok(Some(fields)) = e.fields() {
                    for f in &fields {
                        let _ = f.label();
                    }
                }
                assert!(n <= bytes.len() as u64, "more events than bytes");
            }
            Ok(None) => break false,
            Err(_) => break true,
        }
    };
    // After an error or the end, the reader stays at the end.
    assert!(matches!(r.next_event(), Ok(None)));
    let s = r.finish();
    assert_eq!(s.events, n);
    (n, failed)
}


#[test]
fn generated_traces_read_whole() {
    for t in traces() {
        let (n, failed) = read_all(&t);
        assert!(!failed && n > 400, "{n} events");
    }
}

#[test]
fn every_truncation_returns() {
    for t in traces() {
        let (full, _) = read_all(&t);
        // Every length in the first 4 KB (header, first blocks), then one
        // in 11 bytes.
        let lengths = (0..t.len().min(4096)).chain((4096..t.len()).step_by(11));
        let mut cases = 0;
        for len in lengths {
            let (n, _) = read_all(&t[..len]);
            assert!(n <= full, "cut at {len}: {n} events of {full}");
            cases += 1;
        }
        assert!(cases > 6000, "{cases}");
    }
}

#[test]
fn changed_bytes_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut cases = 0;
    for t in traces() {
        let mut m = t.clone();
        for _ in 0..3000 {
            // One to four bytes changed: a bit flipped, or set to 0, 0xFF or
            // a random value (lengths, counts, varint continuation bits).
            let k = 1 + rng.next() % 4;
            let mut changed = Vec::new();
            for _ in 0..k {
                let at = (rng.next() % m.len() as u64) as usize;
                changed.push((at, m[at]));
                m[at] = match rng.next() % 4 {
                    0 => m[at] ^ (1 << (rng.next() % 8)),
                    1 => 0,
                    2 => 0xFF,
                    _ => rng.next() as u8,
                };
            }
            read_all(&m);
            for (at, b) in changed.into_iter().rev() {
                m[at] = b;
            }
            cases += 1;
        }
        assert_eq!(m, t);
    }
    assert_eq!(cases, 6000);
}
