//! Fuzz target: any bytes load into a model (or give an error) without
//! panicking or hanging, and the parallel loader (chunks parsed on the pool,
//! the compact record stream, any chunk size) builds the same model as the
//! plain builder fed one record at a time, or fails at the same place; and
//! the log read as it grows (`GrowingLog`: loaded up to a point on the
//! pool, then given the rest in two parts) gives `load`'s model for what it
//! has read after every part, and `load`'s model of the whole at its end.
//!
//! Run: `fuzz/run.sh load [SECONDS]` (`-rss_limit_mb=2048 -max_len=131072`:
//! an input that takes memory out of proportion to its size fails the run;
//! the seeds from `fuzz/make_seeds.py` hold the memory bombs).
#![no_main]

use clrprof::format::{read_all, ChunkOptions};
use clrprof::model::{load, Builder, GrowingLog, LoadOptions, Model, ObjectId};
use clrprof::query::summary::summary;
use libfuzzer_sys::fuzz_target;

/// Folds values into a hash (FNV-1a over 64-bit words): a model can hold
/// millions of samples (one object over a 4 GB range makes four million),
/// too many to format and compare as text on every input.
fn fold(h: u64, v: u64) -> u64 {
    (h ^ v).wrapping_mul(0x0000_0100_0000_01B3)
}

/// What both paths must agree on.
fn figures(m: &Model) -> String {
    let s = summary(m);
    let samples = m.samples().samples().iter().fold(0xCBF2_9CE4_8422_2325, |h, (id, x)| {
        let h = fold(fold(h, id.0 as u64), x.type_id.0 as u64);
        let h = fold(fold(h, x.change.0 as u64), x.alloc.0 as u64);
        fold(h, x.prev.map_or(u64::MAX, |p| p.0 as u64))
    });
    let deaths = (0..m.allocations().len() as u32)
        .map(|i| m.death_tick(ObjectId(i)).map_or(u64::MAX, |t| t.0 as u64))
        .fold(0xCBF2_9CE4_8422_2325, fold);
    format!(
        "{s:?} objects={} samples={} {samples:x} deaths={deaths:x} live={} records={} gcs={}",
        m.allocations().len(),
        m.samples().len(),
        m.live_objects_at_end(),
        m.records(),
        m.gcs().len(),
    )
}

fn sequential(data: &[u8]) -> Result<String, String> {
    let (records, _) = read_all(data);
    let mut b = Builder::new(data);
    for r in &records {
        b.push(r).map_err(|e| e.to_string())?;
    }
    b.finish().map(|m| figures(&m)).map_err(|e| e.to_string())
}

/// The log read as it grows: loaded up to `a` on the pool, then given the
/// rest in two parts; after each part the model is `load`'s for the bytes
/// read, and at the end `model_at_end` is `load`'s for every byte.
fn growing(data: &[u8], opts: &LoadOptions, a: usize, b: usize) -> Result<String, String> {
    let mut g = GrowingLog::load(&data[..a], opts, |_| {});
    let check = |g: &GrowingLog| {
        let parsed = g.parsed_bytes() as usize;
        let want = load(&data[..parsed], opts).map(|m| figures(&m)).map_err(|e| e.to_string());
        let got = g.model().map(|m| figures(&m)).map_err(|e| e.to_string());
        if !over_memory_rule(&want) && !over_memory_rule(&got) {
            assert_eq!(got, want, "parsed {parsed}");
        }
    };
    check(&g);
    let _ = g.extend(&data[a..b]);
    check(&g);
    let _ = g.extend(&data[b..]);
    check(&g);
    g.model_at_end().map(|m| figures(&m)).map_err(|e| e.to_string())
}

/// Whether a load was refused by the memory rule: its allowance is for
/// the bytes a reader was given (`clrprof::limits`), so a growing log,
/// given a line more than it has read, may be refused a record later than
/// a load of the bytes it has read (or the other way round at the end).
fn over_memory_rule(r: &Result<String, String>) -> bool {
    r.as_ref().is_err_and(|e| e.contains("memory rule"))
}

fuzz_target!(|data: &[u8]| {
    let chunk = 1 + data.first().copied().unwrap_or(0) as usize % 64;
    let opts = LoadOptions { chunks: ChunkOptions { chunk_bytes: chunk, threads: None, in_flight: 0 } };
    let parallel = load(data, &opts).map(|m| figures(&m)).map_err(|e| e.to_string());
    assert_eq!(sequential(data), parallel);
    let a = data.len() * data.get(1).copied().unwrap_or(0) as usize / 255;
    let b = a + (data.len() - a) * data.get(2).copied().unwrap_or(0) as usize / 255;
    let grown = growing(data, &opts, a, b);
    if !over_memory_rule(&grown) && !over_memory_rule(&parallel) {
        assert_eq!(grown, parallel);
    }
});
