//! Calls counted per window on the parsing side (see [`super::ops`])
//! against the record-by-record builder.
//!
//! Random logs mix `c` lines (canonical and not: extra blanks, CRLF, long
//! and hex numbers, `-1` threads and stacks, negative and undefined ids,
//! ids past the renumbering table) with stack (re)definitions that create
//! the renumbering table, allocations (some failing), ticks and moves,
//! names and finalizers (which windows go on across), `n` records between
//! calls of their own id (which close it), objects that make the
//! renumbering table (which end the window) and ids past the dense
//! table. Each
//! log is loaded by [`crate::model::load`] with several chunkings and by a
//! [`Builder`] fed record by record: the calls histogram, the stack rows,
//! the record count, `had_call_info`, the error (with its line and offset)
//! and the warnings must agree.

use super::test_rng::xorshift;
use super::{load, Builder, LoadOptions, Model, StackRef};
use crate::format::{read_all, ChunkOptions};
use proptest::prelude::*;

fn random_log(seed: u64, records: usize, end_without_newline: bool) -> Vec<u8> {
    let mut next = xorshift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut s = String::new();
    s += "t 1 0 T1\nt 2 0 T2\nf 1 M 1 0x10 1 0 0\nf 2 N 1 0x20 1 0 0\n";
    for k in 1..=6 {
        s += &format!("n {k} 1 {} {}\n", k % 2 + 1, 8 * k);
    }
    // Half the logs have records that fail (rarely, so that the failure
    // can come anywhere).
    let faults = next() % 2 == 0;
    let fail_one_in = if faults { 1 + next() % 600 } else { u64::MAX };
    let mut address = 0x10000u64;
    for _ in 0..records {
        let r = next();
        let pick = |shift: u32, n: u64| (r >> shift) % n;
        // A stack id: mostly among the first ones, sometimes beyond.
        let stack = match pick(8, 20) {
            0 => pick(16, 400) as i64,
            // Past the renumbering table once there is one.
            1 if next() % fail_one_in == 0 => 100_000 + pick(16, 300_000) as i64,
            _ => pick(16, 12) as i64,
        };
        match r % 100 {
            0..=69 => {
                let thread: i64 = match pick(40, 30) {
                    0 => -1,
                    1 => 123_456_789,
                    2..=9 => 7,
                    _ => 26990,
                };
                let stack = match pick(45, 200) {
                    0 => -1,
                    1 if next() % fail_one_in == 0 => -(2 + pick(52, 5) as i64),
                    _ => stack,
                };
                let line = match pick(56, 40) {
                    0 => format!("c  {thread} {stack}\n"),
                    1 => format!("c {thread} {stack}\r\n"),
                    2 => format!("c {thread} {stack} \n"),
                    3 => format!("c {thread} 0x{stack:x}\n"),
                    4 => format!("c {thread} 000000000{stack}\n"),
                    5 => format!("C {thread} {stack}\n"),
                    6 => format!("c\t{thread} {stack}\n"),
                    _ => format!("c {thread} {stack}\n"),
                };
                s += &line;
            }
            70..=79 => {
                let id = if next() % fail_one_in == 0 {
                    // Sometimes a failing call comes first: the error must
                    // name the call, not the allocation.
                    if pick(34, 2) == 0 {
                        s += &format!("c 26990 -{}\n", 2 + pick(35, 3));
                    }
                    50 + pick(32, 9) as i64
                } else {
                    pick(16, 6) as i64 + 1
                };
                s += &format!("! 7 0x{address:x} {id}\n");
                address += 8 * (1 + pick(36, 6));
            }
            80..=84 => {
                // A (re)definition: allocation-only duplicates create the
                // renumbering table; frames-only stacks too.
                let id = 1 + pick(16, 30);
                match pick(24, 4) {
                    0 => s += &format!("n {id} 1 {} {}\n", 1 + pick(28, 2), 8 * (1 + pick(30, 6))),
                    1 => s += &format!("n {id} 0 1 2\n"),
                    2 => s += &format!("s {id} 1 2\n"),
                    _ => s += &format!("n {id} 3 1 16 1 2\n"),
                }
            }
            85..=87 => s += &format!("i {}\n", pick(16, 1000)),
            88 => {
                // Side records the calls' windows go on across (names,
                // finalizers) and ones that end them (objects that may
                // make the renumbering table), between calls of the same
                // ids; and ids past the dense table.
                match pick(16, 6) {
                    0 => s += &format!("f {} F{} 1 0x10 1 0 0\n", 3 + pick(20, 5), pick(24, 9)),
                    1 => s += &format!("l 1 0x{:x}\n", 0x10000 + 8 * pick(20, 64)),
                    2 => s += &format!("o 0x{:x} {} {}\n", 0x70000 + 8 * pick(20, 64), 1 + pick(28, 2), 8 * (1 + pick(30, 9))),
                    3 => s += &format!("t {} 0 T{}\n", 3 + pick(20, 3), pick(24, 9)),
                    // (Past the renumbering table once there is one.)
                    _ if next() % fail_one_in == 0 => {
                        s += &format!("c 26990 {}\n", (1 << 20) - 3 + pick(20, 6) as i64 + 1_000 * pick(24, 2) as i64)
                    }
                    _ => s += &format!("c 26990 {}\n", pick(20, 400)),
                }
                s += &format!("c 26990 {}\n", pick(32, 7));
            }
            89 => {
                // Ids 7 to 12: not those the allocations use.
                let id = 7 + pick(16, 6);
                s += &format!("c 26990 {id}\nn {id} 0 {}\nc 26990 {id}\n", 1 + pick(20, 2));
            }
            90..=92 => s += &format!("u 0x{:x} 0x{:x} 16\n", 0x10000 + 8 * pick(16, 64), 0x90000 + 8 * pick(24, 64)),
            93 => s += "z a comment\n",
            94 => s += "\n",
            _ => s += &format!("c 26990 {}\n", pick(16, 7)),
        }
    }
    if end_without_newline {
        s += "c 26990 3";
    }
    s.into_bytes()
}

fn by_hand(log: &[u8]) -> Result<Model, String> {
    let (records, _) = read_all(log);
    let mut b = Builder::new(log);
    for r in &records {
        b.push(r).map_err(|e| e.to_string())?;
    }
    b.finish().map_err(|e| e.to_string())
}

/// What calls decide, as text.
fn figures(m: &Model) -> String {
    let calls: Vec<(StackRef, u64)> = m.histograms().calls.iter().collect();
    let st = m.stacks();
    let rows: Vec<(u32, bool)> = (0..st.len() as u32).map(|r| (st.stack_index(StackRef(r)), st.is_defined(StackRef(r)))).collect();
    format!(
        "calls {calls:?}\nrows {rows:?}\nrecords {}\nhad calls {}\nhad allocs {}\nobjects {}",
        m.records(),
        m.had_call_info(),
        m.had_alloc_info(),
        m.allocations().len(),
    )
}

fn warnings(log: &[u8]) -> String {
    format!("{:?}", read_all(log).1.warnings())
}

fn outcome(r: &Result<Model, String>) -> String {
    match r {
        Ok(m) => figures(m),
        Err(e) => format!("error {e}"),
    }
}

fn loaded(log: &[u8], chunk_bytes: usize, threads: usize) -> (String, String) {
    let options = LoadOptions { chunks: ChunkOptions { chunk_bytes, threads: Some(threads), in_flight: 0 } };
    match load(log, &options) {
        Ok(m) => (figures(&m), format!("{:?}", m.diagnostics().warnings())),
        Err(e) => (format!("error {e}"), warnings(log)),
    }
}

/// Checks one log; returns whether it loaded without an error.
fn check(log: &[u8]) -> bool {
    let want = by_hand(log);
    let want_text = outcome(&want);
    let want_warnings = warnings(log);
    for (chunk, threads) in [(1 << 20, 1), (1 << 20, 2), (700, 2), (64, 2), (4096, 1)] {
        let (got, got_warnings) = loaded(log, chunk, threads);
        assert_eq!(got, want_text, "chunk {chunk}, {threads} threads\n{}", String::from_utf8_lossy(log));
        assert_eq!(got_warnings, want_warnings, "chunk {chunk}, {threads} threads");
    }
    want.is_ok()
}

#[test]
fn counted_calls_give_the_figures_of_record_by_record() {
    let (mut ok, mut failed, mut calls) = (0, 0, 0u64);
    for seed in 1..=120u64 {
        let log = random_log(seed, 3000, seed % 3 == 0);
        if check(&log) {
            ok += 1;
            if let Ok(m) = by_hand(&log) {
                calls += m.histograms().calls.total();
            }
        } else {
            failed += 1;
        }
    }
    // The logs exercise both outcomes, with many calls counted.
    assert!(ok >= 20 && failed >= 20, "{ok} loaded, {failed} failed");
    assert!(calls > 100_000, "{calls} calls counted");
}

#[test]
fn a_failing_call_is_found_before_a_later_allocation_in_its_run() {
    // The call (stack -5) fails first in the log; the allocation after it
    // (undefined stack 40) would fail too, and comes first in the ops.
    let log = b"t 1 0 T\nn 1 1 1 16\nc 5 1\nc 5 1\nc 5 -5\n! 5 0x1000 40\nc 5 -5\nc 5 1\n";
    let want = outcome(&by_hand(log));
    assert!(want.contains("line 5, byte 31"), "{want}");
    for (chunk, threads) in [(1 << 20, 1), (16, 2)] {
        assert_eq!(loaded(log, chunk, threads).0, want);
    }
    // And the other way round: the allocation first.
    let log = b"t 1 0 T\nn 1 1 1 16\nc 5 1\n! 5 0x1000 40\nc 5 -5\nc 5 1\n";
    let want = outcome(&by_hand(log));
    assert!(want.contains("line 4, byte 25"), "{want}");
    assert_eq!(loaded(log, 1 << 20, 1).0, want);
}

#[test]
fn what_changes_a_call_ends_or_closes_its_window() {
    let head = "t 1 0 T\nt 2 0 U\nf 1 M 1 0x10 1 0 0\nn 1 1 1 16\n";
    // Id 5000 is past the stack table (capacity 1000): a call to it makes a
    // row while there is no renumbering table, and fails once one is made,
    // by an object of a new type and size or by a duplicate
    // allocation-only stack.
    for maker in ["o 0x9000 2 24\n", "n 2 1 1 16\n"] {
        let log = format!("{head}c 7 5000\nc 7 3\n{maker}c 7 3\nc 7 5000\n");
        let want = outcome(&by_hand(log.as_bytes()));
        assert!(want.contains("line 9,"), "{want}");
        assert!(!check(log.as_bytes()), "{maker}");
        // Without the second call the log loads.
        let log = format!("{head}c 7 5000\nc 7 3\n{maker}c 7 3\n");
        assert!(check(log.as_bytes()), "{maker}");
    }
    // With a renumbering table, a stack definition gives its id a new
    // index: the calls before and after it count on different rows.
    let log = format!("{head}n 2 1 1 16\nc 7 3\nc 7 4\nn 3 0 1\nc 7 3\nc 7 4\nz x\nc 7 3\n");
    assert!(check(log.as_bytes()));
    let m = by_hand(log.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    let counts: Vec<u64> = m.histograms().calls.iter().map(|(_, n)| n).collect();
    assert_eq!(counts.len(), 3, "{counts:?}");
    assert_eq!(counts.iter().sum::<u64>(), 5);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn counted_calls_agree_on_random_logs(seed in any::<u64>(), records in 1usize..2500, open_end in any::<bool>()) {
        check(&random_log(seed, records, open_end));
    }
}

