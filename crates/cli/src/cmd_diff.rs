//! `clrprof diff`: allocation and final-heap differences between two logs.

use crate::common::{print_json, print_table, thousands, LoadArgs, OutputArgs};
use crate::load::load;
use anyhow::Result;
use clrprof::query::{diff, DiffRow};
use std::path::PathBuf;

/// Arguments of `clrprof diff`.
#[derive(clap::Args)]
pub struct Args {
    /// The first log (A).
    pub a: PathBuf,
    /// The second log (B); differences are B minus A.
    pub b: PathBuf,
    #[command(flatten)]
    pub out: OutputArgs,
    /// Threads to parse with (default: all cores).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let open = |log: &PathBuf| LoadArgs { log: log.clone(), threads: args.threads, strict: false };
    let a = load(&open(&args.a), args.out.quiet)?;
    let b = load(&open(&args.b), args.out.quiet)?;
    let mut d = diff(&a.model, &b.model);
    let limit = if args.out.top == 0 { usize::MAX } else { args.out.top };
    for list in [
        &mut d.allocated_by_type,
        &mut d.final_heap_by_type,
        &mut d.functions_exclusive,
        &mut d.functions_inclusive,
    ] {
        list.truncate(limit);
    }
    if args.out.json {
        return print_json(&serde_json::to_value(&d)?);
    }
    println!("B = {} minus A = {}", args.b.display(), args.a.display());
    let sections: [(&str, &Vec<DiffRow>); 4] = [
        ("allocated by type", &d.allocated_by_type),
        ("final heap by type", &d.final_heap_by_type),
        ("allocated by function, exclusive", &d.functions_exclusive),
        ("allocated by function, inclusive", &d.functions_inclusive),
    ];
    for (title, rows) in sections {
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
