//! Allocated bytes as folded stacks, the input of flame graphs: one line per
//! distinct (stack, type), `outer;...;inner;Type bytes`, root to leaf with
//! the allocated type as the last frame.
//!
//! Frames are function names without signatures (`???? function N` for
//! undefined ones); a stack with no frames is the type alone. A `;` inside a
//! name (which would split a frame) becomes `:`. Lines with zero bytes are
//! left out, so the counts add up to the allocated bytes of the objects the
//! filter keeps.

use super::alloc_stacks::{function_names, row_bytes, CanonicalPaths, StackWeights};
use super::types::Uncertainty;
use super::Filter;
use crate::format::{FunctionId, TypeId};
use crate::model::{FrameNode, Model};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// One folded stack.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FoldedStack {
    /// Frames joined by `;`, outermost first, the type last.
    pub stack: String,
    /// Bytes allocated with it.
    pub bytes: u64,
    /// Objects allocated with it.
    pub count: u64,
    /// For a sampled trace: the sampled objects and the 95% range.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<Uncertainty>,
}

fn frame_name(name: &str) -> String {
    name.replace(';', ":")
}

/// The folded stacks of the objects the filter keeps, sorted by stack.
pub fn folded_stacks(model: &Model, filter: &Filter) -> Vec<FoldedStack> {
    let weights = StackWeights::new(model, filter);
    let mut paths = CanonicalPaths::new(model);
    let mut scratch: Vec<FrameNode> = Vec::new();
    let mut per_path: HashMap<(u32, TypeId), [u64; 3]> = HashMap::new();
    for (row, count) in weights.iter() {
        let Some((ty, bytes)) = row_bytes(model, row, count) else { continue };
        if bytes == 0 {
            continue;
        }
        let p = paths.of_row(model, row, &mut scratch);
        let e = per_path.entry((p, ty)).or_insert([0; 3]);
        e[0] = e[0].saturating_add(bytes);
        e[1] += count;
        e[2] += weights.samples(row);
    }
    let mut names: HashMap<i32, String> = HashMap::new();
    let mut prefixes: HashMap<u32, String> = HashMap::new();
    let mut fs: Vec<FunctionId> = Vec::new();
    let mut lines: BTreeMap<String, [u64; 3]> = BTreeMap::new();
    for ((p, ty), figures) in per_path {
        let prefix = prefixes.entry(p).or_insert_with(|| {
            paths.functions(p, &mut fs);
            let mut s = String::new();
            for f in &fs {
                let n = names.entry(f.0).or_insert_with(|| frame_name(&function_names(model, *f).0));
                s.push_str(n);
                s.push(';');
            }
            s
        });
        let mut line = String::with_capacity(prefix.len() + 32);
        line.push_str(prefix);
        line.push_str(&frame_name(&model.type_name(ty)));
        let e = lines.entry(line).or_insert([0; 3]);
        e[0] = e[0].saturating_add(figures[0]);
        e[1] += figures[1];
        e[2] += figures[2];
    }
    lines
        .into_iter()
        .map(|(stack, [bytes, count, samples])| FoldedStack {
            stack,
            bytes,
            count,
            uncertainty: Uncertainty::of_tally(model, samples, bytes, count),
        })
        .collect()
}

/// The folded stacks as text, one `stack bytes` line each.
pub fn folded_text(stacks: &[FoldedStack]) -> String {
    let mut s = String::new();
    for f in stacks {
        s.push_str(&f.stack);
        s.push(' ');
        s.push_str(&f.bytes.to_string());
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_by_path_and_type() {
        let log = b"f 1 P::Main void () 0 0 0 0\nf 2 P::Make;x void () 0 0 0 0\nt 1 0 System.String\n\
n 2 1 1 30 1 2\nn 3 1 1 40 1 2\nn 4 1 1 20\ni 1\n! 1 0x1000 2\n! 1 0x1100 3\n! 1 0x1200 4\n";
        let m = crate::model::load(log, &Default::default()).unwrap();
        let f = folded_stacks(&m, &Filter::all());
        assert_eq!(folded_text(&f), "P::Main;P::Make:x;System.String 70\nSystem.String 20\n");
    }
}
