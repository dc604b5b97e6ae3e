//! A dataset of many logs: the Parquet tables of each log in a
//! Hive-partitioned folder, one partition per log, appended to and never
//! rewritten.
//!
//! ```text
//! DATASET/
//!   logs/log=NAME/part-0.parquet      one row: name, host, start_time, ...
//!   objects/log=NAME/part-0.parquet   the log's `objects` table
//!   types/log=NAME/part-0.parquet     ... every table of the export
//!   ...
//! ```
//!
//! Readers take the partition column `log` from the folder names
//! (DuckDB: `read_parquet('DATASET/objects/*/*.parquet',
//! hive_partitioning = true)`; Spark: `spark.read.parquet("DATASET/objects")`)
//! and join the tables of one log on it. A log is written into a staging
//! folder inside the dataset (`.staging/`), then each table's file is moved
//! into its new partition folder; a partition that exists already, in any
//! table, is refused before anything is written.

use super::writer::{batch, write_table, TableReport, TableSpec};
use super::{write_into, TABLES};
use crate::{Error, ExportOptions, Result};
use arrow_array::{ArrayRef, Float64Array, StringArray, TimestampMillisecondArray};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use clrprof::model::Model;
use clrprof_files::PrivateDir;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The table with one row per log.
pub const LOGS_TABLE: &str = "logs";

/// What the `logs` table says of a log.
#[derive(Clone, Debug, PartialEq)]
pub struct LogInfo {
    /// Its name in the dataset: the partition value (`log=NAME`); see
    /// [`check_name`].
    pub name: String,
    /// The machine it was recorded on.
    pub host: String,
    /// When the recording started, milliseconds since 1970-01-01 UTC.
    pub start_ms: i64,
    /// Where `start_ms` comes from (`given`, or how it was estimated).
    pub start_source: String,
    /// The file it was read from.
    pub source: String,
}

/// Characters a partition name may hold: letters, digits and `. _ - + @`
/// (no path separator, no `=`, nothing a reader would have to unescape),
/// not starting with a dot.
pub fn check_name(name: &str) -> std::result::Result<(), String> {
    if name.is_empty() {
        return Err("a log's name in a dataset cannot be empty".into());
    }
    if name.starts_with('.') {
        return Err(format!("`{name}`: a log's name in a dataset cannot start with a dot"));
    }
    if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+' | '@'))) {
        return Err(format!("`{name}`: a log's name in a dataset holds letters, digits and . _ - + @ only (not {c:?})"));
    }
    Ok(())
}

/// A partition name made from a file name: its stem (`app.log.gz` gives
/// `app`), with each character [`check_name`] refuses replaced by `_`.
pub fn name_from_path(path: &Path) -> String {
    let file = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    let mut stem = file.as_str();
    for ext in [".gz", ".zst", ".log", ".nettrace", ".gcdump"] {
        stem = stem.strip_suffix(ext).unwrap_or(stem);
    }
    let mut name: String =
        stem.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+' | '@') { c } else { '_' }).collect();
    if name.starts_with('.') {
        name.replace_range(0..1, "_");
    }
    if name.is_empty() {
        name.push_str("log");
    }
    name
}

/// The partition folder of a log in one table.
pub fn partition(dataset: &Path, table: &str, name: &str) -> PathBuf {
    dataset.join(table).join(format!("log={name}"))
}

fn io_error(path: &Path, kind: io::ErrorKind, message: String) -> Error {
    Error::Io { path: path.to_path_buf(), source: io::Error::new(kind, message) }
}

/// Opens the dataset folder `dataset`: made (mode 0700, as every folder
/// the dataset gets) when missing; an existing one must be the user's own,
/// not a link, and writable by no one else
/// ([`PrivateDir::create_or_check`]). [`append`] does this itself; call it
/// to refuse a folder before any work (as `collect --dataset` does at
/// start).
pub fn open(dataset: &Path) -> Result<PrivateDir> {
    PrivateDir::create_or_check(dataset).map_err(crate::error::folder(dataset))
}

/// Appends a log to the dataset at `dataset` (see [`open`]): every
/// table of [`super::write`] and the `logs` row, each in its partition
/// `TABLE/log=NAME/part-0.parquet`. Every folder and file is made through
/// the dataset folder held open, never through a link: a link, another
/// user's folder or a folder others can write to anywhere inside is
/// refused ([`Error::Untrusted`]) with nothing written through it.
/// Refused, with nothing written, when the name is not a valid partition
/// name or when any table already has a partition of this name. Returns
/// what each file holds.
pub fn append(model: &Model, options: &ExportOptions, dataset: &Path, info: &LogInfo) -> Result<Vec<TableReport>> {
    check_name(&info.name).map_err(|m| io_error(dataset, io::ErrorKind::InvalidInput, m))?;
    let root = open(dataset)?;
    let part_name = format!("log={}", info.name);
    let tables: Vec<&'static str> = std::iter::once(LOGS_TABLE).chain(TABLES).collect();
    for t in &tables {
        let taken = match root.existing_subdir(t).map_err(crate::error::folder(&root.shown(t)))? {
            Some(table) => table.contains(&part_name).map_err(|source| Error::Io { path: table.path().to_path_buf(), source })?,
            None => false,
        };
        if taken {
            return Err(io_error(
                &partition(dataset, t, &info.name),
                io::ErrorKind::AlreadyExists,
                format!(
                    "the dataset has a log named `{}` already (a dataset is appended to, never rewritten): give this log another name",
                    info.name
                ),
            ));
        }
    }
    let staging_root = root.subdir(STAGING).map_err(crate::error::folder(&root.shown(STAGING)))?;
    let stage_name = format!("{}.{}.{}", info.name, std::process::id(), STAGES.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let stage = staging_root.create_subdir(&stage_name).map_err(crate::error::folder(&staging_root.shown(&stage_name)))?;
    let result = stage_and_move(model, options, &root, &stage, info, &tables);
    // What is left of the staging folder (the tables not moved, on an
    // error), then the folders themselves when empty.
    if let Ok(names) = stage.names() {
        for n in names {
            let _ = stage.remove_file(&n.to_string_lossy());
        }
    }
    let _ = staging_root.remove_dir(&stage_name);
    let _ = root.remove_dir(STAGING);
    let reports = result?;
    if !root.contains("README.md").map_err(|source| Error::Io { path: dataset.to_path_buf(), source })? {
        root.write_whole("README.md", README.as_bytes(), false).map_err(|source| Error::Io { path: root.shown("README.md"), source })?;
    }
    Ok(reports)
}

/// The staging folder inside a dataset.
const STAGING: &str = ".staging";

/// Staging folders made by this process: with the process id, a name
/// no other writer uses at the same time (the folder is made
/// exclusively, so a name taken anyway is an error, never shared).
static STAGES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn stage_and_move(
    model: &Model,
    options: &ExportOptions,
    root: &PrivateDir,
    stage: &PrivateDir,
    info: &LogInfo,
    tables: &[&'static str],
) -> Result<Vec<TableReport>> {
    let mut reports = write_into(model, options, stage)?;
    reports.insert(0, logs_table(stage, model, info)?);
    let part_name = format!("log={}", info.name);
    for t in tables {
        let table_dir = root.subdir(t).map_err(crate::error::folder(&root.shown(t)))?;
        // `create_subdir`, exclusive: a partition made meanwhile by
        // another writer is an error, not shared.
        let to_dir = table_dir.create_subdir(&part_name).map_err(crate::error::folder(&table_dir.shown(&part_name)))?;
        let from = format!("{t}.parquet");
        stage.rename(&from, &to_dir, "part-0.parquet").map_err(|source| Error::Io { path: to_dir.shown("part-0.parquet"), source })?;
    }
    Ok(reports)
}

/// Writes the one-row `logs` table of a log into `dir/logs.parquet`.
fn logs_table(dir: &PrivateDir, model: &Model, info: &LogInfo) -> Result<TableReport> {
    let spec = TableSpec {
        name: LOGS_TABLE,
        schema: Arc::new(Schema::new(vec![
            Field::new("name", DataType::Utf8, false),
            Field::new("host", DataType::Utf8, false),
            Field::new("start_time", DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())), false),
            Field::new("start_time_source", DataType::Utf8, false),
            Field::new("source", DataType::Utf8, false),
            Field::new("duration_ms", DataType::Float64, false),
        ])),
        delta_columns: &[],
    };
    let duration = duration_ms(model);
    write_table(dir, &spec, 1, |_| {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec![info.name.as_str()])),
            Arc::new(StringArray::from(vec![info.host.as_str()])),
            Arc::new(TimestampMillisecondArray::from(vec![info.start_ms]).with_timezone("UTC")),
            Arc::new(StringArray::from(vec![info.start_source.as_str()])),
            Arc::new(StringArray::from(vec![info.source.as_str()])),
            Arc::new(Float64Array::from(vec![duration])),
        ];
        batch(&spec, columns)
    })
}

/// Milliseconds from the log's first tick to its last.
pub fn duration_ms(model: &Model) -> f64 {
    let t = model.time();
    t.seconds(t.max_assigned()).unwrap_or(0.0) * 1000.0
}

/// The dataset's README.
const README: &str = "# clrprof Parquet dataset\n\n\
Many logs' tables, written by `clrprof export --format parquet --dataset DIR LOG...`:\n\
one folder per table, one partition `log=NAME` per log (Hive layout), and a `logs`\n\
table with each log's name, host and start time. The guide's chapter \"Exports\"\n\
(docs/src/exports.md) describes the tables.\n\n\
DuckDB: `SELECT log, sum(size) FROM read_parquet('objects/*/*.parquet', hive_partitioning = true) GROUP BY log;`\n\
Spark: `spark.read.parquet(\"objects\").groupBy(\"log\").sum(\"size\")`.\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(check_name("app-1.2_x+y@h").is_ok());
        assert!(check_name("").is_err());
        assert!(check_name(".hidden").is_err());
        assert!(check_name("a/b").is_err());
        assert!(check_name("log=x").is_err());
        assert_eq!(name_from_path(Path::new("/x/app run.log.gz")), "app_run");
        assert_eq!(name_from_path(Path::new("/x/.log")), "log");
        assert_eq!(name_from_path(Path::new("/x/.a.log")), "_a");
        assert_eq!(name_from_path(Path::new("trace.nettrace")), "trace");
    }
}
