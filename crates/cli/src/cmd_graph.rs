//! `clrprof graph`: CLRProfiler's Allocation Graph (caller -> callee, weighted
//! by bytes) as a table, JSON or Graphviz DOT.

use crate::cmd_functions::percent;
use crate::common::{print_json, print_table, thousands, QueryArgs};
use anyhow::Result;
use clrprof::query::{allocation_graph, AllocationGraph, NodeKind};
use std::fmt::Write as _;

/// Arguments of `clrprof graph`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub query: QueryArgs,
    /// Print Graphviz DOT (`dot -Tsvg`) instead of a table.
    #[arg(long, conflicts_with = "json")]
    pub dot: bool,
    /// Leave out nodes and edges below this many bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 0)]
    pub min_bytes: u64,
    /// Leave out nodes and edges below this percentage of all bytes
    /// (default: 1 for the table and DOT, 0 for JSON).
    #[arg(long, value_name = "PERCENT")]
    pub min_percent: Option<f64>,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let loaded = args.query.load()?;
    let model = &loaded.model;
    let filter = args.query.filter(model)?;
    let g = allocation_graph(model, &filter);
    let pct = args.min_percent.unwrap_or(if args.query.out.json { 0.0 } else { 1.0 });
    let min = args.min_bytes.max((g.total_bytes as f64 * pct / 100.0).ceil() as u64);
    let g = if min > 0 { g.prune(min) } else { g };
    if args.query.out.json {
        print_json(&serde_json::to_value(&g)?)?;
    } else if args.dot {
        print!("{}", dot(&g));
    } else {
        print_tables(&args, &g, min);
    }
    args.query.report_warnings(model);
    Ok(())
}

fn print_tables(args: &Args, g: &AllocationGraph, min: u64) {
    println!(
        "{}: {} bytes in {} objects; {} nodes and {} edges of at least {} bytes",
        args.query.load.shown().display(),
        thousands(g.total_bytes),
        thousands(g.total_count),
        thousands(g.nodes.len() as u64),
        thousands(g.edges.len() as u64),
        thousands(min)
    );
    println!();
    let limit = args.query.limit();
    let kind = |k: NodeKind| match k {
        NodeKind::Root => "root",
        NodeKind::Function => "function",
        NodeKind::Type => "type",
    };
    let rows: Vec<Vec<String>> = g
        .nodes
        .iter()
        .take(limit)
        .map(|n| {
            vec![
                n.name.clone(),
                kind(n.kind).to_string(),
                thousands(n.bytes),
                percent(n.bytes, g.total_bytes),
                thousands(n.count),
                thousands(n.exclusive_bytes),
            ]
        })
        .collect();
    print_table(&["node", "kind", "bytes", "%", "objects", "allocated here"], &rows);
    println!();
    let name = |id: u32| g.nodes.get(id as usize).map_or("?", |n| n.name.as_str());
    let rows: Vec<Vec<String>> = g
        .edges
        .iter()
        .take(limit)
        .map(|e| {
            vec![
                format!("{} -> {}", name(e.from), name(e.to)),
                thousands(e.bytes),
                percent(e.bytes, g.total_bytes),
                thousands(e.count),
            ]
        })
        .collect();
    print_table(&["edge", "bytes", "%", "objects"], &rows);
}

fn quote(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Sizes the way CLRProfiler's graph labels them (bytes, kB, MB, GB).
fn size(bytes: u64) -> String {
    let mut w = bytes as f64;
    let mut unit = "bytes";
    for u in ["kB", "MB", "GB"] {
        if w < 1024.0 {
            break;
        }
        w /= 1024.0;
        unit = u;
    }
    if unit == "bytes" {
        format!("{bytes} bytes")
    } else if w < 10.0 {
        format!("{w:.1} {unit}")
    } else {
        format!("{w:.0} {unit}")
    }
}

/// The graph in Graphviz's language: boxes with name and weight, edges
/// labelled with bytes, pen width by weight.
pub fn dot(g: &AllocationGraph) -> String {
    let total = g.total_bytes.max(1) as f64;
    let mut s = String::from("digraph allocations {\n  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=9];\n");
    for n in &g.nodes {
        let pct = n.bytes as f64 * 100.0 / total;
        let style = match n.kind {
            NodeKind::Root => ", style=bold",
            NodeKind::Function => "",
            NodeKind::Type => ", style=filled, fillcolor=\"#f4d03f\"",
        };
        let _ = writeln!(s, "  n{} [label=\"{}\\n{} ({pct:.2}%)\"{style}];", n.id, quote(&n.name), size(n.bytes));
    }
    for e in &g.edges {
        let width = 1.0 + 7.0 * e.bytes as f64 / total;
        let _ = writeln!(s, "  n{} -> n{} [label=\"{}\", penwidth={width:.2}];", e.from, e.to, size(e.bytes));
    }
    s.push_str("}\n");
    s
}
