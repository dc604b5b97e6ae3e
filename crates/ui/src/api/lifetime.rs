//! Lifetime per type and generation, object ages, survivors of a window.

use crate::params::{tick_at, WindowParams};
use crate::{ApiError, App};
use axum::extract::{Path, Query, State};
use axum::response::Response;
use clrprof::query::{age_histogram_at, AgeBars};
use serde::Deserialize;

/// `clrprof lifetime --json`.
pub async fn lifetime(State(app): State<App>, Path(id): Path<u32>, Query(p): Query<WindowParams>) -> Result<Response, ApiError> {
    app.answer(id, move |log| {
        let filter = p.filter(&log.model)?;
        let mut l = if filter.is_all() { log.lifetime_all().clone() } else { clrprof::query::lifetime(&log.model, &filter) };
        l.rows.truncate(p.limit());
        Ok(l)
    })
    .await
}

/// Parameters of `ages`.
#[derive(Deserialize)]
pub struct AgesParams {
    #[serde(flatten)]
    window: WindowParams,
    /// The live objects at this time (ms): CLRProfiler's Histogram by Age.
    #[serde(default, deserialize_with = "crate::params::lenient")]
    at: Option<f64>,
    /// Bars of that histogram (default 10).
    #[serde(default, deserialize_with = "crate::params::lenient")]
    bars: Option<u32>,
}

/// `clrprof ages --json`, or `clrprof ages --at MS --bars N --json`.
pub async fn ages(State(app): State<App>, Path(id): Path<u32>, Query(p): Query<AgesParams>) -> Result<Response, ApiError> {
    app.answer(id, move |log| {
        let model = &log.model;
        let filter = p.window.filter(model)?;
        let limit = p.window.limit();
        match p.at {
            Some(ms) => {
                let tick = tick_at(model, "at", ms)?;
                let mut h = age_histogram_at(model, &filter, tick, AgeBars::Auto { bars: p.bars.unwrap_or(10) })
                    .map_err(|e| ApiError::bad_request(e.to_string()))?;
                for b in &mut h.bars {
                    b.types.truncate(limit);
                }
                h.types.truncate(limit);
                Ok(serde_json::to_value(&h)?)
            }
            None if filter.is_all() => Ok(serde_json::to_value(log.ages_all())?),
            None => Ok(serde_json::to_value(clrprof::query::ages(model, &filter))?),
        }
    })
    .await
}

/// Parameters of `survivors`.
#[derive(Deserialize)]
pub struct SurvivorsParams {
    #[serde(flatten)]
    window: WindowParams,
    /// Still alive at this time (ms; default: the end).
    #[serde(default, deserialize_with = "crate::params::lenient")]
    alive_at: Option<f64>,
}

/// `clrprof survivors --json`.
pub async fn survivors(State(app): State<App>, Path(id): Path<u32>, Query(p): Query<SurvivorsParams>) -> Result<Response, ApiError> {
    app.answer(id, move |log| {
        let model = &log.model;
        let filter = p.window.filter(model)?;
        let alive_at = p.alive_at.map(|ms| tick_at(model, "alive_at", ms)).transpose()?;
        let limit = p.window.limit();
        let mut s = clrprof::query::survivors(model, &filter, alive_at, limit);
        s.by_type.truncate(limit);
        Ok(s)
    })
    .await
}
