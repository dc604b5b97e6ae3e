//! What part of a log a query looks at: a time window (in milliseconds, or
//! between two `z` comments) and a set of threads.
//!
//! A [`Filter`] is resolved once against a [`Model`] (names and times become
//! tick indices and dense thread numbers) and then tested per object or per
//! event. The default filter takes everything.
//!
//! ```
//! use clrprof::query::{Filter, TimeWindow};
//! let log = b"t 1 0 T\nn 1 1 1 24\ni 5\n! 7 0x1000 1\nz mark\ni 10\n! 7 0x1018 1\n";
//! let model = clrprof::model::load(log, &Default::default()).unwrap();
//! let f = Filter::resolve(&model, &TimeWindow::Millis { from: Some(6.0), to: None }, &[]).unwrap();
//! assert_eq!(f.objects(&model).count(), 1);
//! ```

use crate::model::{Model, ObjectId, ObjectRow, ThreadRef, TickIndex};
use std::fmt;

/// A time window as the user gives it.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum TimeWindow {
    /// The whole log.
    #[default]
    All,
    /// From `from` to `to` milliseconds (either end open when `None`),
    /// inclusive.
    Millis {
        /// Start, ms.
        from: Option<f64>,
        /// End, ms.
        to: Option<f64>,
    },
    /// From the comment matching the first text to the comment matching the
    /// second (a comment matches when its text equals the given text, or,
    /// failing an exact match anywhere, contains it).
    BetweenComments(String, String),
}

/// Why a filter could not be resolved.
#[derive(Clone, Debug, PartialEq)]
pub enum FilterError {
    /// No comment matches the text; the log's comments are listed.
    NoSuchComment {
        /// What was asked for.
        text: String,
        /// The comments the log has (at most 20).
        available: Vec<String>,
    },
    /// The window ends before it starts.
    EmptyWindow {
        /// Start, ms.
        from_ms: f64,
        /// End, ms.
        to_ms: f64,
    },
    /// A thread id the log never mentions.
    NoSuchThread(i32),
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FilterError::NoSuchComment { text, available } if available.is_empty() => {
                write!(f, "no comment matches {text:?}: the log has no comments")
            }
            FilterError::NoSuchComment { text, available } => {
                write!(f, "no comment matches {text:?}; the log's comments are: {}", available.join(", "))
            }
            FilterError::EmptyWindow { from_ms, to_ms } => {
                write!(f, "the time window ends ({to_ms} ms) before it starts ({from_ms} ms)")
            }
            FilterError::NoSuchThread(t) => write!(f, "thread {t} does not appear in the log"),
        }
    }
}

impl std::error::Error for FilterError {}

/// A resolved filter: tick indices `from..=to` and a thread set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    /// First tick index in the window.
    pub from: TickIndex,
    /// Last tick index in the window.
    pub to: TickIndex,
    /// Dense thread numbers to keep (`None`: all), sorted.
    pub threads: Option<Vec<ThreadRef>>,
}

impl Default for Filter {
    fn default() -> Self {
        Filter::all()
    }
}

impl Filter {
    /// Everything.
    pub fn all() -> Filter {
        Filter { from: TickIndex(0), to: TickIndex(u32::MAX), threads: None }
    }

    /// Resolves a window and a list of thread ids (as written in the log;
    /// empty: all threads) against a model.
    pub fn resolve(model: &Model, window: &TimeWindow, threads: &[i32]) -> Result<Filter, FilterError> {
        let time = model.time();
        let (from, to) = match window {
            TimeWindow::All => (TickIndex(0), TickIndex(u32::MAX)),
            TimeWindow::Millis { from, to } => {
                if let (Some(a), Some(b)) = (from, to) {
                    if b < a {
                        return Err(FilterError::EmptyWindow { from_ms: *a, to_ms: *b });
                    }
                }
                let start = match from {
                    // The first slot at or after `from`.
                    Some(ms) => first_at_or_after(model, ms / 1000.0),
                    None => TickIndex(0),
                };
                let end = match to {
                    Some(ms) => time.tick_at(ms / 1000.0),
                    None => TickIndex(u32::MAX),
                };
                (start, end)
            }
            TimeWindow::BetweenComments(a, b) => {
                let start = comment_tick(model, a)?;
                let end = comment_tick(model, b)?;
                (start, end)
            }
        };
        let threads = if threads.is_empty() {
            None
        } else {
            let mut refs = Vec::with_capacity(threads.len());
            for &t in threads {
                let found = (1..model.threads().len() as u32)
                    .map(ThreadRef)
                    .find(|&r| model.threads().id(r).is_some_and(|id| id.0 == t));
                refs.push(found.ok_or(FilterError::NoSuchThread(t))?);
            }
            refs.sort_unstable();
            refs.dedup();
            Some(refs)
        };
        Ok(Filter { from, to, threads })
    }

    /// True when the filter takes everything.
    pub fn is_all(&self) -> bool {
        self.from.0 == 0 && self.to.0 == u32::MAX && self.threads.is_none()
    }

    /// Whether a tick index lies in the window.
    #[inline]
    pub fn has_tick(&self, tick: TickIndex) -> bool {
        self.from <= tick && tick <= self.to
    }

    /// Whether a thread is kept.
    #[inline]
    pub fn has_thread(&self, thread: ThreadRef) -> bool {
        self.threads.as_ref().map_or(true, |t| t.binary_search(&thread).is_ok())
    }

    /// Whether an object's row is kept.
    #[inline]
    pub fn has_row(&self, row: &ObjectRow) -> bool {
        self.has_tick(row.tick) && self.has_thread(row.thread)
    }

    /// The ids of the objects allocated in the window (threads not yet
    /// applied).
    pub fn object_range(&self, model: &Model) -> std::ops::Range<ObjectId> {
        model.allocations().allocated_between(self.from, self.to)
    }

    /// The objects the filter keeps, with their columns, in id order.
    pub fn objects<'m>(&'m self, model: &'m Model) -> impl Iterator<Item = ObjectRow> + 'm {
        model.allocations().rows_in(self.object_range(model)).filter(move |r| self.has_thread(r.thread))
    }
}

fn first_at_or_after(model: &Model, seconds: f64) -> TickIndex {
    let t = model.time().tick_at(seconds);
    match model.time().seconds(t) {
        Some(s) if s >= seconds => t,
        _ => TickIndex(t.0 + 1),
    }
}

fn comment_tick(model: &Model, text: &str) -> Result<TickIndex, FilterError> {
    let comments = model.comments().kept();
    let name = |c: &crate::model::Comment| model.names().get(c.text);
    let found = comments
        .iter()
        .find(|c| name(c) == text)
        .or_else(|| comments.iter().find(|c| name(c).contains(text)));
    match found {
        Some(c) => Ok(c.tick),
        None => Err(FilterError::NoSuchComment {
            text: text.to_string(),
            available: comments.iter().take(20).map(|c| name(c).to_string()).collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> Model {
        let log = b"t 1 0 T\nn 1 1 1 24\ni 5\n! 7 0x1000 1\nz start here\ni 10\n! 8 0x1018 1\n! 7 0x1030 1\nz stop\ni 20\n! 7 0x1048 1\n";
        crate::model::load(log, &Default::default()).expect("loads")
    }

    #[test]
    fn windows_by_time_comments_and_threads() {
        let m = model();
        let ids = |f: &Filter| f.objects(&m).map(|r| r.id.0).collect::<Vec<_>>();
        assert_eq!(ids(&Filter::all()), vec![0, 1, 2, 3]);
        let f = Filter::resolve(&m, &TimeWindow::Millis { from: Some(6.0), to: Some(15.0) }, &[]).unwrap();
        assert_eq!(ids(&f), vec![1, 2]);
        let f = Filter::resolve(&m, &TimeWindow::Millis { from: None, to: Some(5.0) }, &[]).unwrap();
        assert_eq!(ids(&f), vec![0]);
        let f = Filter::resolve(&m, &TimeWindow::BetweenComments("start".into(), "stop".into()), &[]).unwrap();
        assert_eq!(ids(&f), vec![1, 2]);
        let f = Filter::resolve(&m, &TimeWindow::All, &[7]).unwrap();
        assert_eq!(ids(&f), vec![0, 2, 3]);
        assert!(Filter::resolve(&m, &TimeWindow::All, &[9]).is_err());
        let e = Filter::resolve(&m, &TimeWindow::BetweenComments("x".into(), "stop".into()), &[]).unwrap_err();
        assert!(e.to_string().contains("start here"), "{e}");
        assert!(Filter::resolve(&m, &TimeWindow::Millis { from: Some(9.0), to: Some(1.0) }, &[]).is_err());
    }
}
