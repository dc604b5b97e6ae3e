//! The `stacks` table: distinct frame paths as a prefix tree.

use super::context::Context;
use super::writer::{batch, write_table, TableReport, TableSpec};
use crate::Result;
use arrow_array::{ArrayRef, Int32Array, Int64Array};
use arrow_schema::{DataType, Field, Schema};
use clrprof_files::PrivateDir;
use std::sync::Arc;

/// Writes the table.
pub(crate) fn write(dir: &PrivateDir, cx: &Context<'_>) -> Result<TableReport> {
    let spec = TableSpec {
        name: "stacks",
        schema: Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("parent", DataType::Int64, true),
            Field::new("function_id", DataType::Int32, true),
            Field::new("depth", DataType::Int32, false),
        ])),
        delta_columns: &["id"],
    };
    let p = &cx.paths;
    let n = p.len();
    // A path's parent is always numbered before it.
    let mut depth = vec![0i32; n];
    for k in 1..n {
        depth[k] = depth[p.parent(k as u32) as usize] + 1;
    }
    write_table(dir, &spec, 1, |_| {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(0..n as i64)),
            Arc::new((0..n as u32).map(|k| (k != 0).then(|| p.parent(k) as i64)).collect::<Int64Array>()),
            Arc::new((0..n as u32).map(|k| (k != 0).then(|| p.function(k).0)).collect::<Int32Array>()),
            Arc::new(Int32Array::from(depth.clone())),
        ];
        batch(&spec, columns)
    })
}
