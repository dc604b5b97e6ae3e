//! Opens a trace, a `.gcdump` or a log as a model and prints what it
//! holds, for measuring the import (`/usr/bin/time -v`):
//!
//! ```text
//! cargo run --release --example import_load -- FILE [--via-text] [--retained]
//! ```
//!
//! `FILE` is opened as every command opens it ([`clrprof::model::load_path`]:
//! a trace's or snapshot's records go straight into the model's builder).
//! With `--via-text`, a trace is imported the way it was before the records
//! went straight in: written as CLRProfiler log text
//! ([`clrprof::import::nettrace::to_log`]) and that text loaded as a log
//! ([`clrprof::model::load_imported`]). With `--retained`, the last heap
//! dump's dominator tree and retained sizes are computed too (what
//! `clrprof dump --retained` shows).
use clrprof::format::LogSource;
use clrprof::model::{load_imported, load_path, LoadOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: import_load FILE [--via-text] [--retained]")?;
    let flags: Vec<String> = args.collect();
    let via_text = flags.iter().any(|f| f == "--via-text");
    let retained = flags.iter().any(|f| f == "--retained");
    let options = LoadOptions::default();
    let model = if via_text {
        let source = LogSource::open(path.as_ref())?;
        let imported = clrprof::import::nettrace::to_log(source.bytes())?;
        eprintln!("log text: {} bytes", imported.log.len());
        load_imported(imported, &options, |_| {})?
    } else {
        load_path(path.as_ref(), &options)?
    };
    let dumps = model.heap_dumps();
    let dumped: usize = dumps.dumps().iter().map(|d| dumps.object_count(d)).sum();
    println!(
        "records {}  objects {}  gcs {}  heap-dump objects {}  table bytes {}",
        model.records(),
        model.allocations().len(),
        model.gcs().len(),
        dumped,
        model.table_bytes().iter().map(|t| t.1).sum::<usize>()
    );
    if retained && !dumps.dumps().is_empty() {
        let index = clrprof::query::dumps::DumpIndex(dumps.dumps().len() as u32 - 1);
        if let Some(r) = clrprof::query::dumps::retained(&model, index, 10) {
            println!("retained: {} reachable objects, {} unreachable", r.reachable_objects, r.unreachable_objects);
        }
    }
    Ok(())
}
