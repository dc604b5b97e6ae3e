//! The difference between two logs: allocated bytes and objects per type,
//! per function (exclusive and inclusive, see [`super::by_code`]) and the
//! final heap per type.
//!
//! Types are matched by name, in one spelling whatever the file's format
//! ([`super::canonical_type_name`]; a row shows the first file's own
//! spelling),
//! functions by name and signature (ids differ between logs). Each list holds the keys whose bytes or objects differ,
//! sorted by the absolute difference in bytes (then in objects, then by
//! name); a log compared with itself gives empty lists.

use super::by_code::{by_function, FunctionRow, SortBy};
use super::types::{by_type, HistogramKind};
use super::Filter;
use crate::model::Model;
use serde::Serialize;
use std::collections::BTreeMap;

/// One key's figures in both logs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DiffRow {
    /// Type name, or function name followed by its signature.
    pub name: String,
    /// Bytes in the first log.
    pub a_bytes: u64,
    /// Bytes in the second log.
    pub b_bytes: u64,
    /// `b_bytes - a_bytes`.
    pub diff_bytes: i64,
    /// Objects in the first log.
    pub a_count: u64,
    /// Objects in the second log.
    pub b_count: u64,
    /// `b_count - a_count`.
    pub diff_count: i64,
}

/// The differences, B minus A.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LogDiff {
    /// Allocated per type.
    pub allocated_by_type: Vec<DiffRow>,
    /// Alive at the end per type.
    pub final_heap_by_type: Vec<DiffRow>,
    /// Allocated per function, exclusive.
    pub functions_exclusive: Vec<DiffRow>,
    /// Allocated per function, inclusive.
    pub functions_inclusive: Vec<DiffRow>,
}

impl LogDiff {
    /// True when no list has a row.
    pub fn is_empty(&self) -> bool {
        self.allocated_by_type.is_empty()
            && self.final_heap_by_type.is_empty()
            && self.functions_exclusive.is_empty()
            && self.functions_inclusive.is_empty()
    }
}

/// `b - a`, saturated to the `i64` range.
fn signed_diff(b: u64, a: u64) -> i64 {
    (b as i128 - a as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// Compares two keyed lists of `(bytes, count)`.
pub fn diff_rows(a: &BTreeMap<String, (u64, u64)>, b: &BTreeMap<String, (u64, u64)>) -> Vec<DiffRow> {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut rows: Vec<DiffRow> = keys
        .into_iter()
        .filter_map(|k| {
            let (ab, ac) = a.get(k).copied().unwrap_or((0, 0));
            let (bb, bc) = b.get(k).copied().unwrap_or((0, 0));
            (ab != bb || ac != bc).then(|| DiffRow {
                name: k.clone(),
                a_bytes: ab,
                b_bytes: bb,
                diff_bytes: signed_diff(bb, ab),
                a_count: ac,
                b_count: bc,
                diff_count: signed_diff(bc, ac),
            })
        })
        .collect();
    rows.sort_by(|x, y| {
        y.diff_bytes
            .unsigned_abs()
            .cmp(&x.diff_bytes.unsigned_abs())
            .then(y.diff_count.unsigned_abs().cmp(&x.diff_count.unsigned_abs()))
            .then_with(|| x.name.cmp(&y.name))
    });
    rows
}

/// Per type, by the name's one spelling ([`super::canonical_type_name`]):
/// a log's `System.Byte []` is a trace's `System.Byte[]`. `shown` keeps
/// the first spelling met for each, for the rows.
fn types(model: &Model, kind: HistogramKind, shown: &mut BTreeMap<String, String>) -> BTreeMap<String, (u64, u64)> {
    let mut m: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for r in by_type(model, kind) {
        let key = super::canonical_type_name(&r.name).into_owned();
        let e = m.entry(key.clone()).or_insert((0, 0));
        e.0 = e.0.saturating_add(r.bytes.max(0) as u64);
        e.1 += r.count;
        shown.entry(key).or_insert(r.name);
    }
    m
}

/// The rows of a type diff named as the files spell the types (the first
/// file's spelling when both have the type).
fn type_rows(a: &Model, b: &Model, kind: HistogramKind) -> Vec<DiffRow> {
    let mut shown = BTreeMap::new();
    let ta = types(a, kind, &mut shown);
    let tb = types(b, kind, &mut shown);
    let mut rows = diff_rows(&ta, &tb);
    for r in &mut rows {
        if let Some(name) = shown.remove(&r.name) {
            r.name = name;
        }
    }
    rows
}

fn functions(rows: &[FunctionRow], inclusive: bool) -> BTreeMap<String, (u64, u64)> {
    let mut m: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for r in rows {
        let key = if r.signature.is_empty() { r.name.clone() } else { format!("{} {}", r.name, r.signature) };
        let (b, c) = if inclusive {
            (r.figures.inclusive_bytes, r.figures.inclusive_count)
        } else {
            (r.figures.exclusive_bytes, r.figures.exclusive_count)
        };
        let e = m.entry(key).or_insert((0, 0));
        e.0 = e.0.saturating_add(b);
        e.1 += c;
    }
    m
}

/// B minus A over whole logs.
pub fn diff(a: &Model, b: &Model) -> LogDiff {
    let fa = by_function(a, &Filter::all(), SortBy::Inclusive);
    let fb = by_function(b, &Filter::all(), SortBy::Inclusive);
    LogDiff {
        allocated_by_type: type_rows(a, b, HistogramKind::Allocated),
        final_heap_by_type: type_rows(a, b, HistogramKind::FinalHeap),
        functions_exclusive: diff_rows(&functions(&fa, false), &functions(&fb, false)),
        functions_inclusive: diff_rows(&functions(&fa, true), &functions(&fb, true)),
    }
}
