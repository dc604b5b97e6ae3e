//! `clrprof diff`: allocation and final-heap differences between two logs.

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
    if args.out.json {
        let mut v = serde_json::to_value(&d)?;
        for key in ["allocated_by_type", "final_heap_by_type", "functions_exclusive", "functions_inclusive"] {
            cut_json(&mut v, key, limit);
        }
        return print_json(&v);
    }
    println!("B = {} minus A = {}", display_path(&args.b).display(), display_path(&args.a).display());
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
        if rows.is_empty() {
            println!("  no difference");
            continue;
        }
        let table: Vec<Vec<String>> = rows
            .iter()
            .map(|r| {
                vec![
                    r.name.clone(),
                    signed(r.diff_bytes),
                    thousands(r.a_bytes),
                    thousands(r.b_bytes),
                    signed(r.diff_count),
                    thousands(r.a_count),
                    thousands(r.b_count),
                ]
            })
            .collect();
        print_table(&["name", "bytes B-A", "bytes A", "bytes B", "objects B-A", "objects A", "objects B"], &table);
        if let Some(note) = more_note(left_out, "row", "rows") {
            println!("{note}");
        }
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
