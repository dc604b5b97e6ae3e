//! `clrprof diff`: allocation and final-heap differences between two logs,
//! and their last heap dumps per type when both have one.

use crate::common::{cut_json, keep, more_note, print_json, print_table, thousands, LoadArgs, OutputArgs};
use crate::load::load;
use anyhow::{bail, Result};
use clrprof::format::display_path;
use clrprof::query::{diff, DiffRow};
use std::path::PathBuf;

/// Arguments of `clrprof diff`.
#[derive(clap::Args)]
pub struct Args {
    /// The first log (A; `-` for standard input).
    pub a: PathBuf,
    /// The second log (B; `-` for standard input); differences are B
    /// minus A.
    pub b: PathBuf,
    #[command(flatten)]
    pub out: OutputArgs,
    /// Threads to parse with (default: all cores).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    if args.a.as_os_str() == "-" && args.b.as_os_str() == "-" {
        bail!("standard input (`-`) can be read once: give at most one of the two logs as `-`");
    }
    let open = |log: &PathBuf| LoadArgs { log: log.clone(), threads: args.threads, strict: false, decompress: Default::default() };
    let a = load(&open(&args.a), args.out.quiet)?;
    let b = load(&open(&args.b), args.out.quiet)?;
    let mut d = diff(&a.model, &b.model);
    let limit = args.out.limit();
    let (na, nb) = (display_path(&args.a).display().to_string(), display_path(&args.b).display().to_string());
    // Allocations a file does not have are unknown there: its sections
    // say so rather than "no difference".
    let unknown: Vec<String> = [(&a.model, &na), (&b.model, &nb)]
        .into_iter()
        .filter_map(|(m, n)| clrprof::query::allocations_unknown(m).map(|why| format!("{n}: {why}")))
        .collect();
    // The last heap dumps of both, per type, when both have one.
    let has_dump = |m: &clrprof::model::Model| !m.heap_dumps().dumps().is_empty();
    let dumps = match (has_dump(&a.model), has_dump(&b.model)) {
        (true, true) => Some(crate::dump_compare::compare((&a.model, &na), (&b.model, &nb), [None, None])?),
        _ => None,
    };
    if args.out.json {
        let mut v = serde_json::to_value(&d)?;
        for key in ["allocated_by_type", "final_heap_by_type", "functions_exclusive", "functions_inclusive"] {
            cut_json(&mut v, key, limit);
        }
        if let Some(o) = v.as_object_mut() {
            if !unknown.is_empty() {
                // Not compared: a file's unknown allocations are not 0.
                for key in ["allocated_by_type", "final_heap_by_type", "functions_exclusive", "functions_inclusive"] {
                    o.insert(key.into(), serde_json::Value::Null);
                }
                o.insert("allocations_unknown".into(), serde_json::json!(unknown));
            }
            if let Some(c) = &dumps {
                o.insert("dump_by_type".into(), serde_json::to_value(c)?);
            }
        }
        if dumps.is_some() {
            cut_json(&mut v["dump_by_type"], "types", limit);
        }
        return print_json(&v);
    }
    println!("B = {nb} minus A = {na}");
    for u in &unknown {
        println!("allocations unknown in {u}");
    }
    let sections: [(&str, &mut Vec<DiffRow>); 4] = [
        ("allocated by type", &mut d.allocated_by_type),
        ("final heap by type", &mut d.final_heap_by_type),
        ("allocated by function, exclusive", &mut d.functions_exclusive),
        ("allocated by function, inclusive", &mut d.functions_inclusive),
    ];
    for (title, rows) in sections {
        let left_out = keep(rows, limit);
        println!();
        println!("{title}:");
        if !unknown.is_empty() {
            println!("  not compared: allocations unknown (above)");
            continue;
        }
        if rows.is_empty() {
            println!("  no difference");
            continue;
        }
        // Estimates (a trace's samples): the change's 95% range, and
        // whether the sampling explains the change.
        let estimated = rows.iter().any(|r| r.ranges.is_some());
        let table: Vec<Vec<String>> = rows
            .iter()
            .map(|r| {
                let mut row = vec![
                    r.name.clone(),
                    signed(r.diff_bytes),
                    thousands(r.a_bytes),
                    thousands(r.b_bytes),
                    signed(r.diff_count),
                    thousands(r.a_count),
                    thousands(r.b_count),
                ];
                if estimated {
                    row.push(r.ranges.as_ref().map_or_else(String::new, |g| {
                        let [lo, hi] = g.diff_bytes_range;
                        format!("{} to {}{}", signed(lo), signed(hi), if g.significant { "" } else { " (noise)" })
                    }));
                }
                row
            })
            .collect();
        let mut header = vec!["name", "bytes B-A", "bytes A", "bytes B", "objects B-A", "objects A", "objects B"];
        if estimated {
            header.push("bytes B-A 95% range");
        }
        print_table(&header, &table);
        if estimated {
            let noise = rows.iter().filter(|r| r.ranges.as_ref().is_some_and(|g| !g.significant)).count();
            if noise > 0 {
                println!(
                    "  {} whose change lies within the sampling's 95% range (\"noise\": not told apart from no change)",
                    crate::common::count(noise as u64, "row", "rows")
                );
            }
        }
        if let Some(note) = more_note(left_out, "row", "rows") {
            println!("{note}");
        }
    }
    if let Some(c) = &dumps {
        println!();
        println!("last heap dump by type (objects cannot be matched across files):");
        crate::dump_compare::print_types(c, limit);
    } else if has_dump(&a.model) || has_dump(&b.model) {
        println!();
        println!("heap dumps: only {} has one", if has_dump(&a.model) { &na } else { &nb });
    }
    Ok(())
}

fn signed(v: i64) -> String {
    if v < 0 {
        format!("-{}", thousands(v.unsigned_abs()))
    } else {
        format!("+{}", thousands(v as u64))
    }
}
