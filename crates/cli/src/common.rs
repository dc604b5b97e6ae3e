//! Options and helpers shared by the subcommands.

use anyhow::{Context, Result};
use clrprof::format::{display_path, ChunkOptions, LogSource};
use clrprof::model::Model;
use clrprof::query::{Filter, TimeWindow};
use std::path::PathBuf;

/// Options every log-reading command takes.
#[derive(clap::Args, Clone, Debug)]
pub struct LoadArgs {
    /// The log file (`-` for standard input).
    pub log: PathBuf,
    /// Threads to parse with (default: all cores).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
    /// Treat the first irregularity in the log as an error.
    #[arg(long)]
    pub strict: bool,
    /// Limits on decompressing a `.gz` or `.zst` log.
    #[command(flatten)]
    pub decompress: DecompressArgs,
}

/// Limits on decompressing a log (see "The memory rule" in the guide).
#[derive(clap::Args, Clone, Copy, Debug, Default)]
pub struct DecompressArgs {
    /// Largest expansion of a compressed log that is read (decompressed
    /// bytes per compressed byte; the first 64 MiB are always read) [default: 250]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_ratio: Option<u64>,
    /// Largest decompressed log that is read, in bytes (K, M, G and T
    /// suffixes: powers of 1024) [default: 32G]
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_decompressed: Option<u64>,
}

impl DecompressArgs {
    /// The library's limits from the flags.
    pub fn limits(&self) -> clrprof::limits::DecompressLimits {
        let d = clrprof::limits::DecompressLimits::default();
        clrprof::limits::DecompressLimits {
            max_ratio: self.max_ratio.unwrap_or(d.max_ratio),
            max_bytes: self.max_decompressed.unwrap_or(d.max_bytes),
            ..d
        }
    }
}

/// A size in bytes with an optional K, M, G or T suffix (powers of 1024).
pub(crate) fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let (digits, shift) = match s.as_bytes().last().map(u8::to_ascii_uppercase) {
        Some(b'K') => (&s[..s.len() - 1], 10),
        Some(b'M') => (&s[..s.len() - 1], 20),
        Some(b'G') => (&s[..s.len() - 1], 30),
        Some(b'T') => (&s[..s.len() - 1], 40),
        _ => (s, 0),
    };
    let n: u64 = digits.parse().map_err(|_| format!("`{s}` is not a size (a number of bytes, or with K, M, G, T)"))?;
    n.checked_mul(1u64 << shift).ok_or_else(|| format!("`{s}` is too large"))
}

impl LoadArgs {
    /// Chunking options from the flags.
    pub fn chunk_options(&self) -> ChunkOptions {
        ChunkOptions { threads: self.threads.map(usize::from), ..ChunkOptions::default() }
    }

    /// Opens the log.
    pub fn open(&self) -> Result<LogSource> {
        Ok(LogSource::open_with(&self.log, &self.decompress.limits())?)
    }

    /// The path for messages.
    pub fn shown(&self) -> PathBuf {
        display_path(&self.log)
    }
}

/// What the figures of the loaded sampled trace(s) are made of, for
/// [`print_json`] to add to every JSON answer.
static ESTIMATES: std::sync::Mutex<Option<serde_json::Value>> = std::sync::Mutex::new(None);

/// Says once, on standard error (unless `quiet`), that a model of a trace
/// gives estimates, and keeps the estimates for [`print_json`].
pub fn note_estimates(model: &Model, shown: &std::path::Path, quiet: bool) {
    let Some(e) = clrprof::query::estimates(model) else { return };
    if !quiet {
        eprintln!("clrprof: note: {}: {}", shown.display(), e.note);
    }
    if let (Ok(mut slot), Ok(v)) = (ESTIMATES.lock(), serde_json::to_value(&e)) {
        *slot = Some(v);
    }
}

/// For the views made of allocations: an error naming why the model has
/// none (a trace without allocation events, a `.gcdump`), rather than
/// empty or zero figures.
pub fn require_allocations(model: &Model, shown: &std::path::Path, what: &str) -> Result<()> {
    match clrprof::query::allocations_unknown(model) {
        Some(why) => anyhow::bail!("{}: {what} needs allocations, and they are unknown: {why}", shown.display()),
        None => Ok(()),
    }
}

/// What the loaded trace(s) lost, for [`print_json`] to add to every JSON
/// answer.
static INCOMPLETE: std::sync::Mutex<Option<serde_json::Value>> = std::sync::Mutex::new(None);

/// The loaded model's line saying it is incomplete (events its trace
/// lost), for the commands that show heap dumps to print above them.
pub fn incomplete_line(model: &Model) -> Option<String> {
    clrprof::query::incomplete(model).map(|i| i.note)
}

/// Says on standard error (always: it is a warning) that a model of a
/// trace misses events the runtime dropped, and keeps that for
/// [`print_json`].
pub fn note_incomplete(model: &Model, shown: &std::path::Path) {
    let Some(i) = clrprof::query::incomplete(model) else { return };
    eprintln!("clrprof: warning: {}: {}", shown.display(), i.note);
    if let (Ok(mut slot), Ok(v)) = (INCOMPLETE.lock(), serde_json::to_value(&i)) {
        *slot = Some(v);
    }
}

/// Prints JSON, pretty. When a sampled trace was loaded, an object gets
/// the key `estimates` (see `clrprof::query::Estimates`): its figures are
/// estimates, and the key says how they were made. When a trace lost
/// events, it gets the key `incomplete` (`clrprof::query::Incomplete`).
pub fn print_json(v: &serde_json::Value) -> Result<()> {
    let mut v = std::borrow::Cow::Borrowed(v);
    for (key, slot) in [("estimates", &ESTIMATES), ("incomplete", &INCOMPLETE)] {
        if let Some(e) = slot.lock().ok().and_then(|g| g.clone()) {
            if let serde_json::Value::Object(map) = v.to_mut() {
                map.entry(key).or_insert(e);
            }
        }
    }
    let s = serde_json::to_string_pretty(&v)?;
    println!("{s}");
    Ok(())
}

/// A number with thousands separators.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// How a query command prints: a table or JSON, and how many rows.
///
/// Tables show 20 rows per list unless `--top` says otherwise. JSON is for
/// tools: complete unless `--top` is given, and every list that `--top`
/// can cut has a sibling field `<list>_left_out` with the number of rows
/// left out (0 when complete).
#[derive(clap::Args, Clone, Debug)]
pub struct OutputArgs {
    /// Print JSON instead of tables (every row unless --top is given).
    /// An error is printed as `{"error": MESSAGE}` on standard output (exit status 1).
    #[arg(long)]
    pub json: bool,
    /// Show at most this many rows per list (0: all; tables default to 20,
    /// JSON to all).
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// No progress bar and no warning count.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Rows per table when `--top` is not given.
pub const DEFAULT_TOP: usize = 20;

impl OutputArgs {
    /// How many rows per list to show: `--top` (0: all), else 20 rows in
    /// a table and every row in JSON.
    pub fn limit(&self) -> usize {
        match self.top {
            Some(0) => usize::MAX,
            Some(n) => n,
            None if self.json => usize::MAX,
            None => DEFAULT_TOP,
        }
    }
}

/// Keeps the first `limit` rows; returns how many were left out.
pub fn keep<T>(rows: &mut Vec<T>, limit: usize) -> usize {
    let left_out = rows.len().saturating_sub(limit);
    rows.truncate(limit);
    left_out
}

/// In a JSON object, cuts the array under `key` to `limit` rows and adds
/// `<key>_left_out` with the number of rows left out.
pub fn cut_json(v: &mut serde_json::Value, key: &str, limit: usize) {
    let Some(o) = v.as_object_mut() else { return };
    let left_out = match o.get_mut(key).and_then(serde_json::Value::as_array_mut) {
        Some(rows) => keep(rows, limit),
        None => 0,
    };
    o.insert(format!("{key}_left_out"), left_out.into());
}

/// `n` and a noun, singular or plural: `1 type`, `2 types`.
pub fn count(n: u64, singular: &str, plural: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { singular } else { plural })
}

/// `n more` and a noun: `1 more callee`, `2 more callees`.
pub fn more(n: u64, singular: &str, plural: &str) -> String {
    format!("{} more {}", thousands(n), if n == 1 { singular } else { plural })
}

/// The table's note under a list cut by `--top`: `(3 more types; --top 0
/// shows all)`, nothing when nothing was left out.
pub fn more_note(left_out: usize, singular: &str, plural: &str) -> Option<String> {
    (left_out > 0).then(|| format!("({}; --top 0 shows all)", more(left_out as u64, singular, plural)))
}

/// Creates an output file, with the one wording every command uses when
/// that fails. It is created exclusively, never through a link, mode 0600
/// less the umask (see `clrprof_files`); an existing path is refused
/// unless `force`, and then the entry there (a link included) is removed
/// and a new file made in its place.
pub fn create_output(path: &std::path::Path, force: bool) -> Result<std::io::BufWriter<std::fs::File>> {
    if !force && path.symlink_metadata().is_ok() {
        anyhow::bail!("{} exists; choose another output or give --force to replace it", path.display());
    }
    let file = clrprof_files::create(path, force).with_context(|| format!("cannot create {}", path.display()))?;
    Ok(std::io::BufWriter::new(file))
}

/// Options every query command takes: the log, output form, how many rows,
/// and which part of the log to look at.
#[derive(clap::Args, Clone, Debug)]
pub struct QueryArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub out: OutputArgs,
    /// Only what happened at or after this time (milliseconds).
    #[arg(long, value_name = "MS")]
    pub from: Option<f64>,
    /// Only what happened at or before this time (milliseconds).
    #[arg(long, value_name = "MS")]
    pub to: Option<f64>,
    /// Only what happened between two comments (`z` lines), given by their
    /// text (exact, or else a substring).
    #[arg(long, num_args = 2, value_names = ["A", "B"], conflicts_with_all = ["from", "to"])]
    pub between_comments: Option<Vec<String>>,
    /// Only what these threads did (thread ids as in the log; repeatable).
    #[arg(long = "thread", id = "thread_filter", value_name = "ID")]
    pub threads: Vec<i32>,
}

impl QueryArgs {
    /// The time window from the flags.
    pub fn window(&self) -> TimeWindow {
        match &self.between_comments {
            Some(v) if v.len() == 2 => TimeWindow::BetweenComments(v[0].clone(), v[1].clone()),
            _ if self.from.is_some() || self.to.is_some() => TimeWindow::Millis { from: self.from, to: self.to },
            _ => TimeWindow::All,
        }
    }

    /// The filter, resolved against a loaded model.
    pub fn filter(&self, model: &Model) -> Result<Filter> {
        Ok(Filter::resolve(model, &self.window(), &self.threads)?)
    }

    /// Rows per list (see [`OutputArgs::limit`]).
    pub fn limit(&self) -> usize {
        self.out.limit()
    }

    /// Loads the model (progress bar unless `--quiet`).
    pub fn load(&self) -> Result<crate::load::Loaded> {
        crate::load::load(&self.load, self.out.quiet)
    }

    /// Loads the model for a view made of allocations (`what` names it):
    /// an error when the model has none (see [`require_allocations`]).
    pub fn load_allocations(&self, what: &str) -> Result<crate::load::Loaded> {
        let loaded = self.load()?;
        require_allocations(&loaded.model, &self.load.shown(), what)?;
        Ok(loaded)
    }

    /// Tells on standard error how many warnings the load produced.
    pub fn report_warnings(&self, model: &Model) {
        if model.diagnostics().total() > 0 && !self.out.quiet {
            eprintln!("clrprof: {} while reading; `clrprof stats` lists them", count(model.diagnostics().total(), "warning", "warnings"));
        }
    }
}

/// Whether the loaded model's allocation figures are estimates (a sampled
/// trace; set by [`note_estimates`] whether or not the note is printed).
pub fn estimated() -> bool {
    ESTIMATES.lock().map(|s| s.is_some()).unwrap_or(false)
}

/// The mark an estimated column's header carries: the column's meaning,
/// so `-q` (which silences notes) keeps it.
pub const EST: &str = " est.";

/// The header of the column that gives an estimated row's 95% range
/// (from the number of samples it rests on), beside its estimates.
pub const RANGE_HEADER: &str = "95% range";

/// Prints a table whose columns `estimates` (indexes into `header`) are
/// made of sampled allocations: when the loaded model is a sampled trace,
/// their headers end in " est.".
pub fn print_estimated_table(header: &[&str], estimates: &[usize], rows: &[Vec<String>]) {
    if !estimated() {
        return print_table(header, rows);
    }
    let marked: Vec<String> =
        header.iter().enumerate().map(|(i, h)| if estimates.contains(&i) { format!("{h}{EST}") } else { h.to_string() }).collect();
    let marked: Vec<&str> = marked.iter().map(String::as_str).collect();
    print_table(&marked, rows)
}

/// Prints a table: a header row and rows of cells; columns after the first
/// are right-aligned.
pub fn print_table(header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i < widths.len() {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let w = widths.get(i).copied().unwrap_or(0);
            if i > 0 {
                s.push_str("  ");
            }
            if i == 0 {
                s.push_str(&format!("{c:<w$}"));
            } else {
                s.push_str(&format!("{c:>w$}"));
            }
        }
        println!("{}", s.trim_end());
    };
    line(header.to_vec());
    for r in rows {
        line(r.iter().map(String::as_str).collect());
    }
}

/// Names for a list of functions, given as `(name, signature)`: the name
/// alone where it is unique, and where overloads share it the name with
/// its parameter list (`System.Net.WebRequest::Create(String)`), or with
/// the whole signature when the parameter lists are the same too.
pub fn function_labels(functions: &[(&str, &str)]) -> Vec<String> {
    use std::collections::{HashMap, HashSet};
    let params = |sig: &str| -> String {
        match sig.find('(') {
            Some(i) => sig[i..].split_whitespace().collect::<Vec<_>>().join(" ").replace("( ", "(").replace(" )", ")"),
            None => sig.to_string(),
        }
    };
    let mut signatures: HashMap<&str, HashSet<&str>> = HashMap::new();
    for &(name, sig) in functions {
        signatures.entry(name).or_default().insert(sig);
    }
    functions
        .iter()
        .map(|&(name, sig)| {
            let Some(sigs) = signatures.get(name).filter(|s| s.len() > 1) else { return name.to_string() };
            let p = params(sig);
            let clash = sigs.iter().filter(|s| params(s) == p).count() > 1;
            if clash || p.is_empty() {
                format!("{name} {sig}")
            } else {
                format!("{name}{p}")
            }
        })
        .collect()
}

/// A time asked for on the command line (`--at`, `--alive-at`), resolved
/// to the log's clock: the last tick index at or before it. Says on
/// standard error when the log has no tick at that time (the heap shown is
/// the one of an earlier time) or when the time lies outside the log.
pub fn tick_for(model: &Model, flag: &str, ms: f64) -> Result<clrprof::model::TickIndex> {
    if !ms.is_finite() {
        anyhow::bail!("{flag} must be a number of milliseconds");
    }
    let time = model.time();
    let tick = time.tick_at(ms / 1000.0);
    let shown = time.millis(tick).unwrap_or(0);
    let last = clrprof::model::TickIndex(time.len().saturating_sub(1) as u32);
    let end = time.millis(last).unwrap_or(0);
    if let Some(note) = clamp_note(flag, ms, shown, end) {
        eprintln!("clrprof: {note}");
    }
    Ok(tick)
}

/// The note of [`tick_for`], if one is due: `ms` asked, `shown` the time of
/// the tick used, `end` the time of the log's last tick.
pub fn clamp_note(flag: &str, ms: f64, shown: u64, end: u64) -> Option<String> {
    let asked = ms_text(ms);
    if ms >= end as f64 + 0.5 {
        Some(format!("{flag} {asked} ms is after the log's last tick ({end} ms): showing {end} ms"))
    } else if ms < 0.0 {
        Some(format!("{flag} {asked} ms is before the log starts: showing {shown} ms"))
    } else if (ms - shown as f64).abs() >= 0.5 {
        Some(format!(
            "{flag} {asked} ms: the log has no tick between {shown} ms and {asked} ms; showing {shown} ms (the last tick before it)"
        ))
    } else {
        None
    }
}

/// Milliseconds for display: at most three decimals, no trailing zeros.
pub fn ms_text(v: f64) -> String {
    let r = (v * 1000.0).round() / 1000.0;
    format!("{r}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overloads_get_their_parameters() {
        let l = function_labels(&[
            ("A::Create", "static A (String)"),
            ("A::Create", "static A (System.Uri bool)"),
            ("B::Run", "void ()"),
            ("C::Get", "int32 ()"),
            ("C::Get", "string ()"),
        ]);
        assert_eq!(l, ["A::Create(String)", "A::Create(System.Uri bool)", "B::Run", "C::Get int32 ()", "C::Get string ()"]);
    }

    #[test]
    fn left_out_counts_and_notes() {
        let mut v = serde_json::json!({"rows": [1, 2, 3]});
        cut_json(&mut v, "rows", 2);
        assert_eq!(v, serde_json::json!({"rows": [1, 2], "rows_left_out": 1}));
        cut_json(&mut v, "rows", usize::MAX);
        assert_eq!(v["rows_left_out"], 0);
        assert_eq!(more_note(1, "type", "types").as_deref(), Some("(1 more type; --top 0 shows all)"));
        assert_eq!(more_note(0, "type", "types"), None);
        assert_eq!(count(1, "call", "calls"), "1 call");
        assert_eq!(more(1, "callee", "callees"), "1 more callee");
    }

    #[test]
    fn clamped_times_are_told() {
        assert_eq!(clamp_note("--at", 279.0, 279, 279), None);
        assert_eq!(clamp_note("--at", 279.2, 279, 279), None);
        let after = clamp_note("--at", 300.0, 279, 279).unwrap();
        assert!(after.contains("after the log's last tick (279 ms): showing 279 ms"), "{after}");
        let between = clamp_note("--at", 10.0, 0, 279).unwrap();
        assert!(between.contains("no tick between 0 ms and 10 ms; showing 0 ms"), "{between}");
        assert!(clamp_note("--at", -5.0, 0, 279).unwrap().contains("before the log starts"));
    }
}
