//! What changed between two dumps: objects of dump B that were not in
//! dump A (new), objects of A gone from B, and per type the growth.
//!
//! Objects are matched through the heap simulation when it can: an `o`
//! record that names a live simulated object of the same type carries that
//! object's identity ([`ObjectId`](crate::model::ObjectId)), which the
//! simulation keeps through relocations (`u` records), so an object that
//! moved between the dumps is still the same object. An `o` record without
//! a simulated match (a log without allocation records, or an object the
//! simulation lost) is matched by address and type instead, which cannot
//! follow a move: [`Matching`] says how many were.

use super::table::PerType;
use super::DumpIndex;
use crate::format::TypeId;
use crate::model::{DumpObject, HeapDump, Model};
use serde::Serialize;

/// How objects were matched across the two dumps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Matching {
    /// Objects (of both dumps) identified through the heap simulation,
    /// relocations followed.
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
    addresses: Vec<(u64, i32)>,
}

impl Members {
    pub(crate) fn of(model: &Model, d: &HeapDump) -> Members {
        let t = model.heap_dumps();
        let mut identities = vec![0u64; model.allocations().len().div_ceil(64)];
        let mut addresses = Vec::new();
        for o in t.objects(d) {
            match o.object {
                Some(id) if id.index() / 64 < identities.len() => identities[id.index() / 64] |= 1 << (id.index() % 64),
                _ => addresses.push((o.address.0, o.type_id.0)),
            }
        }
        addresses.sort_unstable();
        Members { identities, addresses }
    }

    /// Whether the dump holds `o`; the second value tells whether the
    /// identity was used.
    pub(crate) fn holds(&self, o: &DumpObject) -> (bool, bool) {
        match o.object {
            Some(id) if id.index() / 64 < self.identities.len() => {
                (self.identities[id.index() / 64] >> (id.index() % 64) & 1 != 0, true)
            }
            _ => (self.addresses.binary_search(&(o.address.0, o.type_id.0)).is_ok(), false),
        }
    }
}

/// The difference between dumps `a` and `b`; `None` if either is missing.
pub fn diff(model: &Model, a: DumpIndex, b: DumpIndex) -> Option<DumpDiff> {
    let (da, db) = (a.get(model)?, b.get(model)?);
    let t = model.heap_dumps();
    let (in_a, in_b) = (Members::of(model, da), Members::of(model, db));
    let mut acc: PerType<TypeDelta> =
        PerType::new(t.objects(da).chain(t.objects(db)).map(|o| o.type_id.0));
    let mut matching = Matching { by_identity: 0, by_address: 0, relocation_followed: true };
    let (mut kept, mut new_objects, mut new_bytes, mut gone_objects, mut gone_bytes) = (0, 0, 0, 0, 0);
    for o in t.objects(da) {
        let s = acc.slot(o.type_id.0);
        s.objects_a += 1;
        s.bytes_a += o.size as u64;
        let (held, identity) = in_b.holds(&o);
        matching.count(identity);
        if !held {
            s.gone_objects += 1;
            s.gone_bytes += o.size as u64;
            gone_objects += 1;
            gone_bytes += o.size as u64;
        }
    }
    for o in t.objects(db) {
        let s = acc.slot(o.type_id.0);
        s.objects_b += 1;
        s.bytes_b += o.size as u64;
        let (held, identity) = in_a.holds(&o);
        matching.count(identity);
        if held {
            kept += 1;
        } else {
            s.new_objects += 1;
            s.new_bytes += o.size as u64;
            new_objects += 1;
            new_bytes += o.size as u64;
        }
    }
    matching.relocation_followed = matching.by_address == 0;
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
    Some(DumpDiff { a, b, matching, new_objects, new_bytes, gone_objects, gone_bytes, kept_objects: kept, types })
}
