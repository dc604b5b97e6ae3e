//! The `gcs` and `gc_ranges` tables.

use super::context::Context;
use super::writer::{batch, write_table, TableReport, TableSpec};
use crate::Result;
use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int32Array, Int64Array, StringArray};
use arrow_schema::{DataType, Field, Schema};
use clrprof::model::{GcIndex, GcSource};
use clrprof_files::PrivateDir;
use std::sync::Arc;

/// Writes `gcs`: every GC the heap simulation acted on, in log order.
pub(crate) fn gcs(dir: &PrivateDir, cx: &Context<'_>) -> Result<TableReport> {
    let spec = TableSpec {
        name: "gcs",
        schema: Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, false),
            Field::new("generation", DataType::Int32, false),
            Field::new("induced", DataType::Boolean, false),
            Field::new("counted", DataType::Boolean, false),
            Field::new("source", DataType::Utf8, false),
            Field::new("start_tick", DataType::Int32, true),
            Field::new("start_ms", DataType::Float64, true),
            Field::new("end_tick", DataType::Int32, false),
            Field::new("end_ms", DataType::Float64, false),
            Field::new("objects_before", DataType::Int64, false),
        ])),
        delta_columns: &[],
    };
    let gs: Vec<_> = cx.model.gcs().iter().map(|(_, g)| *g).collect();
    write_table(dir, &spec, 1, |_| {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from_iter_values(0..gs.len() as i32)),
            Arc::new(Int32Array::from_iter_values(gs.iter().map(|g| g.generation))),
            Arc::new(BooleanArray::from(gs.iter().map(|g| g.induced).collect::<Vec<_>>())),
            Arc::new(BooleanArray::from(gs.iter().map(|g| g.counted).collect::<Vec<_>>())),
            Arc::new(StringArray::from_iter_values(gs.iter().map(|g| match g.source {
                GcSource::EndLine => "end line",
                GcSource::Counts => "counts",
                GcSource::Simple => "simple",
            }))),
            Arc::new(gs.iter().map(|g| g.start.map(|t| t.0 as i32)).collect::<Int32Array>()),
            Arc::new(gs.iter().map(|g| g.start.map(|t| cx.ms(t))).collect::<Float64Array>()),
            Arc::new(Int32Array::from_iter_values(gs.iter().map(|g| g.end.0 as i32))),
            Arc::new(Float64Array::from_iter_values(gs.iter().map(|g| cx.ms(g.end)))),
            Arc::new(Int64Array::from_iter_values(gs.iter().map(|g| g.objects_before as i64))),
        ];
        batch(&spec, columns)
    })
}

/// Writes `gc_ranges`: the generation ranges of each GC's end line.
pub(crate) fn ranges(dir: &PrivateDir, cx: &Context<'_>) -> Result<TableReport> {
    let spec = TableSpec {
        name: "gc_ranges",
        schema: Arc::new(Schema::new(vec![
            Field::new("gc", DataType::Int32, false),
            Field::new("generation", DataType::Int32, false),
            Field::new("start", DataType::Int64, false),
            Field::new("length", DataType::Int64, false),
            Field::new("reserved", DataType::Int64, false),
        ])),
        delta_columns: &[],
    };
    let table = cx.model.gcs();
    let rows: Vec<(i32, _)> =
        (0..table.len()).flat_map(|g| table.ranges(GcIndex(g as u32)).iter().map(move |r| (g as i32, *r))).collect();
    write_table(dir, &spec, 1, |_| {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.1.generation))),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1.start as i64))),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1.length as i64))),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1.reserved as i64))),
        ];
        batch(&spec, columns)
    })
}
