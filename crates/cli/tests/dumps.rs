//! Heap-dump queries: per-dump figures against the generator's truth,
//! dominators and retained sizes against brute-force oracles, paths against
//! a plain breadth-first search, and the dump difference against the
//! allocation order.

mod common;

use clrprof_gen::{generate, GenOptions, PointerBits, Preset};
use clrprof::model::{load, Model};
use clrprof::query::dumps::{
    by_type, diff, dominators, list, paths_to, retained, retained_sizes, Csr, DumpGraph, DumpIndex,
};
use proptest::prelude::*;
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};

fn load_file(name: &str) -> Option<(Model, Value)> {
    let dir = common::reference_dir()?;
    let log = std::fs::read(dir.join(format!("{name}.log"))).expect("read log");
    let truth: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{name}.truth.json"))).expect("read truth"))
            .expect("truth JSON");
    Some((load(&log, &Default::default()).expect("load"), truth))
}

fn generated(opts: &GenOptions) -> (Model, Value) {
    let (log, truth) = generate(opts, Vec::new()).expect("generate");
    (load(&log, &Default::default()).expect("load"), serde_json::to_value(&truth).expect("truth JSON"))
}

/// Objects, bytes, references, roots by kind and objects per type of every
/// dump equal the truth's `heap_dumps.list`.
fn check_against_truth(model: &Model, truth: &Value, what: &str) {
    let want = truth["heap_dumps"]["list"].as_array().expect("heap_dumps.list");
    let got = list(model);
    assert_eq!(got.len(), want.len(), "{what}: dumps");
    assert!(!got.is_empty(), "{what}: the log should have heap dumps");
    for (g, w) in got.iter().zip(want) {
        let at = format!("{what}, dump {}", g.index);
        assert_eq!(g.objects, w["objects"].as_u64().unwrap(), "{at}: objects");
        assert_eq!(g.bytes, w["bytes"].as_u64().unwrap(), "{at}: bytes");
        assert_eq!(g.references, w["references"].as_u64().unwrap(), "{at}: references");
        assert_eq!(g.roots, w["e_lines"].as_u64().unwrap(), "{at}: roots");
        let k = &w["root_kinds"];
        assert_eq!(g.root_kinds.stack, k["stack"].as_u64().unwrap(), "{at}: stack roots");
        assert_eq!(g.root_kinds.finalizer, k["finalizer"].as_u64().unwrap(), "{at}: finalizer roots");
        assert_eq!(g.root_kinds.handle, k["handle"].as_u64().unwrap(), "{at}: handle roots");
        assert_eq!(g.root_kinds.other, k["other"].as_u64().unwrap(), "{at}: other roots");
        assert_eq!(g.root_kinds.unknown + g.root_kinds.unspecified, 0, "{at}: roots of no kind");
        let types = by_type(model, g.index).expect("the dump");
        let mut found: BTreeMap<i64, (u64, u64)> = BTreeMap::new();
        for t in &types.types {
            found.insert(t.type_id as i64, (t.objects, t.bytes));
        }
        let expected: BTreeMap<i64, (u64, u64)> = w["types"]
            .as_array()
            .expect("types per dump")
            .iter()
            .map(|t| (t["id"].as_i64().unwrap(), (t["objects"].as_u64().unwrap(), t["bytes"].as_u64().unwrap())))
            .collect();
        assert_eq!(found, expected, "{at}: objects and bytes per type");
    }
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn reference_dumps_equal_the_truth() {
    for name in ["gen-tiny", "gen-small"] {
        let Some((model, truth)) = load_file(name) else { return };
        check_against_truth(&model, &truth, name);
    }
}

#[test]
fn generated_dumps_equal_the_truth() {
    let base = GenOptions { objects: 30_000, gcs: 6, heap_dumps: 3, ..Preset::Tiny.options() };
    for opts in [
        base.clone(),
        GenOptions { pointer_bits: PointerBits::Bits32, seed: 9, handles_per_million: 20_000.0, ..base.clone() },
        GenOptions { seed: 11, threads: 6, ..base },
    ] {
        let (model, truth) = generated(&opts);
        check_against_truth(&model, &truth, &format!("generated seed {}", opts.seed));
    }
}

// ---- dominators ---------------------------------------------------------

/// Nodes reachable from `root`, never entering `removed`.
fn reachable_without(adjacency: &[Vec<u32>], root: u32, removed: Option<u32>) -> Vec<bool> {
    let mut seen = vec![false; adjacency.len()];
    if Some(root) == removed {
        return seen;
    }
    seen[root as usize] = true;
    let mut queue = VecDeque::from([root]);
    while let Some(v) = queue.pop_front() {
        for &w in &adjacency[v as usize] {
            if Some(w) != removed && !seen[w as usize] {
                seen[w as usize] = true;
                queue.push_back(w);
            }
        }
    }
    seen
}

/// For every reachable node, its interval in a preorder of the dominator
/// tree: `x` dominates `y` iff `y`'s number lies in `x`'s interval.
fn tree_intervals(tree: &clrprof::query::dumps::DominatorTree, n: usize) -> Vec<(u32, u32)> {
    let mut children = vec![Vec::new(); n];
    for v in 0..n as u32 {
        if let Some(d) = tree.idom(v) {
            children[d as usize].push(v);
        }
    }
    let mut interval = vec![(u32::MAX, 0); n];
    let mut counter = 0;
    let mut stack = vec![(tree.root(), false)];
    while let Some((v, done)) = stack.pop() {
        if done {
            interval[v as usize].1 = counter;
            continue;
        }
        interval[v as usize].0 = counter;
        counter += 1;
        stack.push((v, true));
        for &c in &children[v as usize] {
            stack.push((c, false));
        }
    }
    interval
}

/// Checks a dominator tree against "x dominates y iff y is reachable and
/// removing x makes y unreachable" for every pair, and retained sizes
/// against the bytes of the dominated sets.
fn check_dominators(succ: &dyn Fn(u32) -> Vec<u32>, n: usize, root: u32, sizes: Option<(&[u32], &[u64])>) {
    let adjacency: Vec<Vec<u32>> = (0..n as u32).map(succ).collect();
    let graph_edges: Vec<(u32, u32)> =
        (0..n as u32).flat_map(|v| adjacency[v as usize].iter().map(move |&w| (v, w))).collect();
    let tree = dominators(&Csr::from_edges(n, &graph_edges), root);
    let all = reachable_without(&adjacency, root, None);
    let interval = tree_intervals(&tree, n);
    for x in 0..n as u32 {
        assert_eq!(tree.is_reachable(x), all[x as usize], "reachability of {x}");
        if !all[x as usize] {
            continue;
        }
        let without = reachable_without(&adjacency, root, Some(x));
        let (lo, hi) = interval[x as usize];
        let mut retained = 0u64;
        for y in 0..n as u32 {
            let dominated = all[y as usize] && !without[y as usize];
            let p = interval[y as usize].0;
            assert_eq!(p >= lo && p < hi, dominated, "{x} dominates {y}?");
            if dominated {
                if let Some((s, _)) = sizes {
                    retained += s.get(y as usize).copied().unwrap_or(0) as u64;
                }
            }
        }
        if let Some((_, r)) = sizes {
            assert_eq!(r[x as usize], retained, "retained size of {x}");
        }
    }
    // `dominates` agrees with the intervals on a sample of pairs.
    for x in (0..n as u32).step_by(1 + n / 40) {
        for y in (0..n as u32).step_by(1 + n / 40) {
            let p = interval[y as usize].0;
            let (lo, hi) = interval[x as usize];
            assert_eq!(tree.dominates(x, y), all[y as usize] && all[x as usize] && p >= lo && p < hi);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
    #[test]
    fn dominators_equal_the_removal_oracle(n in 1usize..24, raw in prop::collection::vec((0u32..24, 0u32..24), 0..70), root in 0u32..24) {
        let root = root % n as u32;
        let edges: Vec<(u32, u32)> = raw.into_iter().map(|(a, b)| (a % n as u32, b % n as u32)).collect();
        let succ = |v: u32| edges.iter().filter(|e| e.0 == v).map(|e| e.1).collect::<Vec<u32>>();
        check_dominators(&succ, n, root, None);
    }
}

fn check_dump_graphs(model: &Model, what: &str) {
    for info in list(model) {
        let g = DumpGraph::build(model, info.index).expect("the dump");
        let tree = dominators(&g.graph, g.root());
        let retained_bytes = retained_sizes(&g, &tree);
        // Successors straight from the model's references (an address map
        // of our own), not from the graph's rows.
        let t = model.heap_dumps();
        let d = &t.dumps()[info.index.0 as usize];
        let index: std::collections::HashMap<u64, u32> =
            t.objects(d).enumerate().map(|(k, o)| (o.address.0, k as u32)).collect();
        let n = g.objects();
        let succ = |v: u32| -> Vec<u32> {
            if v as usize == n {
                t.roots(d).iter().filter(|r| r.flags & 2 == 0).filter_map(|r| index.get(&r.address.0).copied()).collect()
            } else {
                t.references(d, v as usize).iter().filter_map(|a| index.get(a).copied()).collect()
            }
        };
        check_dominators(&succ, n + 1, n as u32, Some((&g.sizes, &retained_bytes)));
        // The virtual root retains every reachable byte.
        let r = retained(model, info.index, usize::MAX).expect("retained");
        assert_eq!(r.root_retained, r.reachable_bytes, "{what}: root retains the reachable bytes");
        assert_eq!(r.reachable_bytes + r.unreachable_bytes, info.bytes, "{what}: bytes");
        let adjacency: Vec<Vec<u32>> = (0..=n as u32).map(succ).collect();
        let reach = reachable_without(&adjacency, n as u32, None);
        let reachable_bytes: u64 = (0..n).filter(|&v| reach[v]).map(|v| g.sizes[v] as u64).sum();
        assert_eq!(r.reachable_bytes, reachable_bytes, "{what}: reachable bytes");
        // Retained per type: bytes of objects with an instance of the type
        // among their dominators (themselves included), by walking up.
        let mut per_type: BTreeMap<i32, u64> = BTreeMap::new();
        for y in 0..n as u32 {
            if !tree.is_reachable(y) {
                continue;
            }
            let mut seen: Vec<i32> = Vec::new();
            let mut x = Some(y);
            while let Some(v) = x {
                if let Some(&ty) = g.types.get(v as usize) {
                    if !seen.contains(&ty) {
                        seen.push(ty);
                        *per_type.entry(ty).or_default() += g.sizes[y as usize] as u64;
                    }
                }
                x = tree.idom(v);
            }
        }
        let found: BTreeMap<i32, u64> = r.types.iter().map(|t| (t.type_id, t.retained)).collect();
        assert_eq!(found, per_type, "{what}: retained per type");
    }
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn dominators_of_reference_dumps_equal_the_oracle() {
    for name in ["gen-tiny", "gen-small"] {
        let Some((model, _)) = load_file(name) else { return };
        check_dump_graphs(&model, name);
    }
}

#[test]
fn dominators_of_a_generated_dump() {
    let opts = GenOptions { objects: 8_000, gcs: 4, heap_dumps: 2, handles_per_million: 50_000.0, seed: 21, ..Preset::Tiny.options() };
    let (model, _) = generated(&opts);
    check_dump_graphs(&model, "generated");
}

#[test]
fn unreachable_objects_are_reported_apart() {
    // 0x1000 is a root and references 0x1018; 0x1030 is held by a weak root
    // only, 0x1048 by nothing. (Not in address order, on purpose.)
    let log = b"t 1 0 Foo\nt 2 0 Bar\ni 1\ne 0x1000 1 0x0 0\ne 0x1030 3 0x2 0x99\n\
o 0x1030 2 40\no 0x1000 1 24 0x1018\no 0x1018 1 24\no 0x1048 2 40 0x1000\n";
    let model = load(log, &Default::default()).unwrap();
    let info = &list(&model)[0];
    assert_eq!((info.roots, info.root_kinds.stack, info.root_kinds.handle, info.root_flags.weak), (2, 1, 1, 1));
    let r = retained(&model, DumpIndex(0), 10).unwrap();
    assert_eq!((r.reachable_objects, r.reachable_bytes, r.root_retained), (2, 48, 48));
    assert_eq!((r.unreachable_objects, r.unreachable_bytes), (2, 80));
    assert_eq!(r.unreachable_types.len(), 1);
    assert_eq!((r.unreachable_types[0].name.as_str(), r.unreachable_types[0].objects), ("Bar", 2));
    assert_eq!(r.top_objects[0].address, 0x1000);
    assert_eq!((r.top_objects[0].retained, r.top_objects[0].dominator), (48, None));
    assert_eq!(r.top_objects[1].dominator, Some(0x1000));
    let p = paths_to(&model, DumpIndex(0), "Bar", 5).unwrap();
    assert_eq!((p.reachable, p.unreachable, p.paths.len()), (0, 2, 0));
}

// ---- paths ----------------------------------------------------------------

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn paths_are_shortest() {
    let Some((model, _)) = load_file("gen-small") else { return };
    for info in list(&model) {
        let t = model.heap_dumps();
        let d = &t.dumps()[info.index.0 as usize];
        let objs: Vec<_> = t.objects(d).collect();
        let index: std::collections::HashMap<u64, usize> =
            objs.iter().enumerate().map(|(k, o)| (o.address.0, k)).collect();
        // Distances from the roots, by a plain BFS.
        let mut dist = vec![u32::MAX; objs.len()];
        let mut queue = VecDeque::new();
        for r in t.roots(d).iter().filter(|r| r.flags & 2 == 0) {
            if let Some(&k) = index.get(&r.address.0) {
                if dist[k] == u32::MAX {
                    dist[k] = 1;
                    queue.push_back(k);
                }
            }
        }
        while let Some(v) = queue.pop_front() {
            for a in t.references(d, v) {
                if let Some(&w) = index.get(&a) {
                    if dist[w] == u32::MAX {
                        dist[w] = dist[v] + 1;
                        queue.push_back(w);
                    }
                }
            }
        }
        let types = by_type(&model, info.index).unwrap();
        for row in types.types.iter().take(12) {
            let r = paths_to(&model, info.index, &row.name, usize::MAX).unwrap();
            assert!(r.exact);
            let ids: Vec<i32> = r.types.iter().map(|t| t.0).collect();
            let of_type: Vec<usize> = (0..objs.len()).filter(|&k| ids.contains(&objs[k].type_id.0)).collect();
            let reachable = of_type.iter().filter(|&&k| dist[k] != u32::MAX).count() as u64;
            assert_eq!(r.reachable, reachable, "{}: reachable", row.name);
            assert_eq!(r.reachable + r.unreachable, of_type.len() as u64);
            assert_eq!(r.paths.len() as u64, reachable);
            let mut last = 0;
            for p in &r.paths {
                let end = p.steps.last().unwrap();
                let k = index[&end.address];
                assert_eq!(p.steps.len() as u32, dist[k], "{}: path to {:#x} is shortest", row.name, end.address);
                assert!(p.steps.len() >= last, "shortest first");
                last = p.steps.len();
                assert!(ids.contains(&end.type_id));
                // The root names the first object, and each step references the next.
                assert_eq!(p.root.address, p.steps[0].address);
                assert!(t.roots(d).iter().any(|x| x.address.0 == p.root.address && x.flags & 2 == 0));
                for w in p.steps.windows(2) {
                    assert!(t.references(d, index[&w[0].address]).contains(&w[1].address));
                }
            }
        }
        let none = paths_to(&model, info.index, "No.Such.Type", 5).unwrap();
        assert!(none.types.is_empty() && none.paths.is_empty());
    }
}

// ---- diff -----------------------------------------------------------------

/// New objects of B are exactly those allocated after every object of A
/// (A holds every live object at its time), and the counts add up.
fn check_diff(model: &Model, what: &str) {
    let dumps = list(model);
    let t = model.heap_dumps();
    for pair in dumps.windows(2) {
        let (a, b) = (pair[0].index, pair[1].index);
        let r = diff(model, a, b).expect("both dumps");
        assert!(r.matching.relocation_followed, "{what}: identities known");
        assert_eq!(r.new_objects + r.kept_objects, pair[1].objects, "{what}");
        assert_eq!(r.gone_objects + r.kept_objects, pair[0].objects, "{what}");
        let da = &t.dumps()[a.0 as usize];
        let db = &t.dumps()[b.0 as usize];
        let newest_in_a = t.objects(da).filter_map(|o| o.object).max().expect("objects in A");
        let after: Vec<_> = t.objects(db).filter(|o| o.object.expect("identity") > newest_in_a).collect();
        assert_eq!(r.new_objects, after.len() as u64, "{what}: new objects");
        assert_eq!(r.new_bytes, after.iter().map(|o| o.size as u64).sum::<u64>(), "{what}: new bytes");
        let mut per_type: BTreeMap<i32, u64> = BTreeMap::new();
        for o in &after {
            *per_type.entry(o.type_id.0).or_default() += 1;
        }
        let found: BTreeMap<i32, u64> =
            r.types.iter().filter(|t| t.new_objects > 0).map(|t| (t.type_id, t.new_objects)).collect();
        assert_eq!(found, per_type, "{what}: new objects per type");
        let same = diff(model, b, b).unwrap();
        assert_eq!((same.new_objects, same.gone_objects), (0, 0));
    }
}

#[test]
fn dump_diff_finds_the_objects_allocated_in_between() {
    if let Some((model, _)) = load_file("gen-small") {
        check_diff(&model, "gen-small");
    }
    let (model, _) = generated(&GenOptions { objects: 30_000, gcs: 6, heap_dumps: 3, seed: 5, ..Preset::Tiny.options() });
    check_diff(&model, "generated");
}

#[test]
fn dump_diff_follows_a_relocation() {
    let log = b"t 1 0 Foo\nn 1 1 1 24\ni 1\n! 1 0x1000 1\n! 1 0x1018 1\ni 2\ne 0x1000 1 0x0 0\n\
o 0x1000 1 24 0x1018\no 0x1018 1 24\ni 3\nb 1 0 0 0x1000 48 65536 0\nu 0x1000 0x2000 48\n\
b 0 0 0 0x2000 48 65536 0\ni 4\n! 1 0x2030 1\ni 5\ne 0x2000 1 0x0 0\no 0x2000 1 24 0x2018\n\
o 0x2018 1 24\no 0x2030 1 24\n";
    let model = load(log, &Default::default()).unwrap();
    let r = diff(&model, DumpIndex(0), DumpIndex(1)).unwrap();
    assert_eq!((r.new_objects, r.kept_objects, r.gone_objects), (1, 2, 0));
    assert!(r.matching.relocation_followed);
    // Without allocation records (an attached recording) the objects of
    // dump 0 are followed through the GC's `u` record all the same.
    let bare = b"t 1 0 Foo\ni 1\ne 0x1000 1 0x0 0\no 0x1000 1 24 0x1018\no 0x1018 1 24\ni 3\n\
b 1 0 0 0x1000 48 65536 0\nu 0x1000 0x2000 48\nb 0 0 0 0x2000 48 65536 0\ni 5\n\
e 0x2000 1 0x0 0\no 0x2000 1 24 0x2018\no 0x2018 1 24\no 0x2030 1 24\n";
    let model = load(bare, &Default::default()).unwrap();
    let r = diff(&model, DumpIndex(0), DumpIndex(1)).unwrap();
    assert_eq!((r.new_objects, r.kept_objects, r.gone_objects), (1, 2, 0));
    assert!(r.matching.relocation_followed);
    assert_eq!(r.matching.by_address, 0);
    // With no GC record between the dumps nothing moved: objects at other
    // addresses are other objects.
    let no_gc = b"t 1 0 Foo\ni 1\ne 0x1000 1 0x0 0\no 0x1000 1 24 0x1018\no 0x1018 1 24\ni 5\n\
e 0x2000 1 0x0 0\no 0x2000 1 24 0x2018\no 0x2018 1 24\no 0x2030 1 24\n";
    let model = load(no_gc, &Default::default()).unwrap();
    let r = diff(&model, DumpIndex(0), DumpIndex(1)).unwrap();
    assert_eq!((r.new_objects, r.kept_objects, r.gone_objects), (3, 0, 2));
}

// ---- command line ---------------------------------------------------------

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn dump_table_is_golden() {
    if common::reference_dir().is_none() {
        return;
    }
    let out = common::clrprof(&["dump", "../shared/corpus/reference/gen-small.log", "0", "--top", "12", "--quiet"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    common::golden("dump-gen-small-0.txt", &String::from_utf8(out.stdout).unwrap());
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn dump_commands_run() {
    if common::reference_dir().is_none() {
        return;
    }
    let log = "../shared/corpus/reference/gen-small.log";
    let out = common::clrprof(&["dumps", log, "--json", "--quiet"]);
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["dumps"].as_array().unwrap().len(), 2);
    assert_eq!(v["dumps"][1]["objects"], 8127);
    assert_eq!(v["dumps_left_out"], 0);
    for args in [
        vec!["dump", log, "1", "--retained", "--quiet"],
        vec!["dump", log, "1", "--path-to", "System.String", "--max", "2", "--quiet"],
        vec!["dump-diff", log, "0", "1", "--quiet"],
    ] {
        let out = common::clrprof(&args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(!out.stdout.is_empty());
    }
    let out = common::clrprof(&["dump", log, "7", "--quiet"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no heap dump 7"));
}
