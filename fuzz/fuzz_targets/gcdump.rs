//! Fuzz target: any bytes through the `.gcdump` reader without a panic, a
//! hang or memory beyond a small multiple of the input; a graph that reads
//! is transcoded into a CLRProfiler log, which loads as one heap dump with
//! the graph's objects.
//!
//! Run: `cargo +nightly fuzz run gcdump -- -max_len=65536 -rss_limit_mb=512`
//! (seed the corpus with `../shared/corpus/eventpipe/test1.gcdump` and the
//! bombs of `fuzz/seeds/gcdump/`, written by
//! `UPDATE_SEEDS=1 cargo test --release -p clrprof-cli --test trace_bombs`).
#![no_main]

use clrprof::gcdump;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The sniffer takes any bytes.
    gcdump::is_gcdump(data);
    let Ok(graph) = gcdump::read(data) else { return };
    // What reads starts with the header (the sniffer wants the usual
    // start, which the reader does not require).
    assert!(data.starts_with(b"\x14\x00\x00\x00!FastSerialization.1"));
    assert!(graph.heap_bytes() <= 16 * data.len() + (1 << 16));
    for n in graph.nodes() {
        for &c in graph.children(n) {
            assert!(c.index() < graph.node_count());
        }
        assert!(graph.node_type(n).index() < graph.type_count());
    }
    let mut log = Vec::new();
    gcdump::write_log(&graph, &mut log);
    let model = clrprof::model::load(&log, &Default::default()).expect("a transcoded log loads");
    let dumps = model.heap_dumps();
    if graph.node_count() > 0 {
        assert_eq!(dumps.dumps().len(), 1);
        let d = &dumps.dumps()[0];
        assert_eq!(dumps.object_count(d), graph.object_count());
    }
});
