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
    /// The file to write (pprof, speedscope) or the folder (parquet: made
    /// 0700 when missing; an existing one must be your own, closed to
    /// others' writes, and hold nothing but an earlier export).
    #[arg(short, long, value_name = "OUT", required_unless_present = "dataset", conflicts_with = "dataset")]
    output: Option<PathBuf>,
    /// Parquet: append the logs to this dataset folder (created 0700 if
    /// missing; an existing one must be your own, closed to others'
    /// writes, with no links inside), one Hive partition per log (`TABLE/log=NAME/part-0.parquet`)
    /// and a `logs` table with each log's name, host and start time; a
    /// log whose name the dataset has already is refused.
    #[arg(long, value_name = "DIR")]
    dataset: Option<PathBuf>,
    /// With --dataset: more logs to append, each its own partition.
    #[arg(value_name = "MORE", requires = "dataset")]
    more: Vec<PathBuf>,
    /// With --dataset and one log: its name in the dataset (default: the
    /// file name without .log/.gz/.zst).
    #[arg(long, requires = "dataset")]
    name: Option<String>,
    /// With --dataset: the host the logs were recorded on (default: this
    /// machine's name).
    #[arg(long, requires = "dataset")]
    host: Option<String>,
    /// With --dataset and one log: when its recording started, as
    /// 2026-11-27T05:40:00Z (UTC) or milliseconds since 1970 (default: the
    /// file's modification time less the log's duration).
    #[arg(long, value_name = "TIME", requires = "dataset")]
    start: Option<String>,
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
        if let Some(out) = args.output.as_ref().filter(|o| o.symlink_metadata().is_ok() && !args.force) {
            bail!("{} exists; choose another output or give --force to replace it", out.display());
        }
    }
    if let Some(dataset) = &args.dataset {
        return run_dataset(&args, dataset);
    }
    let Some(out) = &args.output else { bail!("give -o OUT (or --dataset DIR)") };
    if matches!(args.format, Format::Parquet) && out.symlink_metadata().is_ok() {
        // An existing folder refused before the load when it is not the
        // user's own (the export checks it again, on the folder it opens).
        clrprof_files::PrivateDir::create_or_check(out).map_err(|e| anyhow::anyhow!("cannot export into {}: {e}", out.display()))?;
    }
    let loaded = args.query.load()?;
    let model = &loaded.model;
    // pprof and speedscope are profiles of allocations: without any, an
    // empty profile would read as "nothing allocated". Parquet's tables
    // hold what the model has (no allocation rows then, not zeros).
    if matches!(args.format, Format::Pprof | Format::Speedscope) {
        crate::common::require_allocations(model, &args.query.load.shown(), "a pprof or speedscope export")?;
    }
    let filter = args.query.filter(model)?;
    let at = args.at.map(|ms| model.time().tick_at(ms / 1000.0));
    // pprof's `File:` line: the log's name (a recorded log's name starts
    // with the program's).
    let program = args.query.load.shown().file_name().map(|n| n.to_string_lossy().into_owned());
    let options = ExportOptions { filter, at, type_frames: args.type_frames, program };
    let start = Instant::now();
    let cpu_start = cpu_seconds();
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

/// One log appended to a dataset.
#[derive(serde::Serialize)]
struct Appended {
    log: String,
    name: String,
    host: String,
    start_time_ms: i64,
    start_time_source: String,
    bytes: u64,
    seconds: f64,
    tables: Vec<Table>,
}

/// `--dataset DIR`: appends each log as its own partition.
fn run_dataset(args: &Args, dataset: &Path) -> Result<()> {
    use clrprof_export::parquet::dataset::{append, check_name, duration_ms, name_from_path, partition, LogInfo, LOGS_TABLE};
    if !matches!(args.format, Format::Parquet) {
        bail!("--dataset applies to --format parquet");
    }
    let logs: Vec<PathBuf> = std::iter::once(args.query.load.log.clone()).chain(args.more.iter().cloned()).collect();
    if logs.len() > 1 && (args.name.is_some() || args.start.is_some()) {
        bail!("--name and --start name one log's partition: give one log with them");
    }
    let names: Vec<String> = logs
        .iter()
        .map(|l| args.name.clone().unwrap_or_else(|| if l.as_os_str() == "-" { "stdin".into() } else { name_from_path(l) }))
        .collect();
    // Every name valid, distinct and new before the first log is loaded.
    for (i, n) in names.iter().enumerate() {
        if let Err(e) = check_name(n) {
            bail!("{}: {e}; give --name", logs[i].display());
        }
        if let Some(j) = names[..i].iter().position(|m| m == n) {
            bail!("{} and {} both make the partition log={n}: rename one file", logs[j].display(), logs[i].display());
        }
        let p = partition(dataset, LOGS_TABLE, n);
        if p.symlink_metadata().is_ok() {
            bail!(
                "{}: the dataset has a log named `{n}` already ({}): a dataset is appended to, never rewritten; give --name",
                logs[i].display(),
                p.display()
            );
        }
    }
    // The folder refused (another user's, a link, open to others) before
    // any log is loaded.
    clrprof_export::parquet::dataset::open(dataset).map_err(|e| anyhow::anyhow!("cannot append to the dataset: {e}"))?;
    let given_start = args.start.as_deref().map(parse_start).transpose()?;
    let host = match &args.host {
        Some(h) => h.clone(),
        None => host_name(),
    };
    let mut done = Vec::new();
    for (log, name) in logs.iter().zip(&names) {
        let load = crate::common::LoadArgs { log: log.clone(), threads: args.query.load.threads, strict: args.query.load.strict, decompress: args.query.load.decompress };
        let loaded = crate::load::load(&load, args.query.out.quiet)?;
        let model = &loaded.model;
        let filter = args.query.filter(model)?;
        let options = ExportOptions { filter, at: None, type_frames: false, program: None };
        let (start_ms, start_source) = match given_start {
            Some(ms) => (ms, "given".to_string()),
            None => estimated_start(log, duration_ms(model)),
        };
        let info = LogInfo { name: name.clone(), host: host.clone(), start_ms, start_source, source: load.shown().display().to_string() };
        let began = Instant::now();
        let reports =
            append(model, &options, dataset, &info).with_context(|| format!("{}: appending to the dataset", load.shown().display()))?;
        let tables: Vec<Table> =
            reports.into_iter().map(|r| Table { name: r.name, rows: r.rows, row_groups: r.row_groups, bytes: r.bytes }).collect();
        let a = Appended {
            log: load.shown().display().to_string(),
            name: name.clone(),
            host: host.clone(),
            start_time_ms: start_ms,
            start_time_source: info.start_source.clone(),
            bytes: tables.iter().map(|t| t.bytes).sum(),
            seconds: began.elapsed().as_secs_f64(),
            tables,
        };
        if !args.query.out.json && !args.query.out.quiet {
            println!(
                "{}: appended to {} as log={} ({} bytes in {} tables)",
                a.log,
                dataset.display(),
                a.name,
                thousands(a.bytes),
                a.tables.len()
            );
        }
        args.query.report_warnings(model);
        done.push(a);
    }
    if args.query.out.json {
        print_json(&serde_json::json!({ "dataset": dataset.display().to_string(), "logs": done }))?;
    }
    Ok(())
}

/// This machine's name (`gethostname`), or `unknown`.
fn host_name() -> String {
    let mut buf = [0u8; 256];
    // Safety: the buffer is writable for its whole length, which is passed.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    if ok && end > 0 {
        String::from_utf8_lossy(&buf[..end]).into_owned()
    } else {
        "unknown".into()
    }
}

/// When a log's recording started, estimated: its file's modification
/// time (when the last line was written) less the log's duration; for
/// standard input, now less the duration.
fn estimated_start(log: &Path, duration_ms: f64) -> (i64, String) {
    let (end, what) = match std::fs::metadata(log).and_then(|m| m.modified()) {
        Ok(t) if log.as_os_str() != "-" => (t, "the file's modification time less the log's duration"),
        _ => (std::time::SystemTime::now(), "the export's time less the log's duration"),
    };
    let end_ms = end.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0);
    (end_ms - duration_ms.round() as i64, what.to_string())
}

/// `--start`: `YYYY-MM-DDTHH:MM:SS[.fff]Z` (UTC) or milliseconds since
/// 1970.
fn parse_start(text: &str) -> Result<i64> {
    if let Ok(ms) = text.parse::<i64>() {
        return Ok(ms);
    }
    let bad = || anyhow::anyhow!("--start `{text}`: expected a time such as 2026-11-27T05:40:00Z (UTC) or milliseconds since 1970");
    let t = text.strip_suffix('Z').ok_or_else(bad)?;
    let (date, time) = t.split_once('T').ok_or_else(bad)?;
    let num = |s: &str| s.parse::<i64>().map_err(|_| bad());
    let d: Vec<&str> = date.split('-').collect();
    let (secs, frac) = time.split_once('.').unwrap_or((time, ""));
    let h: Vec<&str> = secs.split(':').collect();
    if d.len() != 3 || h.len() != 3 || frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let (y, m, day) = (num(d[0])?, num(d[1])?, num(d[2])?);
    let (hh, mm, ss) = (num(h[0])?, num(h[1])?, num(h[2])?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || hh > 23 || mm > 59 || ss > 60 {
        return Err(bad());
    }
    let ms = if frac.is_empty() { 0 } else { num(&format!("{frac:0<3}"))? };
    // Days from 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
    // days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Ok(((days * 24 + hh) * 60 + mm) * 60_000 + ss * 1000 + ms)
}

#[cfg(test)]
mod tests {
    use super::parse_start;

    #[test]
    fn start_times() {
        assert_eq!(parse_start("1970-01-01T00:00:00Z").ok(), Some(0));
        assert_eq!(parse_start("2000-03-01T00:00:00Z").ok(), Some(951_868_800_000));
        assert_eq!(parse_start("2026-11-27T05:40:00.5Z").ok(), Some(1_795_758_000_500));
        assert_eq!(parse_start("1234").ok(), Some(1234));
        assert!(parse_start("2026-11-27 05:40:00").is_err());
        assert!(parse_start("2026-13-01T00:00:00Z").is_err());
    }
}
