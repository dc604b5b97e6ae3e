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
use super::{write, TABLES};
use crate::{Error, ExportOptions, Result};
use arrow_array::{ArrayRef, Float64Array, StringArray, TimestampMillisecondArray};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use clrprof::model::Model;
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

/// Appends a log to the dataset at `dataset` (created if missing): every
/// table of [`super::write`] and the `logs` row, each in its partition
/// `TABLE/log=NAME/part-0.parquet`. Refused, with nothing written, when
/// the name is not a valid partition name or when any table already has
/// a partition of this name. Returns what each file holds.
pub fn append(model: &Model, options: &ExportOptions, dataset: &Path, info: &LogInfo) -> Result<Vec<TableReport>> {
    check_name(&info.name).map_err(|m| io_error(dataset, io::ErrorKind::InvalidInput, m))?;
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path: path.clone(), source }
    };
    if dataset.symlink_metadata().is_ok_and(|m| !m.is_dir()) {
        return Err(io_error(dataset, io::ErrorKind::InvalidInput, "it is not a folder".into()));
    }
    let tables: Vec<&'static str> = std::iter::once(LOGS_TABLE).chain(TABLES).collect();
    for t in &tables {
        let p = partition(dataset, t, &info.name);
        if p.symlink_metadata().is_ok() {
            return Err(io_error(
                &p,
                io::ErrorKind::AlreadyExists,
                format!(
                    "the dataset has a log named `{}` already (a dataset is appended to, never rewritten): give this log another name",
                    info.name
                ),
            ));
        }
    }
    std::fs::create_dir_all(dataset).map_err(io(dataset))?;
    let staging = dataset.join(".staging").join(format!("{}.{}", info.name, std::process::id()));
    if staging.symlink_metadata().is_ok() {
        std::fs::remove_dir_all(&staging).map_err(io(&staging))?;
    }
    std::fs::create_dir_all(&staging).map_err(io(&staging))?;
    let result = stage_and_move(model, options, dataset, &staging, info, &tables);
    let _ = std::fs::remove_dir_all(&staging);
    let _ = std::fs::remove_dir(dataset.join(".staging"));
    let reports = result?;
    let readme = dataset.join("README.md");
    if readme.symlink_metadata().is_err() {
        clrprof_files::write_whole(&readme, README.as_bytes(), false).map_err(io(&readme))?;
    }
    Ok(reports)
}

fn stage_and_move(
    model: &Model,
    options: &ExportOptions,
    dataset: &Path,
    staging: &Path,
    info: &LogInfo,
    tables: &[&'static str],
) -> Result<Vec<TableReport>> {
    // The tables first: `write` wants a folder holding nothing else.
    let mut reports = write(model, options, staging)?;
    reports.insert(0, logs_table(staging, model, info)?);
    for t in tables {
        let from = staging.join(format!("{t}.parquet"));
        let table_dir = dataset.join(t);
        std::fs::create_dir_all(&table_dir).map_err(|source| Error::Io { path: table_dir.clone(), source })?;
        let to_dir = partition(dataset, t, &info.name);
        // `create_dir`, not `create_dir_all`: a partition made meanwhile
        // by another writer is an error, not shared.
        std::fs::create_dir(&to_dir).map_err(|source| Error::Io { path: to_dir.clone(), source })?;
        let to = to_dir.join("part-0.parquet");
        std::fs::rename(&from, &to).map_err(|source| Error::Io { path: to.clone(), source })?;
    }
    Ok(reports)
}

/// Writes the one-row `logs` table of a log into `dir/logs.parquet`.
fn logs_table(dir: &Path, model: &Model, info: &LogInfo) -> Result<TableReport> {
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
