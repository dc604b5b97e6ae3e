//! Leaks from a series of heap dumps of one process: the types whose
//! instances keep growing from dump to dump, each with its growth per
//! minute, what holds the growth (the container and the path from its
//! root), and a verdict (leak, none, cannot tell).
//!
//! # The rule
//!
//! A type *leaks* when, over three or more dumps taken in order:
//!
//! - its reachable instances never fall from one dump to the next;
//! - they grow in the last interval by at least [`LeakRule::last_share`]
//!   of the mean growth per interval (a one-time warm-up grows early and
//!   then stops; a cache that fills and plateaus stops too);
//! - the whole growth is at least [`LeakRule::min_objects`] objects or
//!   [`LeakRule::min_bytes`] bytes, and at least
//!   [`LeakRule::min_ratio`] of the first dump's instances.
//!
//! Garbage churn does not reach a dump (a dump follows a full GC), and
//! what little of it is held on stacks at that moment rises and falls.
//!
//! # What holds the growth
//!
//! In the last dump, the *holder* of a leaking type is the deepest object
//! of another type whose dominator subtree holds more than half of the
//! type's instances (for a `List<T>`: its `T[]`, then the list itself; for
//! an event: the invocation list, then the delegate and its publisher).
//! The report gives the container (the holder, or the first non-array
//! object above it), a kind read from its type name (`List<T>`,
//! `Dictionary<K,V>`, an event's invocation list, ...), and the shortest
//! path from a root to it. Types whose holder is another leaking type's
//! instance, or the same container, are reported with that leak
//! ([`Leak::with`]), so one leak is one row.

use super::dominators::{dominators, DominatorTree};
use super::graph::DumpGraph;
use super::paths::bfs;
use super::retained::{retained_by_number, retained_per_type};
use super::roots::RootRef;
use super::DumpIndex;
use crate::model::Model;
use crate::query::canonical_type_name;
use serde::Serialize;
use std::collections::HashMap;

/// One dump of a series: the model it is in, which dump, when it was taken
/// (milliseconds on one clock for the whole series) and a label.
#[derive(Clone, Copy)]
pub struct SeriesDump<'m> {
    /// The model holding the dump.
    pub model: &'m Model,
    /// The dump.
    pub index: DumpIndex,
    /// When it was taken, in milliseconds on the series' clock.
    pub at_ms: f64,
}

/// The thresholds of the rule (see the module's documentation).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LeakRule {
    /// Growth over the series, in objects, that can make a leak.
    pub min_objects: u64,
    /// Growth over the series, in bytes, that can make a leak.
    pub min_bytes: u64,
    /// Growth relative to the first dump's instances.
    pub min_ratio: f64,
    /// The last interval's growth relative to the mean growth per interval.
    pub last_share: f64,
}

impl Default for LeakRule {
    fn default() -> Self {
        LeakRule { min_objects: 100, min_bytes: 1 << 20, min_ratio: 0.10, last_share: 0.25 }
    }
}

/// The verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// At least one type leaks.
    Leak,
    /// No type leaks.
    None,
    /// The dumps cannot tell (see [`LeakReport::undecided`]).
    Undecided,
}

/// One dump of the series at a glance.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SeriesPoint {
    /// When it was taken (milliseconds on the series' clock).
    pub at_ms: f64,
    /// Reachable objects.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Objects no strong root reaches.
    pub unreachable: u64,
}

/// A type's figures over the series, one entry per dump.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TypeSeries {
    /// The type (the runtime's spelling).
    pub name: String,
    /// Reachable instances.
    pub objects: Vec<u64>,
    /// Their bytes.
    pub bytes: Vec<u64>,
    /// What they retain, counted once.
    pub retained: Vec<u64>,
    /// Growth per minute of the instances (least squares over the dumps).
    pub objects_per_minute: f64,
    /// Growth per minute of their bytes.
    pub bytes_per_minute: f64,
    /// Growth per minute of what they retain.
    pub retained_per_minute: f64,
}

/// One object on a path, as a leak names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Step {
    /// Its type.
    pub name: String,
    /// Its address (in the last dump).
    pub address: u64,
}

/// What holds a leaking type's instances in the last dump.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Holder {
    /// The object whose dominator subtree holds most instances (an array
    /// is replaced by the object that holds it).
    pub container: Step,
    /// What kind of container it is, read from its type name.
    pub kind: ContainerKind,
    /// Instances of the leaking type it holds.
    pub holds: u64,
    /// The root the path starts from (`None`: the container is not
    /// reachable from a strong root).
    pub root: Option<RootRef>,
    /// The shortest path from the root's object to the container.
    pub path: Vec<Step>,
}

/// A container's kind, from its type's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ContainerKind {
    /// `List<T>`.
    List,
    /// `Dictionary<K,V>`, `ConcurrentDictionary<K,V>`, `Hashtable`.
    Dictionary,
    /// `HashSet<T>`.
    Set,
    /// `Queue<T>`, `Stack<T>`, `ConcurrentQueue<T>`, `ConcurrentBag<T>`.
    Queue,
    /// `LinkedList<T>`.
    LinkedList,
    /// A delegate's invocation list: the subscribers of an event.
    EventHandlers,
    /// An array held by no other object.
    Array,
    /// Any other object.
    Object,
}

impl ContainerKind {
    /// A few words for a table.
    pub fn describe(self) -> &'static str {
        match self {
            ContainerKind::List => "list",
            ContainerKind::Dictionary => "dictionary",
            ContainerKind::Set => "set",
            ContainerKind::Queue => "queue",
            ContainerKind::LinkedList => "linked list",
            ContainerKind::EventHandlers => "event handlers (invocation list)",
            ContainerKind::Array => "array",
            ContainerKind::Object => "object",
        }
    }

    fn of(name: &str) -> ContainerKind {
        let has = |s: &str| name.contains(s);
        if is_delegate(name) {
            ContainerKind::EventHandlers
        } else if has("Dictionary`") || has("Dictionary<") || name.ends_with("Hashtable") {
            ContainerKind::Dictionary
        } else if has("HashSet`") || has("HashSet<") {
            ContainerKind::Set
        } else if has("LinkedList`") || has("LinkedList<") {
            ContainerKind::LinkedList
        } else if has("List`") || has("List<") {
            ContainerKind::List
        } else if ["Queue`", "Queue<", "Stack`", "Stack<", "ConcurrentBag"].iter().any(|s| has(s)) {
            ContainerKind::Queue
        } else if is_array(name) {
            ContainerKind::Array
        } else {
            ContainerKind::Object
        }
    }
}

fn is_array(name: &str) -> bool {
    name.trim_end().ends_with(']') && !name.ends_with("]]")
}

/// Delegates by the names .NET gives them: `System.EventHandler`,
/// `System.EventHandler<...>`, `System.Action...`, `System.Func...`, and
/// any type named `...Handler` or `...EventHandler`.
fn is_delegate(name: &str) -> bool {
    let base = name.split(['<', '`', '[']).next().unwrap_or(name).trim_end();
    base == "System.Action" || base == "System.Func" || base.ends_with("EventHandler") || base.ends_with("Handler") || base == "System.MulticastDelegate"
}

/// A leaking type.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Leak {
    /// The type and its figures.
    #[serde(flatten)]
    pub series: TypeSeries,
    /// What holds it (`None` when no object holds most of its instances:
    /// they hang from many roots).
    pub holder: Option<Holder>,
    /// Other growing types held with it (by its instances or by the same
    /// container), reported with this leak.
    pub with: Vec<TypeSeries>,
}

/// The leaks of a series of dumps.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LeakReport {
    /// The verdict.
    pub verdict: Verdict,
    /// Why the dumps cannot tell (empty unless [`Verdict::Undecided`]).
    pub undecided: Vec<String>,
    /// The rule applied.
    pub rule: LeakRule,
    /// The dumps, in order.
    pub dumps: Vec<SeriesPoint>,
    /// The leaks, the fastest-growing (retained bytes per minute) first.
    pub leaks: Vec<Leak>,
    /// Types that grew over the series but are not leaks by the rule
    /// (growth that stopped, or too small), the largest growth first, at
    /// most 10.
    pub quiet: Vec<TypeSeries>,
}

/// One dump's graph and figures.
struct Analysed<'m> {
    model: &'m Model,
    graph: DumpGraph,
    tree: DominatorTree,
    /// Per type name: (objects, bytes, retained).
    types: HashMap<String, (u64, u64, u64)>,
    names: Vec<String>,
}

fn analyse(model: &Model, index: DumpIndex) -> Option<Analysed<'_>> {
    let graph = DumpGraph::build(model, index)?;
    let tree = dominators(&graph.graph, graph.root());
    let retained: HashMap<i32, (u64, u64, u64)> = retained_per_type(&graph, &tree, &retained_by_number(&graph, &tree)).entries().collect();
    let mut names = Vec::with_capacity(graph.types.len());
    let mut cache: HashMap<i32, String> = HashMap::new();
    for &t in &graph.types {
        let name = cache.entry(t).or_insert_with(|| canonical_type_name(&model.type_name(crate::format::TypeId(t))).into_owned());
        names.push(name.clone());
    }
    let mut types: HashMap<String, (u64, u64, u64)> = HashMap::new();
    for (t, name) in &cache {
        if let Some(&(objects, bytes, kept)) = retained.get(t) {
            let e = types.entry(name.clone()).or_default();
            e.0 += objects;
            e.1 += bytes;
            e.2 += kept;
        }
    }
    Some(Analysed { model, graph, tree, types, names })
}

/// Least-squares slope of `ys` against `xs` (minutes); 0 for fewer than
/// two distinct times.
fn slope(xs: &[f64], ys: &[u64]) -> f64 {
    let n = xs.len() as f64;
    if xs.len() < 2 {
        return 0.0;
    }
    let mx = xs.iter().sum::<f64>() / n;
    let my = ys.iter().map(|&y| y as f64).sum::<f64>() / n;
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    if sxx <= 0.0 {
        return 0.0;
    }
    xs.iter().zip(ys).map(|(x, &y)| (x - mx) * (y as f64 - my)).sum::<f64>() / sxx
}

/// Whether a series of instance counts (and bytes) leaks by the rule.
fn leaks_by(rule: &LeakRule, objects: &[u64], bytes: &[u64]) -> bool {
    let (Some(&first), Some(&last)) = (objects.first(), objects.last()) else {
        return false;
    };
    if objects.windows(2).any(|w| w[1] < w[0]) || last <= first {
        return false;
    }
    let grew = last - first;
    let grew_bytes = bytes.last().copied().unwrap_or(0).saturating_sub(bytes.first().copied().unwrap_or(0));
    if grew < rule.min_objects && grew_bytes < rule.min_bytes {
        return false;
    }
    if (grew as f64) < rule.min_ratio * first as f64 {
        return false;
    }
    let intervals = (objects.len() - 1) as f64;
    let last_step = objects[objects.len() - 1] - objects[objects.len() - 2];
    last_step as f64 >= rule.last_share * grew as f64 / intervals && last_step > 0
}

/// One file's dumps as a series (a log with periodic dumps, or a trace
/// with several heap walks), each placed at its time in the file.
pub fn series_in(model: &Model) -> Vec<SeriesDump<'_>> {
    super::list(model)
        .iter()
        .enumerate()
        .map(|(k, info)| SeriesDump { model, index: DumpIndex(k as u32), at_ms: info.time_ms.unwrap_or(0) as f64 })
        .collect()
}

/// Finds the leaks in `series` (three or more dumps of one process, in the
/// order they were taken).
pub fn leaks(series: &[SeriesDump<'_>], rule: LeakRule) -> LeakReport {
    let mut undecided = Vec::new();
    if series.len() < 3 {
        undecided.push(format!("{} dump(s): the rule needs three or more of one process", series.len()));
    }
    if series.windows(2).any(|w| w[1].at_ms < w[0].at_ms) {
        undecided.push("the dumps are not in the order they were taken".to_string());
    }
    let mut analysed = Vec::with_capacity(series.len());
    for (k, s) in series.iter().enumerate() {
        match analyse(s.model, s.index) {
            Some(a) => analysed.push(a),
            None => undecided.push(format!("dump {k}: no dump {} in its file", s.index)),
        }
    }
    let dumps: Vec<SeriesPoint> = series
        .iter()
        .zip(&analysed)
        .map(|(s, a)| {
            let reachable: Vec<usize> = (0..a.graph.objects()).filter(|&v| a.tree.is_reachable(v as u32)).collect();
            SeriesPoint {
                at_ms: s.at_ms,
                objects: reachable.len() as u64,
                bytes: reachable.iter().map(|&v| a.graph.sizes[v] as u64).sum(),
                unreachable: (a.graph.objects() - reachable.len()) as u64,
            }
        })
        .collect();
    if !undecided.is_empty() || analysed.len() != series.len() {
        return LeakReport { verdict: Verdict::Undecided, undecided, rule, dumps, leaks: Vec::new(), quiet: Vec::new() };
    }
    let t0 = series[0].at_ms;
    let minutes: Vec<f64> = series.iter().map(|s| (s.at_ms - t0) / 60_000.0).collect();
    let mut names: Vec<&String> = analysed.iter().flat_map(|a| a.types.keys()).collect();
    names.sort();
    names.dedup();
    let mut growing = Vec::new();
    let mut quiet = Vec::new();
    for name in names {
        let figures: Vec<(u64, u64, u64)> = analysed.iter().map(|a| a.types.get(name).copied().unwrap_or_default()).collect();
        let objects: Vec<u64> = figures.iter().map(|f| f.0).collect();
        let bytes: Vec<u64> = figures.iter().map(|f| f.1).collect();
        let retained: Vec<u64> = figures.iter().map(|f| f.2).collect();
        let series = TypeSeries {
            name: name.clone(),
            objects_per_minute: slope(&minutes, &objects),
            bytes_per_minute: slope(&minutes, &bytes),
            retained_per_minute: slope(&minutes, &retained),
            objects,
            bytes,
            retained,
        };
        if leaks_by(&rule, &series.objects, &series.bytes) {
            growing.push(series);
        } else if series.objects.last() > series.objects.first() {
            quiet.push(series);
        }
    }
    let last = &analysed[analysed.len() - 1];
    let leaks = group(last, growing);
    quiet.sort_by_key(|s| std::cmp::Reverse(growth(s)));
    quiet.truncate(10);
    let verdict = if leaks.is_empty() { Verdict::None } else { Verdict::Leak };
    LeakReport { verdict, undecided, rule, dumps, leaks, quiet }
}

fn growth(s: &TypeSeries) -> u64 {
    s.bytes.last().copied().unwrap_or(0).saturating_sub(s.bytes.first().copied().unwrap_or(0))
}

/// Plumbing: types that carry other types' growth (arrays, strings,
/// delegates, boxes); a leak is headed by another type when there is one.
fn plumbing(name: &str) -> bool {
    is_array(name) || is_delegate(name) || name == "System.String" || name == "System.Object"
}

/// What holds each growing type in the last dump, and the growing types
/// gathered into one leak per container.
fn group(last: &Analysed<'_>, mut growing: Vec<TypeSeries>) -> Vec<Leak> {
    growing.sort_by(|a, b| {
        plumbing(&a.name)
            .cmp(&plumbing(&b.name))
            .then_with(|| b.retained_per_minute.total_cmp(&a.retained_per_minute))
            .then_with(|| a.name.cmp(&b.name))
    });
    let (parent, _) = bfs(&last.graph);
    let depth = depths(&last.tree, last.graph.objects() + 1);
    let mut leaks: Vec<Leak> = Vec::new();
    // Per leak: its container's node.
    let mut containers: Vec<Option<u32>> = Vec::new();
    for series in growing {
        // Held by instances of a type already reported: with that leak.
        let grew = series.objects.last().copied().unwrap_or(0).saturating_sub(series.objects.first().copied().unwrap_or(0));
        if let Some(k) = leaks.iter().position(|l| held_by_instances(last, &series.name, &l.series.name) * 2 >= grew) {
            leaks[k].with.push(series);
            continue;
        }
        let node = holder_node(last, &depth, &series.name);
        // Held by the same container as a leak already reported.
        if let Some(k) = node.and_then(|(n, _)| containers.iter().position(|c| *c == Some(n))) {
            leaks[k].with.push(series);
            continue;
        }
        let holder = node.map(|(n, holds)| describe(last, &parent, n, holds));
        containers.push(node.map(|(n, _)| n));
        leaks.push(Leak { series, holder, with: Vec::new() });
    }
    leaks
}

/// Reachable instances of `name` dominated (within a few steps up the
/// dominator tree) by an instance of `owner`.
fn held_by_instances(a: &Analysed<'_>, name: &str, owner: &str) -> u64 {
    let mut held = 0;
    for v in 0..a.graph.objects() {
        if a.names[v] != name || !a.tree.is_reachable(v as u32) {
            continue;
        }
        let mut u = v as u32;
        for _ in 0..8 {
            match a.tree.idom(u) {
                Some(d) if (d as usize) < a.names.len() => {
                    if a.names[d as usize] == owner {
                        held += 1;
                        break;
                    }
                    u = d;
                }
                _ => break,
            }
        }
    }
    held
}

/// Depth of each node in the dominator tree (the virtual root at 0).
fn depths(tree: &DominatorTree, nodes: usize) -> Vec<u32> {
    let mut depth = vec![0u32; nodes];
    for &v in tree.preorder().iter().skip(1) {
        if let Some(d) = tree.idom(v) {
            depth[v as usize] = depth[d as usize] + 1;
        }
    }
    depth
}

/// The deepest node of another type whose dominator subtree holds more
/// than half of the reachable instances of `name`, lifted from arrays and
/// a collection's internal objects to the collection.
fn holder_node(a: &Analysed<'_>, depth: &[u32], name: &str) -> Option<(u32, u64)> {
    let n = a.graph.objects();
    let mut count = vec![0u64; n + 1];
    let mut total = 0u64;
    for (v, c) in count.iter_mut().enumerate().take(n) {
        if a.tree.is_reachable(v as u32) && a.names[v] == name {
            *c = 1;
            total += 1;
        }
    }
    if total == 0 {
        return None;
    }
    for &v in a.tree.preorder().iter().skip(1).rev() {
        if let Some(d) = a.tree.idom(v) {
            count[d as usize] += count[v as usize];
        }
    }
    let best = (0..n)
        .filter(|&v| count[v] * 2 > total && a.names[v] != name)
        .max_by_key(|&v| depth[v])?;
    Some((lift(a, best as u32), count[best]))
}

/// From an array or a collection's internal object to the object above it
/// that is not one (`T[]` -> `List<T>`, `Entry[]` -> `Dictionary<K,V>`,
/// `Object[]` -> the delegate whose invocation list it is).
fn lift(a: &Analysed<'_>, mut v: u32) -> u32 {
    let root = a.graph.root();
    for _ in 0..4 {
        let Some(name) = a.names.get(v as usize) else { break };
        let internal = is_array(name) || name.contains("+Entry") || name.contains("+Node") || name.contains("+Segment");
        if !internal {
            break;
        }
        match a.tree.idom(v) {
            Some(d) if d != root => v = d,
            _ => break,
        }
    }
    v
}

fn describe(a: &Analysed<'_>, parent: &[u32], node: u32, holds: u64) -> Holder {
    let root = a.graph.root();
    let step = |v: u32| Step { name: a.names.get(v as usize).cloned().unwrap_or_default(), address: a.graph.addresses.get(v as usize).copied().unwrap_or(0) };
    let mut path = vec![node];
    let mut v = node;
    while let Some(&p) = parent.get(v as usize) {
        if p == root || p == v || path.len() > 64 {
            break;
        }
        path.push(p);
        v = p;
    }
    path.reverse();
    let first = path[0];
    let root = a.graph.roots.iter().find(|(o, _)| *o == first).map(|(_, r)| RootRef::of(a.model, r));
    let container = step(node);
    Holder { kind: ContainerKind::of(&container.name), holds, container, root, path: path.into_iter().map(step).collect() }
}
