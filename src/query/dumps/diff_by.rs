//! What changed between two dumps, grouped by type, by allocation stack or
//! by allocating function ([`SiteBy`]): per group, the objects of dump B
//! that were not in dump A ("new since A"), the objects of A gone from B,
//! and each dump's count. This is what a leak hunter asks after
//! [`diff`](super::diff): which code keeps making objects that stay.
//!
//! Objects are matched across the dumps as [`diff`](super::diff) matches
//! them (through the heap simulation, relocations followed, else by address
//! and type). Objects without a known allocation form their own group in
//! both dumps, so the groups' new, gone and per-dump figures add up to the
//! totals.

use super::diff::{delta_counts, walk, Matching, Side};
use super::sites::{Site, SiteBy, Sites, UnknownAllocations, UnknownTally};
use super::DumpIndex;
use crate::model::{DumpObject, Model};
use serde::Serialize;

/// One group's change between the dumps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SiteDelta {
    /// The group.
    #[serde(flatten)]
    pub site: Site,
    /// Objects in dump A.
    pub objects_a: u64,
    /// Bytes in dump A.
    pub bytes_a: u64,
    /// Objects in dump B.
    pub objects_b: u64,
    /// Bytes in dump B.
    pub bytes_b: u64,
    /// Objects of B not in A.
    pub new_objects: u64,
    /// Their bytes.
    pub new_bytes: u64,
    /// Objects of A not in B.
    pub gone_objects: u64,
    /// Their bytes.
    pub gone_bytes: u64,
}

impl SiteDelta {
    /// Bytes in B minus bytes in A.
    pub fn bytes_delta(&self) -> i64 {
        self.bytes_b as i64 - self.bytes_a as i64
    }
}

/// The difference between two dumps by group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DumpDiffBySite {
    /// The earlier dump.
    pub a: DumpIndex,
    /// The later dump.
    pub b: DumpIndex,
    /// The grouping.
    pub by: SiteBy,
    /// How objects were matched.
    pub matching: Matching,
    /// Objects of B not in A.
    pub new_objects: u64,
    /// Their bytes.
    pub new_bytes: u64,
    /// Objects of A not in B.
    pub gone_objects: u64,
    /// Their bytes.
    pub gone_bytes: u64,
    /// Objects in both.
    pub kept_objects: u64,
    /// Objects of A without a known allocation.
    pub unknown_a: UnknownAllocations,
    /// Objects of B without a known allocation.
    pub unknown_b: UnknownAllocations,
    /// Every group with an object in either dump, by new bytes (largest
    /// first), then by growth, then by name.
    pub sites: Vec<SiteDelta>,
}

delta_counts!(SiteDelta);

impl Default for SiteDelta {
    fn default() -> Self {
        SiteDelta {
            site: Site { known: true, type_id: None, function: None, name: String::new(), frames: Vec::new() },
            objects_a: 0,
            bytes_a: 0,
            objects_b: 0,
            bytes_b: 0,
            new_objects: 0,
            new_bytes: 0,
            gone_objects: 0,
            gone_bytes: 0,
        }
    }
}

/// The accumulator slot of a dump object's group.
fn slot(sites: &mut Sites<'_>, o: &DumpObject, acc: &mut Vec<SiteDelta>) -> usize {
    let g = sites.site_of(o).index();
    if acc.len() <= g {
        acc.resize_with(g + 1, SiteDelta::default);
    }
    g
}

/// The difference between dumps `a` and `b` grouped by `by`; `None` if
/// either is missing.
pub fn diff_by(model: &Model, a: DumpIndex, b: DumpIndex, by: SiteBy) -> Option<DumpDiffBySite> {
    let (da, db) = (a.get(model)?, b.get(model)?);
    let mut sites = Sites::new(model, by);
    let mut acc: Vec<SiteDelta> = Vec::new();
    let (mut unknown_a, mut unknown_b) = (UnknownTally::default(), UnknownTally::default());
    let w = walk(model, da, db, |side, o, changed| {
        match side {
            Side::A => unknown_a.add(model, o),
            Side::B => unknown_b.add(model, o),
        }
        let g = slot(&mut sites, o, &mut acc);
        acc[g].add(side, o.size as u64, changed);
    });
    let mut rows: Vec<SiteDelta> = sites
        .into_sites()
        .into_iter()
        .zip(acc)
        .map(|(site, mut d)| {
            d.site = site;
            d
        })
        .collect();
    rows.sort_by(|x, y| {
        y.new_bytes
            .cmp(&x.new_bytes)
            .then(y.bytes_delta().cmp(&x.bytes_delta()))
            .then(x.site.name.cmp(&y.site.name))
            .then(x.site.function.cmp(&y.site.function))
            .then(x.site.type_id.cmp(&y.site.type_id))
    });
    Some(DumpDiffBySite {
        a,
        b,
        by,
        matching: w.matching,
        new_objects: w.new_objects,
        new_bytes: w.new_bytes,
        gone_objects: w.gone_objects,
        gone_bytes: w.gone_bytes,
        kept_objects: w.kept,
        unknown_a: unknown_a.finish(model, da),
        unknown_b: unknown_b.finish(model, db),
        sites: rows,
    })
}
