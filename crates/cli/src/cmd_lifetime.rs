//! `clrprof lifetime`: per type, objects reclaimed in each generation and
//! alive at the end (Visual Studio's Object Lifetime view).

use crate::common::{cut_json, keep, more_note, print_estimated_table, print_json, thousands, QueryArgs, RANGE_HEADER};
use anyhow::Result;
use clrprof::query::{lifetime, LifetimeRow, Tally};

/// Arguments of `clrprof lifetime`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    query: QueryArgs,
    /// Show object counts instead of bytes in the table.
    #[arg(long)]
    objects: bool,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let q = &args.query;
    let loaded = q.load_allocations("`lifetime`")?;
    let model = &loaded.model;
    let filter = q.filter(model)?;
    let mut l = lifetime(model, &filter);
    if q.out.json {
        let mut v = serde_json::to_value(&l)?;
        cut_json(&mut v, "rows", q.limit());
        return print_json(&v);
    }
    let left_out = keep(&mut l.rows, q.limit());
    let show_erased = !l.total.erased.is_empty();
    let show_untracked = !l.total.untracked.is_empty();
    let show_unknown = !l.total.unknown.is_empty();
    // A sampled trace: the allocated figure's 95% range (every column's is
    // in the JSON).
    let show_ranges = !l.total.ranges.is_empty();
    let cell = |t: Tally| if args.objects { thousands(t.objects) } else { thousands(t.bytes) };
    let line = |r: &LifetimeRow| {
        let mut v = vec![r.name.clone(), cell(r.allocated), cell(r.gen0), cell(r.gen1), cell(r.gen2), cell(r.loh)];
        if show_erased {
            v.push(cell(r.erased));
        }
        v.push(cell(r.alive_at_end));
        if show_untracked {
            v.push(cell(r.untracked));
        }
        if show_unknown {
            v.push(cell(r.unknown));
        }
        if show_ranges {
            v.push(r.ranges.get("allocated").map(|u| u.cell()).unwrap_or_default());
        }
        v
    };
    let mut header = vec!["type", "allocated", "gen 0", "gen 1", "gen 2", "LOH"];
    if show_erased {
        header.push("erased");
    }
    header.push("alive at end");
    if show_untracked {
        header.push("under 12 B");
    }
    if show_unknown {
        // Neither reclaimed nor alive: see `clrprof survivors`.
        header.push("unknown");
    }
    let mut rows: Vec<Vec<String>> = l.rows.iter().map(line).collect();
    rows.push(line(&l.total));
    println!(
        "{} by what became of them ({}; reclaimed at gen 0/1/2/LOH collections):",
        if args.objects { "Objects" } else { "Bytes" },
        if filter.is_all() { "every object".to_string() } else { "objects allocated in the window".to_string() }
    );
    let estimates: Vec<usize> = (1..header.len()).collect();
    let range_header = format!("allocated {RANGE_HEADER}");
    if show_ranges {
        header.push(&range_header);
    }
    print_estimated_table(&header, &estimates, &rows);
    if let Some(note) = more_note(left_out, "type", "types") {
        println!("{note}");
    }
    q.report_warnings(model);
    Ok(())
}
