//! Allocation by code (`functions`, `modules`, `classes`, `who`), the
//! allocation graph, folded stacks / flame graphs and `diff`, against
//! independent figures:
//!
//! - a naive oracle that reads the log's `t`/`f`/`m`/`n`/`!`/`i` lines itself
//!   (a tiny line parser, one object at a time, no stack table) and counts
//!   inclusive and exclusive bytes per function, module and class, on
//!   `gen-tiny`, `gen-small` and a freshly generated log;
//! - CLRProfiler's own Summary (`allocated_bytes` of the reference JSON) for
//!   the exclusive totals, the folded stacks and the flame graph;
//! - CLRProfiler's `allocated_by_type` for the graph's type nodes and for
//!   `diff`.

use clrprof::format::LogSource;
use clrprof::model::{self, Model, TickIndex};
use clrprof::query::{self, Figures, Filter, NodeKind, SortBy, TypeMatch};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

mod common;
use common::*;

fn load_bytes(bytes: &[u8]) -> Model {
    model::load(bytes, &Default::default()).expect("load")
}

fn load_path(path: &Path) -> model::Result<Model> {
    let src = LogSource::open(path).expect("open");
    model::load(src.bytes(), &Default::default())
}

fn reference(dir: &Path, stem: &str) -> Value {
    let text = std::fs::read_to_string(dir.join(format!("{stem}.clrprofiler.json"))).expect("reference json");
    serde_json::from_str(&text).expect("json")
}

// ----- the oracle

/// What the oracle computes: figures per function id, module name and class
/// name (`None` / `<no stack>` for objects without frames).
#[derive(Default, Debug)]
struct Oracle {
    functions: BTreeMap<Option<i32>, Figures>,
    modules: BTreeMap<String, Figures>,
    classes: BTreeMap<String, Figures>,
    allocated: u64,
}

fn add(f: &mut Figures, bytes: u64, inclusive: bool) {
    if inclusive {
        f.inclusive_bytes += bytes;
        f.inclusive_count += 1;
    } else {
        f.exclusive_bytes += bytes;
        f.exclusive_count += 1;
    }
}

/// The name ends at the first space outside `<...>`.
fn split_name(s: &str) -> (&str, &str) {
    let mut depth = 0i32;
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            ' ' if depth <= 0 => return (&s[..i], &s[i + 1..]),
            _ => {}
        }
    }
    (s, "")
}

fn num(s: &str) -> i64 {
    match s.strip_prefix("0x") {
        Some(h) => i64::from_str_radix(h, 16).unwrap_or(-1),
        None => s.parse().unwrap_or(-1),
    }
}

/// Reads a generated log line by line. `keep_thread`: count only `!` lines
/// of this thread.
fn oracle(log: &[u8], keep_thread: Option<i64>) -> Oracle {
    let text = String::from_utf8_lossy(log);
    let mut fname: HashMap<i64, String> = HashMap::new();
    let mut fmodule: HashMap<i64, i64> = HashMap::new();
    let mut mname: HashMap<i64, String> = HashMap::new();
    let mut stacks: HashMap<i64, Vec<i64>> = HashMap::new();
    let mut o = Oracle::default();
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        let Some((kind, rest)) = line.split_once(' ') else { continue };
        match kind {
            "f" => {
                let (id, rest) = rest.split_once(' ').unwrap();
                let (name, rest) = split_name(rest);
                let after_sig = rest.split_once(')').map_or("", |(_, r)| r);
                let fields: Vec<&str> = after_sig.split_whitespace().collect();
                fname.insert(num(id), name.to_string());
                fmodule.insert(num(id), fields.get(2).map_or(-1, |m| num(m)));
            }
            "m" => {
                let (id, path) = rest.split_once(' ').unwrap();
                let file = path.rsplit('\\').next().unwrap();
                mname.insert(num(id), file.split(' ').next().unwrap().to_string());
            }
            "n" => {
                let v: Vec<i64> = rest.split_whitespace().map(num).collect();
                let (id, flag) = (v[0], v[1]);
                let mut k = 2;
                let mut list = Vec::new();
                if flag & 1 != 0 {
                    list.extend_from_slice(&v[2..4]);
                    k = 4;
                }
                if flag >= 4 {
                    let reference = &stacks[&v[k]];
                    k += 1;
                    let had = (flag & 2) as usize;
                    let shared = ((flag / 4) as usize).min(reference.len() - had);
                    list.extend_from_slice(&reference[had..had + shared]);
                }
                list.extend_from_slice(&v[k..]);
                stacks.insert(id, list);
            }
            "!" => {
                let v: Vec<i64> = rest.split_whitespace().map(num).collect();
                if keep_thread.is_some_and(|t| t != v[0]) {
                    continue;
                }
                let list = &stacks[&v[2]];
                let bytes = list[1] as i32 as i64 as u64;
                let frames = &list[2..];
                o.allocated += bytes;
                let function_name =
                    |f: i64| fname.get(&f).cloned().unwrap_or_else(|| format!("???? function {f}"));
                let module_name = |f: i64| {
                    fmodule.get(&f).and_then(|m| mname.get(m)).cloned().unwrap_or_else(|| "<unknown module>".into())
                };
                let class_name = |f: i64| {
                    let n = function_name(f);
                    match n.rfind("::") {
                        Some(i) => n[..i].to_string(),
                        None => n,
                    }
                };
                match frames.last() {
                    None => {
                        for inclusive in [false, true] {
                            add(o.functions.entry(None).or_default(), bytes, inclusive);
                            add(o.modules.entry("<no stack>".into()).or_default(), bytes, inclusive);
                            add(o.classes.entry("<no stack>".into()).or_default(), bytes, inclusive);
                        }
                    }
                    Some(&leaf) => {
                        add(o.functions.entry(Some(leaf as i32)).or_default(), bytes, false);
                        add(o.modules.entry(module_name(leaf)).or_default(), bytes, false);
                        add(o.classes.entry(class_name(leaf)).or_default(), bytes, false);
                        let mut fs: Vec<i64> = frames.to_vec();
                        fs.sort();
                        fs.dedup();
                        for &f in &fs {
                            add(o.functions.entry(Some(f as i32)).or_default(), bytes, true);
                        }
                        let mut ms: Vec<String> = fs.iter().map(|&f| module_name(f)).collect();
                        ms.sort();
                        ms.dedup();
                        for m in ms {
                            add(o.modules.entry(m).or_default(), bytes, true);
                        }
                        let mut cs: Vec<String> = fs.iter().map(|&f| class_name(f)).collect();
                        cs.sort();
                        cs.dedup();
                        for c in cs {
                            add(o.classes.entry(c).or_default(), bytes, true);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    o
}

fn check_against_oracle(what: &str, log: &[u8]) {
    let m = load_bytes(log);
    let o = oracle(log, None);
    assert_eq!(o.allocated, query::summary(&m).allocated_bytes, "{what}: oracle total");

    let rows = query::by_function(&m, &Filter::all(), SortBy::Inclusive);
    let got: BTreeMap<Option<i32>, Figures> = rows.iter().map(|r| (r.function, r.figures)).collect();
    assert_eq!(got.len(), rows.len(), "{what}: one row per function");
    assert_eq!(got, o.functions, "{what}: by function");
    let exclusive: u64 = rows.iter().map(|r| r.figures.exclusive_bytes).sum();
    assert_eq!(exclusive, o.allocated, "{what}: exclusive total");

    let got: BTreeMap<String, Figures> =
        query::by_module(&m, &Filter::all(), SortBy::Exclusive).into_iter().map(|r| (r.name, r.figures)).collect();
    assert_eq!(got, o.modules, "{what}: by module");
    let got: BTreeMap<String, Figures> =
        query::by_class(&m, &Filter::all(), SortBy::Inclusive).into_iter().map(|r| (r.name, r.figures)).collect();
    assert_eq!(got, o.classes, "{what}: by class");

    // The thread filter is applied per object.
    let thread = m.threads().id(clrprof::model::ThreadRef(2)).expect("a second thread").0;
    let f = Filter::resolve(&m, &query::TimeWindow::All, &[thread]).unwrap();
    let rows = query::by_function(&m, &f, SortBy::Exclusive);
    let got: BTreeMap<Option<i32>, Figures> = rows.iter().map(|r| (r.function, r.figures)).collect();
    assert_eq!(got, oracle(log, Some(thread as i64)).functions, "{what}: by function, thread {thread}");
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn functions_modules_classes_equal_the_oracle_on_the_reference_logs() {
    let Some(dir) = reference_dir() else { return };
    for stem in ["gen-tiny", "gen-small"] {
        let log = std::fs::read(dir.join(format!("{stem}.log"))).expect("read");
        check_against_oracle(stem, &log);
    }
}

fn generated_log() -> Vec<u8> {
    let mut o = clrprof_gen::Preset::Tiny.options();
    o.seed = 4242;
    o.objects = 8_000;
    o.threads = 4;
    let (log, _truth) = clrprof_gen::generate(&o, Vec::new()).expect("generate");
    log
}

#[test]
fn functions_modules_classes_equal_the_oracle_on_a_generated_log() {
    check_against_oracle("generated", &generated_log());
}

#[test]
fn time_windows_split_the_figures() {
    let m = load_bytes(&generated_log());
    let all = query::by_function(&m, &Filter::all(), SortBy::Inclusive);
    let mid = TickIndex(m.allocations().tick(clrprof::model::ObjectId(m.allocations().len() as u32 / 2)).0);
    let early = Filter { from: TickIndex(0), to: mid, threads: None };
    let late = Filter { from: TickIndex(mid.0 + 1), to: TickIndex(u32::MAX), threads: None };
    let mut sum: BTreeMap<Option<i32>, Figures> = BTreeMap::new();
    for f in [early, late] {
        let rows = query::by_function(&m, &f, SortBy::Inclusive);
        assert!(!rows.is_empty());
        for r in rows {
            let e = sum.entry(r.function).or_default();
            e.inclusive_bytes += r.figures.inclusive_bytes;
            e.inclusive_count += r.figures.inclusive_count;
            e.exclusive_bytes += r.figures.exclusive_bytes;
            e.exclusive_count += r.figures.exclusive_count;
        }
    }
    let all: BTreeMap<Option<i32>, Figures> = all.into_iter().map(|r| (r.function, r.figures)).collect();
    assert_eq!(sum, all);
}

/// Every reference log the model loads: exclusive totals (by function,
/// module and class), folded stacks and the graph's root add up to
/// CLRProfiler's allocated bytes.
#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn totals_equal_clrprofilers_allocated_bytes() {
    let Some(dir) = reference_dir() else { return };
    let mut checked = 0;
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        let Some(stem) = p.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".log")) else { continue };
        let r = reference(&dir, stem);
        if r["reader_exit_code"] != 0 {
            continue;
        }
        let Ok(m) = load_path(&p) else { panic!("{stem} does not load") };
        let allocated = r["summary"]["allocated_bytes"].as_u64().unwrap();
        let objects: u64 = r["allocated_by_type"].as_object().unwrap().values().map(|v| v["count"].as_u64().unwrap()).sum();
        let f = Filter::all();
        let functions = query::by_function(&m, &f, SortBy::Exclusive);
        assert_eq!(functions.iter().map(|r| r.figures.exclusive_bytes).sum::<u64>(), allocated, "{stem}: functions");
        assert_eq!(functions.iter().map(|r| r.figures.exclusive_count).sum::<u64>(), objects, "{stem}: objects");
        let modules = query::by_module(&m, &f, SortBy::Exclusive);
        assert_eq!(modules.iter().map(|r| r.figures.exclusive_bytes).sum::<u64>(), allocated, "{stem}: modules");
        let classes = query::by_class(&m, &f, SortBy::Exclusive);
        assert_eq!(classes.iter().map(|r| r.figures.exclusive_bytes).sum::<u64>(), allocated, "{stem}: classes");
        let folded = query::folded_stacks(&m, &f);
        assert_eq!(folded.iter().map(|s| s.bytes).sum::<u64>(), allocated, "{stem}: folded stacks");
        let g = query::allocation_graph(&m, &f);
        assert_eq!(g.total_bytes, allocated, "{stem}: graph");
        check_graph(stem, &g, &r);
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} reference logs checked");
}

/// Conservation at every node, and the type nodes against CLRProfiler's
/// allocated-by-type histogram.
fn check_graph(what: &str, g: &query::AllocationGraph, reference: &Value) {
    let mut to_functions = vec![0u64; g.nodes.len()];
    let mut out = vec![0u64; g.nodes.len()];
    let mut inn = vec![0u64; g.nodes.len()];
    for e in &g.edges {
        out[e.from as usize] += e.bytes;
        inn[e.to as usize] += e.bytes;
        if g.nodes[e.to as usize].kind == NodeKind::Function {
            to_functions[e.from as usize] += e.bytes;
        }
    }
    for n in &g.nodes {
        let i = n.id as usize;
        assert_eq!((n.bytes_in, n.bytes_out), (inn[i], out[i]), "{what}: {}", n.name);
        match n.kind {
            NodeKind::Root => assert_eq!(n.bytes_out, g.total_bytes, "{what}: root"),
            _ => assert_eq!(n.bytes_in, to_functions[i] + n.exclusive_bytes, "{what}: {} in = out + exclusive", n.name),
        }
        if n.kind == NodeKind::Function {
            assert_eq!(n.bytes_in, n.bytes_out, "{what}: {}", n.name);
        }
    }
    let types: BTreeMap<String, u64> =
        g.nodes.iter().filter(|n| n.kind == NodeKind::Type).map(|n| (n.name.clone(), n.bytes)).collect();
    let expected: BTreeMap<String, u64> = reference["allocated_by_type"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v["bytes"].as_u64().unwrap()))
        .filter(|(_, b)| *b > 0)
        .collect();
    assert_eq!(types, expected, "{what}: type nodes");
}

/// A hand-written log with recursion: `Main > Walk > Walk > Walk > Leaf`,
/// `Main > Walk > Leaf > Walk`, and a stack without frames.
const RECURSIVE: &str = "m 1 C:\\app\\App.exe 0x1000 1\nm 2 C:\\app\\Lib.dll 0x2000 1\n\
f 1 App.Program::Main void () 0 0 1 0\nf 2 Lib.Tree::Walk void () 0 0 2 0\nf 3 Lib.Tree::Leaf void () 0 0 2 0\n\
t 1 0 System.String\nt 2 0 Lib.Node\n\
n 2 1 2 100 1 2 2 2 3\nn 3 1 1 10 1 2 3 2\nn 4 1 1 8\ni 1\n! 1 0x1000 2\n! 1 0x1100 3\n! 1 0x1200 3\n! 1 0x1300 4\n";

#[test]
fn recursion_is_counted_once() {
    let m = load_bytes(RECURSIVE.as_bytes());
    let o = oracle(RECURSIVE.as_bytes(), None);
    let rows = query::by_function(&m, &Filter::all(), SortBy::Inclusive);
    let get = |name: &str| rows.iter().find(|r| r.name == name).unwrap().figures;
    let walk = get("Lib.Tree::Walk");
    assert_eq!((walk.inclusive_bytes, walk.inclusive_count), (120, 3));
    assert_eq!((walk.exclusive_bytes, walk.exclusive_count), (20, 2));
    let leaf = get("Lib.Tree::Leaf");
    assert_eq!((leaf.inclusive_bytes, leaf.exclusive_bytes), (120, 100));
    assert_eq!(get("<no stack>").exclusive_bytes, 8);
    let got: BTreeMap<Option<i32>, Figures> = rows.iter().map(|r| (r.function, r.figures)).collect();
    assert_eq!(got, o.functions);
    let classes = query::by_class(&m, &Filter::all(), SortBy::Inclusive);
    let tree = classes.iter().find(|r| r.name == "Lib.Tree").unwrap().figures;
    assert_eq!((tree.inclusive_bytes, tree.inclusive_count, tree.exclusive_bytes), (120, 3, 120));

    // The graph squeezes `Walk Walk Walk` to one node and renames the second
    // `Walk` of `Walk Leaf Walk`.
    let g = query::allocation_graph(&m, &Filter::all());
    let names: Vec<&str> = g.nodes.iter().map(|n| n.name.as_str()).collect();
    assert!(names.contains(&"Lib.Tree::Walk(1)"), "{names:?}");
    let walk = g.nodes.iter().find(|n| n.name == "Lib.Tree::Walk").unwrap();
    assert_eq!(walk.bytes, 120);
    let edge = |a: &str, b: &str| {
        let id = |n: &str| g.nodes.iter().find(|x| x.name == n).unwrap().id;
        g.edges.iter().find(|e| e.from == id(a) && e.to == id(b)).map(|e| e.bytes)
    };
    assert_eq!(edge("Lib.Tree::Walk", "Lib.Tree::Walk"), None);
    assert_eq!(edge("Lib.Tree::Walk", "Lib.Tree::Leaf"), Some(120));
    assert_eq!(edge("Lib.Tree::Leaf", "Lib.Tree::Walk(1)"), Some(20));
    assert_eq!(edge("Lib.Tree::Walk(1)", "System.String"), Some(20));

    let w = query::who_allocated(&m, &Filter::all(), &TypeMatch::Contains("String".into()), SortBy::Inclusive);
    assert_eq!((w.bytes, w.count), (28, 3));
    assert_eq!(w.stacks.len(), 2);
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn who_allocated_equals_the_by_type_histogram() {
    let Some(dir) = reference_dir() else { return };
    let m = load_path(&dir.join("gen-small.log")).unwrap();
    let r = reference(&dir, "gen-small");
    for (name, v) in r["allocated_by_type"].as_object().unwrap().iter().take(15) {
        let w = query::who_allocated(&m, &Filter::all(), &TypeMatch::Exact(name.clone()), SortBy::Exclusive);
        assert_eq!((w.bytes, w.count), (v["bytes"].as_u64().unwrap(), v["count"].as_u64().unwrap()), "{name}");
        assert_eq!(w.stacks.iter().map(|s| s.bytes).sum::<u64>(), w.bytes, "{name}: stacks");
        assert_eq!(w.functions.iter().map(|f| f.figures.exclusive_bytes).sum::<u64>(), w.bytes, "{name}: functions");
    }
}

#[test]
fn graph_conserves_weight_on_a_generated_log() {
    let log = generated_log();
    let m = load_bytes(&log);
    let g = query::allocation_graph(&m, &Filter::all());
    let mut types = serde_json::Map::new();
    for t in query::by_type(&m, query::HistogramKind::Allocated) {
        types.insert(t.name, serde_json::json!({"bytes": t.bytes}));
    }
    check_graph("generated", &g, &serde_json::json!({ "allocated_by_type": types }));
    let p = g.prune(g.total_bytes / 100);
    assert!(p.nodes.len() < g.nodes.len());
    assert!(p.edges.iter().all(|e| e.bytes >= g.total_bytes / 100));
}

fn per_type(reference: &Value, key: &str) -> BTreeMap<String, (i64, i64)> {
    reference[key]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), (v["bytes"].as_i64().unwrap(), v["count"].as_i64().unwrap())))
        .collect()
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn diff_of_a_log_with_itself_is_empty_and_with_another_is_the_per_type_difference() {
    let Some(dir) = reference_dir() else { return };
    let a = load_path(&dir.join("gen-tiny.log")).unwrap();
    let b = load_path(&dir.join("gen-small.log")).unwrap();
    assert!(query::diff(&a, &a).is_empty());
    assert!(query::diff(&b, &b).is_empty());
    let d = query::diff(&a, &b);
    let (ra, rb) = (reference(&dir, "gen-tiny"), reference(&dir, "gen-small"));
    for (key, rows) in [("allocated_by_type", &d.allocated_by_type), ("final_heap_by_type", &d.final_heap_by_type)] {
        let (ta, tb) = (per_type(&ra, key), per_type(&rb, key));
        let mut expected: BTreeMap<String, (i64, i64)> = BTreeMap::new();
        for name in ta.keys().chain(tb.keys()) {
            let (x, y) = (ta.get(name).copied().unwrap_or((0, 0)), tb.get(name).copied().unwrap_or((0, 0)));
            if x != y {
                expected.insert(name.clone(), (y.0 - x.0, y.1 - x.1));
            }
        }
        let got: BTreeMap<String, (i64, i64)> = rows.iter().map(|r| (r.name.clone(), (r.diff_bytes, r.diff_count))).collect();
        assert_eq!(got, expected, "{key}");
        assert!(rows.windows(2).all(|w| w[0].diff_bytes.abs() >= w[1].diff_bytes.abs()), "{key}: sorted");
    }
    let exclusive: i64 = d.functions_exclusive.iter().map(|r| r.diff_bytes).sum();
    let total = |r: &Value| r["summary"]["allocated_bytes"].as_i64().unwrap();
    assert_eq!(exclusive, total(&rb) - total(&ra));

    // The command line, JSON: against itself, four empty lists.
    let p = dir.join("gen-tiny.log");
    let out = clrprof(&["diff", "--json", "--quiet", p.to_str().unwrap(), p.to_str().unwrap()]);
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in ["allocated_by_type", "final_heap_by_type", "functions_exclusive", "functions_inclusive"] {
        assert_eq!(v[key], serde_json::json!([]), "{key}");
    }
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn flame_graph_svg_and_folded_stacks_add_up() {
    let Some(dir) = reference_dir() else { return };
    let log = dir.join("gen-small.log");
    let allocated = reference(&dir, "gen-small")["summary"]["allocated_bytes"].as_u64().unwrap();
    let out = clrprof(&["flame", "--collapsed", "--quiet", log.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut sum = 0u64;
    for line in text.lines() {
        let (stack, n) = line.rsplit_once(' ').expect("stack and count");
        assert!(!stack.is_empty());
        sum += n.parse::<u64>().expect("a count");
    }
    assert_eq!(sum, allocated);

    let tmp = tempfile::tempdir().unwrap();
    let svg = tmp.path().join("flame.svg");
    let out = clrprof(&["flame", "--quiet", "-o", svg.to_str().unwrap(), log.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bytes = std::fs::read(&svg).unwrap();
    let mut reader = quick_xml::Reader::from_reader(&bytes[..]);
    let mut buf = Vec::new();
    let (mut depth, mut frames, mut total) = (0i64, 0usize, None);
    loop {
        match reader.read_event_into(&mut buf).expect("well-formed XML") {
            quick_xml::events::Event::Start(e) => {
                depth += 1;
                if e.name().as_ref() == b"svg" {
                    for a in e.attributes() {
                        let a = a.unwrap();
                        if a.key.as_ref() == b"total_samples" {
                            total = Some(String::from_utf8_lossy(&a.value).parse::<u64>().unwrap());
                        }
                    }
                }
                if e.name().as_ref() == b"g" {
                    frames += 1;
                }
            }
            quick_xml::events::Event::End(_) => depth -= 1,
            quick_xml::events::Event::Text(t) => {
                let t = String::from_utf8_lossy(&t).to_string();
                if let Some(rest) = t.strip_prefix("all (") {
                    let n: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == ',').filter(|c| *c != ',').collect();
                    assert_eq!(n.parse::<u64>().unwrap(), allocated, "the root frame's title");
                }
            }
            quick_xml::events::Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    assert_eq!(depth, 0, "every element closed");
    assert!(frames > 100, "{frames} frames");
    assert_eq!(total, Some(allocated), "total_samples");
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn cli_tables_and_json() {
    let Some(dir) = reference_dir() else { return };
    let log = dir.join("gen-tiny.log");
    let log = log.to_str().unwrap();
    let out = clrprof(&["functions", "--quiet", "--top", "12", log]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap().replace(log, "gen-tiny.log");
    golden("functions-gen-tiny.txt", &text);

    let out = clrprof(&["modules", "--quiet", "--json", "--top", "0", log]);
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["modules"].as_array().unwrap();
    let o = oracle(&std::fs::read(log).unwrap(), None);
    assert_eq!(rows.len(), o.modules.len());
    for r in rows {
        let f = o.modules[r["name"].as_str().unwrap()];
        assert_eq!(r["inclusive_bytes"].as_u64(), Some(f.inclusive_bytes));
        assert_eq!(r["exclusive_count"].as_u64(), Some(f.exclusive_count));
    }

    let out = clrprof(&["classes", "--quiet", "--json", "--top", "3", "--sort", "exclusive", log]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["classes"].as_array().unwrap().len(), 3);
    assert!(v["classes_left_out"].as_u64().unwrap() > 0);

    let out = clrprof(&["who", log, "System.String", "--exact", "--json", "--quiet"]);
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = reference(&dir, "gen-tiny");
    assert_eq!(v["bytes"], r["allocated_by_type"]["System.String"]["bytes"]);

    let out = clrprof(&["graph", "--json", "--quiet", log]);
    let g: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(g["total_bytes"], r["summary"]["allocated_bytes"]);
    let out = clrprof(&["graph", "--dot", "--quiet", "--min-percent", "5", log]);
    let dot = String::from_utf8(out.stdout).unwrap();
    assert!(dot.starts_with("digraph") && dot.trim_end().ends_with('}'));
    assert!(dot.contains("->"));

    let out = clrprof(&["functions", "--quiet", "--thread", "999999", log]);
    assert!(!out.status.success());
}
