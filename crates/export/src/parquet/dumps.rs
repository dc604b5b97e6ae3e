//! The heap-dump tables: `heap_dumps`, `dump_objects`, `dump_references`
//! and `dump_roots`.

use super::context::Context;
use super::writer::{batch, write_table, TableReport, TableSpec};
use crate::Result;
use arrow_array::builder::{Int32Builder, Int64Builder};
use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int32Array, Int64Array, StringArray};
use arrow_schema::{DataType, Field, Schema};
use clrprof::model::HeapDump;
use clrprof::query::dumps::{list, root_name, RootKind};
use clrprof_files::PrivateDir;
use std::sync::Arc;

/// Dump objects per row group.
const GROUP: usize = 1 << 20;

/// Writes `heap_dumps`: one row per dump started by an `e`/`r` record.
pub(crate) fn dumps(dir: &PrivateDir, cx: &Context<'_>) -> Result<TableReport> {
    let spec = TableSpec {
        name: "heap_dumps",
        schema: Arc::new(Schema::new(vec![
            Field::new("dump", DataType::Int32, false),
            Field::new("tick", DataType::Int32, false),
            Field::new("ms", DataType::Float64, false),
            Field::new("counted", DataType::Boolean, false),
            Field::new("objects", DataType::Int64, false),
            Field::new("bytes", DataType::Int64, false),
            Field::new("references", DataType::Int64, false),
            Field::new("roots", DataType::Int64, false),
        ])),
        delta_columns: &[],
    };
    let infos = list(cx.model);
    write_table(dir, &spec, 1, |_| {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from_iter_values(infos.iter().map(|d| d.index.0 as i32))),
            Arc::new(Int32Array::from_iter_values(infos.iter().map(|d| d.tick_index as i32))),
            Arc::new(Float64Array::from_iter_values(
                infos.iter().map(|d| cx.ms(clrprof::model::TickIndex(d.tick_index))),
            )),
            Arc::new(BooleanArray::from(infos.iter().map(|d| d.counted).collect::<Vec<_>>())),
            Arc::new(Int64Array::from_iter_values(infos.iter().map(|d| d.objects as i64))),
            Arc::new(Int64Array::from_iter_values(infos.iter().map(|d| d.bytes as i64))),
            Arc::new(Int64Array::from_iter_values(infos.iter().map(|d| d.references as i64))),
            Arc::new(Int64Array::from_iter_values(infos.iter().map(|d| d.roots as i64))),
        ];
        batch(&spec, columns)
    })
}

/// Pieces of at most [`GROUP`] objects of one dump: (dump, first, end).
fn pieces(cx: &Context<'_>) -> Vec<(usize, usize, usize)> {
    let t = cx.model.heap_dumps();
    let mut v = Vec::new();
    for (d, dump) in t.dumps().iter().enumerate() {
        let n = t.object_count(dump);
        let mut a = 0;
        while a < n {
            v.push((d, a, n.min(a + GROUP)));
            a += GROUP;
        }
    }
    v
}

fn dump_of<'a>(cx: &Context<'a>, d: usize) -> Option<&'a HeapDump> {
    cx.model.heap_dumps().dumps().get(d)
}

/// Writes `dump_objects`: the `o` records of each dump.
pub(crate) fn objects(dir: &PrivateDir, cx: &Context<'_>) -> Result<TableReport> {
    let spec = TableSpec {
        name: "dump_objects",
        schema: Arc::new(Schema::new(vec![
            Field::new("dump", DataType::Int32, false),
            Field::new("address", DataType::Int64, false),
            Field::new("type_id", DataType::Int32, false),
            Field::new("size", DataType::Int64, false),
            Field::new("object_id", DataType::Int64, true),
            Field::new("stack", DataType::Int64, false),
        ])),
        delta_columns: &[],
    };
    let pieces = pieces(cx);
    let t = cx.model.heap_dumps();
    write_table(dir, &spec, pieces.len(), |k| {
        let (d, a, b) = pieces[k];
        let n = b - a;
        let (mut dump, mut address, mut type_id) =
            (Int32Builder::with_capacity(n), Int64Builder::with_capacity(n), Int32Builder::with_capacity(n));
        let (mut size, mut object, mut stack) =
            (Int64Builder::with_capacity(n), Int64Builder::with_capacity(n), Int64Builder::with_capacity(n));
        if let Some(h) = dump_of(cx, d) {
            for o in t.objects(h).skip(a).take(n) {
                dump.append_value(d as i32);
                address.append_value(o.address.0 as i64);
                type_id.append_value(o.type_id.0);
                size.append_value(o.size as i64);
                object.append_option(o.object.map(|x| x.0 as i64));
                stack.append_value(cx.row_path(o.stack) as i64);
            }
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(dump.finish()),
            Arc::new(address.finish()),
            Arc::new(type_id.finish()),
            Arc::new(size.finish()),
            Arc::new(object.finish()),
            Arc::new(stack.finish()),
        ];
        batch(&spec, columns)
    })
}

/// Writes `dump_references`: one row per reference listed on an `o`
/// record.
pub(crate) fn references(dir: &PrivateDir, cx: &Context<'_>) -> Result<TableReport> {
    let spec = TableSpec {
        name: "dump_references",
        schema: Arc::new(Schema::new(vec![
            Field::new("dump", DataType::Int32, false),
            Field::new("from_address", DataType::Int64, false),
            Field::new("to_address", DataType::Int64, false),
        ])),
        delta_columns: &[],
    };
    let pieces = pieces(cx);
    let t = cx.model.heap_dumps();
    write_table(dir, &spec, pieces.len(), |k| {
        let (d, a, b) = pieces[k];
        let (mut dump, mut from, mut to) = (Int32Builder::new(), Int64Builder::new(), Int64Builder::new());
        if let Some(h) = dump_of(cx, d) {
            for (j, o) in t.objects(h).enumerate().skip(a).take(b - a) {
                for r in t.reference_iter(h, j) {
                    dump.append_value(d as i32);
                    from.append_value(o.address.0 as i64);
                    to.append_value(r as i64);
                }
            }
        }
        let columns: Vec<ArrayRef> = vec![Arc::new(dump.finish()), Arc::new(from.finish()), Arc::new(to.finish())];
        batch(&spec, columns)
    })
}

/// Writes `dump_roots`: the roots of each dump.
pub(crate) fn roots(dir: &PrivateDir, cx: &Context<'_>) -> Result<TableReport> {
    let spec = TableSpec {
        name: "dump_roots",
        schema: Arc::new(Schema::new(vec![
            Field::new("dump", DataType::Int32, false),
            Field::new("address", DataType::Int64, false),
            Field::new("kind", DataType::Int32, false),
            Field::new("kind_name", DataType::Utf8, false),
            Field::new("flags", DataType::Int32, false),
            Field::new("description", DataType::Utf8, false),
            Field::new("root_id", DataType::Int64, false),
        ])),
        delta_columns: &[],
    };
    let t = cx.model.heap_dumps();
    let rows: Vec<(i32, _)> =
        t.dumps().iter().enumerate().flat_map(|(d, h)| t.roots(h).iter().map(move |r| (d as i32, *r))).collect();
    write_table(dir, &spec, 1, |_| {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1.address.0 as i64))),
            Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.1.kind))),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| RootKind::of(&r.1).name()))),
            Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.1.flags))),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| root_name(&r.1)))),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1.id as i64))),
        ];
        batch(&spec, columns)
    })
}
