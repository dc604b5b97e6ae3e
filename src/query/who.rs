//! "Who allocated type T": the functions and stacks that allocated the types
//! whose name matches a pattern.
//!
//! Functions are counted as [`super::by_code`] counts them (inclusive once
//! per object for every distinct function on its stack, exclusive for the
//! allocating function), over the matching objects only. Stacks are the
//! distinct frame paths (outermost first) with the matching type they
//! allocated.

use super::alloc_stacks::{row_bytes, CanonicalPaths, StackWeights};
use super::by_code::{functions_where, FunctionRow, SortBy, NO_STACK};
use super::types::Uncertainty;
use super::Filter;
use crate::format::{FunctionId, TypeId};
use crate::model::{FrameNode, Model, StackRef};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// Which type names match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeMatch {
    /// The name contains this text (case-sensitive).
    Contains(String),
    /// The name is exactly this text.
    Exact(String),
}

impl TypeMatch {
    /// Whether a type name matches.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            TypeMatch::Contains(s) => name.contains(s.as_str()),
            TypeMatch::Exact(s) => name == s,
        }
    }
}

/// A matching type and what was allocated of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MatchedType {
    /// The type name.
    pub name: String,
    /// Bytes allocated.
    pub bytes: u64,
    /// Objects allocated.
    pub count: u64,
    /// For a sampled trace: the sampled objects and the 95% range.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<Uncertainty>,
}

/// One allocation stack of a matching type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AllocatingStack {
    /// The allocated type.
    pub type_name: String,
    /// Function names, outermost first (empty: the stack had no frames).
    pub frames: Vec<String>,
    /// Bytes allocated.
    pub bytes: u64,
    /// Objects allocated.
    pub count: u64,
    /// For a sampled trace: the sampled objects and the 95% range.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<Uncertainty>,
}

/// The answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WhoAllocated {
    /// Bytes of all matching objects.
    pub bytes: u64,
    /// Matching objects.
    pub count: u64,
    /// For a sampled trace: the sampled objects and the 95% range of the
    /// totals.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<Uncertainty>,
    /// The matching types, by bytes.
    pub types: Vec<MatchedType>,
    /// Functions, by inclusive bytes (over matching objects only).
    pub functions: Vec<FunctionRow>,
    /// Distinct stacks with their type, by bytes.
    pub stacks: Vec<AllocatingStack>,
}

/// The functions and stacks that allocated the types `pattern` matches.
pub fn who_allocated(model: &Model, filter: &Filter, pattern: &TypeMatch, by: SortBy) -> WhoAllocated {
    let weights = StackWeights::new(model, filter);
    let mut matched: HashMap<TypeId, bool> = HashMap::new();
    let mut keep = |row: StackRef| -> bool {
        let Some((ty, _)) = model.stacks().type_and_size(row) else { return false };
        *matched.entry(ty).or_insert_with(|| pattern.matches(&model.type_name(ty)))
    };
    let mut types: BTreeMap<String, (MatchedType, u64)> = BTreeMap::new();
    let mut by_path: HashMap<(u32, TypeId), (u64, u64, u64)> = HashMap::new();
    let mut paths = CanonicalPaths::new(model);
    let mut scratch: Vec<FrameNode> = Vec::new();
    let (mut bytes, mut count, mut samples) = (0u64, 0u64, 0u64);
    for (row, c) in weights.iter() {
        if !keep(row) {
            continue;
        }
        let Some((ty, b)) = row_bytes(model, row, c) else { continue };
        let k = weights.samples(row);
        bytes = bytes.saturating_add(b);
        count += c;
        samples += k;
        let name = model.type_name(ty).into_owned();
        let t = types.entry(name.clone()).or_insert((MatchedType { name, bytes: 0, count: 0, uncertainty: None }, 0));
        t.0.bytes = t.0.bytes.saturating_add(b);
        t.0.count += c;
        t.1 += k;
        let p = paths.of_row(model, row, &mut scratch);
        let e = by_path.entry((p, ty)).or_insert((0, 0, 0));
        e.0 = e.0.saturating_add(b);
        e.1 += c;
        e.2 += k;
    }
    let functions = functions_where(model, &weights, &mut keep, by);
    let mut names: HashMap<i32, String> = HashMap::new();
    let mut fs: Vec<FunctionId> = Vec::new();
    let mut merged: BTreeMap<(Vec<String>, String), (u64, u64, u64)> = BTreeMap::new();
    for ((p, ty), (b, c, k)) in by_path {
        paths.functions(p, &mut fs);
        let frames: Vec<String> = fs
            .iter()
            .map(|f| names.entry(f.0).or_insert_with(|| super::alloc_stacks::function_names(model, *f).0).clone())
            .collect();
        let e = merged.entry((frames, model.type_name(ty).into_owned())).or_insert((0, 0, 0));
        e.0 = e.0.saturating_add(b);
        e.1 += c;
        e.2 += k;
    }
    let mut stacks: Vec<AllocatingStack> = merged
        .into_iter()
        .map(|((frames, type_name), (bytes, count, k))| AllocatingStack {
            type_name,
            frames,
            bytes,
            count,
            uncertainty: Uncertainty::of_tally(model, k, bytes, count),
        })
        .collect();
    stacks.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(b.count.cmp(&a.count)));
    let mut types: Vec<MatchedType> = types
        .into_values()
        .map(|(mut t, k)| {
            t.uncertainty = Uncertainty::of_tally(model, k, t.bytes, t.count);
            t
        })
        .collect();
    types.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
    let uncertainty = Uncertainty::of_tally(model, samples, bytes, count);
    WhoAllocated { bytes, count, uncertainty, types, functions, stacks }
}

/// A stack's frames as one line: `outer > ... > inner` ([`NO_STACK`] when
/// empty).
pub fn stack_line(frames: &[String]) -> String {
    if frames.is_empty() {
        NO_STACK.to_string()
    } else {
        frames.join(" > ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_allocating_functions_and_stacks() {
        let log = b"f 1 P::Main void () 0 0 0 0\nf 2 P::Make void () 0 0 0 0\nt 1 0 System.String\nt 2 0 System.String []\n\
n 2 1 1 30 1 2\nn 3 1 2 40 1\nn 4 1 1 20 1 2\ni 1\n! 1 0x1000 2\n! 1 0x1100 3\n! 1 0x1200 4\n! 1 0x1300 2\n";
        let m = crate::model::load(log, &Default::default()).unwrap();
        let w = who_allocated(&m, &Filter::all(), &TypeMatch::Exact("System.String".into()), SortBy::Inclusive);
        assert_eq!((w.bytes, w.count), (80, 3));
        assert_eq!(w.types.len(), 1);
        assert_eq!(w.stacks.len(), 1);
        assert_eq!(w.stacks[0].frames, vec!["P::Main".to_string(), "P::Make".to_string()]);
        assert_eq!(w.functions[0].figures.inclusive_bytes, 80);
        let w = who_allocated(&m, &Filter::all(), &TypeMatch::Contains("String".into()), SortBy::Exclusive);
        assert_eq!((w.bytes, w.count), (120, 4));
        assert_eq!(w.stacks.len(), 2);
        assert_eq!(w.functions[0].name, "P::Make");
    }
}
