//! Follows a log while it is being written (as `tail -f` follows a file),
//! printing CLRProfiler's Summary figures each time whole lines were added:
//! `model::GrowingLog` reads only the new bytes, never the log again.
//!
//! ```text
//! follow LOG [--every-ms MS] [--until-bytes N]
//! ```
//!
//! Each line printed: bytes read, objects allocated, allocated bytes,
//! final heap bytes, GCs (gen 0). It stops once `N` bytes were read, or
//! at Ctrl-C.

use clrprof::model::{GrowingLog, LoadOptions};
use clrprof::query::summary;
use std::io::Read;
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: follow LOG [--every-ms MS] [--until-bytes N]")?;
    let (mut every, mut until) = (Duration::from_millis(500), u64::MAX);
    while let Some(a) = args.next() {
        let v = args.next().ok_or(format!("{a} needs a value"))?;
        match a.as_str() {
            "--every-ms" => every = Duration::from_millis(v.parse()?),
            "--until-bytes" => until = v.parse()?,
            _ => return Err(format!("unknown option {a}").into()),
        }
    }
    let mut file = std::fs::File::open(&path)?;
    // What is there already is read on every core; then only what comes.
    let mut first = Vec::new();
    file.read_to_end(&mut first)?;
    let mut log = GrowingLog::load(&first, &LoadOptions::default(), |_| {});
    let mut shown = u64::MAX;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        if log.parsed_bytes() != shown {
            shown = log.parsed_bytes();
            let model = log.model()?;
            let s = summary(&model);
            println!(
                "{} {} {} {} {}",
                shown,
                model.allocations().len(),
                s.allocated_bytes,
                s.final_heap_bytes,
                s.gen0_collections
            );
        }
        if log.len() >= until {
            return Ok(());
        }
        let n = file.read(&mut buf)?;
        if n == 0 {
            std::thread::sleep(every);
            continue;
        }
        log.extend(&buf[..n])?;
    }
}
