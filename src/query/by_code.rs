//! Allocation by code: bytes and objects per function, per module and per
//! class, inclusive and exclusive, as Visual Studio's allocation view counts
//! them.
//!
//! - **Exclusive**: an object counts for the function that allocated it (the
//!   innermost frame of its allocation stack).
//! - **Inclusive**: an object counts once for every distinct function on its
//!   stack; a function that appears several times (recursion) counts it once.
//! - By **module** (the module of each frame's function) and by **class**
//!   (the part of the function name before its last `::`, that is
//!   `Namespace.Type` of `Namespace.Type::Method`), the same rules apply to
//!   modules and classes: exclusive for the allocating function's module or
//!   class, inclusive once per distinct module or class on the stack.
//!
//! Objects whose allocation stack has no frames are counted, inclusive and
//! exclusive, for the pseudo-function (and pseudo-module and pseudo-class)
//! [`NO_STACK`], so that exclusive figures always add up to the allocated
//! bytes of the Summary. Functions the log never defined are named
//! `???? function N`, as CLRProfiler names them; frames whose function has
//! no known module count for the module [`UNKNOWN_MODULE`]; a function name
//! without `::` is its own class.
//!
//! Every query takes a [`Filter`] applied per object (allocation time and
//! thread), and works per stack row: objects are counted per row first
//! ([`StackWeights`]), then each row's frames are walked once.

use super::alloc_stacks::{allocation_frames, function_names, node_function, row_bytes, StackWeights};
use super::types::Uncertainty;
use super::Filter;
use crate::format::FunctionId;
use crate::model::{FrameNode, Model, StackRef};
use serde::Serialize;
use std::collections::HashMap;

/// The pseudo-function of objects whose allocation stack has no frames.
pub const NO_STACK: &str = "<no stack>";

/// The module of frames whose function's module is unknown.
pub const UNKNOWN_MODULE: &str = "<unknown module>";

/// Inclusive and exclusive figures of one function, module or class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Figures {
    /// Bytes of the objects allocated with it anywhere on the stack (once
    /// per object).
    pub inclusive_bytes: u64,
    /// Objects allocated with it anywhere on the stack.
    pub inclusive_count: u64,
    /// Bytes of the objects it allocated itself (innermost frame).
    pub exclusive_bytes: u64,
    /// Objects it allocated itself.
    pub exclusive_count: u64,
}

impl Figures {
    fn add_inclusive(&mut self, bytes: u64, count: u64) {
        self.inclusive_bytes = self.inclusive_bytes.saturating_add(bytes);
        self.inclusive_count += count;
    }
    fn add_exclusive(&mut self, bytes: u64, count: u64) {
        self.exclusive_bytes = self.exclusive_bytes.saturating_add(bytes);
        self.exclusive_count += count;
    }
}

/// One function's line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FunctionRow {
    /// The function id in the log (`None` for [`NO_STACK`]).
    pub function: Option<i32>,
    /// Its name (`Namespace.Type::Method`).
    pub name: String,
    /// Its signature.
    pub signature: String,
    /// Its module's file name, when known.
    pub module: Option<String>,
    /// The figures.
    #[serde(flatten)]
    pub figures: Figures,
    /// For a sampled trace: the sampled objects and 95% range of the
    /// inclusive figures (see [`Uncertainty`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inclusive_range: Option<Uncertainty>,
    /// The same for the exclusive figures (absent when it allocated none
    /// itself).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exclusive_range: Option<Uncertainty>,
}

/// One module's or class's line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GroupRow {
    /// The module file name or the class name.
    pub name: String,
    /// The figures.
    #[serde(flatten)]
    pub figures: Figures,
    /// For a sampled trace: the inclusive figures' samples and range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inclusive_range: Option<Uncertainty>,
    /// For a sampled trace: the exclusive figures' samples and range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exclusive_range: Option<Uncertainty>,
}

/// The 95% ranges of a group's figures from the samples behind them
/// (inclusive, exclusive); `None` each for a log of every allocation.
fn ranges_of(model: &Model, f: &Figures, samples: [u64; 2]) -> (Option<Uncertainty>, Option<Uncertainty>) {
    (
        Uncertainty::of_tally(model, samples[0], f.inclusive_bytes, f.inclusive_count),
        Uncertainty::of_tally(model, samples[1], f.exclusive_bytes, f.exclusive_count),
    )
}

/// How a list is ordered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortBy {
    /// Inclusive bytes, largest first.
    #[default]
    Inclusive,
    /// Exclusive bytes, largest first.
    Exclusive,
}

/// Groups functions: a dense group number per function (group 0 is always
/// [`NO_STACK`]).
trait Grouping {
    fn group(&mut self, model: &Model, f: FunctionId) -> u32;
    fn groups(&self) -> usize;
}

/// The per-row walk shared by every grouping: counts each row's objects
/// exclusive for the group of its innermost frame and inclusive once per
/// distinct group on its frames. `keep` selects rows. Beside each
/// group's figures: the sampled objects behind them (inclusive,
/// exclusive; zeros for a log of every allocation).
fn accumulate<G: Grouping>(
    model: &Model,
    weights: &StackWeights,
    keep: &mut dyn FnMut(StackRef) -> bool,
    grouping: &mut G,
) -> (Vec<Figures>, Vec<[u64; 2]>) {
    let mut figures: Vec<Figures> = Vec::new();
    let mut samples: Vec<[u64; 2]> = Vec::new();
    let mut stamp: Vec<u32> = Vec::new();
    let mut node_group: Vec<u32> = vec![u32::MAX; model.stacks().node_count()];
    let mut frames: Vec<FrameNode> = Vec::new();
    let mut row_stamp = 0u32;
    for (row, count) in weights.iter() {
        if !keep(row) {
            continue;
        }
        let bytes = row_bytes(model, row, count).map_or(0, |(_, b)| b);
        let sampled = weights.samples(row);
        allocation_frames(model, row, &mut frames);
        row_stamp = row_stamp.wrapping_add(1).max(1);
        let mut group_of = |n: FrameNode, grouping: &mut G| -> u32 {
            match node_group.get(n.index()) {
                Some(&g) if g != u32::MAX => g,
                _ => {
                    let g = grouping.group(model, node_function(model, n));
                    if let Some(slot) = node_group.get_mut(n.index()) {
                        *slot = g;
                    }
                    g
                }
            }
        };
        let leaf = frames.first().map_or(0, |&n| group_of(n, grouping));
        if figures.len() < grouping.groups() {
            figures.resize(grouping.groups(), Figures::default());
            samples.resize(grouping.groups(), [0; 2]);
            stamp.resize(grouping.groups(), 0);
        }
        figures[leaf as usize].add_exclusive(bytes, count);
        samples[leaf as usize][1] += sampled;
        if frames.is_empty() {
            figures[0].add_inclusive(bytes, count);
            samples[0][0] += sampled;
            continue;
        }
        for &n in &frames {
            let g = group_of(n, grouping) as usize;
            if g >= figures.len() {
                figures.resize(grouping.groups(), Figures::default());
                samples.resize(grouping.groups(), [0; 2]);
                stamp.resize(grouping.groups(), 0);
            }
            if stamp[g] != row_stamp {
                stamp[g] = row_stamp;
                figures[g].add_inclusive(bytes, count);
                samples[g][0] += sampled;
            }
        }
    }
    figures.resize(grouping.groups(), Figures::default());
    samples.resize(grouping.groups(), [0; 2]);
    (figures, samples)
}

/// Functions grouped by id.
struct ByFunction {
    ids: Vec<Option<FunctionId>>,
    index: HashMap<i32, u32>,
}

impl Grouping for ByFunction {
    fn group(&mut self, _model: &Model, f: FunctionId) -> u32 {
        let next = self.ids.len() as u32;
        let g = *self.index.entry(f.0).or_insert(next);
        if g == next {
            self.ids.push(Some(f));
        }
        g
    }
    fn groups(&self) -> usize {
        self.ids.len()
    }
}

/// Functions grouped by a name derived from the function (module, class).
struct ByName<F: FnMut(&Model, FunctionId) -> String> {
    name_of: F,
    names: Vec<String>,
    by_name: HashMap<String, u32>,
    by_function: HashMap<i32, u32>,
}

impl<F: FnMut(&Model, FunctionId) -> String> ByName<F> {
    fn new(name_of: F) -> Self {
        ByName { name_of, names: vec![NO_STACK.to_string()], by_name: HashMap::new(), by_function: HashMap::new() }
    }
}

impl<F: FnMut(&Model, FunctionId) -> String> Grouping for ByName<F> {
    fn group(&mut self, model: &Model, f: FunctionId) -> u32 {
        if let Some(&g) = self.by_function.get(&f.0) {
            return g;
        }
        let name = (self.name_of)(model, f);
        let next = self.names.len() as u32;
        let g = match self.by_name.get(&name) {
            Some(&g) => g,
            None => {
                self.by_name.insert(name.clone(), next);
                self.names.push(name);
                next
            }
        };
        self.by_function.insert(f.0, g);
        g
    }
    fn groups(&self) -> usize {
        self.names.len()
    }
}

/// The class part of a function name: the text before its last `::` (the
/// whole name when it has none).
pub fn class_of(function_name: &str) -> &str {
    match function_name.rfind("::") {
        Some(i) => &function_name[..i],
        None => function_name,
    }
}

/// The module file name of a function ([`UNKNOWN_MODULE`] when unknown).
pub fn module_of(model: &Model, f: FunctionId) -> String {
    function_names(model, f).2.unwrap_or_else(|| UNKNOWN_MODULE.to_string())
}

fn sort_key(f: &Figures, by: SortBy) -> (u64, u64) {
    match by {
        SortBy::Inclusive => (f.inclusive_bytes, f.exclusive_bytes),
        SortBy::Exclusive => (f.exclusive_bytes, f.inclusive_bytes),
    }
}

/// Per function, over the rows `keep` selects (see the module documentation).
pub(crate) fn functions_where(
    model: &Model,
    weights: &StackWeights,
    keep: &mut dyn FnMut(StackRef) -> bool,
    by: SortBy,
) -> Vec<FunctionRow> {
    let mut g = ByFunction { ids: vec![None], index: HashMap::new() };
    let (figures, samples) = accumulate(model, weights, keep, &mut g);
    let mut rows: Vec<FunctionRow> = g
        .ids
        .iter()
        .zip(figures)
        .zip(samples)
        .filter(|((_, f), _)| f.inclusive_count > 0 || f.exclusive_count > 0)
        .map(|((id, figures), samples)| {
            let (inclusive_range, exclusive_range) = ranges_of(model, &figures, samples);
            match id {
                None => FunctionRow {
                    function: None,
                    name: NO_STACK.to_string(),
                    signature: String::new(),
                    module: None,
                    figures,
                    inclusive_range,
                    exclusive_range,
                },
                Some(id) => {
                    let (name, signature, module) = function_names(model, *id);
                    FunctionRow { function: Some(id.0), name, signature, module, figures, inclusive_range, exclusive_range }
                }
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        sort_key(&b.figures, by).cmp(&sort_key(&a.figures, by)).then_with(|| a.name.cmp(&b.name)).then(a.function.cmp(&b.function))
    });
    rows
}

/// Allocation per function, sorted by `by` (then by name).
pub fn by_function(model: &Model, filter: &Filter, by: SortBy) -> Vec<FunctionRow> {
    let weights = StackWeights::new(model, filter);
    functions_where(model, &weights, &mut |_| true, by)
}

fn groups<F: FnMut(&Model, FunctionId) -> String>(model: &Model, filter: &Filter, by: SortBy, name_of: F) -> Vec<GroupRow> {
    let weights = StackWeights::new(model, filter);
    let mut g = ByName::new(name_of);
    let (figures, samples) = accumulate(model, &weights, &mut |_| true, &mut g);
    let mut rows: Vec<GroupRow> = g
        .names
        .into_iter()
        .zip(figures)
        .zip(samples)
        .filter(|((_, f), _)| f.inclusive_count > 0 || f.exclusive_count > 0)
        .map(|((name, figures), samples)| {
            let (inclusive_range, exclusive_range) = ranges_of(model, &figures, samples);
            GroupRow { name, figures, inclusive_range, exclusive_range }
        })
        .collect();
    rows.sort_by(|a, b| sort_key(&b.figures, by).cmp(&sort_key(&a.figures, by)).then_with(|| a.name.cmp(&b.name)));
    rows
}

/// Allocation per module (the file name of each frame's function's module).
pub fn by_module(model: &Model, filter: &Filter, by: SortBy) -> Vec<GroupRow> {
    groups(model, filter, by, module_of)
}

/// Allocation per class ([`class_of`] each frame's function name).
pub fn by_class(model: &Model, filter: &Filter, by: SortBy) -> Vec<GroupRow> {
    groups(model, filter, by, |m, f| class_of(&function_names(m, f).0).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &[u8] = b"m 1 C:\\app\\App.exe 0x1000 1\nm 2 C:\\app\\Lib.dll 0x2000 1\n\
f 1 App.Program::Main void () 0 0 1 0\nf 2 Lib.Tree::Walk void () 0 0 2 0\nf 3 Lib.Tree::Leaf void () 0 0 2 0\n\
t 1 0 System.String\nt 2 0 Node\n\
n 2 1 1 100 1 2 2 2 3\nn 3 1 2 10 1 2\nn 4 1 1 7\ni 1\n! 1 0x1000 2\n! 1 0x1100 3\n! 1 0x1200 3\n! 1 0x1300 4\n";

    #[test]
    fn recursion_counts_once_and_exclusive_adds_up() {
        let m = crate::model::load(LOG, &Default::default()).unwrap();
        let rows = by_function(&m, &Filter::all(), SortBy::Inclusive);
        let get = |n: &str| rows.iter().find(|r| r.name == n).unwrap().figures;
        assert_eq!(get("App.Program::Main"), Figures { inclusive_bytes: 120, inclusive_count: 3, exclusive_bytes: 0, exclusive_count: 0 });
        assert_eq!(get("Lib.Tree::Walk"), Figures { inclusive_bytes: 120, inclusive_count: 3, exclusive_bytes: 20, exclusive_count: 2 });
        assert_eq!(get("Lib.Tree::Leaf"), Figures { inclusive_bytes: 100, inclusive_count: 1, exclusive_bytes: 100, exclusive_count: 1 });
        assert_eq!(get(NO_STACK), Figures { inclusive_bytes: 7, inclusive_count: 1, exclusive_bytes: 7, exclusive_count: 1 });
        let total: u64 = rows.iter().map(|r| r.figures.exclusive_bytes).sum();
        assert_eq!(total, crate::query::summary(&m).allocated_bytes);
        let modules = by_module(&m, &Filter::all(), SortBy::Exclusive);
        assert_eq!(modules[0].name, "Lib.dll");
        assert_eq!(modules[0].figures.exclusive_bytes, 120);
        assert_eq!(modules[0].figures.inclusive_count, 3);
        let classes = by_class(&m, &Filter::all(), SortBy::Inclusive);
        let tree = classes.iter().find(|r| r.name == "Lib.Tree").unwrap().figures;
        assert_eq!((tree.inclusive_bytes, tree.exclusive_bytes), (120, 120));
    }

    #[test]
    fn class_names() {
        assert_eq!(class_of("A.B::C"), "A.B");
        assert_eq!(class_of("NATIVE FUNCTION"), "NATIVE FUNCTION");
        assert_eq!(class_of("A::B::C"), "A::B");
    }
}
