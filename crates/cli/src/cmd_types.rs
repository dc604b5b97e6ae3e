//! `clrprof types`: bytes and objects per type (CLRProfiler's histograms),
//! optionally live at a time, with the size classes of its Histogram by
//! Size view.

use crate::common::{keep, more_note, print_estimated_table, thousands, tick_for, QueryArgs, RANGE_HEADER};
use anyhow::{bail, Result};
use clap::ValueEnum;
use clrprof::query::{
    by_bytes_of, group_by_name, size_buckets, type_counts, BucketScale, HistogramKind, SizeBucket, TypeCount, TypeSelection,
};

/// Which histogram.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Kind {
    /// Objects allocated.
    Allocated,
    /// Objects moved by compacting GCs.
    Relocated,
    /// Objects live at the end of the log (or at `--at`).
    Final,
    /// Objects queued for finalization.
    Finalized,
    /// Objects with a critical finalizer queued.
    Critical,
}

impl Kind {
    fn histogram(self) -> HistogramKind {
        match self {
            Kind::Allocated => HistogramKind::Allocated,
            Kind::Relocated => HistogramKind::Relocated,
            Kind::Final => HistogramKind::FinalHeap,
            Kind::Finalized => HistogramKind::Finalized,
            Kind::Critical => HistogramKind::CriticalFinalized,
        }
    }

    fn title(self) -> &'static str {
        match self {
            Kind::Allocated => "allocated",
            Kind::Relocated => "relocated",
            Kind::Final => "live at the end",
            Kind::Finalized => "finalized",
            Kind::Critical => "critical finalized",
        }
    }
}

/// The horizontal scale of the size classes.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Scale {
    /// Each class twice the previous (CLRProfiler's default).
    Coarse,
    /// By the square root of 2.
    Medium,
    /// By 2^(1/4).
    Fine,
    /// By 2^(1/8).
    VeryFine,
}

/// Arguments of `clrprof types`.
///
/// JSON is an object `{"types": [...], "types_left_out"}`, the types as
/// `{"type", "bytes", "count"}` sorted by bytes (largest first, ties by
/// name), every type unless `--top` is given; with `--buckets` also
/// `"buckets": [...]` and `"buckets_left_out"`.
/// `--from`/`--to`/`--between-comments`/`--thread` select objects by
/// allocation time and thread (allocated, final), or finalizations by the
/// time they were queued and the object's allocating thread (finalized,
/// critical); relocated refuses them.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    query: QueryArgs,
    /// Which histogram.
    #[arg(long, value_enum, default_value_t = Kind::Allocated)]
    kind: Kind,
    /// With `--kind final`: the objects live at this time (milliseconds)
    /// instead of at the end.
    #[arg(long, value_name = "MS")]
    at: Option<f64>,
    /// Also CLRProfiler's Histogram by Size: objects in size classes.
    #[arg(long)]
    buckets: bool,
    /// How fast the size classes grow.
    #[arg(long, value_enum, default_value_t = Scale::Coarse, requires = "buckets")]
    bucket_scale: Scale,
}

/// The JSON (a struct, so that keys keep their order: "type" first).
#[derive(serde::Serialize)]
struct Json<'a> {
    types: &'a [TypeCount],
    types_left_out: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    buckets: Option<&'a [SizeBucket]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    buckets_left_out: Option<usize>,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    if args.at.is_some() && !matches!(args.kind, Kind::Final) {
        bail!("--at applies to --kind final (the objects live at a time)");
    }
    let loaded = args.query.load_allocations("`types`")?;
    let model = &loaded.model;
    let filter = args.query.filter(model)?;
    let at = args.at.map(|ms| tick_for(model, "--at", ms)).transpose()?;
    let counts = type_counts(model, &TypeSelection { kind: args.kind.histogram(), at }, &filter)?;
    let mut types = by_bytes_of(model, group_by_name(model, counts.iter()));
    let scale = match args.bucket_scale {
        Scale::Coarse => BucketScale::Coarse,
        Scale::Medium => BucketScale::Medium,
        Scale::Fine => BucketScale::Fine,
        Scale::VeryFine => BucketScale::VeryFine,
    };
    let mut buckets = args.buckets.then(|| size_buckets(model, &counts, scale));
    let limit = args.query.limit();
    if args.query.out.json {
        let types_left_out = keep(&mut types, limit);
        let buckets_left_out = buckets.as_mut().map(|b| keep(b, limit));
        let json = Json { types: &types, types_left_out, buckets: buckets.as_deref(), buckets_left_out };
        crate::common::print_json(&serde_json::to_value(json)?)?;
        return Ok(());
    }
    print_types(&args, &types, at.map(|t| model.time().seconds(t).unwrap_or(0.0) * 1000.0));
    if let Some(b) = &buckets {
        println!();
        print_buckets(b, limit);
    }
    args.query.report_warnings(model);
    Ok(())
}

fn print_types(args: &Args, types: &[TypeCount], at_ms: Option<f64>) {
    let bytes: i64 = types.iter().map(|t| t.bytes).sum();
    let count: u64 = types.iter().map(|t| t.count).sum();
    let what = match at_ms {
        Some(ms) => format!("live at {ms:.0} ms"),
        None => args.kind.title().to_string(),
    };
    println!(
        "{}: {what}: {} bytes in {} objects of {} types",
        args.query.load.shown().display(),
        signed(bytes),
        thousands(count),
        thousands(types.len() as u64)
    );
    let ranges = types.iter().any(|t| t.uncertainty.is_some());
    let rows: Vec<Vec<String>> = types
        .iter()
        .take(args.query.limit())
        .map(|t| {
            let mut row = vec![t.name.clone(), signed(t.bytes), percent(t.bytes, bytes), thousands(t.count)];
            if ranges {
                row.push(t.uncertainty.as_ref().map(|u| u.cell()).unwrap_or_default());
            }
            row
        })
        .collect();
    let mut header = vec!["type", "bytes", "%", "objects"];
    if ranges {
        header.push(RANGE_HEADER);
    }
    print_estimated_table(&header, &[1, 3], &rows);
    if let Some(note) = more_note(types.len() - rows.len(), "type", "types") {
        println!("{note}");
    }
}

fn print_buckets(buckets: &[SizeBucket], limit: usize) {
    let total: u64 = buckets.iter().map(|b| b.bytes).sum();
    println!("by size (CLRProfiler's Histogram by Size):");
    let rows: Vec<Vec<String>> = buckets
        .iter()
        .map(|b| {
            let mut top: Vec<String> = b.types.iter().take(3).map(|t| t.name.clone()).collect();
            if b.types.len() > 3 {
                top.push(format!("+{} more", b.types.len() - 3));
            }
            vec![
                format!("{} - {}", thousands(b.min_size as u64), thousands(b.max_size as u64)),
                thousands(b.bytes),
                percent(b.bytes as i64, total as i64),
                thousands(b.count),
                top.join(", "),
            ]
        })
        .take(limit)
        .collect();
    print_with_text(&["size (bytes)", "bytes", "%", "objects", "top types"], &rows, 4);
    if let Some(note) = more_note(buckets.len() - rows.len(), "size class", "size classes") {
        println!("{note}");
    }
}

/// A table whose columns are right-aligned (numbers) up to `text_from`,
/// and left-aligned (text) from there.
pub fn print_with_text(header: &[&str], rows: &[Vec<String>], text_from: usize) {
    let n = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(n) {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate().take(n) {
            if i > 0 {
                s.push_str("  ");
            }
            if i >= text_from {
                s.push_str(&format!("{c:<w$}", w = widths[i]));
            } else {
                s.push_str(&format!("{c:>w$}", w = widths[i]));
            }
        }
        println!("{}", s.trim_end());
    };
    line(header.to_vec());
    for r in rows {
        line(r.iter().map(String::as_str).collect());
    }
}

fn signed(v: i64) -> String {
    if v < 0 {
        format!("-{}", thousands(v.unsigned_abs()))
    } else {
        thousands(v as u64)
    }
}

fn percent(part: i64, total: i64) -> String {
    if total == 0 {
        "-".to_string()
    } else {
        format!("{:.2}", part as f64 * 100.0 / total as f64)
    }
}
