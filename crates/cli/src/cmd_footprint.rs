//! `clrprof footprint`: what a log costs to load and to hold.

use crate::common::{print_json, thousands, LoadArgs};
use crate::load::load_source;
use anyhow::Result;
use serde_json::json;

/// Arguments of `clrprof footprint`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    load: LoadArgs,
    /// Print JSON instead of a table.
    /// An error is printed as `{"error": MESSAGE}` on standard output (exit status 1).
    #[arg(long)]
    json: bool,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let source = args.load.open()?;
    let file_bytes = source.bytes().len() as u64;
    let loaded = load_source(&args.load, &source, args.quiet)?;
    let memory = loaded.memory;
    let m = &loaded.model;
    let samples = m.samples().len() as u64;
    let sample_bytes = m.samples().packed_bytes() as u64;
    let per_sample = if samples > 0 { sample_bytes as f64 / samples as f64 } else { 0.0 };
    let tables = m.table_bytes();
    let total: usize = tables.iter().map(|t| t.1).sum();
    if args.json {
        let mut t = serde_json::Map::new();
        for (name, bytes) in &tables {
            t.insert(name.to_string(), json!(bytes));
        }
        return print_json(&json!({
            "file": args.load.shown().display().to_string(),
            "file_bytes": file_bytes,
            "load_seconds": loaded.seconds,
            "peak_rss_bytes": memory.peak_rss,
            "peak_anon_bytes": memory.peak_anon,
            "objects": m.allocations().len(),
            "samples": samples,
            "sample_table_bytes": sample_bytes,
            "bytes_per_sample": per_sample,
            "model_bytes": total,
            "tables": t,
        }));
    }
    let mb = |b: u64| format!("{:.1} MB", b as f64 / 1e6);
    println!("{}", args.load.shown().display());
    println!("  {:<22} {:>16}", "file", mb(file_bytes));
    println!(
        "  {:<22} {:>16}",
        "load",
        format!("{:.3} s ({:.0} MB/s)", loaded.seconds, file_bytes as f64 / 1e6 / loaded.seconds.max(1e-9))
    );
    println!("  {:<22} {:>16}", "peak RSS", mb(memory.peak_rss));
    println!("  {:<22} {:>16}", "peak anonymous", mb(memory.peak_anon));
    println!("  {:<22} {:>16}", "objects", thousands(m.allocations().len() as u64));
    println!("  {:<22} {:>16}", "samples", thousands(samples));
    println!("  {:<22} {:>16}", "sample table", mb(sample_bytes));
    println!("  {:<22} {:>16}", "bytes per sample", format!("{per_sample:.2}"));
    println!("  {:<22} {:>16}", "model", mb(total as u64));
    for (name, bytes) in &tables {
        println!("    {:<24} {:>14}", name, mb(*bytes as u64));
    }
    Ok(())
}
