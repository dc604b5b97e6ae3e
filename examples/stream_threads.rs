//! Stream the records of a log without building a model, and count
//! allocations per thread. Reads any `Read`: here a file, `.gz` or `.zst`
//! decompressed on the fly, or standard input (`-`), in constant memory.
//!
//! ```text
//! gzip -c corpus/all-kinds.log | cargo run --release --example stream_threads -- -
//! ```
use clrprof::format::{open_read, Record, RecordStream};
use std::collections::BTreeMap;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: stream_threads LOG")?;
    let mut stream = RecordStream::new(open_read(path.as_ref())?).named(&path);
    let mut per_thread: BTreeMap<Option<i32>, u64> = BTreeMap::new();
    stream.for_each(|parsed| {
        if let Record::Alloc(a) = parsed.record {
            *per_thread.entry(a.thread.map(|t| t.0)).or_default() += 1;
        }
    })?;
    println!("{:>10}  thread", "objects");
    for (thread, n) in &per_thread {
        let name = thread.map_or("(no thread: `a` records)".to_string(), |t| t.to_string());
        println!("{n:>10}  {name}");
    }
    let d = stream.diagnostics();
    println!("{} records, {} bytes, {} warnings", stream.records(), stream.bytes_parsed(), d.total());
    for w in d.warnings().iter().take(5) {
        println!("  {w}");
    }
    Ok(())
}
