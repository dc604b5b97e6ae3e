//! `clrprof survivors`: objects allocated in a window and still alive later
//! (the leak question), by type and by allocating stack.

use crate::common::{print_json, print_table, thousands, QueryArgs};
use anyhow::{bail, Result};
use clrprof::query::survivors;

/// Arguments of `clrprof survivors`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    query: QueryArgs,
    /// The time the objects must still be alive at (milliseconds; default:
    /// the end of the log).
    #[arg(long, value_name = "MS")]
    alive_at: Option<f64>,
    /// Frames shown per stack in the table (0: all).
    #[arg(long, default_value_t = 6)]
    frames: usize,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let q = &args.query;
    let loaded = q.load()?;
    let model = &loaded.model;
    let filter = q.filter(model)?;
    let alive_at = match args.alive_at {
        Some(ms) if !ms.is_finite() => bail!("--alive-at must be a number of milliseconds"),
        Some(ms) => Some(model.time().tick_at(ms / 1000.0)),
        None => None,
    };
    let mut s = survivors(model, &filter, alive_at, q.limit());
    s.by_type.truncate(q.limit());
    if q.out.json {
        return print_json(&serde_json::to_value(&s)?);
    }
    let pct = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 * 100.0 / b as f64 };
    println!(
        "Allocated in the window: {} objects, {} bytes; alive at {}: {} objects ({:.1}%), {} bytes ({:.1}%)",
        thousands(s.allocated.objects),
        thousands(s.allocated.bytes),
        match s.alive_at_tick {
            Some(_) => format!("{} ms", ms(s.alive_at_ms)),
            None => format!("the end ({} ms)", ms(s.alive_at_ms)),
        },
        thousands(s.surviving.objects),
        pct(s.surviving.objects, s.allocated.objects),
        thousands(s.surviving.bytes),
        pct(s.surviving.bytes, s.allocated.bytes),
    );
    println!();
    let rows: Vec<Vec<String>> = s
        .by_type
        .iter()
        .map(|t| {
            vec![
                t.name.clone(),
                thousands(t.surviving.bytes),
                thousands(t.surviving.objects),
                thousands(t.allocated.objects),
                format!("{:.1}%", pct(t.surviving.objects, t.allocated.objects)),
            ]
        })
        .collect();
    print_table(&["type", "surviving bytes", "surviving objects", "allocated objects", "survival"], &rows);
    println!();
    println!(
        "By allocating stack ({} of {} stacks with survivors; innermost frame first):",
        s.by_stack.len(),
        s.stacks_with_survivors
    );
    let shown = if args.frames == 0 { usize::MAX } else { args.frames };
    for st in &s.by_stack {
        println!(
            "  {} bytes, {} objects: {} (stack {})",
            thousands(st.surviving.bytes),
            thousands(st.surviving.objects),
            st.type_name,
            st.stack
        );
        for f in st.frames.iter().take(shown) {
            println!("      {f}");
        }
        if st.frames.len() > shown {
            println!("      ... {} more", st.frames.len() - shown);
        }
    }
    q.report_warnings(model);
    Ok(())
}

/// Milliseconds for display: at most three decimals, no trailing zeros.
fn ms(v: f64) -> String {
    let r = (v * 1000.0).round() / 1000.0;
    format!("{r}")
}
