//! Retained sizes of a dump grouped by type, by allocation stack or by
//! allocating function ([`SiteBy`]): which code allocated the objects that
//! hold the heap.
//!
//! Per group, two figures from the dominator tree:
//!
//! - `retained`: the bytes of every object dominated by an instance of the
//!   group, each counted once (an instance dominated by another instance of
//!   the same group is inside that one's figure). Groups overlap: an object
//!   of group A dominating one of group B counts in both.
//! - `top_level`: what the group's instances that only the roots dominate
//!   (their immediate dominator is the virtual root) retain. Every reachable
//!   object is under exactly one such instance, so over all groups these
//!   add up to the reachable bytes: a partition of the heap by the site of
//!   its top-level holders.
//!
//! Objects without a known allocation form their own group (see
//! [`super::sites`]), so both partitions are complete.

use super::dominators::dominators;
use super::graph::DumpGraph;
use super::retained::{retained_by_number, retained_per_group};
use super::sites::{Site, SiteBy, Sites, UnknownAllocations, UnknownTally};
use super::DumpIndex;
use crate::model::Model;
use serde::Serialize;

/// One group's retained size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RetainedSite {
    /// The group.
    #[serde(flatten)]
    pub site: Site,
    /// Objects of the group in the dump.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Of those, objects reachable from a strong root.
    pub reachable_objects: u64,
    /// Their bytes.
    pub reachable_bytes: u64,
    /// Bytes of every object dominated by an instance of the group, each
    /// counted once.
    pub retained: u64,
    /// What the group's top-level instances (dominated by the roots alone)
    /// retain; these add up to the reachable bytes over all groups.
    pub top_level: u64,
}

/// A dump's retained sizes by group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RetainedBySite {
    /// The dump.
    pub index: DumpIndex,
    /// The grouping.
    pub by: SiteBy,
    /// Objects in the dump.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Objects reachable from a strong root.
    pub reachable_objects: u64,
    /// Their bytes (what the virtual root retains).
    pub reachable_bytes: u64,
    /// Objects no strong root reaches.
    pub unreachable_objects: u64,
    /// Their bytes.
    pub unreachable_bytes: u64,
    /// Objects of the dump without a known allocation.
    pub unknown: UnknownAllocations,
    /// Every group with an object in the dump, by retained bytes (largest
    /// first), then by top-level bytes, then by own bytes, then by name.
    pub sites: Vec<RetainedSite>,
}

/// Retained sizes of dump `index` grouped by `by`; `None` if there is no
/// such dump.
pub fn retained_by(model: &Model, index: DumpIndex, by: SiteBy) -> Option<RetainedBySite> {
    let d = index.get(model)?;
    let graph = DumpGraph::build(model, index)?;
    let tree = dominators(&graph.graph, graph.root());
    let by_number = retained_by_number(&graph, &tree);
    let t = model.heap_dumps();
    let mut sites = Sites::new(model, by);
    let mut group = Vec::with_capacity(graph.objects());
    let mut all: Vec<(u64, u64)> = Vec::new();
    let mut unknown = UnknownTally::default();
    for o in t.objects(d) {
        unknown.add(model, &o);
        let g = sites.site_of(&o).index();
        if all.len() <= g {
            all.resize(g + 1, (0, 0));
        }
        all[g].0 += 1;
        all[g].1 += o.size as u64;
        group.push(g as u32);
    }
    let per = retained_per_group(&graph, &tree, &by_number, |v| group.get(v).copied(), sites.len());
    let (objects, bytes) = all.iter().fold((0, 0), |a, s| (a.0 + s.0, a.1 + s.1));
    let (reachable_objects, reachable_bytes) = per.iter().fold((0, 0), |a, g| (a.0 + g.objects, a.1 + g.bytes));
    let mut rows: Vec<RetainedSite> = sites
        .into_sites()
        .into_iter()
        .zip(all)
        .zip(per)
        .map(|((site, (objects, bytes)), g)| RetainedSite {
            site,
            objects,
            bytes,
            reachable_objects: g.objects,
            reachable_bytes: g.bytes,
            retained: g.retained,
            top_level: g.top_level,
        })
        .collect();
    rows.sort_by(|a, b| {
        b.retained
            .cmp(&a.retained)
            .then(b.top_level.cmp(&a.top_level))
            .then(b.bytes.cmp(&a.bytes))
            .then(a.site.name.cmp(&b.site.name))
            .then(a.site.function.cmp(&b.site.function))
            .then(a.site.type_id.cmp(&b.site.type_id))
    });
    Some(RetainedBySite {
        index,
        by,
        objects,
        bytes,
        reachable_objects,
        reachable_bytes,
        unreachable_objects: objects - reachable_objects,
        unreachable_bytes: bytes - reachable_bytes,
        unknown: unknown.finish(model, d),
        sites: rows,
    })
}
