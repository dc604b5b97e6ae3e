//! `clrprof dumps`: the heap dumps of a log, one line each.

use crate::common::{cut_json, more_note, print_json, print_table, thousands, QueryArgs};
use anyhow::{bail, Result};
use clrprof::query::dumps::list;

/// Arguments of `clrprof dumps`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    query: QueryArgs,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let q = &args.query;
    if !q.threads.is_empty() {
        bail!("--thread does not apply to heap dumps (a dump is the whole heap)");
    }
    let loaded = q.load()?;
    let model = &loaded.model;
    let filter = q.filter(model)?;
    let dumps = model.heap_dumps().dumps();
    let mut rows: Vec<_> =
        list(model).into_iter().filter(|i| dumps.get(i.index.0 as usize).is_some_and(|d| filter.has_tick(d.tick))).collect();
    if q.out.json {
        let mut v = serde_json::json!({ "dumps": rows });
        cut_json(&mut v, "dumps", q.limit());
        return print_json(&v);
    }
    let left_out = crate::common::keep(&mut rows, q.limit());
    if let Some(line) = crate::common::incomplete_line(model) {
        println!("{line}");
    }
    if rows.is_empty() {
        println!("no heap dumps");
    } else {
        let r_roots = rows.iter().any(|i| i.root_kinds.unspecified + i.root_kinds.unknown > 0);
        let mut header = vec!["dump", "time (ms)", "counted", "objects", "bytes", "roots", "stack", "finalizer", "handle", "other"];
        if r_roots {
            header.extend(["unknown", "r roots"]);
        }
        header.extend(["pinning", "weak"]);
        let table: Vec<Vec<String>> = rows
            .iter()
            .map(|i| {
                let k = &i.root_kinds;
                let mut r = vec![
                    i.index.to_string(),
                    i.time_ms.map_or_else(|| "?".into(), thousands),
                    if i.counted { "yes" } else { "no" }.into(),
                    thousands(i.objects),
                    thousands(i.bytes),
                    thousands(i.roots),
                    thousands(k.stack),
                    thousands(k.finalizer),
                    thousands(k.handle),
                    thousands(k.other),
                ];
                if r_roots {
                    r.extend([thousands(k.unknown), thousands(k.unspecified)]);
                }
                r.extend([thousands(i.root_flags.pinning), thousands(i.root_flags.weak)]);
                r
            })
            .collect();
        print_table(&header, &table);
        if let Some(note) = more_note(left_out, "dump", "dumps") {
            println!("{note}");
        }
    }
    q.report_warnings(model);
    Ok(())
}
