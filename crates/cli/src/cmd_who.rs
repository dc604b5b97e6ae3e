//! `clrprof who`: the functions and stacks that allocated a type.

use crate::cmd_functions::{figure_cells, labels, percent, print_figures, Sort};
use crate::common::{cut_json, keep, more_note, print_estimated_table, print_json, thousands, QueryArgs, RANGE_HEADER};
use anyhow::{bail, Result};
use clrprof::model::Model;
use clrprof::query::who::stack_line;
use clrprof::query::{who_allocated, Figures, TypeMatch};

/// Arguments of `clrprof who`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub query: QueryArgs,
    /// The type name, or a part of it (see `--exact`).
    #[arg(value_name = "TYPE")]
    pub pattern: String,
    /// Match the whole type name instead of a part of it.
    #[arg(long)]
    pub exact: bool,
    /// Order functions by inclusive or exclusive bytes.
    #[arg(long, value_enum, default_value_t = Sort::Inclusive)]
    pub sort: Sort,
}

/// Takes `clrprof who TYPE LOG`, the order of earlier versions, when it
/// cannot be meant otherwise: the first argument is not a file (nor `-`)
/// and the second is one. Says so on standard error.
fn old_order(args: &mut Args) {
    let log = &args.query.load.log;
    if log.as_os_str() == "-" || log.exists() || !std::path::Path::new(&args.pattern).is_file() {
        return;
    }
    let Some(ty) = log.to_str().map(str::to_owned) else { return };
    eprintln!(
        "clrprof: note: `clrprof who TYPE LOG` is the old order; taken as `clrprof who {} {ty}` \
         (the log comes first, as in every command)",
        args.pattern
    );
    let file = std::mem::replace(&mut args.pattern, ty);
    args.query.load.log = std::path::PathBuf::from(file);
}

/// Runs the command.
pub fn run(mut args: Args) -> Result<()> {
    old_order(&mut args);
    let loaded = args.query.load_allocations("`who`")?;
    let model = &loaded.model;
    let filter = args.query.filter(model)?;
    let pattern =
        if args.exact { TypeMatch::Exact(args.pattern.clone()) } else { TypeMatch::Contains(args.pattern.clone()) };
    let mut w = who_allocated(model, &filter, &pattern, args.sort.into());
    if w.types.is_empty() && !model.types().iter().any(|(id, _)| pattern.matches(&model.type_name(id))) {
        args.query.report_warnings(model);
        let close = close_names(model, &args.pattern, 5);
        let what = if args.exact { "named" } else { "whose name contains" };
        if close.is_empty() {
            bail!("no type {what} {:?} in {}", args.pattern, args.query.load.shown().display());
        }
        bail!(
            "no type {what} {:?} in {}; close names: {}",
            args.pattern,
            args.query.load.shown().display(),
            close.join(", ")
        );
    }
    let limit = args.query.limit();
    if args.query.out.json {
        let mut v = serde_json::to_value(&w)?;
        for key in ["types", "functions", "stacks"] {
            cut_json(&mut v, key, limit);
        }
        print_json(&v)?;
        args.query.report_warnings(model);
        return Ok(());
    }
    println!(
        "{}: {} bytes in {} objects of {} matching {:?}",
        args.query.load.shown().display(),
        thousands(w.bytes),
        thousands(w.count),
        crate::common::count(w.types.len() as u64, "type", "types"),
        args.pattern
    );
    if w.count == 0 {
        println!("(the matching types exist, but none of their objects was allocated in the selected part of the log)");
        args.query.report_warnings(model);
        return Ok(());
    }
    println!();
    let names = labels(&w.functions);
    let types_left_out = keep(&mut w.types, limit);
    let functions_left_out = keep(&mut w.functions, limit);
    let stacks_left_out = keep(&mut w.stacks, limit);
    let rows: Vec<Vec<String>> = w
        .types
        .iter()
        .map(|t| {
            let mut row = vec![t.name.clone(), thousands(t.bytes), percent(t.bytes, w.bytes), thousands(t.count)];
            if let Some(u) = &t.uncertainty {
                row.push(u.cell());
            }
            row
        })
        .collect();
    let mut header = vec!["type", "bytes", "%", "objects"];
    if w.types.iter().any(|t| t.uncertainty.is_some()) {
        header.push(RANGE_HEADER);
    }
    print_estimated_table(&header, &[1, 3], &rows);
    if let Some(note) = more_note(types_left_out, "type", "types") {
        println!("{note}");
    }
    println!();
    let total = Figures { exclusive_bytes: w.bytes, exclusive_count: w.count, ..Figures::default() };
    let rows: Vec<Vec<String>> =
        w.functions.iter().zip(&names).map(|(f, name)| figure_cells(name, &f.figures, &total)).collect();
    let ranges: Vec<[Option<clrprof::query::Uncertainty>; 2]> =
        w.functions.iter().map(|f| [f.inclusive_range, f.exclusive_range]).collect();
    print_figures("function", rows, &ranges);
    if let Some(note) = more_note(functions_left_out, "function", "functions") {
        println!("{note}");
    }
    println!();
    println!("stacks (outermost first):");
    let est = if crate::common::estimated() { crate::common::EST } else { "" };
    for s in &w.stacks {
        let range = s.uncertainty.as_ref().map(|u| format!(" {}", u.cell())).unwrap_or_default();
        println!(
            "  {:>14} bytes{est} {:>10} objects{est}{range}  {} -> {}",
            thousands(s.bytes),
            thousands(s.count),
            stack_line(&s.frames),
            s.type_name
        );
    }
    if let Some(note) = more_note(stacks_left_out, "stack", "stacks") {
        println!("  {note}");
    }
    args.query.report_warnings(model);
    Ok(())
}

/// Up to `n` type names close to `pattern`, closest first: the name in
/// another case, names that contain it in another case, then names spelt
/// alike (Jaro-Winkler similarity of at least 0.8 to the whole name or to
/// the part after the last dot).
fn close_names(model: &Model, pattern: &str, n: usize) -> Vec<String> {
    let lower = pattern.to_lowercase();
    let mut scored: Vec<(f64, String)> = Vec::new();
    for (id, _) in model.types().iter() {
        let name = model.type_name(id).into_owned();
        let short = name.rsplit(['.', '+']).next().unwrap_or(&name).to_string();
        let (long, short) = (name.to_lowercase(), short.to_lowercase());
        let near = strsim::jaro_winkler(&lower, &long).max(strsim::jaro_winkler(&lower, &short));
        // Another case of the whole name or its last part first, then names
        // containing the text in another case, then names spelt alike.
        let score = if short == lower || long == lower {
            3.0
        } else if long.contains(&lower) {
            2.0 + near
        } else {
            near
        };
        if score >= 0.8 {
            scored.push((score, name));
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(n).map(|(_, name)| name).collect()
}
