//! The event tables: `handles`, `finalizations` and `comments`.

use super::context::Context;
use super::writer::{batch, write_table, TableReport, TableSpec};
use crate::Result;
use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int32Array, Int64Array, StringArray};
use arrow_schema::{DataType, Field, Schema};
use clrprof::model::HandleEvent;
use clrprof_files::PrivateDir;
use std::collections::HashSet;
use std::sync::Arc;

/// Writes `handles`: every `h` (created) and `j` (destroyed) record.
pub(crate) fn handles(dir: &PrivateDir, cx: &Context<'_>) -> Result<TableReport> {
    let spec = TableSpec {
        name: "handles",
        schema: Arc::new(Schema::new(vec![
            Field::new("event", DataType::Utf8, false),
            Field::new("handle", DataType::Int64, false),
            Field::new("tick", DataType::Int32, false),
            Field::new("ms", DataType::Float64, false),
            Field::new("thread", DataType::Int32, true),
            Field::new("object_address", DataType::Int64, true),
            Field::new("stack_id", DataType::Int32, false),
            Field::new("surviving", DataType::Boolean, true),
        ])),
        delta_columns: &[],
    };
    let t = cx.model.handles();
    let key = |e: &HandleEvent| (e.handle.0, e.tick.0, e.object.0, e.stack.0, e.thread.0);
    let surviving: HashSet<_> = t.surviving().map(key).collect();
    let rows: Vec<(bool, &HandleEvent)> =
        t.created().iter().map(|e| (true, e)).chain(t.destroyed().iter().map(|e| (false, e))).collect();
    write_table(dir, &spec, 1, |_| {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| if r.0 { "created" } else { "destroyed" }))),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1.handle.0 as i64))),
            Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.1.tick.0 as i32))),
            Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| cx.ms(r.1.tick)))),
            Arc::new(rows.iter().map(|r| cx.thread_id(r.1.thread)).collect::<Int32Array>()),
            Arc::new(rows.iter().map(|r| r.0.then_some(r.1.object.0 as i64)).collect::<Int64Array>()),
            Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.1.stack.0))),
            Arc::new(rows.iter().map(|r| r.0.then(|| surviving.contains(&key(r.1)))).collect::<BooleanArray>()),
        ];
        batch(&spec, columns)
    })
}

/// Writes `finalizations`: the `l` records that named a live object.
pub(crate) fn finalizations(dir: &PrivateDir, cx: &Context<'_>) -> Result<TableReport> {
    let spec = TableSpec {
        name: "finalizations",
        schema: Arc::new(Schema::new(vec![
            Field::new("object_id", DataType::Int64, false),
            Field::new("tick", DataType::Int32, false),
            Field::new("ms", DataType::Float64, false),
            Field::new("critical", DataType::Boolean, false),
        ])),
        delta_columns: &[],
    };
    let es = cx.model.finalizers().events();
    write_table(dir, &spec, 1, |_| {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(es.iter().map(|e| e.object.0 as i64))),
            Arc::new(Int32Array::from_iter_values(es.iter().map(|e| e.tick.0 as i32))),
            Arc::new(Float64Array::from_iter_values(es.iter().map(|e| cx.ms(e.tick)))),
            Arc::new(BooleanArray::from(es.iter().map(|e| e.critical).collect::<Vec<_>>())),
        ];
        batch(&spec, columns)
    })
}

/// Writes `comments`: the `z` records CLRProfiler keeps.
pub(crate) fn comments(dir: &PrivateDir, cx: &Context<'_>) -> Result<TableReport> {
    let spec = TableSpec {
        name: "comments",
        schema: Arc::new(Schema::new(vec![
            Field::new("tick", DataType::Int32, false),
            Field::new("ms", DataType::Float64, false),
            Field::new("text", DataType::Utf8, false),
        ])),
        delta_columns: &[],
    };
    let cs = cx.model.comments().kept();
    write_table(dir, &spec, 1, |_| {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from_iter_values(cs.iter().map(|c| c.tick.0 as i32))),
            Arc::new(Float64Array::from_iter_values(cs.iter().map(|c| cx.ms(c.tick)))),
            Arc::new(StringArray::from_iter_values(cs.iter().map(|c| cx.model.names().get(c.text)))),
        ];
        batch(&spec, columns)
    })
}
