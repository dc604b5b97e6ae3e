//! `clrprof modules` and `clrprof classes`: allocation per module and per
//! class, inclusive and exclusive.

use crate::cmd_functions::{figure_cells, print_heading, total_of, Sort, FIGURE_HEADER};
use crate::common::{keep, more_note, print_json, QueryArgs};
use anyhow::Result;
use clrprof::query::{by_class, by_module, GroupRow};

/// Arguments of `clrprof modules` and `clrprof classes`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub query: QueryArgs,
    /// Order by inclusive or exclusive bytes.
    #[arg(long, value_enum, default_value_t = Sort::Inclusive)]
    pub sort: Sort,
}

/// How functions are grouped.
#[derive(Clone, Copy, Debug)]
pub enum Grouping {
    /// By the module of each function.
    Module,
    /// By the class part of each function name.
    Class,
}

/// Runs the command.
pub fn run(args: Args, grouping: Grouping) -> Result<()> {
    let loaded = args.query.load_allocations("allocations by module or class")?;
    let model = &loaded.model;
    let filter = args.query.filter(model)?;
    let (rows, what) = match grouping {
        Grouping::Module => (by_module(model, &filter, args.sort.into()), "modules"),
        Grouping::Class => (by_class(model, &filter, args.sort.into()), "classes"),
    };
    let mut shown: Vec<&GroupRow> = rows.iter().collect();
    let left_out = keep(&mut shown, args.query.limit());
    if args.query.out.json {
        let mut v = serde_json::Map::new();
        v.insert(what.to_string(), serde_json::to_value(&shown)?);
        v.insert(format!("{what}_left_out"), left_out.into());
        print_json(&serde_json::Value::Object(v))?;
    } else {
        let total = total_of(rows.iter().map(|r| &r.figures));
        print_heading(&args.query.load.shown().display().to_string(), &total, rows.len(), what);
        let table: Vec<Vec<String>> = shown.iter().map(|r| figure_cells(&r.name, &r.figures, &total)).collect();
        let ranges: Vec<[Option<clrprof::query::Uncertainty>; 2]> = shown.iter().map(|r| [r.inclusive_range, r.exclusive_range]).collect();
        crate::cmd_functions::print_figures(FIGURE_HEADER[0], table, &ranges);
        let singular = match grouping {
            Grouping::Module => "module",
            Grouping::Class => "class",
        };
        if let Some(note) = more_note(left_out, singular, what) {
            println!("{note}");
        }
    }
    args.query.report_warnings(model);
    Ok(())
}
