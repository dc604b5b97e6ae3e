//! What changed between two dumps: objects of dump B that were not in
//! dump A (new), objects of A gone from B, and per type the growth.
//!
//! Objects are matched through the heap simulation when it can: an `o`
//! record that names a live simulated object of the same type carries that
//! object's identity ([`ObjectId`](crate::model::ObjectId)), which the
//! simulation keeps through relocations (`u` records), so an object that
//! moved between the dumps is still the same object. An `o` record without
//! a simulated match (an object allocated before the log started, as in an
//! attached recording, or one the simulation lost) carries a lineage
//! instead ([`DumpObject::lineage`]): the model follows such objects from
//! dump to dump through the GCs' `u`/`v` records, so they too are matched
//! across moves. Only a model saved without lineages falls back to
//! matching by address and type, which cannot follow a move: [`Matching`]
//! says how many were.

use super::table::PerType;
use super::DumpIndex;
use crate::format::TypeId;
use crate::model::{DumpObject, HeapDump, Model};
use serde::Serialize;

/// How objects were matched across the two dumps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Matching {
    /// Objects (of both dumps) identified through the heap simulation or,
    /// for objects it does not know, followed from dump to dump through
    /// the relocations: relocations followed.
    pub by_identity: u64,
    /// Objects (of both dumps) matched by address and type, relocations
    /// not followed.
    pub by_address: u64,
    /// Whether every object was identified through the simulation.
    pub relocation_followed: bool,
}

impl Matching {
    /// Counts one object, matched by identity or by address.
    pub(crate) fn count(&mut self, identity: bool) {
        if identity {
            self.by_identity += 1;
        } else {
            self.by_address += 1;
        }
    }
}

/// One type's change between the dumps.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TypeDelta {
    /// Type id.
    pub type_id: i32,
    /// Its name.
    pub name: String,
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

impl TypeDelta {
    /// Bytes in B minus bytes in A.
    pub fn bytes_delta(&self) -> i64 {
        self.bytes_b as i64 - self.bytes_a as i64
    }
}

/// The difference between two dumps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DumpDiff {
    /// The earlier dump.
    pub a: DumpIndex,
    /// The later dump.
    pub b: DumpIndex,
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
    /// Per type id, by new bytes (largest first), then by growth.
    pub types: Vec<TypeDelta>,
}

/// The objects of a dump as a membership test.
pub(crate) struct Members {
    identities: Vec<u64>,
    lineages: Vec<u32>,
    addresses: Vec<(u64, i32)>,
}

impl Members {
    pub(crate) fn of(model: &Model, d: &HeapDump) -> Members {
        let t = model.heap_dumps();
        let mut identities = vec![0u64; model.allocations().len().div_ceil(64)];
        let (mut lineages, mut addresses) = (Vec::new(), Vec::new());
        for o in t.objects(d) {
            match (o.object, o.lineage) {
                (Some(id), _) if id.index() / 64 < identities.len() => identities[id.index() / 64] |= 1 << (id.index() % 64),
                (_, Some(l)) => lineages.push(l),
                _ => addresses.push((o.address.0, o.type_id.0)),
            }
        }
        lineages.sort_unstable();
        addresses.sort_unstable();
        Members { identities, lineages, addresses }
    }

    /// Whether the dump holds `o`; the second value tells whether the
    /// identity was used.
    pub(crate) fn holds(&self, o: &DumpObject) -> (bool, bool) {
        match o.object {
            Some(id) if id.index() / 64 < self.identities.len() => {
                (self.identities[id.index() / 64] >> (id.index() % 64) & 1 != 0, true)
            }
            _ => match o.lineage {
                Some(l) => (self.lineages.binary_search(&l).is_ok(), true),
                None => (self.addresses.binary_search(&(o.address.0, o.type_id.0)).is_ok(), false),
            },
        }
    }
}

/// Which dump an object belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// The earlier dump.
    A,
    /// The later dump.
    B,
}

/// Gives a per-group delta type (same field names as [`TypeDelta`]) the
/// `add` that [`walk`] feeds it with.
macro_rules! delta_counts {
    ($t:ty) => {
        impl $t {
            /// Counts one object of `side` of `size` bytes; `changed` when
            /// it is gone (an A object not in B) or new (a B object not in A).
            pub(crate) fn add(&mut self, side: $crate::query::dumps::diff::Side, size: u64, changed: bool) {
                use $crate::query::dumps::diff::Side;
                match side {
                    Side::A => {
                        self.objects_a += 1;
                        self.bytes_a += size;
                        if changed {
                            self.gone_objects += 1;
                            self.gone_bytes += size;
                        }
                    }
                    Side::B => {
                        self.objects_b += 1;
                        self.bytes_b += size;
                        if changed {
                            self.new_objects += 1;
                            self.new_bytes += size;
                        }
                    }
                }
            }
        }
    };
}
pub(crate) use delta_counts;

delta_counts!(TypeDelta);

/// What [`walk`] counts over both dumps.
pub(crate) struct Totals {
    pub(crate) matching: Matching,
    pub(crate) kept: u64,
    pub(crate) new_objects: u64,
    pub(crate) new_bytes: u64,
    pub(crate) gone_objects: u64,
    pub(crate) gone_bytes: u64,
}

/// Visits every object of dump `da` then of dump `db`, with its side and
/// whether it changed (gone from B, or new since A), and counts the totals.
pub(crate) fn walk(model: &Model, da: &HeapDump, db: &HeapDump, mut visit: impl FnMut(Side, &DumpObject, bool)) -> Totals {
    let t = model.heap_dumps();
    let (in_a, in_b) = (Members::of(model, da), Members::of(model, db));
    let mut w = Totals {
        matching: Matching { by_identity: 0, by_address: 0, relocation_followed: true },
        kept: 0,
        new_objects: 0,
        new_bytes: 0,
        gone_objects: 0,
        gone_bytes: 0,
    };
    for (side, dump, other) in [(Side::A, da, &in_b), (Side::B, db, &in_a)] {
        for o in t.objects(dump) {
            let (held, identity) = other.holds(&o);
            w.matching.count(identity);
            let size = o.size as u64;
            match (side, held) {
                (Side::A, false) => {
                    w.gone_objects += 1;
                    w.gone_bytes += size;
                }
                (Side::B, false) => {
                    w.new_objects += 1;
                    w.new_bytes += size;
                }
                (Side::B, true) => w.kept += 1,
                (Side::A, true) => {}
            }
            visit(side, &o, !held);
        }
    }
    w.matching.relocation_followed = w.matching.by_address == 0;
    w
}

/// The difference between dumps `a` and `b`; `None` if either is missing.
pub fn diff(model: &Model, a: DumpIndex, b: DumpIndex) -> Option<DumpDiff> {
    let (da, db) = (a.get(model)?, b.get(model)?);
    let t = model.heap_dumps();
    let mut acc: PerType<TypeDelta> =
        PerType::new(t.objects(da).chain(t.objects(db)).map(|o| o.type_id.0));
    let w = walk(model, da, db, |side, o, changed| acc.slot(o.type_id.0).add(side, o.size as u64, changed));
    let mut types: Vec<TypeDelta> = acc
        .entries()
        .filter(|(_, d)| d.objects_a + d.objects_b > 0)
        .map(|(id, mut d)| {
            d.type_id = id;
            d.name = model.type_name(TypeId(id)).into_owned();
            d
        })
        .collect();
    types.sort_by(|x, y| {
        y.new_bytes.cmp(&x.new_bytes).then(y.bytes_delta().cmp(&x.bytes_delta())).then(x.type_id.cmp(&y.type_id))
    });
    Some(DumpDiff {
        a,
        b,
        matching: w.matching,
        new_objects: w.new_objects,
        new_bytes: w.new_bytes,
        gone_objects: w.gone_objects,
        gone_bytes: w.gone_bytes,
        kept_objects: w.kept,
        types,
    })
}
