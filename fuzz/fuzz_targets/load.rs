//! Fuzz target: any bytes load into a model (or give an error) without
//! panicking or hanging, and the parallel loader (chunks parsed on the pool,
//! the compact record stream, any chunk size) builds the same model as the
//! plain builder fed one record at a time, or fails at the same place.
#![no_main]

use clrprof::format::{read_all, ChunkOptions};
use clrprof::model::{load, Builder, LoadOptions, Model};
use clrprof::query::summary::summary;
use libfuzzer_sys::fuzz_target;

/// What both paths must agree on.
fn figures(m: &Model) -> String {
    let s = summary(m);
    let samples: Vec<_> = m.samples().samples().iter().collect();
    format!(
        "{s:?} objects={} samples={samples:?} live={} records={} gcs={} fates={:?}",
        m.allocations().len(),
        m.live_objects_at_end(),
        m.records(),
        m.gcs().len(),
        (0..m.allocations().len() as u32).map(|i| m.death_tick(clrprof::model::ObjectId(i))).collect::<Vec<_>>(),
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
