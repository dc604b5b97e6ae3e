//! [`Model`](crate::model::Model) -> answers. Pure functions over a finished
//! model; nothing here changes it.
//!
//! # API structure
//!
//! Every query is a function `(model, [filter,] options) -> typed result`;
//! results are plain data deriving `serde::Serialize` (the CLI's `--json`
//! is their serialization). The modules, by CLRProfiler view:
//!
//! - [`Filter`]: the time window and threads a query looks at.
//! - [`summary()`]: CLRProfiler's 18 Summary figures.
//! - [`allocations_unknown()`]: why a model has no allocations to show
//!   (a trace without allocation events, a `.gcdump`).
//! - [`by_type`]: a histogram (allocated, relocated, final heap, finalized,
//!   critical finalized) grouped by type name, as CLRProfiler's histogram
//!   views show it; [`type_counts()`] narrows one by a filter, or gives the
//!   objects live at a time; [`size_buckets()`] is the Histogram by Size view.
//! - [`handles_by_stack`]: GC handles created, destroyed and surviving by
//!   creating stack.
//! - [`dumps`]: heap dumps: per-type tables, roots by kind, dominator
//!   trees and retained sizes, paths from roots, differences.
//! - [`lifetime()`]: per type, objects reclaimed in each generation and
//!   alive at the end (Visual Studio's Object Lifetime view).
//! - [`ages()`]: age histograms (GCs survived, milliseconds) of dead and
//!   surviving objects; [`age_histogram_at`]: CLRProfiler's Histogram by
//!   Age of the live objects at a time.
//! - [`survivors()`]: objects of a window still alive later (the leak
//!   question).
//! - [`calls()`], [`call_tree`]: call counts per function and edge, and the
//!   call tree.
//! - [`threads()`]: per thread, objects and bytes allocated, first and
//!   last allocation.
//! - [`timeline`]: CLRProfiler's Time Line (type per address band and
//!   time), its GC and comment markers; [`live_at`]: bytes per type alive
//!   at a moment (exact, and CLRProfiler's grain estimate).
//! - Allocation by code ([`by_code`]): [`by_function`], [`by_module`],
//!   [`by_class`] (inclusive and exclusive), [`who_allocated`] a type,
//!   CLRProfiler's [`allocation_graph`], [`folded_stacks`] for flame graphs,
//!   all built per stack row from [`alloc_stacks`]; and the [`diff()`] of two
//!   logs.

pub mod age_histogram;
pub mod ages;
pub mod alloc_graph;
pub mod alloc_stacks;
pub mod allocations_known;
pub mod by_code;
pub mod calls;
pub mod diff;
pub mod dumps;
pub mod estimates;
pub mod filter;
pub mod flame;
pub mod handles;
pub mod incomplete;
pub mod lifetime;
pub mod live;
mod objects;
pub mod size_buckets;
pub mod summary;
pub mod survivors;
pub mod threads;
pub mod timeline;
pub mod type_counts;
pub mod type_name;
pub mod types;
pub mod who;

pub use age_histogram::{age_histogram_at, AgeBars, AgeHistogram};
pub use ages::{ages, AgeRanges, Ages};
pub use alloc_graph::{allocation_graph, AllocationGraph, GraphEdge, GraphNode, NodeKind};
pub use allocations_known::allocations_unknown;
pub use by_code::{by_class, by_function, by_module, Figures, FunctionRow, GroupRow, SortBy};
pub use calls::{call_tree, calls, CallTree, CallTreeOptions, Calls, NoCalls};
pub use diff::{diff, DiffRanges, DiffRow, DiffSide, LogDiff};
pub use estimates::{estimates, Estimates, Range95};
pub use filter::{Filter, FilterError, TimeWindow};
pub use flame::{folded_stacks, folded_text, FoldedStack};
pub use handles::{handles_by_stack, HandleGroup, HandleReport, TypeTally};
pub use incomplete::{incomplete, Incomplete};
pub use lifetime::{lifetime, Lifetime, LifetimeRow, COLUMNS as LIFETIME_COLUMNS};
pub use live::{estimated_live_at, live_at, LiveType};
pub use objects::Tally;
pub use size_buckets::{size_buckets, BucketScale, SizeBucket};
pub use summary::{summary, Summary};
pub use survivors::{survivors, Survivors};
pub use threads::{threads, ThreadRow};
pub use type_counts::{type_counts, TypeQueryError, TypeSelection};
pub use type_name::canonical_type_name;
pub use types::{by_bytes, by_bytes_of, by_type, group_by_name, HistogramKind, TypeCount, TypeRow, Uncertainty};
pub use who::{who_allocated, TypeMatch, WhoAllocated};
