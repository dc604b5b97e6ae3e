//! The `objects` table: one row per allocated object the filter keeps.

use super::context::Context;
use super::writer::{batch, write_table, TableReport, TableSpec};
use crate::Result;
use arrow_array::builder::{Float64Builder, Int32Builder, Int64Builder, Int8Builder};
use arrow_array::types::Int8Type;
use arrow_array::{ArrayRef, DictionaryArray, Int8Array, StringArray};
use arrow_schema::{DataType, Field, Schema};
use clrprof::model::{Fate, ObjectId};
use clrprof_files::PrivateDir;
use std::sync::Arc;

/// Objects per row group.
pub const ROW_GROUP_OBJECTS: u32 = 1 << 20;

/// The fate names, by code.
const FATES: [&str; 5] = ["gc", "erased", "alive", "untracked", "unknown"];

fn spec() -> TableSpec {
    let fate = DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8));
    TableSpec {
        name: "objects",
        schema: Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("address", DataType::Int64, false),
            Field::new("type_id", DataType::Int32, true),
            Field::new("size", DataType::Int64, true),
            Field::new("thread", DataType::Int32, true),
            Field::new("alloc_tick", DataType::Int32, false),
            Field::new("alloc_ms", DataType::Float64, false),
            Field::new("stack", DataType::Int64, false),
            Field::new("fate", fate, false),
            Field::new("generation", DataType::Int8, true),
            Field::new("death_gc", DataType::Int32, true),
            Field::new("death_ms", DataType::Float64, true),
            Field::new("gcs_survived", DataType::Int32, true),
            Field::new("weight", DataType::Float64, false),
        ])),
        delta_columns: &["id", "address", "alloc_tick"],
    }
}

/// Writes the table.
pub(crate) fn write(dir: &PrivateDir, cx: &Context<'_>) -> Result<TableReport> {
    let spec = spec();
    let model = cx.model;
    let filter = &cx.options.filter;
    let range = filter.object_range(model);
    let (start, end) = (range.start.0, range.end.0);
    let groups = (end - start).div_ceil(ROW_GROUP_OBJECTS) as usize;
    let table = model.allocations();
    let before_gc = table.allocated_before_gcs();
    let gcs = before_gc.len();
    write_table(dir, &spec, groups, |k| {
        let a = start + k as u32 * ROW_GROUP_OBJECTS;
        let b = end.min(a.saturating_add(ROW_GROUP_OBJECTS));
        let n = (b - a) as usize;
        let mut id = Int64Builder::with_capacity(n);
        let mut address = Int64Builder::with_capacity(n);
        let mut type_id = Int32Builder::with_capacity(n);
        let mut size = Int64Builder::with_capacity(n);
        let mut thread = Int32Builder::with_capacity(n);
        let mut alloc_tick = Int32Builder::with_capacity(n);
        let mut alloc_ms = Float64Builder::with_capacity(n);
        let mut stack = Int64Builder::with_capacity(n);
        let mut fate_code = Vec::with_capacity(n);
        let mut generation = Int8Builder::with_capacity(n);
        let mut death_gc = Int32Builder::with_capacity(n);
        let mut death_ms = Float64Builder::with_capacity(n);
        let mut survived = Int32Builder::with_capacity(n);
        let mut weight = Float64Builder::with_capacity(n);
        let mut addresses = table.addresses_in(ObjectId(a)..ObjectId(b));
        // GCs that ended before the object was allocated (as the
        // allocation table counts them).
        let mut born = before_gc.partition_point(|&x| x <= a);
        table.for_each_in(ObjectId(a)..ObjectId(b), |row, fate| {
            let addr = addresses.next().unwrap_or(0);
            while born < gcs && before_gc[born] <= row.id.0 {
                born += 1;
            }
            if !filter.has_thread(row.thread) {
                return;
            }
            id.append_value(row.id.0 as i64);
            address.append_value(addr as i64);
            match cx.row_type(row.stack) {
                Some((t, s)) => {
                    type_id.append_value(t);
                    size.append_value(s as i64);
                }
                None => {
                    type_id.append_null();
                    size.append_null();
                }
            }
            thread.append_option(cx.thread_id(row.thread));
            alloc_tick.append_value(row.tick.0 as i32);
            alloc_ms.append_value(cx.ms(row.tick));
            stack.append_value(cx.row_path(row.stack) as i64);
            let born = born as u32;
            let (code, g, gc, lived) = match fate {
                Fate::DiedAtGc { gc, generation } => (0, Some(generation), Some(gc.0), Some(gc.0.saturating_sub(born))),
                Fate::Erased { gcs_before, generation, .. } => (1, Some(generation), None, Some(gcs_before.saturating_sub(born))),
                Fate::Alive => (2, table.generation(row.id), None, Some((gcs as u32).saturating_sub(born))),
                Fate::Untracked => (3, None, None, None),
                Fate::Unknown { .. } => (4, None, None, None),
            };
            fate_code.push(code);
            generation.append_option(g.map(|g| g as i8));
            death_gc.append_option(gc.map(|g| g as i32));
            let died = model.death_tick_of(fate);
            death_ms.append_option(died.map(|t| cx.ms(t)));
            survived.append_option(lived.map(|s| s as i32));
            weight.append_value(model.object_weight(row.id));
        });
        let fate = DictionaryArray::<Int8Type>::try_new(Int8Array::from(fate_code), Arc::new(StringArray::from(FATES.to_vec())))
            .map_err(|e| crate::Error::Parquet { table: "objects", message: e.to_string() })?;
        let columns: Vec<ArrayRef> = vec![
            Arc::new(id.finish()),
            Arc::new(address.finish()),
            Arc::new(type_id.finish()),
            Arc::new(size.finish()),
            Arc::new(thread.finish()),
            Arc::new(alloc_tick.finish()),
            Arc::new(alloc_ms.finish()),
            Arc::new(stack.finish()),
            Arc::new(fate),
            Arc::new(generation.finish()),
            Arc::new(death_gc.finish()),
            Arc::new(death_ms.finish()),
            Arc::new(survived.finish()),
            Arc::new(weight.finish()),
        ];
        batch(&spec, columns)
    })
}
