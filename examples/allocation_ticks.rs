//! Prints each `GC/AllocationTick` of a NetTrace as one tab-separated line
//! (thread, heap, kind, amount, object size, type name), in time order:
//! the raw material of the guide's measurement of the estimators against
//! a program's own counts (`docs/src/eventpipe.md`, "Estimates and their
//! uncertainty").
//!
//! ```text
//! cargo run --release --example allocation_ticks -- TRACE > ticks.tsv
//! ```
use clrprof::eventpipe::{NetTraceReader, Value};
use std::io::Write;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: allocation_ticks TRACE")?;
    let bytes = std::fs::read(&path)?;
    let mut reader = NetTraceReader::new(&bytes)?;
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    writeln!(out, "thread\theap\tkind\tamount\tsize\ttype")?;
    while let Some(e) = reader.next_event()? {
        if e.name() != "GC/AllocationTick" {
            continue;
        }
        let Some(fields) = e.fields()? else { continue };
        let get = |n: &str| fields.iter().find(|f| f.name == n).and_then(|f| f.value.as_u64());
        let name = fields
            .iter()
            .find(|f| f.name == "TypeName")
            .map(|f| if let Value::Str(s) = &f.value { s.to_string() } else { String::new() })
            .unwrap_or_default();
        let amount = get("AllocationAmount64").or_else(|| get("AllocationAmount")).unwrap_or(0);
        writeln!(
            out,
            "{}\t{}\t{}\t{amount}\t{}\t{name}",
            e.header.thread.0,
            get("HeapIndex").unwrap_or(0),
            get("AllocationKind").unwrap_or(0),
            get("ObjectSize").unwrap_or(0),
        )?;
    }
    Ok(())
}
