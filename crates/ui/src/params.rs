//! Query-string parameters shared by the routes, mapped to the library's
//! options in one place (as the CLI's flags are).

use crate::ApiError;
use clrprof::model::{Model, TickIndex};
use clrprof::query::{Filter, SortBy, TimeWindow};
use serde::Deserialize;

/// The part of the log a query looks at: `from`/`to` in milliseconds (the
/// CLI's `--from`/`--to`), `threads` as comma-separated thread ids
/// (`--thread`), and how many rows (`top`, the CLI's `--top`; 0: all).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct WindowParams {
    /// Start, ms.
    #[serde(default, deserialize_with = "crate::params::lenient")]
    pub from: Option<f64>,
    /// End, ms.
    #[serde(default, deserialize_with = "crate::params::lenient")]
    pub to: Option<f64>,
    /// Thread ids, comma-separated.
    pub threads: Option<String>,
    /// Rows to give (0: all; default 20, as the CLI).
    #[serde(default, deserialize_with = "crate::params::lenient")]
    pub top: Option<usize>,
}

impl WindowParams {
    /// The thread ids asked for.
    pub fn thread_ids(&self) -> Result<Vec<i32>, ApiError> {
        match self.threads.as_deref().map(str::trim) {
            None | Some("") => Ok(Vec::new()),
            Some(s) => s
                .split(',')
                .map(|t| t.trim().parse::<i32>().map_err(|_| ApiError::bad_request(format!("threads: {t:?} is not a thread id"))))
                .collect(),
        }
    }

    /// The time window, as the CLI maps `--from`/`--to`.
    pub fn window(&self) -> Result<TimeWindow, ApiError> {
        for (name, v) in [("from", self.from), ("to", self.to)] {
            if v.is_some_and(|x| !x.is_finite()) {
                return Err(ApiError::bad_request(format!("{name} must be a number of milliseconds")));
            }
        }
        Ok(if self.from.is_some() || self.to.is_some() {
            TimeWindow::Millis { from: self.from, to: self.to }
        } else {
            TimeWindow::All
        })
    }

    /// The filter, resolved against a model.
    pub fn filter(&self, model: &Model) -> Result<Filter, ApiError> {
        Filter::resolve(model, &self.window()?, &self.thread_ids()?).map_err(|e| ApiError::bad_request(e.to_string()))
    }

    /// `top` as a limit (`usize::MAX` for 0).
    pub fn limit(&self) -> usize {
        match self.top {
            Some(0) => usize::MAX,
            Some(n) => n,
            None => 20,
        }
    }
}

/// A moment in milliseconds as a tick index (the CLI's `--at`).
pub fn tick_at(model: &Model, name: &str, ms: f64) -> Result<TickIndex, ApiError> {
    if !ms.is_finite() {
        return Err(ApiError::bad_request(format!("{name} must be a number of milliseconds")));
    }
    Ok(model.time().tick_at(ms / 1000.0))
}

/// `sort=inclusive|exclusive` (the CLI's `--sort`).
pub fn sort_by(s: Option<&str>) -> Result<SortBy, ApiError> {
    match s {
        None | Some("inclusive") => Ok(SortBy::Inclusive),
        Some("exclusive") => Ok(SortBy::Exclusive),
        Some(o) => Err(ApiError::bad_request(format!("sort: {o:?} is neither inclusive nor exclusive"))),
    }
}

/// Reads an optional number (or `true`/`false`) given as text: query
/// strings are text, and serde hands flattened fields over as strings.
pub fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    let s: Option<String> = Option::deserialize(d)?;
    match s.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(t) => t.parse::<T>().map(Some).map_err(|e| serde::de::Error::custom(format!("{t:?}: {e}"))),
    }
}
