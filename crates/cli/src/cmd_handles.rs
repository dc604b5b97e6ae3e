//! `clrprof handles`: GC handles created, destroyed and surviving, by the
//! stack that created them.

use crate::cmd_types::print_with_text;
use crate::common::{cut_json, more, more_note, print_json, thousands, QueryArgs};
use anyhow::Result;
use clrprof::query::{handles_by_stack, HandleGroup};

/// Arguments of `clrprof handles`.
///
/// Stacks are shown leaf (innermost function) first. JSON is an object
/// `{"created", "destroyed", "surviving", "groups": [...], "groups_left_out"}`
/// with every group unless `--top` is given. `--from`/`--to`/`--thread` keep the
/// `h` and `j` records of that time and thread.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    query: QueryArgs,
    /// Frames of each stack to show in the table (0: all).
    #[arg(long, default_value_t = 4)]
    depth: usize,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let loaded = args.query.load()?;
    let model = &loaded.model;
    let filter = args.query.filter(model)?;
    let r = handles_by_stack(model, &filter);
    if args.query.out.json {
        let mut v = serde_json::to_value(&r)?;
        cut_json(&mut v, "groups", args.query.limit());
        return print_json(&v);
    }
    println!(
        "{}: handles: {} created, {} destroyed, {} surviving; {} creating stacks (leaf first)",
        args.query.load.shown().display(),
        thousands(r.created),
        thousands(r.destroyed),
        thousands(r.surviving),
        thousands(r.groups.iter().filter(|g| g.stack_id.is_some()).count() as u64)
    );
    let rows: Vec<Vec<String>> = r
        .groups
        .iter()
        .take(args.query.limit())
        .map(|g| {
            vec![
                thousands(g.created),
                thousands(g.destroyed),
                thousands(g.surviving),
                object_types(g),
                stack(g, args.depth),
            ]
        })
        .collect();
    print_with_text(&["created", "destroyed", "surviving", "object type", "stack"], &rows, 3);
    if let Some(note) = more_note(r.groups.len() - rows.len(), "stack", "stacks") {
        println!("{note}");
    }
    args.query.report_warnings(model);
    Ok(())
}

fn object_types(g: &HandleGroup) -> String {
    match g.object_types.first() {
        None if g.null_objects == g.created && g.created > 0 => "(null)".to_string(),
        None => "-".to_string(),
        Some(t) if g.object_types.len() == 1 => t.name.clone(),
        Some(t) => format!("{} +{}", t.name, g.object_types.len() - 1),
    }
}

fn stack(g: &HandleGroup, depth: usize) -> String {
    let Some(id) = g.stack_id else { return "(j records naming no live handle)".to_string() };
    if !g.stack_defined {
        return format!("(stack {id} not defined)");
    }
    if g.frames.is_empty() {
        return format!("(stack {id}: no frames)");
    }
    let n = if depth == 0 { g.frames.len() } else { depth.min(g.frames.len()) };
    let mut s = g.frames[..n].join(" <- ");
    if n < g.frames.len() {
        s.push_str(&format!(" <- ... ({})", more((g.frames.len() - n) as u64, "frame", "frames")));
    }
    s
}
