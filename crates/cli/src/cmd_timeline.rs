//! `clrprof timeline`: CLRProfiler's Time Line, as a picture (`--png`) or as
//! a table / JSON (live bytes by type at a moment, GC and comment markers,
//! address bands, and with `--cells` the type of every cell).

use crate::common::{count, create_output, cut_json, more_note, print_json, print_estimated_table, print_table, thousands, QueryArgs};
use anyhow::{bail, Context, Result};
use clrprof::model::Model;
use clrprof::query::timeline::{
    address_axis, changes_span_ms, column_axis as axis_of_columns, comment_marks, end_ms, gc_marks, grid_on, tick_at_ms,
    tick_ms, ColumnAxis, GridSpec,
};
use clrprof::query::{live_at, Filter, TimeWindow};
use clrprof_render::{render_timeline, TimelineOptions};
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `clrprof timeline`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    query: QueryArgs,
    /// Draw the Time Line into this PNG file.
    #[arg(long, value_name = "OUT.png")]
    png: Option<PathBuf>,
    /// Replace a file already at `--png` (a link there is removed, never
    /// followed).
    #[arg(long, requires = "png")]
    force: bool,
    /// Picture width in pixels (with `--cells`: columns).
    #[arg(long, default_value_t = 1200)]
    width: u32,
    /// Picture height in pixels (with `--cells`: rows at most).
    #[arg(long, default_value_t = 700)]
    height: u32,
    /// The moment for the live bytes by type, ms (default: the window's end).
    #[arg(long, value_name = "MS")]
    at: Option<f64>,
    /// Only addresses at or above this one (hex with 0x, or decimal).
    #[arg(long, value_name = "ADDR", value_parser = parse_address)]
    addr_from: Option<u64>,
    /// Only addresses below this one (hex with 0x, or decimal).
    #[arg(long, value_name = "ADDR", value_parser = parse_address)]
    addr_to: Option<u64>,
    /// Also compute the cell grid (`--width` columns by at most `--height`
    /// rows): its types in the table, every cell in the JSON.
    #[arg(long)]
    cells: bool,
}

fn parse_address(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let r = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => t.parse::<u64>(),
    };
    r.map_err(|e| format!("{s:?} is not an address: {e}"))
}

/// The window in ms from the flags.
fn window_ms(model: &Model, q: &QueryArgs) -> Result<(f64, f64)> {
    let end = end_ms(model);
    let (from, to) = match q.window() {
        TimeWindow::All => (0.0, end),
        TimeWindow::Millis { from, to } => (from.unwrap_or(0.0), to.unwrap_or(end)),
        w @ TimeWindow::BetweenComments(..) => {
            let f = Filter::resolve(model, &w, &[])?;
            (tick_ms(model, f.from), tick_ms(model, f.to))
        }
    };
    if from.is_nan() || to.is_nan() || to < from {
        bail!("the time window ends ({to} ms) before it starts ({from} ms)");
    }
    Ok((from, to))
}

/// The columns' axis: time, unless every heap change of the log happened
/// at one moment and no time window was asked for; then the heap changes
/// in log order (said on standard error).
fn column_axis(model: &Model, q: &QueryArgs) -> ColumnAxis {
    let windowed = q.from.is_some() || q.to.is_some() || q.between_comments.is_some();
    if axis_of_columns(model, windowed) == ColumnAxis::Time {
        return ColumnAxis::Time;
    }
    let last = changes_span_ms(model).map_or(0.0, |s| s.1);
    eprintln!(
        "clrprof: every heap change of this log happened at one tick ({last:.0} ms): time says nothing about its \
         history, so the columns follow the {} heap changes in log order instead",
        thousands(model.samples().len() as u64)
    );
    ColumnAxis::LogOrder
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let q = &args.query;
    let loaded = q.load()?;
    let model = &loaded.model;
    q.report_warnings(model);
    let (from_ms, to_ms) = window_ms(model, q)?;
    let address = match (args.addr_from, args.addr_to) {
        (None, None) => None,
        (a, b) => Some((a.unwrap_or(0), b.unwrap_or(u64::MAX))),
    };
    if let Some(out) = &args.png {
        let started = Instant::now();
        let title = q.load.shown().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let axis = column_axis(model, q);
        let opts = TimelineOptions { width: args.width, height: args.height, from_ms, to_ms, address, title, axis };
        let pic = render_timeline(model, &opts)?;
        pic.canvas.write_png(create_output(out, args.force)?).with_context(|| format!("cannot write {}", out.display()))?;
        let seconds = started.elapsed().as_secs_f64();
        if q.out.json {
            return print_json(&json!({
                "png": out.display().to_string(),
                "width": pic.canvas.width(),
                "height": pic.canvas.height(),
                "from_ms": from_ms,
                "to_ms": to_ms,
                "axis": axis,
                "plot": pic.plot,
                "columns": pic.grid.columns,
                "rows": pic.grid.rows.len(),
                "max_bands": pic.max_bands,
                "grains_per_row": pic.grid.grains_per_row,
                "legend": pic.legend,
                "other_types": pic.other_types,
                "comment_labels": pic.comment_labels,
                "render_seconds": seconds,
            }));
        }
        println!(
            "{}: {}x{} pixels, {:.0}-{:.0} ms, {} of {} KB, {} shown ({} in the legend), drawn in {:.3} s",
            out.display(),
            pic.canvas.width(),
            pic.canvas.height(),
            from_ms,
            to_ms,
            count(pic.grid.rows.len() as u64, "row", "rows"),
            pic.grid.grains_per_row,
            count(pic.grid.types.len() as u64, "type", "types"),
            pic.legend.len(),
            seconds
        );
        return Ok(());
    }

    let at_ms = args.at.unwrap_or(to_ms);
    let at = match args.at {
        Some(ms) => crate::common::tick_for(model, "--at", ms)?,
        None => tick_at_ms(model, at_ms),
    };
    let threads = Filter::resolve(model, &TimeWindow::All, &q.threads)?;
    let live = live_at(model, at, &threads);
    let gcs = gc_marks(model, from_ms, to_ms);
    let comments = comment_marks(model, from_ms, to_ms);
    let axis = address_axis(model, address, usize::MAX);
    let cells = args.cells.then(|| {
        let spec = GridSpec { columns: args.width, rows: args.height, from_ms, to_ms };
        grid_on(model, &axis, &spec, column_axis(model, q))
    });
    let limit = q.limit();

    if q.out.json {
        let mut v = json!({
            "from_ms": from_ms,
            "to_ms": to_ms,
            "at_ms": at_ms,
            "at_tick": at.0,
            "live": live,
            "gcs": gcs,
            "comments": comments,
            "bands": axis.bands,
        });
        for key in ["live", "gcs", "comments", "bands"] {
            cut_json(&mut v, key, limit);
        }
        if let Some(g) = &cells {
            v["grid"] = serde_json::to_value(g)?;
        }
        return print_json(&v);
    }

    println!(
        "{}: {:.0}-{:.0} ms, {}, {}, {}",
        q.load.shown().display(),
        from_ms,
        to_ms,
        count(gcs.len() as u64, "GC", "GCs"),
        count(comments.len() as u64, "comment", "comments"),
        count(axis.bands.len() as u64, "address band", "address bands")
    );
    println!();
    println!("Live at {:.0} ms (tick {}):", tick_ms(model, at), at.0);
    let total: u64 = live.iter().map(|r| r.bytes).sum();
    // A sampled trace: each type's 95% range (from its live samples).
    let ranged = live.iter().any(|r| r.uncertainty.is_some());
    let mut rows: Vec<Vec<String>> = live
        .iter()
        .take(limit)
        .map(|r| {
            let mut row = vec![r.name.clone(), thousands(r.bytes), thousands(r.count), thousands(r.estimated_bytes)];
            if ranged {
                row.push(r.uncertainty.map(|u| u.cell()).unwrap_or_default());
            }
            row
        })
        .collect();
    let mut last = vec![
        "total".into(),
        thousands(total),
        thousands(live.iter().map(|r| r.count).sum()),
        thousands(live.iter().map(|r| r.estimated_bytes).sum()),
    ];
    if ranged {
        let samples: u64 = live.iter().map(|r| r.samples).sum();
        last.push(clrprof::query::estimates::Range95::of(samples).map(|r| r.cell()).unwrap_or_default());
    }
    rows.push(last);
    let mut header = vec!["type", "bytes", "objects", "estimated (1 KB grains)"];
    if ranged {
        header.push(crate::common::RANGE_HEADER);
    }
    print_estimated_table(&header, &[1, 2], &rows);
    if let Some(note) = more_note(live.len().saturating_sub(limit), "type", "types") {
        println!("{note}");
    }
    println!();
    println!("GCs:");
    let rows: Vec<Vec<String>> = gcs
        .iter()
        .take(limit)
        .map(|g| {
            vec![format!("#{}", g.number), format!("{:.0}", g.ms), g.generation.to_string(), g.number_in_generation.to_string()]
        })
        .collect();
    print_table(&["gc", "ms", "generation", "# in generation"], &rows);
    if let Some(note) = more_note(gcs.len().saturating_sub(limit), "GC", "GCs") {
        println!("{note}");
    }
    if !comments.is_empty() {
        println!();
        println!("Comments:");
        let rows: Vec<Vec<String>> =
            comments.iter().take(limit).map(|c| vec![format!("{:.0}", c.ms), c.text.clone()]).collect();
        print_table(&["ms", "text"], &rows);
        if let Some(note) = more_note(comments.len().saturating_sub(limit), "comment", "comments") {
            println!("{note}");
        }
    }
    println!();
    println!("Address bands:");
    let rows: Vec<Vec<String>> = axis
        .bands
        .iter()
        .take(limit)
        .map(|b| vec![format!("{:#x}", b.low), format!("{:#x}", b.high + 1023), thousands(b.grains), thousands(b.recorded)])
        .collect();
    print_table(&["from", "to", "KB", "KB with history"], &rows);
    if let Some(note) = more_note(axis.bands.len().saturating_sub(limit), "band", "bands") {
        println!("{note}");
    }
    if let Some(g) = &cells {
        println!();
        println!(
            "Cells: {} columns ({}) x {} rows of {} KB; types by average bytes occupied:",
            g.columns,
            match g.axis {
                ColumnAxis::Time => "time",
                ColumnAxis::LogOrder => "heap changes in log order",
            },
            g.rows.len(),
            g.grains_per_row
        );
        let rows: Vec<Vec<String>> =
            g.types.iter().take(limit).map(|t| vec![t.name.clone(), thousands(t.cells), thousands(t.bytes)]).collect();
        print_table(&["type", "cells", "bytes"], &rows);
        if let Some(note) = more_note(g.types.len().saturating_sub(limit), "type", "types") {
            println!("{note}");
        }
    }
    Ok(())
}
