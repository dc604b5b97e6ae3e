//! Two logs compared: allocations and final heaps per type and function,
//! and their last heap dumps per type.

use crate::{ApiError, App};
use axum::extract::{Path, Query, State};
use axum::response::Response;
use clrprof::query::allocations_unknown;
use clrprof::query::dumps::{compare_files, DumpComparison, DumpIndex};
use serde::{Deserialize, Serialize};

/// Rows per list.
#[derive(Deserialize)]
pub struct CompareParams {
    /// Rows (0: all; default 20, as the CLI).
    #[serde(default, deserialize_with = "crate::params::lenient")]
    top: Option<usize>,
}

/// The answer: `clrprof diff A B --json` (B minus A).
#[derive(Serialize)]
struct Answer {
    #[serde(flatten)]
    diff: clrprof::query::LogDiff,
    /// Why a log's allocations are unknown (`a`, `b`): its allocation
    /// lists are not compared (unknown is not 0).
    #[serde(skip_serializing_if = "Unknown::is_empty")]
    allocations_unknown: Unknown,
    /// The last heap dumps of both, per type, when both have one.
    #[serde(skip_serializing_if = "Option::is_none")]
    dump_by_type: Option<DumpComparison>,
}

/// Why each log's allocations are unknown.
#[derive(Serialize, Default)]
struct Unknown {
    #[serde(skip_serializing_if = "Option::is_none")]
    a: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    b: Option<String>,
}

impl Unknown {
    fn is_empty(&self) -> bool {
        self.a.is_none() && self.b.is_none()
    }
}

/// `clrprof diff A B --json` (B minus A): allocations (not compared when
/// either log's are unknown) and the last heap dumps per type.
pub async fn compare(State(app): State<App>, Path((a, b)): Path<(u32, u32)>, Query(p): Query<CompareParams>) -> Result<Response, ApiError> {
    let limit = match p.top {
        Some(0) => usize::MAX,
        Some(t) => t,
        None => 20,
    };
    app.answer2(a, b, move |la, lb| {
        let (ma, mb) = (&la.model, &lb.model);
        let allocations_unknown = Unknown { a: allocations_unknown(ma), b: allocations_unknown(mb) };
        let mut diff = clrprof::query::diff(ma, mb);
        for list in
            [&mut diff.allocated_by_type, &mut diff.final_heap_by_type, &mut diff.functions_exclusive, &mut diff.functions_inclusive]
        {
            if allocations_unknown.is_empty() {
                list.truncate(limit);
            } else {
                list.clear();
            }
        }
        let last = |m: &clrprof::model::Model| m.heap_dumps().dumps().len().checked_sub(1).map(|i| DumpIndex(i as u32));
        let mut dump_by_type = match (last(ma), last(mb)) {
            (Some(da), Some(db)) => compare_files(ma, da, mb, db),
            _ => None,
        };
        if let Some(c) = &mut dump_by_type {
            c.types.truncate(limit);
        }
        Ok(Answer { diff, allocations_unknown, dump_by_type })
    })
    .await
}
