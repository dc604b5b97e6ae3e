//! `clrprof functions`: allocation per function, inclusive and exclusive
//! (Visual Studio's allocation view).

use crate::common::{function_labels, keep, more_note, print_estimated_table, print_json, thousands, QueryArgs, RANGE_HEADER};
use anyhow::Result;
use clrprof::query::{by_function, Figures, FunctionRow, SortBy, Uncertainty};

/// Which figure orders a list.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default)]
pub enum Sort {
    /// Inclusive bytes (the function or anything it called allocated them).
    #[default]
    Inclusive,
    /// Exclusive bytes (the function allocated them itself).
    Exclusive,
}

impl From<Sort> for SortBy {
    fn from(s: Sort) -> SortBy {
        match s {
            Sort::Inclusive => SortBy::Inclusive,
            Sort::Exclusive => SortBy::Exclusive,
        }
    }
}

/// Arguments of `clrprof functions`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub query: QueryArgs,
    /// Order by inclusive or exclusive bytes.
    #[arg(long, value_enum, default_value_t = Sort::Inclusive)]
    pub sort: Sort,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let loaded = args.query.load_allocations("`functions`")?;
    let model = &loaded.model;
    let filter = args.query.filter(model)?;
    let rows = by_function(model, &filter, args.sort.into());
    let mut shown: Vec<&FunctionRow> = rows.iter().collect();
    let left_out = keep(&mut shown, args.query.limit());
    if args.query.out.json {
        print_json(&serde_json::json!({ "functions": shown, "functions_left_out": left_out }))?;
    } else {
        let total = total_of(rows.iter().map(|r| &r.figures));
        print_heading(&args.query.load.shown().display().to_string(), &total, rows.len(), "functions");
        let names = labels(&rows);
        let table: Vec<Vec<String>> =
            shown.iter().zip(&names).map(|(r, name)| figure_cells(name, &r.figures, &total)).collect();
        let ranges: Vec<[Option<Uncertainty>; 2]> = shown.iter().map(|r| [r.inclusive_range, r.exclusive_range]).collect();
        print_figures("name", table, &ranges);
        if let Some(note) = more_note(left_out, "function", "functions") {
            println!("{note}");
        }
    }
    args.query.report_warnings(model);
    Ok(())
}

/// The functions' names for a table: overloads that share a name get their
/// parameters (see [`function_labels`]).
pub fn labels(rows: &[FunctionRow]) -> Vec<String> {
    let pairs: Vec<(&str, &str)> = rows.iter().map(|r| (r.name.as_str(), r.signature.as_str())).collect();
    function_labels(&pairs)
}

/// The columns of a figures table.
pub const FIGURE_HEADER: [&str; 7] =
    ["name", "incl bytes", "incl %", "incl objects", "excl bytes", "excl %", "excl objects"];

/// The columns of [`FIGURE_HEADER`] that a sampled trace estimates.
pub const FIGURE_ESTIMATES: [usize; 4] = [1, 3, 4, 6];

/// Prints a figures table (rows of [`figure_cells`], `first` the first
/// column's header). With `ranges` (a sampled trace; inclusive and
/// exclusive per row), two columns give each figure group's 95% range.
pub fn print_figures(first: &str, mut table: Vec<Vec<String>>, ranges: &[[Option<Uncertainty>; 2]]) {
    let mut header: Vec<String> = FIGURE_HEADER.iter().map(|h| h.to_string()).collect();
    header[0] = first.to_string();
    if ranges.iter().flatten().any(Option::is_some) {
        header.push(format!("incl {RANGE_HEADER}"));
        header.push(format!("excl {RANGE_HEADER}"));
        for (row, r) in table.iter_mut().zip(ranges) {
            row.extend(r.iter().map(|u| u.as_ref().map(|u| u.cell()).unwrap_or_default()));
        }
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    print_estimated_table(&header, &FIGURE_ESTIMATES, &table);
}

/// Totals: the exclusive figures add up to everything allocated.
pub fn total_of<'a>(rows: impl Iterator<Item = &'a Figures>) -> Figures {
    let mut t = Figures::default();
    for f in rows {
        t.exclusive_bytes = t.exclusive_bytes.saturating_add(f.exclusive_bytes);
        t.exclusive_count += f.exclusive_count;
    }
    t
}

/// A percentage of the total bytes, one decimal.
pub fn percent(part: u64, total: u64) -> String {
    if total == 0 {
        "-".to_string()
    } else {
        format!("{:.1}", part as f64 * 100.0 / total as f64)
    }
}

/// One table line.
pub fn figure_cells(name: &str, f: &Figures, total: &Figures) -> Vec<String> {
    vec![
        name.to_string(),
        thousands(f.inclusive_bytes),
        percent(f.inclusive_bytes, total.exclusive_bytes),
        thousands(f.inclusive_count),
        thousands(f.exclusive_bytes),
        percent(f.exclusive_bytes, total.exclusive_bytes),
        thousands(f.exclusive_count),
    ]
}

/// The line above a table.
pub fn print_heading(path: &str, total: &Figures, rows: usize, what: &str) {
    println!(
        "{path}: {} bytes in {} objects allocated, {} {what}",
        thousands(total.exclusive_bytes),
        thousands(total.exclusive_count),
        thousands(rows as u64)
    );
}
