//! `clrprof survivors`: objects allocated in a window and still alive later
//! (the leak question), by type and by allocating stack.

use crate::common::{
    cut_json, keep, more, more_note, ms_text as ms, print_estimated_table, print_json, thousands, tick_for, QueryArgs, RANGE_HEADER,
};
use anyhow::Result;
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
    let loaded = q.load_allocations("`survivors`")?;
    let model = &loaded.model;
    let filter = q.filter(model)?;
    let alive_at = match args.alive_at {
        Some(ms) => Some(tick_for(model, "--alive-at", ms)?),
        None => None,
    };
    let mut s = survivors(model, &filter, alive_at, q.limit());
    if q.out.json {
        let left_out = s.stacks_with_survivors.saturating_sub(s.by_stack.len());
        let mut v = serde_json::to_value(&s)?;
        cut_json(&mut v, "by_type", q.limit());
        if let Some(o) = v.as_object_mut() {
            o.insert("by_stack_left_out".into(), left_out.into());
        }
        return print_json(&v);
    }
    let types_left_out = keep(&mut s.by_type, q.limit());
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
    if let Some(u) = &s.surviving_range {
        println!("  (estimates: the survivors rest on {} samples, 95% range {})", thousands(u.samples), u.cell());
    }
    let any_unknown = !s.unknown.is_empty();
    if any_unknown {
        println!(
            "Unknown (the GCs' reports do not say what became of them): {} objects, {} bytes; neither alive nor dead",
            thousands(s.unknown.objects),
            thousands(s.unknown.bytes)
        );
    }
    println!();
    let ranges = s.by_type.iter().any(|t| t.uncertainty.is_some());
    let rows: Vec<Vec<String>> = s
        .by_type
        .iter()
        .map(|t| {
            let mut row = vec![
                t.name.clone(),
                thousands(t.surviving.bytes),
                thousands(t.surviving.objects),
                thousands(t.allocated.objects),
                format!("{:.1}%", pct(t.surviving.objects, t.allocated.objects)),
            ];
            if any_unknown {
                row.push(thousands(t.unknown.objects));
            }
            if ranges {
                row.push(t.uncertainty.as_ref().map(|u| u.cell()).unwrap_or_default());
            }
            row
        })
        .collect();
    let mut header = vec!["type", "surviving bytes", "surviving objects", "allocated objects", "survival"];
    let mut estimated = vec![1, 2, 3];
    if any_unknown {
        header.push("unknown objects");
        estimated.push(header.len() - 1);
    }
    if ranges {
        header.push(RANGE_HEADER);
    }
    print_estimated_table(&header, &estimated, &rows);
    if let Some(note) = more_note(types_left_out, "type", "types") {
        println!("{note}");
    }
    println!();
    println!("By allocating stack ({} of {} stacks with survivors; innermost frame first):", s.by_stack.len(), s.stacks_with_survivors);
    let shown = if args.frames == 0 { usize::MAX } else { args.frames };
    // A sampled trace: each stack's figures are estimates, with their range.
    let est = if crate::common::estimated() { crate::common::EST } else { "" };
    for st in &s.by_stack {
        let range = st.uncertainty.as_ref().map(|u| format!(" {}", u.cell())).unwrap_or_default();
        println!(
            "  {} bytes, {}{est}{range}: {} (stack {})",
            thousands(st.surviving.bytes),
            crate::common::count(st.surviving.objects, "object", "objects"),
            st.type_name,
            st.stack
        );
        for f in st.frames.iter().take(shown) {
            println!("      {f}");
        }
        if st.frames.len() > shown {
            println!("      ... {}", more((st.frames.len() - shown) as u64, "frame", "frames"));
        }
    }
    q.report_warnings(model);
    Ok(())
}
