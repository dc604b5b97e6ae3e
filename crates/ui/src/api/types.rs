//! `types`: the histograms by type (the five kinds), with size classes.

use crate::params::{tick_at, WindowParams};
use crate::{ApiError, App};
use axum::extract::{Path, Query, State};
use axum::response::Response;
use clrprof::query::{
    by_bytes_of, group_by_name, size_buckets, type_counts, BucketScale, HistogramKind, SizeBucket, TypeCount,
    TypeSelection,
};
use serde::{Deserialize, Serialize};

/// Parameters of `types`.
#[derive(Deserialize)]
pub struct TypesParams {
    #[serde(flatten)]
    window: WindowParams,
    /// allocated, relocated, final, finalized, critical.
    kind: Option<String>,
    /// With `final`: live at this time (ms).
    #[serde(default, deserialize_with = "crate::params::lenient")]
    at: Option<f64>,
    /// coarse, medium, fine, very-fine.
    scale: Option<String>,
}

/// The answer: `clrprof types --buckets --json`.
#[derive(Serialize)]
struct Answer {
    types: Vec<TypeCount>,
    buckets: Vec<SizeBucket>,
}

fn kind(s: Option<&str>) -> Result<HistogramKind, ApiError> {
    Ok(match s.unwrap_or("allocated") {
        "allocated" => HistogramKind::Allocated,
        "relocated" => HistogramKind::Relocated,
        "final" => HistogramKind::FinalHeap,
        "finalized" => HistogramKind::Finalized,
        "critical" => HistogramKind::CriticalFinalized,
        o => return Err(ApiError::bad_request(format!("kind: {o:?} is not allocated, relocated, final, finalized or critical"))),
    })
}

fn scale(s: Option<&str>) -> Result<BucketScale, ApiError> {
    Ok(match s.unwrap_or("coarse") {
        "coarse" => BucketScale::Coarse,
        "medium" => BucketScale::Medium,
        "fine" => BucketScale::Fine,
        "very-fine" => BucketScale::VeryFine,
        o => return Err(ApiError::bad_request(format!("scale: {o:?} is not coarse, medium, fine or very-fine"))),
    })
}

/// `clrprof types --buckets --kind K [--at MS] [--from --to] --json`.
pub async fn types(State(app): State<App>, Path(id): Path<u32>, Query(p): Query<TypesParams>) -> Result<Response, ApiError> {
    let kind = kind(p.kind.as_deref())?;
    let scale = scale(p.scale.as_deref())?;
    app.answer(id, move |log| {
        let model = &log.model;
        let filter = p.window.filter(model)?;
        let at = p.at.map(|ms| tick_at(model, "at", ms)).transpose()?;
        let counts =
            type_counts(model, &TypeSelection { kind, at }, &filter).map_err(|e| ApiError::bad_request(e.to_string()))?;
        let types = by_bytes_of(model, group_by_name(model, counts.iter()));
        let buckets = size_buckets(model, &counts, scale);
        Ok(Answer { types, buckets })
    })
    .await
}
