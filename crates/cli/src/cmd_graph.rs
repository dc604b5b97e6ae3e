//! `clrprof graph`: CLRProfiler's Allocation Graph (caller -> callee, weighted
//! by bytes) as a table, JSON or Graphviz DOT.

use crate::cmd_functions::percent;
use crate::common::{function_labels, more_note, print_estimated_table, print_json, thousands, QueryArgs, RANGE_HEADER};
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
    let loaded = args.query.load_allocations("the allocation graph")?;
    let model = &loaded.model;
    let filter = args.query.filter(model)?;
    let g = allocation_graph(model, &filter);
    let pct = args.min_percent.unwrap_or(if args.query.out.json { 0.0 } else { 1.0 });
    let min = args.min_bytes.max((g.total_bytes as f64 * pct / 100.0).ceil() as u64);
    let g = if min > 0 { g.prune(min) } else { g };
    if args.query.out.json {
        let (g, nodes_left_out, edges_left_out) = top_nodes(g, args.query.limit());
        let mut v = serde_json::to_value(&g)?;
        if let Some(o) = v.as_object_mut() {
            o.insert("nodes_left_out".into(), nodes_left_out.into());
            o.insert("edges_left_out".into(), edges_left_out.into());
        }
        print_json(&v)?;
    } else if args.dot {
        print!("{}", dot(&g));
    } else {
        print_tables(&args, &g, min);
    }
    args.query.report_warnings(model);
    Ok(())
}

/// The heaviest `limit` nodes (nodes are sorted by weight and numbered in
/// that order) and at most `limit` of the edges between them; how many
/// nodes and edges were left out.
fn top_nodes(mut g: AllocationGraph, limit: usize) -> (AllocationGraph, usize, usize) {
    let (nodes, edges) = (g.nodes.len(), g.edges.len());
    if nodes > limit {
        g.nodes.truncate(limit);
        g.edges.retain(|e| (e.from as usize) < limit && (e.to as usize) < limit);
    }
    g.edges.truncate(limit);
    let left_out = (nodes - g.nodes.len(), edges - g.edges.len());
    (g, left_out.0, left_out.1)
}

/// The nodes' names: a function overloaded under one name gets its
/// parameters.
fn node_names(g: &AllocationGraph) -> Vec<String> {
    let pairs: Vec<(&str, &str)> = g
        .nodes
        .iter()
        .map(|n| match (n.kind, &n.signature) {
            (NodeKind::Function, Some(sig)) => (n.name.as_str(), sig.as_str()),
            _ => (n.name.as_str(), ""),
        })
        .collect();
    // Types and functions never share a label: only functions are compared.
    let labels = function_labels(&pairs);
    g.nodes.iter().zip(labels).map(|(n, l)| if n.kind == NodeKind::Function { l } else { n.name.clone() }).collect()
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
    let names = node_names(g);
    // A sampled trace: each node's and edge's 95% range.
    let ranged = g.uncertainty.is_some();
    let rows: Vec<Vec<String>> = g
        .nodes
        .iter()
        .zip(&names)
        .take(limit)
        .map(|(n, name)| {
            let mut row = vec![
                name.clone(),
                kind(n.kind).to_string(),
                thousands(n.bytes),
                percent(n.bytes, g.total_bytes),
                thousands(n.count),
                thousands(n.exclusive_bytes),
            ];
            if ranged {
                row.push(n.uncertainty.map(|u| u.cell()).unwrap_or_default());
            }
            row
        })
        .collect();
    let mut header = vec!["node", "kind", "bytes", "%", "objects", "allocated here"];
    if ranged {
        header.push(RANGE_HEADER);
    }
    print_estimated_table(&header, &[2, 4, 5], &rows);
    if let Some(note) = more_note(g.nodes.len() - rows.len(), "node", "nodes") {
        println!("{note}");
    }
    println!();
    let name = |id: u32| names.get(id as usize).map_or("?", String::as_str);
    let rows: Vec<Vec<String>> = g
        .edges
        .iter()
        .take(limit)
        .map(|e| {
            let mut row = vec![
                format!("{} -> {}", name(e.from), name(e.to)),
                thousands(e.bytes),
                percent(e.bytes, g.total_bytes),
                thousands(e.count),
            ];
            if ranged {
                row.push(e.uncertainty.map(|u| u.cell()).unwrap_or_default());
            }
            row
        })
        .collect();
    let mut header = vec!["edge", "bytes", "%", "objects"];
    if ranged {
        header.push(RANGE_HEADER);
    }
    print_estimated_table(&header, &[1, 3], &rows);
    if let Some(note) = more_note(g.edges.len() - rows.len(), "edge", "edges") {
        println!("{note}");
    }
}

fn quote(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Sizes in binary units, as CLRProfiler's graph counts them (1,024 bytes
/// to the KiB): bytes, KiB, MiB, GiB.
fn size(bytes: u64) -> String {
    let mut w = bytes as f64;
    let mut unit = "bytes";
    for u in ["KiB", "MiB", "GiB"] {
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
    for (n, name) in g.nodes.iter().zip(node_names(g)) {
        let pct = n.bytes as f64 * 100.0 / total;
        let style = match n.kind {
            NodeKind::Root => ", style=bold",
            NodeKind::Function => "",
            NodeKind::Type => ", style=filled, fillcolor=\"#f4d03f\"",
        };
        let _ = writeln!(s, "  n{} [label=\"{}\\n{} ({pct:.2}%)\"{style}];", n.id, quote(&name), size(n.bytes));
    }
    for e in &g.edges {
        let width = 1.0 + 7.0 * e.bytes as f64 / total;
        let _ = writeln!(s, "  n{} -> n{} [label=\"{}\", penwidth={width:.2}];", e.from, e.to, size(e.bytes));
    }
    s.push_str("}\n");
    s
}

#[cfg(test)]
mod tests {
    use super::size;

    #[test]
    fn sizes_in_binary_units() {
        assert_eq!(size(1000), "1000 bytes");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size(20 * 1024 * 1024), "20 MiB");
        assert_eq!(size(3 << 30), "3.0 GiB");
    }
}
