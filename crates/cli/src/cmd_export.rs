//! `clrprof export`: the log as a pprof profile, a speedscope file or a
//! folder of Parquet tables (the `clrprof-export` library does the work).

use crate::common::{print_json, thousands, QueryArgs};
use anyhow::{bail, Context, Result};
use clap::ValueEnum;
use clrprof_export::{parquet, pprof, speedscope, ExportOptions};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The format to write.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    /// A gzipped pprof profile (go tool pprof, Grafana Pyroscope):
    /// alloc_objects/alloc_space and inuse_objects/inuse_space.
    Pprof,
    /// A speedscope JSON file: flame graphs of allocated bytes, all threads
    /// and one per thread.
    Speedscope,
    /// A folder of Parquet files, one per table (DuckDB, Spark, pandas).
    Parquet,
}

/// Arguments of `clrprof export`.
///
/// `--from`/`--to`/`--between-comments`/`--thread` select objects by
/// allocation time and thread (for Parquet, the `objects` table only; the
/// other tables are whole). `--json` prints what was written as JSON.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    query: QueryArgs,
    /// The format.
    #[arg(long, value_enum)]
    format: Format,
    /// The file to write (pprof, speedscope) or the folder (parquet).
    #[arg(short, long, value_name = "OUT")]
    output: PathBuf,
    /// pprof: the in-use figures are the objects live at this time
    /// (milliseconds) instead of at the end of the log.
    #[arg(long, value_name = "MS")]
    at: Option<f64>,
    /// pprof: also show each sample's type as its leaf frame.
    #[arg(long)]
    type_frames: bool,
    /// Replace an existing output file (a Parquet folder is only ever
    /// rewritten when it holds nothing but an earlier export's files).
    #[arg(long)]
    force: bool,
}

/// What was written.
#[derive(serde::Serialize)]
struct Written {
    format: &'static str,
    output: String,
    bytes: u64,
    seconds: f64,
    /// CPU time of the process during the export (all threads): on a
    /// shared machine, a figure the other programs disturb less.
    cpu_seconds: f64,
    tables: Vec<Table>,
}

#[derive(serde::Serialize)]
struct Table {
    name: &'static str,
    rows: u64,
    row_groups: usize,
    bytes: u64,
}

/// CPU time used by this process so far (user and system, all threads).
fn cpu_seconds() -> f64 {
    let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // Safety: getrusage writes a `rusage` into the pointer it is given,
    // which points at one.
    let ok = unsafe { libc::getrusage(libc::RUSAGE_SELF, u.as_mut_ptr()) } == 0;
    if !ok {
        return 0.0;
    }
    // Safety: zero-initialised and filled by getrusage.
    let u = unsafe { u.assume_init() };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// Creates the export exclusively (never through a link); with `force`
/// what is at the path is replaced, a link removed rather than followed.
fn create(path: &Path, force: bool) -> Result<std::fs::File> {
    if path.symlink_metadata().is_ok() && !force {
        bail!("{} exists; choose another output or give --force to replace it", path.display());
    }
    clrprof_files::create(path, force).with_context(|| format!("create {}", path.display()))
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    if args.at.is_some() && !matches!(args.format, Format::Pprof) {
        bail!("--at applies to --format pprof (its in-use figures)");
    }
    if args.type_frames && !matches!(args.format, Format::Pprof) {
        bail!("--type-frames applies to --format pprof (speedscope always shows types as leaf frames)");
    }
    if matches!(args.format, Format::Pprof | Format::Speedscope) {
        // Refuse before the load, not after it.
        if args.output.symlink_metadata().is_ok() && !args.force {
            bail!("{} exists; choose another output or give --force to replace it", args.output.display());
        }
    }
    let loaded = args.query.load()?;
    let model = &loaded.model;
    let filter = args.query.filter(model)?;
    let at = args.at.map(|ms| model.time().tick_at(ms / 1000.0));
    // pprof's `File:` line: the log's name (a recorded log's name starts
    // with the program's).
    let program = args.query.load.shown().file_name().map(|n| n.to_string_lossy().into_owned());
    let options = ExportOptions { filter, at, type_frames: args.type_frames, program };
    let start = Instant::now();
    let cpu_start = cpu_seconds();
    let out = &args.output;
    let (format, tables) = match args.format {
        Format::Pprof => {
            pprof::write(model, &options, std::io::BufWriter::new(create(out, args.force)?))
                .with_context(|| format!("write {}", out.display()))?;
            ("pprof", Vec::new())
        }
        Format::Speedscope => {
            let name = args.query.load.shown().display().to_string();
            speedscope::write(model, &options, &name, create(out, args.force)?)
                .with_context(|| format!("write {}", out.display()))?;
            ("speedscope", Vec::new())
        }
        Format::Parquet => {
            let reports = parquet::write(model, &options, out)?;
            let tables = reports
                .into_iter()
                .map(|r| Table { name: r.name, rows: r.rows, row_groups: r.row_groups, bytes: r.bytes })
                .collect();
            ("parquet", tables)
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    let cpu_seconds = cpu_seconds() - cpu_start;
    let bytes = match args.format {
        Format::Parquet => (tables.iter().map(|t: &Table| t.bytes)).sum(),
        _ => std::fs::metadata(out).map(|m| m.len()).unwrap_or(0),
    };
    let written = Written { format, output: out.display().to_string(), bytes, seconds, cpu_seconds, tables };
    if args.query.out.json {
        print_json(&serde_json::to_value(&written)?)?;
    } else if !args.query.out.quiet {
        println!(
            "{}: {format} export in {seconds:.2} s ({cpu_seconds:.2} s of CPU): {} ({} bytes)",
            args.query.load.shown().display(),
            out.display(),
            thousands(bytes)
        );
        for t in &written.tables {
            println!("  {}.parquet: {} rows, {} bytes", t.name, thousands(t.rows), thousands(t.bytes));
        }
    }
    args.query.report_warnings(model);
    Ok(())
}
