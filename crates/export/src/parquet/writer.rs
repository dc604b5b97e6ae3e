//! One Parquet file per table, written in row groups encoded in parallel.
//!
//! A table is a number of row groups, each built as an Arrow record batch
//! by a caller's function. Groups are built and encoded (every column
//! compressed into memory) on the rayon pool, a window of as many groups as
//! the pool has threads at a time, then appended to the file in order. At
//! most one window's batches and encoded chunks are in memory at once.

use crate::{Error, Result};
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use clrprof_files::PrivateDir;
use parquet::arrow::arrow_writer::{compute_leaves, get_column_writers, ArrowColumnChunk};
use parquet::arrow::{add_encoded_arrow_schema_to_metadata, ArrowSchemaConverter};
use parquet::basic::{Compression, Encoding};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnPath;
use rayon::prelude::*;
use std::io::BufWriter;
use std::sync::Arc;

/// What was written for one table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableReport {
    /// The table (the file is `NAME.parquet`).
    pub name: &'static str,
    /// Rows written.
    pub rows: u64,
    /// Row groups written.
    pub row_groups: usize,
    /// Size of the file in bytes.
    pub bytes: u64,
}

/// A table's name, schema and the integer columns that are better
/// delta-encoded than dictionary-encoded (ids and addresses that grow
/// along the rows).
pub(crate) struct TableSpec {
    pub name: &'static str,
    pub schema: SchemaRef,
    pub delta_columns: &'static [&'static str],
}

fn err(table: &'static str) -> impl Fn(parquet::errors::ParquetError) -> Error {
    move |e| Error::Parquet { table, message: e.to_string() }
}

/// Writes `groups` row groups, group `k` being `build(k)`, to
/// `dir/NAME.parquet`. Empty batches are skipped.
pub(crate) fn write_table(
    dir: &PrivateDir,
    spec: &TableSpec,
    groups: usize,
    build: impl Fn(usize) -> Result<RecordBatch> + Sync,
) -> Result<TableReport> {
    let name = spec.name;
    let mut builder = WriterProperties::builder()
        .set_writer_version(WriterVersion::PARQUET_1_0)
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_size(usize::MAX)
        // Minimum and maximum per column chunk, not per page: page
        // statistics cost a comparison per value and help little here.
        .set_statistics_enabled(EnabledStatistics::Chunk);
    for c in spec.delta_columns {
        let path = ColumnPath::from(*c);
        builder = builder
            .set_column_dictionary_enabled(path.clone(), false)
            .set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
    }
    let mut props = builder.build();
    add_encoded_arrow_schema_to_metadata(&spec.schema, &mut props);
    let props = Arc::new(props);
    let parquet_schema = ArrowSchemaConverter::new().convert(&spec.schema).map_err(err(name))?;
    let file_name = format!("{name}.parquet");
    let path = dir.shown(&file_name);
    // An earlier export's table is replaced, never written through (a link
    // at its name is removed, not followed), inside the folder held open;
    // mode 0600 less the umask.
    let file = dir.replace_file(&file_name).map_err(|source| Error::Io { path: path.clone(), source })?;
    let mut writer = SerializedFileWriter::new(BufWriter::with_capacity(1 << 20, file), parquet_schema.root_schema_ptr(), props.clone())
        .map_err(err(name))?;
    let encode = |k: usize| -> Result<(Vec<ArrowColumnChunk>, usize)> {
        let batch = build(k)?;
        let mut writers = get_column_writers(&parquet_schema, &props, &spec.schema).map_err(err(name))?;
        let mut next = writers.iter_mut();
        for (array, field) in batch.columns().iter().zip(spec.schema.fields()) {
            for leaf in compute_leaves(field, array).map_err(err(name))? {
                let w = next.next().ok_or_else(|| Error::Parquet { table: name, message: "more leaves than columns".into() })?;
                w.write(&leaf).map_err(err(name))?;
            }
        }
        let chunks = writers.into_iter().map(|w| w.close()).collect::<std::result::Result<Vec<_>, _>>().map_err(err(name))?;
        Ok((chunks, batch.num_rows()))
    };
    let window = rayon::current_num_threads().max(1);
    let (mut rows, mut row_groups) = (0u64, 0usize);
    let mut first = 0;
    while first < groups {
        let last = groups.min(first + window);
        let encoded: Vec<Result<(Vec<ArrowColumnChunk>, usize)>> = (first..last).into_par_iter().map(encode).collect();
        for e in encoded {
            let (chunks, n) = e?;
            if n == 0 {
                continue;
            }
            let mut group = writer.next_row_group().map_err(err(name))?;
            for c in chunks {
                c.append_to_row_group(&mut group).map_err(err(name))?;
            }
            group.close().map_err(err(name))?;
            rows += n as u64;
            row_groups += 1;
        }
        first = last;
    }
    let mut out = writer.into_inner().map_err(err(name))?;
    std::io::Write::flush(&mut out).map_err(|source| Error::Io { path: path.clone(), source })?;
    let bytes = out.get_ref().metadata().map_err(|source| Error::Io { path: path.clone(), source })?.len();
    Ok(TableReport { name, rows, row_groups, bytes })
}

/// A batch from a schema and columns (the library checks they agree).
pub(crate) fn batch(spec: &TableSpec, columns: Vec<arrow_array::ArrayRef>) -> Result<RecordBatch> {
    RecordBatch::try_new(spec.schema.clone(), columns).map_err(|e| Error::Parquet { table: spec.name, message: e.to_string() })
}
