//! `clrprof threads`: the threads of a log (the ids `--thread` takes), with
//! what each allocated and when.

use crate::common::{count, cut_json, keep, more_note, print_estimated_table, print_json, thousands, QueryArgs, RANGE_HEADER};
use anyhow::Result;
use clrprof::query::threads;

/// Arguments of `clrprof threads`.
///
/// JSON is an object `{"threads": [{"thread_id", "allocated": {"objects",
/// "bytes"}, "first_tick", "last_tick", "first_ms", "last_ms"}],
/// "threads_left_out"}`, most bytes first.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    query: QueryArgs,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let q = &args.query;
    let loaded = q.load_allocations("`threads`")?;
    let model = &loaded.model;
    let filter = q.filter(model)?;
    let mut rows = threads(model, &filter);
    if q.out.json {
        let mut v = serde_json::json!({ "threads": rows });
        cut_json(&mut v, "threads", q.limit());
        q.report_warnings(model);
        return print_json(&v);
    }
    let bytes: u64 = rows.iter().map(|r| r.allocated.bytes).sum();
    let objects: u64 = rows.iter().map(|r| r.allocated.objects).sum();
    println!(
        "{}: {}; {} bytes in {} allocated{}",
        q.load.shown().display(),
        count(rows.iter().filter(|r| r.thread_id.is_some()).count() as u64, "thread", "threads"),
        thousands(bytes),
        count(objects, "object", "objects"),
        if filter.is_all() { "" } else { " in the selection" }
    );
    let left_out = keep(&mut rows, q.limit());
    let opt = |v: Option<u32>| v.map_or_else(|| "-".to_string(), |t| t.to_string());
    let ms = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |m| format!("{m:.0}"));
    let ranges = rows.iter().any(|r| r.uncertainty.is_some());
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut row = vec![
                r.thread_id.map_or_else(|| "(none: `a` records)".to_string(), |t| t.to_string()),
                thousands(r.allocated.objects),
                thousands(r.allocated.bytes),
                opt(r.first_tick),
                ms(r.first_ms),
                opt(r.last_tick),
                ms(r.last_ms),
            ];
            if ranges {
                row.push(r.uncertainty.as_ref().map(|u| u.cell()).unwrap_or_default());
            }
            row
        })
        .collect();
    let mut header = vec!["thread", "objects", "bytes", "first tick", "first ms", "last tick", "last ms"];
    if ranges {
        header.push(RANGE_HEADER);
    }
    print_estimated_table(&header, &[1, 2], &table);
    if let Some(note) = more_note(left_out, "thread", "threads") {
        println!("{note}");
    }
    q.report_warnings(model);
    Ok(())
}
