//! Dumps of two files compared per type: two `.gcdump`s, two traces'
//! heap walks, a log's dump against another file's.
//!
//! Objects cannot be matched across files (each file numbers and places
//! its objects its own way), so there are no new or gone objects here,
//! only per type the objects and bytes of each dump. Types are matched by
//! the one spelling of their names ([`crate::query::canonical_type_name`]),
//! so a log's `System.Byte []` is a `.gcdump`'s `System.Byte[]`.

use super::{by_type, DumpIndex, DumpInfo};
use crate::model::Model;
use crate::query::canonical_type_name;
use serde::Serialize;
use std::collections::BTreeMap;

/// One type in the two dumps.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TypeChange {
    /// The type's name, as the first file that has it spells it (types are
    /// matched by [`canonical_type_name`]).
    pub name: String,
    /// Objects in dump A.
    pub objects_a: u64,
    /// Their bytes.
    pub bytes_a: u64,
    /// Objects in dump B.
    pub objects_b: u64,
    /// Their bytes.
    pub bytes_b: u64,
}

impl TypeChange {
    /// Bytes in B minus bytes in A.
    pub fn bytes_delta(&self) -> i64 {
        (self.bytes_b as i128 - self.bytes_a as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }
}

/// Two files' dumps per type.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DumpComparison {
    /// Dump A (in the first file).
    pub a: DumpInfo,
    /// Dump B (in the second file).
    pub b: DumpInfo,
    /// The types whose objects or bytes differ, by the size of the change
    /// in bytes (largest first, then by name).
    pub types: Vec<TypeChange>,
}

/// Dump `da` of `a` against dump `db` of `b`; `None` when either file has
/// no such dump.
pub fn compare_files(a: &Model, da: DumpIndex, b: &Model, db: DumpIndex) -> Option<DumpComparison> {
    let (ta, tb) = (by_type(a, da)?, by_type(b, db)?);
    let mut types: BTreeMap<String, TypeChange> = BTreeMap::new();
    for (rows, first) in [(&ta.types, true), (&tb.types, false)] {
        for r in rows {
            // Matched by the one spelling; shown as the first file spells it.
            let key = canonical_type_name(&r.name).into_owned();
            let t = types.entry(key).or_insert_with(|| TypeChange { name: r.name.clone(), ..TypeChange::default() });
            if first {
                t.objects_a += r.objects;
                t.bytes_a += r.bytes;
            } else {
                t.objects_b += r.objects;
                t.bytes_b += r.bytes;
            }
        }
    }
    let mut types: Vec<TypeChange> = types.into_values().filter(|t| t.objects_a != t.objects_b || t.bytes_a != t.bytes_b).collect();
    types.sort_by(|x, y| y.bytes_delta().unsigned_abs().cmp(&x.bytes_delta().unsigned_abs()).then_with(|| x.name.cmp(&y.name)));
    Some(DumpComparison { a: ta.dump, b: tb.dump, types })
}
