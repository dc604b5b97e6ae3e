//! Fuzz target: any bytes parse without panicking or hanging, the parallel
//! chunked parse gives the same records and warnings as one pass, and so
//! does one pass without the fast path for the frequent records.
//!
//! Run: `fuzz/run.sh parse [SECONDS]` (`-rss_limit_mb=2048 -max_len=131072`:
//! an input that takes memory out of proportion to its size fails the run;
//! the seeds from `fuzz/make_seeds.py` hold the memory bombs).
#![no_main]

use clrprof::format::{parse_chunks, read_all, ChunkOptions, RecordReader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (records, warnings) = read_all(data);
    let seq: Vec<String> = records.iter().map(|p| format!("{}:{:?}", p.offset, p.record)).collect();
    let mut general = RecordReader::new(data).general_only();
    let slow: Vec<String> = general.by_ref().map(|p| format!("{}:{:?}", p.offset, p.record)).collect();
    assert_eq!(seq, slow);
    assert_eq!(warnings.total(), general.diagnostics().total());
    let chunk = 1 + data.first().copied().unwrap_or(0) as usize % 32;
    let opts = ChunkOptions { chunk_bytes: chunk, threads: None, in_flight: 0 };
    let mut par = Vec::new();
    let d = parse_chunks(data, &opts, |r| r.map(|p| format!("{}:{:?}", p.offset, p.record)).collect::<Vec<_>>(), |v, _| par.extend(v));
    assert_eq!(seq, par);
    assert_eq!(warnings.total(), d.total());
});
