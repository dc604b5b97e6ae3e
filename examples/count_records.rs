//! Counts records per kind in one thread: the parse loop alone, for
//! profiling (`valgrind --tool=callgrind target/release/examples/count_records LOG`).
use clrprof::format::{Kind, LogSource, RecordReader};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: count_records LOG")?;
    let src = LogSource::open(std::path::Path::new(&path))?;
    let mut counts = [0u64; Kind::COUNT];
    for p in RecordReader::new(src.bytes()) {
        counts[p.record.kind().index()] += 1;
    }
    println!("{}", counts.iter().sum::<u64>());
    Ok(())
}
