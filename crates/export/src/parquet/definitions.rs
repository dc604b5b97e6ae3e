//! The definition tables: `functions`, `modules` and `types`.

use super::context::Context;
use super::writer::{batch, write_table, TableReport, TableSpec};
use crate::frames::function_name;
use crate::Result;
use arrow_array::{ArrayRef, BooleanArray, Int32Array, Int64Array, StringArray};
use arrow_schema::{DataType, Field, Schema};
use clrprof::format::{FunctionId, TypeId};
use clrprof::query::by_code::class_of;
use clrprof_files::PrivateDir;
use std::collections::BTreeSet;
use std::sync::Arc;

fn strings(v: Vec<Option<String>>) -> ArrayRef {
    Arc::new(StringArray::from(v))
}

/// Writes `functions`: every defined function, and every function a stack
/// names that the log never defined (`defined` false, named
/// `???? function N` as CLRProfiler names it).
pub(crate) fn functions(dir: &PrivateDir, cx: &Context<'_>) -> Result<TableReport> {
    let spec = TableSpec {
        name: "functions",
        schema: Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, false),
            Field::new("name", DataType::Utf8, false),
            Field::new("signature", DataType::Utf8, false),
            Field::new("class", DataType::Utf8, false),
            Field::new("module_id", DataType::Int32, true),
            Field::new("module", DataType::Utf8, true),
            Field::new("address", DataType::Int64, true),
            Field::new("code_size", DataType::Int64, true),
            Field::new("first_stack", DataType::Int32, true),
            Field::new("defined", DataType::Boolean, false),
        ])),
        delta_columns: &[],
    };
    let model = cx.model;
    let mut ids: Vec<FunctionId> = model.functions().iter().map(|f| f.id).collect();
    let defined = ids.len();
    let undefined: BTreeSet<i32> = (1..cx.paths.len() as u32)
        .map(|k| cx.paths.function(k))
        .filter(|&f| model.functions().get(f).is_none())
        .map(|f| f.0)
        .collect();
    ids.extend(undefined.into_iter().map(FunctionId));
    write_table(dir, &spec, 1, |_| {
        let names: Vec<_> = ids.iter().map(|&f| function_name(model, f)).collect();
        let defs: Vec<_> = ids.iter().map(|&f| model.functions().get(f)).collect();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from_iter_values(ids.iter().map(|f| f.0))),
            strings(names.iter().map(|n| Some(n.name.clone())).collect()),
            strings(names.iter().map(|n| Some(n.signature.clone())).collect()),
            strings(names.iter().map(|n| Some(class_of(&n.name).to_string())).collect()),
            Arc::new(defs.iter().map(|d| d.map(|d| d.module.0).filter(|&m| m >= 0)).collect::<Int32Array>()),
            strings(names.iter().map(|n| n.module.clone()).collect()),
            Arc::new(defs.iter().map(|d| d.map(|d| d.address.0 as i64)).collect::<Int64Array>()),
            Arc::new(defs.iter().map(|d| d.map(|d| d.size as i64)).collect::<Int64Array>()),
            Arc::new(defs.iter().map(|d| d.map(|d| d.first_stack.0).filter(|&s| s >= 0)).collect::<Int32Array>()),
            Arc::new(BooleanArray::from((0..ids.len()).map(|k| k < defined).collect::<Vec<_>>())),
        ];
        batch(&spec, columns)
    })
}

/// Writes `modules`: every `m` record, in load order.
pub(crate) fn modules(dir: &PrivateDir, cx: &Context<'_>) -> Result<TableReport> {
    let spec = TableSpec {
        name: "modules",
        schema: Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, false),
            Field::new("path", DataType::Utf8, false),
            Field::new("name", DataType::Utf8, false),
            Field::new("address", DataType::Int64, true),
        ])),
        delta_columns: &[],
    };
    let model = cx.model;
    let ms = model.modules().modules();
    write_table(dir, &spec, 1, |_| {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from_iter_values(ms.iter().map(|m| m.id.0))),
            strings(ms.iter().map(|m| Some(model.names().get(m.path).to_string())).collect()),
            strings(ms.iter().map(|m| Some(model.names().get(m.short_name).to_string())).collect()),
            Arc::new(ms.iter().map(|m| m.address.map(|a| a.0 as i64)).collect::<Int64Array>()),
        ];
        batch(&spec, columns)
    })
}

/// Writes `types`: every defined type, and every type a stack names that
/// the log never defined (`defined` false, named `???? type N`).
pub(crate) fn types(dir: &PrivateDir, cx: &Context<'_>) -> Result<TableReport> {
    let spec = TableSpec {
        name: "types",
        schema: Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, false),
            Field::new("name", DataType::Utf8, false),
            Field::new("finalizable", DataType::Boolean, false),
            Field::new("defined", DataType::Boolean, false),
        ])),
        delta_columns: &[],
    };
    let model = cx.model;
    let mut ids: Vec<TypeId> = model.types().iter().map(|(t, _)| t).collect();
    let defined = ids.len();
    let mut used: BTreeSet<i32> = cx.row_types().filter(|&t| model.types().name(TypeId(t)).is_none()).collect();
    for d in model.heap_dumps().dumps() {
        used.extend(model.heap_dumps().objects(d).map(|o| o.type_id.0).filter(|&t| model.types().name(TypeId(t)).is_none()));
    }
    ids.extend(used.into_iter().map(TypeId));
    write_table(dir, &spec, 1, |_| {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from_iter_values(ids.iter().map(|t| t.0))),
            strings(ids.iter().map(|&t| Some(model.type_name(t).into_owned())).collect()),
            Arc::new(BooleanArray::from(ids.iter().map(|&t| model.types().is_finalizable(t)).collect::<Vec<_>>())),
            Arc::new(BooleanArray::from((0..ids.len()).map(|k| k < defined).collect::<Vec<_>>())),
        ];
        batch(&spec, columns)
    })
}
