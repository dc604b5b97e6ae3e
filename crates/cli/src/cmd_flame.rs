//! `clrprof flame`: a flame graph of allocated bytes by stack (SVG, drawn by
//! inferno), or the folded stacks it is drawn from.

use crate::common::{create_output, cut_json, print_json, QueryArgs};
use anyhow::{bail, Context, Result};
use clrprof::query::{folded_stacks, folded_text};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `clrprof flame`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub query: QueryArgs,
    /// The SVG file to write.
    #[arg(short, long, value_name = "OUT.svg")]
    pub output: Option<PathBuf>,
    /// Replace a file already at `--output` (a link there is removed, never
    /// followed).
    #[arg(long)]
    pub force: bool,
    /// Print the folded stacks (`outer;...;inner;Type bytes`) instead.
    #[arg(long, conflicts_with = "json")]
    pub collapsed: bool,
    /// The flame graph's title.
    #[arg(long, default_value = "Allocated bytes")]
    pub title: String,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let loaded = args.query.load_allocations("a flame graph of allocations")?;
    let model = &loaded.model;
    let filter = args.query.filter(model)?;
    let stacks = folded_stacks(model, &filter);
    if args.query.out.json {
        let mut v = serde_json::json!({ "stacks": stacks });
        cut_json(&mut v, "stacks", args.query.limit());
        print_json(&v)?;
    } else if args.collapsed {
        let mut out = std::io::stdout().lock();
        out.write_all(folded_text(&stacks).as_bytes())?;
    } else {
        let Some(path) = &args.output else { bail!("give the SVG file with -o OUT.svg (or --collapsed / --json)") };
        let text = folded_text(&stacks);
        let mut options = inferno::flamegraph::Options::default();
        options.title = args.title.clone();
        if crate::common::estimated() {
            // A sampled trace: the widths are estimates (each stack's
            // samples and 95% range are in `--json`).
            options.title.push_str(crate::common::EST);
        }
        options.count_name = "bytes".to_string();
        options.name_type = "Frame:".to_string();
        if stacks.is_empty() {
            bail!("nothing was allocated in the selected part of the log: no flame graph to draw");
        }
        let mut w = create_output(path, args.force)?;
        inferno::flamegraph::from_lines(&mut options, text.lines(), &mut w)
            .with_context(|| format!("cannot write {}", path.display()))?;
        w.flush().with_context(|| format!("cannot write {}", path.display()))?;
    }
    args.query.report_warnings(model);
    Ok(())
}
