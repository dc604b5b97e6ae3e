//! Parquet: a folder of Parquet files, one per table, as DuckDB, Spark,
//! pandas and polars read them (`read_parquet('DIR/objects.parquet')`).
//!
//! Files are written with Snappy compression (what Spark writes by default), one or more row groups per
//! table (row groups of a million objects, encoded in parallel; at most as
//! many row groups as the thread pool has threads are in memory at once),
//! the Arrow schema in the file's metadata, and only signed integer types
//! (Spark has no unsigned ones). Times are milliseconds since the start of
//! profiling (`f64`, as CLRProfiler computes them); `tick` columns are
//! CLRProfiler's tick indices (slots of its time table).
//!
//! | table | one row per | columns |
//! |---|---|---|
//! | `objects` | allocated object the filter keeps (by allocation time and thread) | `id` (position among the log's allocations), `address`, `type_id` and `size` (from its allocation stack; null when the stack has none), `thread` (id as in the log; null for `a` records), `alloc_tick`, `alloc_ms`, `stack` (`stacks.id` of its frames), `fate` (`gc`: removed by a GC; `erased`: removed outside a GC; `alive`: in the heap at the end; `untracked`: under 12 bytes, never in CLRProfiler's heap), `generation` (when it died, or at the end for live objects; 3 = large object heap), `death_gc` (`gcs.id`), `death_ms`, `gcs_survived`, `weight` (the objects the row stands for: 1 in a log; for a sampled trace, what the sample stands for, so `sum(weight * size)` estimates the bytes) |
//! | `stacks` | distinct frame path (a prefix tree; 0 is the empty path) | `id`, `parent` (null for 0), `function_id` (the innermost frame; null for 0), `depth` |
//! | `functions` | function, defined or named by a stack | `id`, `name`, `signature`, `class`, `module_id`, `module` (file name), `address`, `code_size`, `first_stack`, `defined` |
//! | `modules` | `m` record | `id`, `path`, `name`, `address` |
//! | `types` | type, defined or named by a stack or dump | `id`, `name`, `finalizable`, `defined` |
//! | `gcs` | GC the heap simulation acted on | `id`, `generation` (condemned), `induced`, `counted`, `source` (`end line`, `counts`, `simple`), `start_tick`, `start_ms`, `end_tick`, `end_ms`, `objects_before` |
//! | `gc_ranges` | generation range of a GC's end line | `gc`, `generation`, `start`, `length`, `reserved` |
//! | `handles` | `h` or `j` record | `event` (`created`, `destroyed`), `handle`, `tick`, `ms`, `thread`, `object_address` (created), `stack_id` (as written), `surviving` (created: still alive at the end) |
//! | `finalizations` | `l` record naming a live object | `object_id` (`objects.id`), `tick`, `ms`, `critical` |
//! | `comments` | kept `z` record | `tick`, `ms`, `text` |
//! | `heap_dumps` | dump started by `e`/`r` records | `dump`, `tick`, `ms`, `counted`, `objects`, `bytes`, `references`, `roots` |
//! | `dump_objects` | `o` record of a dump | `dump`, `address`, `type_id`, `size`, `object_id` (the simulated object it matched), `stack` (`stacks.id`) |
//! | `dump_references` | reference on an `o` record | `dump`, `from_address`, `to_address` |
//! | `dump_roots` | root of a dump | `dump`, `address`, `kind`, `kind_name`, `flags`, `description`, `root_id` |
//!
//! Only `objects` is narrowed by the filter; the other tables are whole.
//!
//! Many logs go into one Hive-partitioned dataset with [`dataset::append`]:
//! each table a folder, each log a partition `log=NAME` of it, and a
//! `logs` table with each log's name, host and start time.
//! Every figure agrees with the queries: `sum(size)` over `objects` is the
//! Summary's allocated bytes, over `fate = 'alive'` its final heap bytes;
//! grouped by `types.name`, the allocated and final-heap histograms; by
//! `fate` and `generation`, the lifetime table.

mod context;
pub mod dataset;
mod definitions;
mod dumps;
mod events;
mod gcs;
mod objects;
mod stacks;
mod writer;

pub use objects::ROW_GROUP_OBJECTS;
pub use writer::TableReport;

use crate::{Error, ExportOptions, Result};
use clrprof::model::Model;
use clrprof_files::PrivateDir;
use context::Context;
use std::path::Path;

/// The tables, in the order they are written (each is `NAME.parquet`;
/// the folder also gets a `README.md`).
pub const TABLES: [&str; 14] = [
    "objects",
    "stacks",
    "functions",
    "modules",
    "types",
    "gcs",
    "gc_ranges",
    "handles",
    "finalizations",
    "comments",
    "heap_dumps",
    "dump_objects",
    "dump_references",
    "dump_roots",
];

/// Opens the folder `dir` for an export: made (mode 0700) when missing;
/// an existing one must be the user's own, not a link, writable by no
/// one else ([`PrivateDir::create_or_check`]), and empty or holding only
/// files of an earlier export (which are written anew).
fn prepare(dir: &Path) -> Result<PrivateDir> {
    let d = PrivateDir::create_or_check(dir).map_err(crate::error::folder(dir))?;
    for name in d.names().map_err(|source| Error::Io { path: dir.to_path_buf(), source })? {
        let name = name.to_string_lossy().into_owned();
        let ours = name == "README.md" || TABLES.iter().any(|t| name == format!("{t}.parquet"));
        if !ours {
            return Err(Error::OutputNotEmpty { path: dir.to_path_buf(), entry: name });
        }
    }
    Ok(d)
}

/// Writes every table into the folder `dir` (created 0700 if missing;
/// refused if it is not the user's own, or holds anything but an earlier
/// export's files). Every file is made inside the folder held open,
/// never through a link. Returns what each file holds.
pub fn write(model: &Model, options: &ExportOptions, dir: &Path) -> Result<Vec<TableReport>> {
    let d = prepare(dir)?;
    write_into(model, options, &d)
}

/// Writes every table into the open folder `dir` (see [`write`]).
pub(crate) fn write_into(model: &Model, options: &ExportOptions, dir: &PrivateDir) -> Result<Vec<TableReport>> {
    let cx = Context::new(model, options);
    type Writer = fn(&PrivateDir, &Context<'_>) -> Result<TableReport>;
    let writers: [Writer; 14] = [
        objects::write,
        stacks::write,
        definitions::functions,
        definitions::modules,
        definitions::types,
        gcs::gcs,
        gcs::ranges,
        events::handles,
        events::finalizations,
        events::comments,
        dumps::dumps,
        dumps::objects,
        dumps::references,
        dumps::roots,
    ];
    let mut reports = Vec::with_capacity(writers.len());
    for w in writers {
        reports.push(w(dir, &cx)?);
    }
    dir.write_whole("README.md", README.as_bytes(), true).map_err(|source| Error::Io { path: dir.shown("README.md"), source })?;
    Ok(reports)
}

/// The folder's README: what each table holds.
const README: &str = "# clrprof Parquet export\n\n\
One Parquet file per table, written by `clrprof export --format parquet`.\n\
The schemas are described in the clrprof guide, chapter \"Exports\" (docs/src/exports.md).\n\n\
DuckDB: `SELECT * FROM read_parquet('objects.parquet') LIMIT 10;`\n\
Spark: `spark.read.parquet(\"objects.parquet\")`.\n";
