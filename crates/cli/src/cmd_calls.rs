//! `clrprof calls`: call counts per function (inclusive and exclusive),
//! caller/callee edges, or the call tree.

use crate::common::{print_json, print_table, thousands, QueryArgs};
use anyhow::{bail, Result};
use clrprof::query::calls::CallNode;
use clrprof::query::{call_tree, calls, CallTreeOptions};

/// Arguments of `clrprof calls`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    query: QueryArgs,
    /// Print the call tree (indented) instead of the tables.
    #[arg(long)]
    tree: bool,
    /// With --tree: keep only paths with at least this many calls.
    #[arg(long, default_value_t = 1, value_name = "N")]
    min_count: u64,
    /// With --tree: keep paths at most this many frames deep (0: no limit).
    #[arg(long, default_value_t = 0, value_name = "N")]
    depth: usize,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let q = &args.query;
    if q.from.is_some() || q.to.is_some() || q.between_comments.is_some() || !q.threads.is_empty() {
        bail!("calls are counted over the whole log: the model keeps no time or thread per call, so --from, --to, --between-comments and --thread do not apply");
    }
    let loaded = q.load()?;
    let model = &loaded.model;
    if args.tree {
        let options =
            CallTreeOptions { min_count: args.min_count, depth: if args.depth == 0 { usize::MAX } else { args.depth } };
        let t = call_tree(model, &options)?;
        if q.out.json {
            return print_json(&serde_json::to_value(&t)?);
        }
        println!("Call tree: {} calls (calls with this exact path / with this path or deeper)", thousands(t.total));
        let mut out = String::new();
        for n in &t.roots {
            write_node(&mut out, n, 0);
        }
        if t.pruned_roots > 0 {
            out.push_str(&format!("(pruned: {} more roots, {} calls)\n", t.pruned_roots, thousands(t.pruned_calls)));
        }
        print!("{out}");
    } else {
        let mut c = calls(model)?;
        c.functions.truncate(q.limit());
        c.edges.truncate(q.limit());
        if q.out.json {
            return print_json(&serde_json::to_value(&c)?);
        }
        println!("{} calls", thousands(c.total));
        println!();
        let rows: Vec<Vec<String>> =
            c.functions.iter().map(|f| vec![f.name.clone(), thousands(f.inclusive), thousands(f.exclusive)]).collect();
        print_table(&["function", "inclusive", "exclusive"], &rows);
        println!();
        let rows: Vec<Vec<String>> = c
            .edges
            .iter()
            .map(|e| vec![format!("{} -> {}", e.caller_name, e.callee_name), thousands(e.count)])
            .collect();
        print_table(&["caller -> callee", "calls"], &rows);
    }
    q.report_warnings(model);
    Ok(())
}

fn write_node(out: &mut String, n: &CallNode, depth: usize) {
    let indent = "  ".repeat(depth);
    out.push_str(&format!("{indent}{}  {} / {}\n", n.name, thousands(n.calls), thousands(n.inclusive)));
    for c in &n.children {
        write_node(out, c, depth + 1);
    }
    if n.pruned_children > 0 {
        out.push_str(&format!(
            "{indent}  (pruned: {} more callees, {} calls)\n",
            n.pruned_children,
            thousands(n.pruned_calls)
        ));
    }
}
