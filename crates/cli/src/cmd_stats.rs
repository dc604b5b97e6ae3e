//! `clrprof stats`: record counts, definitions and warnings; for a
//! `.nettrace` or `.gcdump`, what it holds (`stats_foreign`).

use crate::common::{print_json, thousands, LoadArgs};
use anyhow::{bail, Result};
use clrprof::format::{Error, Kind, LogStats, WarningKind};
use serde_json::json;

/// Arguments of `clrprof stats`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    load: LoadArgs,
    /// Print JSON instead of a table.
    /// An error is printed as `{"error": MESSAGE}` on standard output (exit status 1).
    #[arg(long)]
    json: bool,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let source = args.load.open()?;
    let data = source.bytes();
    let shown = args.load.shown().display().to_string();
    if clrprof::eventpipe::is_nettrace(data) {
        return crate::stats_foreign::trace(&shown, data, args.load.strict, args.json);
    }
    if clrprof::gcdump::is_gcdump(data) {
        return crate::stats_foreign::gcdump(&shown, data, args.json);
    }
    let stats = LogStats::compute(data, &args.load.chunk_options());
    let path = args.load.shown();
    if args.load.strict {
        if let Some(w) = stats.diagnostics.first() {
            bail!("{}: {}", path.display(), Error::from_warning(w));
        }
    }
    if args.json {
        let mut records = serde_json::Map::new();
        for k in Kind::ALL {
            records.insert(k.letter().to_string(), json!(stats.count(k)));
        }
        let mut by_kind = serde_json::Map::new();
        for (name, n) in WarningKind::NAMES.iter().zip(stats.diagnostics.counts_by_kind()) {
            if *n > 0 {
                by_kind.insert(name.to_string(), json!(n));
            }
        }
        let first: Vec<_> = stats
            .diagnostics
            .warnings()
            .iter()
            .take(10)
            .map(|w| json!({"line": w.line, "offset": w.offset, "message": w.kind.to_string()}))
            .collect();
        print_json(&json!({
            "file": path.display().to_string(),
            "file_bytes": stats.bytes,
            "lines": stats.lines,
            "records": records,
            "total_records": stats.total_records(),
            "skipped_lines": stats.skipped_lines,
            "types": stats.types,
            "functions": stats.functions,
            "modules": stats.modules,
            "stacks": stats.stacks,
            "warnings": {
                "total": stats.diagnostics.total(),
                "by_kind": by_kind,
                "first": first,
            },
        }))?;
        return Ok(());
    }
    print_table(&path.display().to_string(), &stats);
    Ok(())
}

fn print_table(path: &str, s: &LogStats) {
    println!("{path}");
    println!("  {:<22} {:>16}", "file bytes", thousands(s.bytes));
    println!("  {:<22} {:>16}", "lines", thousands(s.lines));
    println!("  {:<22} {:>16}", "records", thousands(s.total_records()));
    println!("  {:<22} {:>16}", "types defined", thousands(s.types));
    println!("  {:<22} {:>16}", "functions defined", thousands(s.functions));
    println!("  {:<22} {:>16}", "modules defined", thousands(s.modules));
    println!("  {:<22} {:>16}", "stacks defined", thousands(s.stacks));
    println!();
    println!("  {:<4} {:<28} {:>16}", "kind", "meaning", "records");
    for k in Kind::ALL {
        let n = s.count(k);
        if n > 0 {
            println!("  {:<4} {:<28} {:>16}", k.letter(), describe(k), thousands(n));
        }
    }
    if s.skipped_lines > 0 {
        println!("  {:<4} {:<28} {:>16}", "?", "skipped (unknown kind)", thousands(s.skipped_lines));
    }
    println!();
    println!("  warnings: {}", thousands(s.diagnostics.total()));
    for w in s.diagnostics.warnings().iter().take(10) {
        println!("    {w}");
    }
    if s.diagnostics.total() > 10 {
        println!("    ... and {} more", thousands(s.diagnostics.total() - 10));
    }
}

fn describe(k: Kind) -> &'static str {
    match k {
        Kind::Type => "type definitions",
        Kind::Function => "function definitions",
        Kind::Module => "module loads",
        Kind::Assembly => "assembly loads",
        Kind::Stack => "stack definitions",
        Kind::StackOld => "stack definitions (old)",
        Kind::Alloc => "allocations",
        Kind::AllocOld => "allocations (old)",
        Kind::Call => "calls",
        Kind::Tick => "ticks",
        Kind::Comment => "comments",
        Kind::GcBoundary => "GC starts and ends",
        Kind::GcCounts => "GC counts",
        Kind::Moved => "moved ranges",
        Kind::Survived => "surviving ranges",
        Kind::Finalizer => "finalizer queueings",
        Kind::HandleCreated => "handles created",
        Kind::HandleDestroyed => "handles destroyed",
        Kind::Root => "heap dump roots",
        Kind::Roots => "heap dump roots (old)",
        Kind::HeapObject => "heap dump objects",
        Kind::AssemblyD => "assembly records (d)",
    }
}
