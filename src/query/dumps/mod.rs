//! Heap dumps (`e`/`r`/`o` records): what each dump holds, its object
//! graph with retained sizes, paths from roots to a type, and what changed
//! between two dumps.
//!
//! # API structure
//!
//! - [`DumpIndex`] names a dump: its position among the dumps started by
//!   `e`/`r` records ([`HeapDumpTable::dumps`](crate::model::HeapDumpTable::dumps)),
//!   from 0.
//! - [`list`] gives one [`DumpInfo`] per dump (objects, bytes, roots by
//!   kind and flag); [`by_type`] one dump's objects and bytes per type.
//! - [`DumpGraph::build`] turns a dump into a graph over dense object
//!   indices (plus a virtual root referencing every strong root);
//!   [`dominators`] computes its dominator tree over any [`Csr`] graph;
//!   [`retained`] gives retained sizes per object and per type.
//! - [`paths_to`] finds shortest paths from a root to objects of a type.
//! - [`leaks`] finds the types that keep growing over three or more dumps
//!   of one process, what holds them, and gives a verdict.
//! - [`diff`] compares two dumps (new objects, types that grew or shrank);
//!   [`compare_files`] compares dumps of two files per type.
//! - [`allocation_of`] links a dump object to its allocation (stack,
//!   thread, tick) when the log has allocation records; [`Sites`] groups
//!   dump objects by type, allocation stack or allocating function
//!   ([`SiteBy`]); [`UnknownAllocations`] counts the objects without a known
//!   allocation. [`retained_by`] gives retained sizes per group and
//!   [`diff_by`] the objects new since an earlier dump per group.
//!
//! Root kinds and flags are named as the profiling API
//! (`COR_PRF_GC_ROOT_KIND`, `COR_PRF_GC_ROOT_FLAGS`) and CLRProfiler's
//! object graph name them: see [`RootKind`] and [`root_name`].

mod compare;
mod diff;
mod diff_by;
mod dominators;
mod graph;
mod leaks;
mod paths;
mod retained;
mod retained_by;
mod roots;
mod sites;
mod table;

pub use compare::{compare_files, DumpComparison, TypeChange};
pub use diff::{diff, DumpDiff, Matching, TypeDelta};
pub use diff_by::{diff_by, DumpDiffBySite, SiteDelta};
pub use dominators::{dominators, DominatorTree};
pub use graph::{Csr, DumpGraph};
pub use leaks::{leaks, series_in, ContainerKind, Holder, Leak, LeakReport, LeakRule, SeriesDump, SeriesPoint, Step, TypeSeries, Verdict};
pub use paths::{paths_to, DumpPath, PathReport, PathStep};
pub use retained::{retained, retained_sizes, RetainedObject, RetainedReport, RetainedType};
pub use retained_by::{retained_by, RetainedBySite, RetainedSite};
pub use roots::{root_name, RootCounts, RootFlagCounts, RootKind, RootRef};
pub use sites::{
    allocation_of, allocation_row, Allocation, Site, SiteBy, SiteId, Sites, UnknownAllocations, UnknownReason, UNKNOWN_ALLOCATION,
    UNTRACKED_BELOW,
};
pub use table::{by_type, list, DumpInfo, DumpTypeRow, DumpTypes};

use crate::model::{HeapDump, Model};
use serde::Serialize;

/// A heap dump: its position among the dumps started by `e`/`r` records,
/// from 0, in log order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
#[serde(transparent)]
pub struct DumpIndex(pub u32);

impl DumpIndex {
    /// The dump in a model, if there is one with this index.
    pub fn get(self, model: &Model) -> Option<&HeapDump> {
        model.heap_dumps().dumps().get(self.0 as usize)
    }
}

impl std::fmt::Display for DumpIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}
