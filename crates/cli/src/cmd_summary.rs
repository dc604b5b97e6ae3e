//! `clrprof summary`: CLRProfiler's Summary page.

use crate::common::{print_json, thousands, LoadArgs};
use crate::load::load;

use anyhow::Result;
use clrprof::query::{summary, Summary};

/// Arguments of `clrprof summary`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    load: LoadArgs,
    /// Files that continue LOG, loaded with it as one log: a collector's
    /// part followed by the agent's spool (`clrprof summary PART SPOOL`).
    #[arg(value_name = "MORE")]
    more: Vec<std::path::PathBuf>,
    /// Print JSON (the keys of CLRProfiler's Summary; null for "Unknown").
    /// An error is printed as `{"error": MESSAGE}` on standard output (exit status 1).
    #[arg(long)]
    json: bool,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let loaded = if args.more.is_empty() {
        load(&args.load, args.quiet)?
    } else {
        let mut pieces = vec![args.load.log.clone()];
        pieces.extend(args.more.iter().cloned());
        let source = clrprof::format::LogSource::from_bytes(crate::cmd_join::concatenate(&pieces)?);
        crate::load::load_source(&args.load, &source, args.quiet)?
    };
    let s = summary(&loaded.model);
    // Without allocation records (an attached recording, a dump file, a
    // log recorded with allocation logging off) the figures that come from
    // the simulated objects are not known: not 0 (`null` in the JSON).
    let unknown = clrprof::query::allocations_unknown(&loaded.model);
    // The allocated figures of a sampled trace rest on all its samples:
    // their 95% range.
    let samples = clrprof::query::estimates(&loaded.model).map(|e| e.samples);
    let range = samples.and_then(clrprof::query::Range95::of);
    if args.json {
        let mut v = serde_json::to_value(s)?;
        if let Some(o) = v.as_object_mut() {
            if let Some(why) = &unknown {
                o.insert("allocations_unknown".to_string(), serde_json::json!(why));
            }
            if let (Some(r), true) = (range, s.allocations_known) {
                let [lo, hi] = r.apply(s.allocated_bytes as f64);
                o.insert("allocated_bytes_range".to_string(), serde_json::json!([lo as u64, hi as u64]));
            }
        }
        return print_json(&v);
    }
    print_table(&args.load.shown().display().to_string(), &s, range);
    if let Some(why) = unknown {
        println!("  Allocations are unknown: {why}.");
    }
    if loaded.model.diagnostics().total() > 0 && !args.quiet {
        eprintln!(
            "clrprof: {} while reading; `clrprof stats` lists them",
            crate::common::count(loaded.model.diagnostics().total(), "warning", "warnings")
        );
    }
    Ok(())
}

fn show(v: Option<u64>) -> String {
    v.map_or_else(|| "Unknown".to_string(), thousands)
}

fn signed(v: i64) -> String {
    if v < 0 {
        format!("-{}", thousands(v.unsigned_abs()))
    } else {
        thousands(v as u64)
    }
}

fn print_table(path: &str, s: &Summary, range: Option<clrprof::query::Range95>) {
    println!("{path}");
    // Estimates (a trace's sampled allocations) say so in a third column;
    // the allocated bytes with the 95% range of all the samples.
    let mark = |v: String| if s.estimated && v != "Unknown" { format!("{v}  estimated") } else { v };
    let known = |v: u64| mark(show(s.allocations_known.then_some(v)));
    let allocated = match (known(s.allocated_bytes), range) {
        (v, Some(r)) if v.ends_with("  estimated") => format!("{v} {}", r.cell()),
        (v, _) => v,
    };
    let survivors = |v: u64| mark(show((s.allocations_known && s.survivors_known).then_some(v)));
    let rows: [(&str, String); 18] = [
        ("Allocated bytes", allocated),
        ("Relocated bytes", survivors(s.relocated_bytes)),
        ("Final heap bytes", survivors(s.final_heap_bytes)),
        ("Objects finalized", show(s.objects_finalized)),
        ("Critical objects finalized", show(s.critical_objects_finalized)),
        ("Gen 0 collections", signed(s.gen0_collections)),
        ("Gen 1 collections", signed(s.gen1_collections)),
        ("Gen 2 collections", signed(s.gen2_collections)),
        ("Induced collections", show(s.induced_collections)),
        ("Gen 0 heap bytes", show(s.gen0_heap_bytes)),
        ("Gen 1 heap bytes", show(s.gen1_heap_bytes)),
        ("Gen 2 heap bytes", show(s.gen2_heap_bytes)),
        ("Large object heap bytes", show(s.loh_bytes)),
        ("Handles created", show(s.handles_created)),
        ("Handles destroyed", show(s.handles_destroyed)),
        ("Handles surviving", show(s.handles_surviving)),
        ("Heap dumps", thousands(s.heap_dumps)),
        ("Comments", thousands(s.comments)),
    ];
    for (name, value) in rows {
        match value.split_once("  estimated") {
            Some((v, rest)) => println!("  {name:<28} {v:>16}  estimated{rest}"),
            None => println!("  {name:<28} {value:>16}"),
        }
    }
}
