//! `clrprof leaks DUMP...`: from three or more heap dumps of one process,
//! the types that keep growing, what holds them and from which root, and
//! (with `--trace`) the stacks that allocate them; exit status 1 for a
//! leak, 0 for none, 2 when the dumps cannot tell.

use crate::common::{print_json, print_table, thousands, DecompressArgs, LoadArgs};
use crate::load::{load, Loaded};
use anyhow::{bail, Context, Result};
use clrprof::query::dumps::{leaks, DumpIndex, Leak, LeakReport, LeakRule, SeriesDump, Verdict};
use clrprof::query::{canonical_type_name, who_allocated, Filter, SortBy, TypeMatch};
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit status when a leak is found.
const LEAK: u8 = 1;
/// Exit status when the dumps cannot tell.
const UNDECIDED: u8 = 2;

/// Arguments of `clrprof leaks`.
#[derive(clap::Args)]
pub struct Args {
    /// Heap dumps of one process, oldest first: three or more files (each
    /// file's dumps in order: a `.gcdump`, a `.nettrace` from `heap-dump`,
    /// a log with dumps), or one log with three or more dumps.
    #[arg(value_name = "DUMP", required = true)]
    files: Vec<PathBuf>,
    /// The time between consecutive dumps (`90s`, `5m`, `1h`), for the
    /// growth per minute: by default a log's dumps are placed by the log's
    /// clock and separate files by their modification times.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    every: Option<f64>,
    /// A sampled trace or a log with allocations that covers the dumps'
    /// window: the stacks that allocate each leaking type.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Growth over the series, in objects, that can make a leak.
    #[arg(long, value_name = "N", default_value_t = LeakRule::default().min_objects)]
    min_objects: u64,
    /// Growth over the series, in bytes, that can make a leak (K, M, G
    /// suffixes).
    #[arg(long, value_name = "SIZE", value_parser = crate::common::parse_size, default_value = "1M")]
    min_bytes: u64,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
    /// No progress bar and no warning count.
    #[arg(long, short)]
    quiet: bool,
    /// Limits on decompressing a `.gz` or `.zst` file.
    #[command(flatten)]
    decompress: DecompressArgs,
}

fn parse_duration(s: &str) -> std::result::Result<f64, String> {
    let (number, unit) = match s.find(|c: char| c.is_ascii_alphabetic()) {
        Some(k) => (&s[..k], &s[k..]),
        None => (s, "s"),
    };
    let n: f64 = number.trim().parse().map_err(|_| format!("`{s}`: not a duration (90s, 5m, 1h)"))?;
    let scale = match unit {
        "ms" => 0.001,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("`{s}`: unknown unit `{unit}` (ms, s, m, h)")),
    };
    if !(n.is_finite() && n > 0.0) {
        return Err(format!("`{s}`: a duration is above 0"));
    }
    Ok(n * scale * 1000.0)
}

/// Runs the command and gives its exit status; an error is status 2 (the
/// dumps cannot tell), printed as the other commands print theirs.
pub fn main(args: Args) -> ExitCode {
    let json = args.json;
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            if json {
                println!("{}", serde_json::json!({ "error": crate::message(&e), "verdict": "undecided" }));
            } else {
                eprintln!("clrprof: {}", crate::message(&e));
            }
            ExitCode::from(UNDECIDED)
        }
    }
}

/// A loaded file and when its modification time says it was written
/// (milliseconds since the epoch).
struct File {
    name: String,
    loaded: Loaded,
    written_ms: Option<f64>,
}

fn open(path: &PathBuf, decompress: DecompressArgs, quiet: bool) -> Result<File> {
    if path.as_os_str() == "-" {
        bail!("leaks reads files, not standard input");
    }
    let load_args = LoadArgs { log: path.clone(), threads: None, strict: false, decompress };
    let loaded = load(&load_args, quiet).with_context(|| format!("{}", path.display()))?;
    let written_ms = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs_f64() * 1000.0);
    Ok(File { name: path.display().to_string(), loaded, written_ms })
}

/// The leak report of a series of dump files (each file's dumps in
/// order), with a label per dump; `every` places the dumps at that
/// interval (milliseconds) instead of by their files' times.
pub(crate) fn report_for(
    paths: &[PathBuf],
    every: Option<f64>,
    rule: LeakRule,
    decompress: DecompressArgs,
    quiet: bool,
) -> Result<(LeakReport, Vec<String>)> {
    let files: Vec<File> = paths.iter().map(|p| open(p, decompress, quiet)).collect::<Result<_>>()?;
    let mut cannot_tell = Vec::new();
    // One process: the traces that name their process must name the same.
    let pids: Vec<u32> = files.iter().filter_map(|f| f.loaded.model.imported().and_then(|i| i.process_id)).collect();
    if pids.windows(2).any(|w| w[0] != w[1]) {
        cannot_tell.push(format!("the dumps are of different processes ({})", join(&pids)));
    }
    for f in &files {
        if let Some(i) = f.loaded.model.imported() {
            let missing = i.heap_walk_missing_objects + i.heap_walk_missing_references;
            if missing > 0 {
                cannot_tell.push(format!("{}: the heap walk lost {} object(s) and reference(s)", f.name, thousands(missing)));
            }
        }
    }
    let mut series = Vec::new();
    let mut labels = Vec::new();
    for f in &files {
        let model = &f.loaded.model;
        let n = model.heap_dumps().dumps().len();
        if n == 0 {
            cannot_tell.push(format!("{}: no heap dump", f.name));
        }
        let infos = clrprof::query::dumps::list(model);
        let last_ms = infos.last().and_then(|i| i.time_ms).unwrap_or(0) as f64;
        for (k, info) in infos.iter().enumerate() {
            let in_file = info.time_ms.unwrap_or(0) as f64;
            // Separate files: the file's time, less what follows the dump in it.
            let at = match (files.len(), f.written_ms) {
                (1, _) | (_, None) => in_file,
                (_, Some(w)) => w - (last_ms - in_file),
            };
            series.push(SeriesDump { model, index: DumpIndex(k as u32), at_ms: at });
            labels.push(if n > 1 { format!("{} #{k}", f.name) } else { f.name.clone() });
        }
    }
    if let Some(every) = every {
        for (k, s) in series.iter_mut().enumerate() {
            s.at_ms = k as f64 * every;
        }
    }
    let mut report = leaks(&series, rule);
    if !cannot_tell.is_empty() {
        report.undecided.splice(0..0, cannot_tell);
        report.verdict = Verdict::Undecided;
        report.leaks.clear();
    }
    Ok((report, labels))
}

fn run(args: Args) -> Result<ExitCode> {
    let rule = LeakRule { min_objects: args.min_objects, min_bytes: args.min_bytes, ..LeakRule::default() };
    let (report, labels) = report_for(&args.files, args.every, rule, args.decompress, args.quiet)?;
    let stacks = match &args.trace {
        Some(p) if !report.leaks.is_empty() => Some(allocation_stacks(p, &args, &report)?),
        _ => None,
    };
    if args.json {
        let mut v = serde_json::to_value(&report)?;
        if let Some(obj) = v.as_object_mut() {
            obj.insert("files".into(), serde_json::json!(labels));
            if let Some(s) = &stacks {
                obj.insert("allocation_stacks".into(), serde_json::to_value(s)?);
            }
        }
        print_json(&v)?;
    } else {
        print(&report, &labels, stacks.as_deref());
    }
    Ok(match report.verdict {
        Verdict::Leak => ExitCode::from(LEAK),
        Verdict::None => ExitCode::SUCCESS,
        Verdict::Undecided => ExitCode::from(UNDECIDED),
    })
}

fn join(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

/// The stacks that allocate one leaking type, from the trace.
#[derive(serde::Serialize)]
pub(crate) struct TypeStacks {
    /// The type.
    #[serde(rename = "type")]
    name: String,
    /// Its stacks, the most bytes first: (bytes, objects, frames from the
    /// allocating function outwards).
    stacks: Vec<(u64, u64, String)>,
    /// Whether the figures are estimated from samples.
    estimated: bool,
}

fn allocation_stacks(path: &PathBuf, args: &Args, report: &LeakReport) -> Result<Vec<TypeStacks>> {
    let f = open(path, args.decompress, args.quiet)?;
    let model = &f.loaded.model;
    if let Some(why) = clrprof::query::allocations_unknown(model) {
        bail!("--trace {}: its allocations are unknown: {why}", f.name);
    }
    let estimated = model.sampling().is_some();
    let filter = Filter::all();
    let mut out = Vec::new();
    for leak in &report.leaks {
        // The trace's own spelling of the type.
        let raw = model
            .types()
            .iter()
            .map(|(id, _)| model.type_name(id).into_owned())
            .find(|n| canonical_type_name(n) == leak.series.name.as_str());
        let stacks = match raw {
            Some(raw) => who_allocated(model, &filter, &TypeMatch::Exact(raw), SortBy::Inclusive)
                .stacks
                .iter()
                .take(3)
                .map(|r| (r.bytes, r.count, r.frames.join(" <- ")))
                .collect(),
            None => Vec::new(),
        };
        out.push(TypeStacks { name: leak.series.name.clone(), stacks, estimated });
    }
    Ok(out)
}

fn per_minute(v: f64) -> String {
    let sign = if v < 0.0 { "-" } else { "+" };
    format!("{sign}{}", thousands(v.abs().round() as u64))
}

/// The report as tables (with the stacks of `--trace`, when given).
pub(crate) fn print(report: &LeakReport, labels: &[String], stacks: Option<&[TypeStacks]>) {
    println!("{} heap dump(s) of one process:", report.dumps.len());
    let rows: Vec<Vec<String>> = report
        .dumps
        .iter()
        .zip(labels)
        .map(|(d, l)| {
            vec![
                l.clone(),
                format!("{:.1}", (d.at_ms - report.dumps[0].at_ms) / 60_000.0),
                thousands(d.objects),
                thousands(d.bytes),
            ]
        })
        .collect();
    print_table(&["dump", "minute", "objects", "bytes"], &rows);
    println!();
    match report.verdict {
        Verdict::Undecided => {
            println!("cannot tell:");
            for why in &report.undecided {
                println!("  {why}");
            }
            return;
        }
        Verdict::None => println!("no leak: no type grows in every interval up to the last dump"),
        Verdict::Leak => println!("{} leak(s):", report.leaks.len()),
    }
    for (k, leak) in report.leaks.iter().enumerate() {
        print_leak(k + 1, leak, stacks.and_then(|s| s.iter().find(|t| t.name == leak.series.name)));
    }
    if !report.quiet.is_empty() {
        println!();
        println!("grew, but not a leak by the rule (growth stopped or too small):");
        let rows: Vec<Vec<String>> = report
            .quiet
            .iter()
            .map(|t| {
                vec![
                    t.name.clone(),
                    t.objects.iter().map(|&o| thousands(o)).collect::<Vec<_>>().join(" -> "),
                ]
            })
            .collect();
        print_table(&["type", "objects per dump"], &rows);
    }
}

fn print_leak(k: usize, leak: &Leak, stacks: Option<&TypeStacks>) {
    let s = &leak.series;
    println!();
    println!(
        "{k}. {}: {} objects/min, {} bytes/min, retaining {} bytes/min",
        s.name,
        per_minute(s.objects_per_minute),
        per_minute(s.bytes_per_minute),
        per_minute(s.retained_per_minute)
    );
    println!("   objects per dump: {}", s.objects.iter().map(|&o| thousands(o)).collect::<Vec<_>>().join(" -> "));
    match &leak.holder {
        Some(h) => {
            println!(
                "   held by: {} ({}), holding {} of them",
                h.container.name,
                h.kind.describe(),
                thousands(h.holds)
            );
            let root = match &h.root {
                None => "no strong root".to_string(),
                Some(r) => r.label(),
            };
            let path: Vec<&str> = h.path.iter().map(|p| p.name.as_str()).collect();
            println!("   path: {root} -> {}", path.join(" -> "));
        }
        None => println!("   held by: no single object holds most of them (they hang from many roots)"),
    }
    if !leak.with.is_empty() {
        let with: Vec<String> = leak.with.iter().map(|t| format!("{} ({} objects/min)", t.name, per_minute(t.objects_per_minute))).collect();
        println!("   growing with it: {}", with.join(", "));
    }
    if let Some(t) = stacks {
        let est = if t.estimated { " (estimated from samples)" } else { "" };
        if t.stacks.is_empty() {
            println!("   allocated: no allocation of it in the trace");
        }
        for (bytes, objects, stack) in &t.stacks {
            println!("   allocated{est}: {} bytes, {} objects: {stack}", thousands(*bytes), thousands(*objects));
        }
    }
}
