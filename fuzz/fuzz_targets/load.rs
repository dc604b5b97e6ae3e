//! Fuzz target: any bytes load into a model (or give an error) without
//! panicking or hanging, and the parallel loader (chunks parsed on the pool,
//! the compact record stream, any chunk size) builds the same model as the
//! plain builder fed one record at a time, or fails at the same place.
#![no_main]

use clrprof::format::{read_all, ChunkOptions};
use clrprof::model::{load, Builder, LoadOptions, Model, ObjectId};
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

fuzz_target!(|data: &[u8]| {
    let chunk = 1 + data.first().copied().unwrap_or(0) as usize % 64;
    let opts = LoadOptions { chunks: ChunkOptions { chunk_bytes: chunk, threads: None, in_flight: 0 } };
    let parallel = load(data, &opts).map(|m| figures(&m)).map_err(|e| e.to_string());
    assert_eq!(sequential(data), parallel);
});
