//! [`Model`](crate::model::Model) -> answers. Pure functions over a finished
//! model; nothing here changes it.
//!
//! - [`Filter`]: the time window and threads a query looks at.
//! - [`summary()`]: CLRProfiler's 18 Summary figures.
//! - [`by_type`]: a histogram (allocated, relocated, final heap, finalized,
//!   critical finalized) grouped by type name, as CLRProfiler's histogram
//!   views show it.
//! - [`dumps`]: heap dumps: per-type tables, roots by kind, dominator
//!   trees and retained sizes, paths from roots, differences.

pub mod dumps;
pub mod filter;
pub mod summary;
pub mod types;

pub use filter::{Filter, FilterError, TimeWindow};
pub use summary::{summary, Summary};
pub use types::{by_type, HistogramKind, TypeRow};
