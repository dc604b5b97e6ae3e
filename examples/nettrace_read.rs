//! Reads every event of a NetTrace in one thread, decoding the fields of
//! every `GC/AllocationTick` (with `--all-fields`, of every event; with
//! `--no-fields`, of none),
//! and prints the counts and the speed: the whole-file measurement of
//! `scripts/bench-nettrace.sh`.
//!
//! ```text
//! cargo run --release --example nettrace_read -- TRACE [--keep-pages] [--all-fields | --no-fields] [--file-order]
//! ```
//!
//! Events come in time order (threads merged by timestamp), or as the file
//! stores them with `--file-order`.
//!
//! The trace is mapped; pages already read are handed back to the kernel
//! every 8 MB (`madvise(MADV_DONTNEED)`: a page touched again is read
//! again from the file), so the resident size shows the reader's own
//! memory, not the file's length. `--keep-pages` leaves them mapped, as
//! the CLRProfiler log parser does.
use clrprof::eventpipe::{NetTraceReader, Order, ReadOptions, Value};
use std::collections::BTreeMap;
use std::time::Instant;

const RELEASE_EVERY: u64 = 8 << 20;
/// Pages kept behind the current event: the stacks of the current
/// sequence-point region lie behind it (a dropped page would only be read
/// again, not lost).
const KEEP_BEHIND: u64 = 12 << 20;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut path = None;
    let (mut keep_pages, mut all_fields, mut no_fields, mut file_order) = (false, false, false, false);
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--keep-pages" => keep_pages = true,
            "--all-fields" => all_fields = true,
            "--no-fields" => no_fields = true,
            "--file-order" => file_order = true,
            _ => path = Some(a),
        }
    }
    let path = path.ok_or("usage: nettrace_read TRACE [--keep-pages] [--all-fields | --no-fields] [--file-order]")?;
    let file = std::fs::File::open(&path)?;
    // Safety: the file is only read; a change under the mapping by
    // another process would give wrong bytes (reported as errors), not
    // undefined behaviour in this program's logic.
    let map = unsafe { memmap2::Mmap::map(&file)? };
    map.advise(memmap2::Advice::Sequential)?;
    let started = Instant::now();
    let order = if file_order { Order::File } else { Order::Time };
    let mut reader = NetTraceReader::with_options(&map, ReadOptions { order, ..ReadOptions::default() })?;
    let mut by_id: Vec<u64> = Vec::new();
    let (mut events, mut fields, mut frames, mut tick_bytes) = (0u64, 0u64, 0u64, 0u64);
    let mut released = 0u64;
    while let Some(e) = reader.next_event()? {
        events += 1;
        frames += e.stack.len() as u64;
        let name = e.name();
        if !no_fields && (name == "GC/AllocationTick" || all_fields) {
            if let Some(fs) = e.fields()? {
                fields += fs.len() as u64;
                for f in &fs {
                    if f.name == "AllocationAmount64" {
                        if let Value::Unsigned(v, _) = f.value {
                            tick_bytes += v;
                        }
                    }
                }
            }
        }
        // Counted by metadata id (small integers), named at the end.
        let id = e.header.metadata_id.0 as usize;
        if id >= by_id.len() {
            by_id.resize(id.min(1 << 20) + 1, 0);
        }
        if let Some(n) = by_id.get_mut(id) {
            *n += 1;
        }
        if !keep_pages && e.offset >= released + RELEASE_EVERY + KEEP_BEHIND {
            let upto = (e.offset - KEEP_BEHIND) & !0xfff;
            // Safety: the mapping is private and read-only: dropped pages
            // are read again from the file when touched.
            unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, released as usize, (upto - released) as usize)? };
            released = upto;
        }
    }
    let mut by_name: BTreeMap<String, u64> = BTreeMap::new();
    for k in reader.kinds() {
        let n = by_id.get(k.metadata.id.0 as usize).copied().unwrap_or(0);
        if n > 0 {
            *by_name.entry(k.name.clone()).or_default() += n;
        }
    }
    let unknown = events - by_name.values().sum::<u64>();
    if unknown > 0 {
        by_name.insert("(unknown kind)".to_string(), unknown);
    }
    let complete = reader.is_complete();
    let summary = reader.finish();
    let secs = started.elapsed().as_secs_f64();
    let bytes = map.len() as f64;
    println!("{path}: {} bytes, {events} events, complete: {complete}", map.len());
    println!(
        "{:.3} s: {:.1} MB/s, {:.2} M events/s; {fields} fields decoded, {frames} stack frames, {tick_bytes} bytes in allocation ticks",
        secs,
        bytes / 1e6 / secs,
        events as f64 / 1e6 / secs
    );
    println!("lost events: {}, warnings: {}", summary.lost_events, summary.warnings.len());
    for (name, n) in &by_name {
        println!("{n:>12} {name}");
    }
    Ok(())
}
