//! `clrprof calls`: call counts per function (inclusive and exclusive),
//! caller/callee edges, or the call tree.

use crate::common::{count, cut_json, more, keep, more_note, print_json, print_table, thousands, QueryArgs};
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
            out.push_str(&format!(
                "(pruned: {}, {})\n",
                more(t.pruned_roots, "root", "roots"),
                count(t.pruned_calls, "call", "calls")
            ));
        }
        print!("{out}");
    } else {
        let mut c = calls(model)?;
        if q.out.json {
            let mut v = serde_json::to_value(&c)?;
            cut_json(&mut v, "functions", q.limit());
            cut_json(&mut v, "edges", q.limit());
            return print_json(&v);
        }
        let functions_left_out = keep(&mut c.functions, q.limit());
        let edges_left_out = keep(&mut c.edges, q.limit());
        println!("{} calls", thousands(c.total));
        println!();
        let rows: Vec<Vec<String>> =
            c.functions.iter().map(|f| vec![f.name.clone(), thousands(f.inclusive), thousands(f.exclusive)]).collect();
        print_table(&["function", "inclusive", "exclusive"], &rows);
        if let Some(note) = more_note(functions_left_out, "function", "functions") {
            println!("{note}");
        }
        println!();
        let rows: Vec<Vec<String>> = c
            .edges
            .iter()
            .map(|e| vec![format!("{} -> {}", e.caller_name, e.callee_name), thousands(e.count)])
            .collect();
        print_table(&["caller -> callee", "calls"], &rows);
        if let Some(note) = more_note(edges_left_out, "edge", "edges") {
            println!("{note}");
        }
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
            "{indent}  (pruned: {}, {})\n",
            more(n.pruned_children, "callee", "callees"),
            count(n.pruned_calls, "call", "calls")
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pruned_counts_agree_in_number() {
        let leaf = |pruned_children, pruned_calls| CallNode {
            id: 1,
            name: "F".into(),
            calls: 1,
            inclusive: 1,
            children: Vec::new(),
            pruned_children,
            pruned_calls,
        };
        let mut out = String::new();
        write_node(&mut out, &leaf(1, 1), 0);
        assert!(out.contains("(pruned: 1 more callee, 1 call)"), "{out}");
        out.clear();
        write_node(&mut out, &leaf(2, 1_500), 0);
        assert!(out.contains("(pruned: 2 more callees, 1,500 calls)"), "{out}");
    }
}
