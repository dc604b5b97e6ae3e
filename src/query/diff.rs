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
//!
//! When a file's figures are estimates (a trace's samples), each row also
//! gives both sides' 95% ranges and the change's
//! ([`DiffRanges`]): the change is told apart from no change only when its
//! range leaves out 0.

use super::by_code::{by_function, FunctionRow, SortBy};
use super::estimates::Range95;
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
    /// When a file's figures are estimates: the bytes' 95% ranges.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub ranges: Option<DiffRanges>,
}

/// The 95% ranges of a row's bytes when a file's figures are estimates
/// (a file of every allocation gives its figure as its range).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DiffRanges {
    /// The sampled objects behind A's figure (0 for a file of every
    /// allocation, or a row A does not have).
    pub a_samples: u64,
    /// The sampled objects behind B's figure.
    pub b_samples: u64,
    /// A's bytes, `[low, high]`.
    pub a_bytes_range: [u64; 2],
    /// B's bytes, `[low, high]`.
    pub b_bytes_range: [u64; 2],
    /// The change's bytes, `[low, high]`: each side's distance to its
    /// range's ends, added in quadrature (the two files are sampled
    /// independently).
    pub diff_bytes_range: [i64; 2],
    /// The change's range leaves out 0: a change the sampling does not
    /// explain.
    pub significant: bool,
}

/// A side's figures for one key: bytes, objects, and the sampled objects
/// behind them (`None`: a file of every allocation, exact).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiffSide {
    /// Bytes.
    pub bytes: u64,
    /// Objects.
    pub count: u64,
    /// The sampled objects behind the figures, for a file of estimates.
    pub samples: Option<u64>,
    /// For a file of estimates without this key: the most bytes it could
    /// have had unseen (the file's bytes per sample times
    /// [`Range95::unseen_samples`]).
    pub unseen_bytes: u64,
}

impl DiffSide {
    fn add(&mut self, bytes: u64, count: u64, samples: Option<u64>) {
        self.bytes = self.bytes.saturating_add(bytes);
        self.count += count;
        self.samples = match (self.samples, samples) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
    }

    /// The bytes' 95% range: the figure itself when exact or when nothing
    /// was sampled.
    fn range(&self) -> [u64; 2] {
        if self.samples == Some(0) && self.bytes == 0 {
            return [0, self.unseen_bytes];
        }
        match self.samples.and_then(Range95::of) {
            Some(r) => {
                let [lo, hi] = r.apply(self.bytes as f64);
                [lo.max(0.0) as u64, hi.min(u64::MAX as f64) as u64]
            }
            None => [self.bytes, self.bytes],
        }
    }
}

/// The ranges of a row whose sides are `a` and `b` (`None` when both are
/// exact).
fn ranges(a: &DiffSide, b: &DiffSide) -> Option<DiffRanges> {
    if a.samples.is_none() && b.samples.is_none() {
        return None;
    }
    let (ar, br) = (a.range(), b.range());
    let d = b.bytes as f64 - a.bytes as f64;
    let down = ((b.bytes - br[0]) as f64).hypot((ar[1] - a.bytes) as f64);
    let up = ((br[1] - b.bytes) as f64).hypot((a.bytes - ar[0]) as f64);
    let clamp = |v: f64| v.clamp(i64::MIN as f64, i64::MAX as f64) as i64;
    let lo = clamp((d - down).floor());
    let hi = clamp((d + up).ceil());
    Some(DiffRanges {
        a_samples: a.samples.unwrap_or(0),
        b_samples: b.samples.unwrap_or(0),
        a_bytes_range: ar,
        b_bytes_range: br,
        diff_bytes_range: [lo, hi],
        significant: lo > 0 || hi < 0,
    })
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

/// Compares two keyed lists of figures.
/// `a_unseen` and `b_unseen`: for a file of estimates, the bytes a key
/// it does not have could have had unseen (`None`: a file of every
/// allocation, where a missing key is 0).
pub fn diff_rows(
    a: &BTreeMap<String, DiffSide>,
    b: &BTreeMap<String, DiffSide>,
    a_unseen: Option<u64>,
    b_unseen: Option<u64>,
) -> Vec<DiffRow> {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut rows: Vec<DiffRow> = keys
        .into_iter()
        .filter_map(|k| {
            let absent =
                |unseen: Option<u64>| DiffSide { samples: unseen.map(|_| 0), unseen_bytes: unseen.unwrap_or(0), ..DiffSide::default() };
            let sa = a.get(k).copied().unwrap_or_else(|| absent(a_unseen));
            let sb = b.get(k).copied().unwrap_or_else(|| absent(b_unseen));
            let (ab, ac, bb, bc) = (sa.bytes, sa.count, sb.bytes, sb.count);
            (ab != bb || ac != bc).then(|| DiffRow {
                name: k.clone(),
                a_bytes: ab,
                b_bytes: bb,
                diff_bytes: signed_diff(bb, ab),
                a_count: ac,
                b_count: bc,
                diff_count: signed_diff(bc, ac),
                ranges: ranges(&sa, &sb),
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
fn types(model: &Model, kind: HistogramKind, shown: &mut BTreeMap<String, String>) -> BTreeMap<String, DiffSide> {
    let sampled = model.sampling().is_some();
    let mut m: BTreeMap<String, DiffSide> = BTreeMap::new();
    for r in by_type(model, kind) {
        let key = super::canonical_type_name(&r.name).into_owned();
        m.entry(key.clone()).or_default().add(r.bytes.max(0) as u64, r.count, sampled.then_some(r.samples));
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
    let mut rows = diff_rows(&ta, &tb, unseen(a), unseen(b));
    for r in &mut rows {
        if let Some(name) = shown.remove(&r.name) {
            r.name = name;
        }
    }
    rows
}

fn functions(rows: &[FunctionRow], inclusive: bool, sampled: bool) -> BTreeMap<String, DiffSide> {
    let mut m: BTreeMap<String, DiffSide> = BTreeMap::new();
    for r in rows {
        let key = if r.signature.is_empty() { r.name.clone() } else { format!("{} {}", r.name, r.signature) };
        let (b, c, range) = if inclusive {
            (r.figures.inclusive_bytes, r.figures.inclusive_count, &r.inclusive_range)
        } else {
            (r.figures.exclusive_bytes, r.figures.exclusive_count, &r.exclusive_range)
        };
        let samples = sampled.then(|| range.as_ref().map_or(0, |u| u.samples));
        m.entry(key).or_default().add(b, c, samples);
    }
    m
}

/// B minus A over whole logs.
pub fn diff(a: &Model, b: &Model) -> LogDiff {
    let fa = by_function(a, &Filter::all(), SortBy::Inclusive);
    let fb = by_function(b, &Filter::all(), SortBy::Inclusive);
    let (sa, sb) = (a.sampling().is_some(), b.sampling().is_some());
    let (ua, ub) = (unseen(a), unseen(b));
    LogDiff {
        allocated_by_type: type_rows(a, b, HistogramKind::Allocated),
        final_heap_by_type: type_rows(a, b, HistogramKind::FinalHeap),
        functions_exclusive: diff_rows(&functions(&fa, false, sa), &functions(&fb, false, sb), ua, ub),
        functions_inclusive: diff_rows(&functions(&fa, true, sa), &functions(&fb, true, sb), ua, ub),
    }
}

/// For a model of samples, the bytes a type or function it shows nothing
/// of could have allocated unseen (its bytes per sample times
/// [`Range95::unseen_samples`]); `None` for a log of every allocation.
fn unseen(model: &Model) -> Option<u64> {
    let s = model.sampling()?;
    let samples = s.weights.len() as f64;
    let bytes: u64 = by_type(model, HistogramKind::Allocated).iter().map(|r| r.bytes.max(0) as u64).sum();
    let per_sample = if samples > 0.0 { bytes as f64 / samples } else { 0.0 };
    Some((per_sample * Range95::unseen_samples()).ceil() as u64)
}
