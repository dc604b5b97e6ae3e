//! `clrprof who`: the functions and stacks that allocated a type.

use crate::cmd_functions::{figure_cells, percent, Sort, FIGURE_HEADER};
use crate::common::{print_json, print_table, thousands, QueryArgs};
use anyhow::Result;
use clrprof::query::who::stack_line;
use clrprof::query::{who_allocated, Figures, TypeMatch};

/// Arguments of `clrprof who`.
#[derive(clap::Args)]
pub struct Args {
    /// The type name, or a part of it (see `--exact`).
    #[arg(value_name = "TYPE")]
    pub pattern: String,
    #[command(flatten)]
    pub query: QueryArgs,
    /// Match the whole type name instead of a part of it.
    #[arg(long)]
    pub exact: bool,
    /// Order functions by inclusive or exclusive bytes.
    #[arg(long, value_enum, default_value_t = Sort::Inclusive)]
    pub sort: Sort,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let loaded = args.query.load()?;
    let model = &loaded.model;
    let filter = args.query.filter(model)?;
    let pattern =
        if args.exact { TypeMatch::Exact(args.pattern.clone()) } else { TypeMatch::Contains(args.pattern.clone()) };
    let mut w = who_allocated(model, &filter, &pattern, args.sort.into());
    let limit = args.query.limit();
    if args.query.out.json {
        w.types.truncate(limit);
        w.functions.truncate(limit);
        w.stacks.truncate(limit);
        print_json(&serde_json::to_value(&w)?)?;
        args.query.report_warnings(model);
        return Ok(());
    }
    println!(
        "{}: {} bytes in {} objects of {} type(s) matching {:?}",
        args.query.load.shown().display(),
        thousands(w.bytes),
        thousands(w.count),
        w.types.len(),
        args.pattern
    );
    if w.count == 0 {
        args.query.report_warnings(model);
        return Ok(());
    }
    println!();
    let rows: Vec<Vec<String>> = w
        .types
        .iter()
        .take(limit)
        .map(|t| vec![t.name.clone(), thousands(t.bytes), percent(t.bytes, w.bytes), thousands(t.count)])
        .collect();
    print_table(&["type", "bytes", "%", "objects"], &rows);
    println!();
    let total = Figures { exclusive_bytes: w.bytes, exclusive_count: w.count, ..Figures::default() };
    let rows: Vec<Vec<String>> = w.functions.iter().take(limit).map(|f| figure_cells(&f.name, &f.figures, &total)).collect();
    let mut header = FIGURE_HEADER;
    header[0] = "function";
    print_table(&header, &rows);
    println!();
    println!("stacks (outermost first):");
    for s in w.stacks.iter().take(limit) {
        println!(
            "  {:>14} bytes {:>10} objects  {} -> {}",
            thousands(s.bytes),
            thousands(s.count),
            stack_line(&s.frames),
            s.type_name
        );
    }
    args.query.report_warnings(model);
    Ok(())
}
