//! Any bytes through the NetTrace reader: every event, its kind's name,
//! its stack's frames and its decoded fields, then the summary. The
//! reader must return (no panic), in time linear in the input (no hang),
//! with memory bounded by the input (no allocation a length field asks
//! for that the input cannot hold). Then the import into CLRProfiler
//! records and the model: the made log at most 64 times the trace (plus
//! 8 MiB), so that ranges, counts and stacks that claim more than the
//! trace holds fail here, not only past `-rss_limit_mb`.
//!
//! The bombs of `fuzz/seeds/nettrace/` (a surviving range of 2^64 - 1
//! bytes, one deep stack with many sizes; written by
//! `UPDATE_SEEDS=1 cargo test --release -p clrprof-cli --test trace_bombs`)
//! are seeds too: add `../fuzz/seeds/nettrace` to the folders below.
//!
//! Seeds: the corpus traces (read in place) and generated ones, e.g.
//!
//! ```text
//! clrprof gen --preset tiny --objects 300 --gcs 2 --format nettrace --tick-bytes 0 -o seeds/a.nettrace
//! cargo +nightly fuzz run nettrace corpus/nettrace seeds ../../shared/corpus/eventpipe -- \
//!     -jobs=1 -max_len=262144 -rss_limit_mb=512 -timeout=10 -max_total_time=900
//! ```
#![no_main]

use clrprof::eventpipe::NetTraceReader;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = NetTraceReader::new(data) else { return };
    let mut sum = 0u64;
    loop {
        match reader.next_event() {
            Ok(Some(e)) => {
                sum = sum.wrapping_add(e.name().len() as u64 + e.provider().len() as u64);
                for ip in e.stack.frames() {
                    sum = sum.wrapping_add(ip);
                }
                if let Ok(Some(fields)) = e.fields() {
                    for f in &fields {
                        sum = sum.wrapping_add(f.name.len() as u64);
                        let _ = f.label();
                    }
                }
            }
            Ok(None) | Err(_) => break,
        }
    }
    let _ = reader.warnings().len();
    let summary = reader.finish();
    std::hint::black_box((sum, summary.events, summary.lost_events));
    if let Ok(imported) = clrprof::import::nettrace::to_log(data) {
        assert!(
            imported.log.len() <= 64 * data.len() + (8 << 20),
            "a {}-byte trace made a {}-byte log",
            data.len(),
            imported.log.len()
        );
        let _ = clrprof::model::load(&imported.log, &Default::default());
    }
});
