//! Lifetime, ages, survivors and calls against independent figures: the
//! generator's ground truth (in-process logs and the reference corpus's
//! truth files), CLRProfiler's own final-heap histogram, and naive oracles
//! that replay the log or parse its lines in the test.

mod common;

use clrprof_gen::{generate, GenOptions, PointerBits, Preset, Truth};
use clrprof::model::{load, Model, TickIndex};
use clrprof::query::age_histogram::{AgeBars, TIME_SCALES};
use clrprof::query::{
    age_histogram_at, ages, by_type, call_tree, calls, lifetime, survivors, CallTreeOptions, Filter, HistogramKind,
    Tally, TimeWindow,
};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

fn gen(opts: &GenOptions) -> (Vec<u8>, Truth, Model) {
    let (log, truth) = generate(opts, Vec::new()).expect("generate");
    let model = load(&log, &Default::default()).expect("load the generated log");
    (log, truth, model)
}

fn t(objects: u64, bytes: u64) -> Tally {
    Tally { objects, bytes }
}

/// Lifetime and ages of `model` against the in-process generator's truth.
fn check_against_truth(truth: &Truth, model: &Model, what: &str) {
    let l = lifetime(model, &Filter::all());
    // Per type (merged by name, as the query shows them).
    let mut want: BTreeMap<String, (Tally, Tally, Tally)> = BTreeMap::new();
    for ty in &truth.types {
        let e = want.entry(ty.name.clone()).or_default();
        e.0.objects += ty.allocated_objects;
        e.0.bytes += ty.allocated_bytes;
        e.1.objects += ty.reclaimed_objects;
        e.1.bytes += ty.reclaimed_bytes;
        e.2.objects += ty.objects_at_end;
        e.2.bytes += ty.bytes_at_end;
    }
    want.retain(|_, v| v.0.objects > 0);
    let got: BTreeMap<String, (Tally, Tally, Tally)> =
        l.rows.iter().map(|r| (r.name.clone(), (r.allocated, r.reclaimed(), r.alive_at_end))).collect();
    assert_eq!(got, want, "{what}: per type (allocated, reclaimed, alive at end)");
    // Per generation.
    let by_gen: Vec<Tally> = truth.deaths.by_generation.iter().map(|g| t(g.objects, g.bytes)).collect();
    assert_eq!(vec![l.total.gen0, l.total.gen1, l.total.gen2, l.total.loh], by_gen, "{what}: reclaimed per generation");
    assert_eq!(l.total.erased, Tally::default(), "{what}: generated logs erase nothing");
    assert_eq!(l.total.untracked, Tally::default(), "{what}: generated objects are 12 bytes or more");
    assert_eq!(l.total.alive_at_end, t(truth.final_heap.objects, truth.final_heap.bytes), "{what}: final heap");

    let a = ages(model, &Filter::all());
    assert_eq!(a.died, t(truth.deaths.objects, truth.deaths.bytes), "{what}: deaths");
    assert_eq!(a.died_total_age_ms, truth.deaths.total_age_ms, "{what}: total age of deaths");
    let by_gcs: Vec<(u32, Tally)> =
        a.by_gcs.iter().filter(|r| !r.died.is_empty()).map(|r| (r.gcs_survived, r.died)).collect();
    let want_gcs: Vec<(u32, Tally)> =
        truth.deaths.by_gcs_survived.iter().map(|s| (s.gcs_survived, t(s.objects, s.bytes))).collect();
    assert_eq!(by_gcs, want_gcs, "{what}: deaths by GCs survived");
    let by_ms: Vec<(u64, u64, Tally)> =
        a.by_ms.iter().filter(|r| !r.died.is_empty()).map(|r| (r.age_ms_min, r.age_ms_max_exclusive, r.died)).collect();
    let want_ms: Vec<(u64, u64, Tally)> = truth
        .deaths
        .age_ms_log2_histogram
        .iter()
        .map(|b| (b.age_ms_min, b.age_ms_max_exclusive, t(b.objects, b.bytes)))
        .collect();
    assert_eq!(by_ms, want_ms, "{what}: deaths by age in ms");
    assert_eq!(a.alive_at_end, l.total.alive_at_end, "{what}: survivors");
    // Survivors' GCs: the generator's final heap by generation is what
    // their promotions say; their count by GCs survived must add up.
    let alive_sum = a.by_gcs.iter().fold(Tally::default(), |mut s, r| {
        s.merge(r.alive_at_end);
        s
    });
    assert_eq!(alive_sum, a.alive_at_end, "{what}: survivors by GCs survived add up");
}

#[test]
fn lifetime_and_ages_equal_the_truth_on_generated_logs() {
    let tiny = Preset::Tiny.options();
    let variants = [
        ("tiny", tiny.clone()),
        ("small", Preset::Small.options()),
        (
            "many GCs, induced, LOH",
            GenOptions { objects: 60_000, gcs: 40, induced: 12, loh_fraction: 0.3, seed: 11, ..tiny.clone() },
        ),
        (
            "calls, 32-bit",
            GenOptions { objects: 30_000, calls: true, pointer_bits: PointerBits::Bits32, seed: 12, ..tiny.clone() },
        ),
        ("ticks across 2^31 ms", GenOptions { objects: 40_000, tick_start: (1 << 31) - 8, seed: 13, ..tiny.clone() }),
        ("no GC", GenOptions { objects: 5_000, gcs: 0, induced: 0, heap_dumps: 0, seed: 14, ..tiny }),
    ];
    for (what, opts) in variants {
        let (_, truth, model) = gen(&opts);
        check_against_truth(&truth, &model, what);
    }
}

/// The reference corpus's truth files (written by another generator, with
/// their own field names).
#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch build.rs after installing)")]
fn lifetime_and_ages_equal_the_reference_truth_files() {
    let Some(dir) = common::reference_dir() else { return };
    for name in ["gen-tiny", "gen-small"] {
        let truth: Value =
            serde_json::from_slice(&std::fs::read(dir.join(format!("{name}.truth.json"))).unwrap()).unwrap();
        let model = load(&std::fs::read(dir.join(format!("{name}.log"))).unwrap(), &Default::default()).unwrap();
        let l = lifetime(&model, &Filter::all());
        let n = |v: &Value, k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{name}: {k}"));
        let mut want: BTreeMap<String, (Tally, Tally, Tally)> = BTreeMap::new();
        for ty in truth["types"].as_array().unwrap() {
            let e = want.entry(ty["name"].as_str().unwrap().to_string()).or_default();
            e.0.merge(t(n(ty, "allocated_objects"), n(ty, "allocated_bytes")));
            e.1.merge(t(n(ty, "reclaimed_objects"), n(ty, "reclaimed_bytes")));
            e.2.merge(t(n(ty, "objects_at_end_of_log"), n(ty, "bytes_at_end_of_log")));
        }
        want.retain(|_, v| v.0.objects > 0);
        let got: BTreeMap<String, (Tally, Tally, Tally)> =
            l.rows.iter().map(|r| (r.name.clone(), (r.allocated, r.reclaimed(), r.alive_at_end))).collect();
        assert_eq!(got, want, "{name}: per type");
        let deaths = &truth["deaths"];
        let by_gen: Vec<Tally> =
            deaths["by_generation"].as_array().unwrap().iter().map(|g| t(n(g, "objects"), n(g, "bytes"))).collect();
        assert_eq!(vec![l.total.gen0, l.total.gen1, l.total.gen2, l.total.loh], by_gen, "{name}: per generation");

        let a = ages(&model, &Filter::all());
        assert_eq!(a.died, t(n(deaths, "objects"), n(deaths, "bytes")), "{name}: deaths");
        assert_eq!(a.died_total_age_ms, n(deaths, "total_age_ms"), "{name}: total age");
        let want_gcs: Vec<(u64, Tally)> = deaths["by_gcs_survived"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (n(s, "gcs_survived"), t(n(s, "objects"), n(s, "bytes"))))
            .collect();
        let got_gcs: Vec<(u64, Tally)> =
            a.by_gcs.iter().filter(|r| !r.died.is_empty()).map(|r| (r.gcs_survived as u64, r.died)).collect();
        assert_eq!(got_gcs, want_gcs, "{name}: by GCs survived");
        let want_ms: Vec<(u64, Tally)> = deaths["age_ms_log2_histogram"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| (n(b, "age_ms_min"), t(n(b, "objects"), n(b, "bytes"))))
            .collect();
        let got_ms: Vec<(u64, Tally)> =
            a.by_ms.iter().filter(|r| !r.died.is_empty()).map(|r| (r.age_ms_min, r.died)).collect();
        assert_eq!(got_ms, want_ms, "{name}: by age in ms");
    }
}

/// On every reference log: the columns add up, and "alive at end" per type
/// is CLRProfiler's own final-heap histogram.
#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch build.rs after installing)")]
fn alive_at_end_is_clrprofilers_final_heap_on_every_reference_log() {
    let Some(dir) = common::reference_dir() else { return };
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("log") {
            continue;
        }
        let Ok(model) = load(&std::fs::read(&path).unwrap(), &Default::default()) else { continue };
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let l = lifetime(&model, &Filter::all());
        for r in l.rows.iter().chain([&l.total]) {
            let mut sum = r.reclaimed();
            for c in [r.erased, r.alive_at_end, r.untracked] {
                sum.merge(c);
            }
            assert_eq!(sum, r.allocated, "{name}: {} columns add up", r.name);
        }
        let final_heap: BTreeMap<String, (u64, u64)> = by_type(&model, HistogramKind::FinalHeap)
            .into_iter()
            .map(|r| (r.name, (r.count, r.bytes as u64)))
            .collect();
        let alive: BTreeMap<String, (u64, u64)> = l
            .rows
            .iter()
            .filter(|r| !r.alive_at_end.is_empty())
            .map(|r| (r.name.clone(), (r.alive_at_end.objects, r.alive_at_end.bytes)))
            .collect();
        assert_eq!(alive, final_heap, "{name}: alive at end vs CLRProfiler's final heap");
        // The age views do not panic and agree with the lifetime view.
        let a = ages(&model, &Filter::all());
        assert_eq!(a.alive_at_end, l.total.alive_at_end, "{name}");
        assert_eq!(a.untracked, l.total.untracked, "{name}");
        let last = TickIndex(model.time().len() as u32 - 1);
        for bars in [AgeBars::default(), AgeBars::Markers, AgeBars::Scale(0.05)] {
            if let Ok(h) = age_histogram_at(&model, &Filter::all(), last, bars) {
                assert_eq!(h.live, l.total.alive_at_end, "{name}: the live objects at the last tick");
            }
        }
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} reference logs loaded");
}

/// A naive replay of a heap-consistent log: per object, its type, size,
/// stack, thread, allocation time and death time (ms), from the records,
/// and the number of comments before it.
struct Replayed {
    objects: Vec<(i32, u64, i32, i32, i64, Option<i64>)>,
    comments_before: Vec<usize>,
    type_names: HashMap<i32, String>,
}

fn replay(log: &[u8]) -> Replayed {
    use clrprof::format::{read_all, Record};
    let (records, _) = read_all(log);
    let mut stacks: HashMap<i32, (i32, i32)> = HashMap::new();
    let mut type_names = HashMap::new();
    let mut objects = Vec::new();
    let mut heap: BTreeMap<u64, usize> = BTreeMap::new();
    let mut kept: BTreeMap<u64, usize> = BTreeMap::new();
    let mut ranges: Vec<(u64, u64, i32)> = Vec::new();
    let mut condemned = 0;
    let mut now: i64 = 0;
    let mut comments = 0;
    let mut comments_before = Vec::new();
    let take = |heap: &mut BTreeMap<u64, usize>, start: u64, len: u64| -> Vec<(u64, usize)> {
        let v: Vec<(u64, usize)> = heap.range(start..start + len).map(|(&a, &i)| (a, i)).collect();
        for (a, _) in &v {
            heap.remove(a);
        }
        v
    };
    for p in &records {
        match p.record {
            Record::Type(ty) => {
                type_names.insert(ty.id.0, ty.decoded_name());
            }
            Record::Stack(n) => {
                if let Some((ty, size)) = n.alloc {
                    stacks.insert(n.id.0, (ty.0, size));
                }
            }
            Record::Tick(tk) => now = tk.ms as i64,
            Record::Comment(_) => comments += 1,
            Record::Alloc(a) => {
                let (ty, size) = stacks[&a.stack.0];
                heap.insert(a.address.0, objects.len());
                comments_before.push(comments);
                objects.push((ty, size as u64, a.stack.0, a.thread.map_or(-1, |t| t.0), now, None));
            }
            Record::GcBoundary(b) if b.is_start => {
                condemned = b.condemned;
                ranges = b.ranges.iter().map(|r| (r.start.0, r.length, r.generation)).collect();
                kept.clear();
            }
            Record::Moved(u) => {
                for (a, i) in take(&mut heap, u.old.0, u.length as u64) {
                    kept.insert(u.new.0 + (a - u.old.0), i);
                }
            }
            Record::Survived(v) => {
                for (a, i) in take(&mut heap, v.start.0, v.length as u64) {
                    kept.insert(a, i);
                }
            }
            Record::GcBoundary(_) => {
                for (&a, &i) in &heap {
                    let g = ranges.iter().find(|r| a >= r.0 && a < r.0 + r.1).map_or(-1, |r| r.2);
                    if g <= condemned || (condemned == 2 && g == 3) {
                        objects[i].5 = Some(now);
                    } else {
                        kept.insert(a, i);
                    }
                }
                heap = std::mem::take(&mut kept);
            }
            _ => {}
        }
    }
    Replayed { objects, comments_before, type_names }
}

#[test]
fn survivors_equal_a_naive_replay() {
    let opts = GenOptions { objects: 60_000, gcs: 24, induced: 4, comments: 4, seed: 21, ..Preset::Tiny.options() };
    let (log, _, model) = gen(&opts);
    let r = replay(&log);
    assert_eq!(r.objects.len(), model.allocations().len());
    let end_ms = r.objects.iter().map(|o| o.4).max().unwrap();
    let comments: Vec<f64> =
        model.comments().kept().iter().map(|c| model.time().seconds(c.tick).unwrap() * 1000.0).collect();
    assert!(comments.len() >= 2);
    let thread = r.objects[r.objects.len() / 2].3;
    let cases: Vec<(TimeWindow, Vec<i32>, Option<f64>)> = vec![
        (TimeWindow::All, vec![], None),
        (TimeWindow::Millis { from: Some(end_ms as f64 * 0.2), to: Some(end_ms as f64 * 0.4) }, vec![], None),
        (
            TimeWindow::Millis { from: Some(end_ms as f64 * 0.2), to: Some(end_ms as f64 * 0.4) },
            vec![],
            Some(end_ms as f64 * 0.5),
        ),
        (
            TimeWindow::Millis { from: Some(end_ms as f64 * 0.1), to: Some(end_ms as f64 * 0.6) },
            vec![],
            Some(end_ms as f64 * 0.3),
        ),
        (TimeWindow::Millis { from: None, to: Some(end_ms as f64 * 0.7) }, vec![thread], Some(end_ms as f64 * 0.8)),
        (TimeWindow::BetweenComments("checkpoint 1".into(), "checkpoint 2".into()), vec![], None),
    ];
    for (window, threads, alive_at) in cases {
        let f = Filter::resolve(&model, &window, &threads).unwrap();
        let s = survivors(&model, &f, alive_at.map(|ms| model.time().tick_at(ms / 1000.0)), usize::MAX);
        let (from, to) = match &window {
            TimeWindow::All | TimeWindow::BetweenComments(..) => (f64::MIN, f64::MAX),
            TimeWindow::Millis { from, to } => (from.unwrap_or(f64::MIN), to.unwrap_or(f64::MAX)),
        };
        // Between comments: from the first comment's line to the end of
        // the second comment's tick (the allocations after it in the same
        // millisecond share its tick index).
        let between = |k: usize| match &window {
            TimeWindow::BetweenComments(..) => {
                let (cb, ms) = (r.comments_before[k], r.objects[k].4 as f64);
                cb == 1 || (cb == 2 && ms == comments[1])
            }
            _ => true,
        };
        let mut allocated = Tally::default();
        let mut surviving = Tally::default();
        let mut by_type: BTreeMap<String, Tally> = BTreeMap::new();
        let mut by_stack: BTreeMap<u32, Tally> = BTreeMap::new();
        for (k, &(ty, size, stack, th, born, died)) in r.objects.iter().enumerate() {
            let at = born as f64;
            if at < from || at > to || !between(k) || (!threads.is_empty() && !threads.contains(&th)) {
                continue;
            }
            allocated.add(size);
            let alive = match alive_at {
                None => died.is_none(),
                Some(c) => at <= c && died.map_or(true, |d| d as f64 > c),
            };
            if alive {
                surviving.add(size);
                by_type.entry(r.type_names[&ty].clone()).or_default().add(size);
                by_stack.entry(stack as u32).or_default().add(size);
            }
        }
        let what = format!("{window:?} threads {threads:?} alive at {alive_at:?}");
        assert!(surviving.objects > 0, "{what}: a case with survivors");
        assert_eq!(s.allocated, allocated, "{what}: allocated");
        assert_eq!(s.surviving, surviving, "{what}: surviving");
        let got: BTreeMap<String, Tally> = s.by_type.iter().map(|t| (t.name.clone(), t.surviving)).collect();
        assert_eq!(got, by_type, "{what}: by type");
        let got: BTreeMap<u32, Tally> = s.by_stack.iter().map(|t| (t.stack, t.surviving)).collect();
        assert_eq!(got, by_stack, "{what}: by stack");
        assert_eq!(s.stacks_with_survivors, by_stack.len());
    }
}

#[test]
fn the_age_histogram_at_a_time_equals_a_naive_replay() {
    let opts = GenOptions { objects: 60_000, gcs: 20, comments: 5, seed: 22, ..Preset::Tiny.options() };
    let (log, _, model) = gen(&opts);
    let r = replay(&log);
    let end_ms = r.objects.iter().map(|o| o.4).max().unwrap();
    for frac in [0.25, 0.5, 0.9, 1.0] {
        let at_ms = (end_ms as f64 * frac).floor();
        let tick = model.time().tick_at(at_ms / 1000.0);
        let now_ms = model.time().seconds(tick).unwrap() * 1000.0;
        // Live at the tick's time: allocated by then, not dead by then.
        let live: Vec<_> =
            r.objects.iter().filter(|o| o.4 as f64 <= now_ms && o.5.map_or(true, |d| d as f64 > now_ms)).collect();
        // (the last scale makes too many bars for a dense bar-by-type table)
        for bars in [AgeBars::Scale(0.05), AgeBars::Scale(0.01), AgeBars::Auto { bars: 10 }, AgeBars::Scale(0.00001)] {
            let h = age_histogram_at(&model, &Filter::all(), tick, bars).unwrap();
            let scale = h.scale_s.unwrap();
            if let AgeBars::Auto { bars } = bars {
                // CLRProfiler's choice: the smallest scale showing it all.
                let want = TIME_SCALES.iter().copied().find(|&s| s >= now_ms / 1000.0 / bars as f64).unwrap_or(50.0);
                assert_eq!(scale, want);
            }
            assert_eq!(h.bucket_count, ((now_ms / 1000.0 / scale).ceil() as usize).max(1));
            // CLRProfiler's arithmetic: times are `i` values times 0.001,
            // bar bounds are summed scale by scale.
            let mut bounds = vec![0.0f64];
            for _ in 0..h.bucket_count {
                let b = bounds.last().unwrap() + scale;
                bounds.push(b);
            }
            let mut want: BTreeMap<usize, Tally> = BTreeMap::new();
            for o in &live {
                let age_s = now_ms.round() * 0.001 - o.4 as f64 * 0.001;
                // The last bar whose lower bound is at most the age.
                let k = bounds[..h.bucket_count].partition_point(|&b| b <= age_s).saturating_sub(1);
                want.entry(k).or_default().add(o.1);
            }
            let got: BTreeMap<usize, Tally> = h.bars.iter().map(|b| (b.index, t(b.objects, b.bytes))).collect();
            assert_eq!(got, want, "at {at_ms} ms, {bars:?}");
            let type_sum: u64 = h.bars.iter().flat_map(|b| &b.types).map(|t| t.bytes).sum();
            assert_eq!(type_sum, h.live.bytes);
        }
        // By markers: bars between the comments before the tick.
        let h = age_histogram_at(&model, &Filter::all(), tick, AgeBars::Markers).unwrap();
        let marks: Vec<f64> = model
            .comments()
            .kept()
            .iter()
            .filter(|c| c.tick < tick)
            .map(|c| model.time().seconds(c.tick).unwrap() * 1000.0)
            .collect();
        assert_eq!(h.bucket_count, marks.len() + 1);
        let mut want = vec![Tally::default(); marks.len() + 1];
        for o in &live {
            // Bar 0: allocated after the last comment's time; the last bar:
            // at or before the first's (an object allocated in the same
            // millisecond as a comment has the comment's age, which is the
            // older bar's lower bound).
            let after = marks.iter().filter(|&&m| o.4 as f64 > m.round()).count();
            want[marks.len() - after].add(o.1);
        }
        let got: Vec<Tally> = h.bars.iter().map(|b| t(b.objects, b.bytes)).collect();
        assert_eq!(got, want, "markers at {at_ms} ms");
    }
}

/// Calls from the `c`, `n` and `f` lines of a log, parsed directly: per
/// function (inclusive, exclusive), per edge, per exact path.
struct CallOracle {
    functions: BTreeMap<i32, (u64, u64)>,
    edges: BTreeMap<(Option<i32>, i32), u64>,
    paths: HashMap<Vec<i32>, u64>,
    total: u64,
}

fn call_oracle(log: &str) -> CallOracle {
    let mut lists: HashMap<i64, Vec<i64>> = HashMap::new();
    let mut defined_functions = 0;
    let mut o = CallOracle { functions: BTreeMap::new(), edges: BTreeMap::new(), paths: HashMap::new(), total: 0 };
    for line in log.lines() {
        let mut it = line.split_whitespace();
        match it.next() {
            Some("f") => defined_functions += 1,
            Some("n") => {
                let v: Vec<i64> = it.map(|x| x.parse().unwrap()).collect();
                let (id, flag) = (v[0], v[1]);
                let mut k = 2;
                let mut list = Vec::new();
                if flag & 1 == 1 {
                    list.extend_from_slice(&v[2..4]);
                    k = 4;
                }
                let shared = (flag / 4) as usize;
                if shared > 0 {
                    let r = &lists[&v[k]];
                    k += 1;
                    let skip = (flag & 2) as usize;
                    list.extend_from_slice(&r[skip..skip + shared]);
                }
                list.extend(v[k..].iter().take_while(|&&x| x >= 0));
                assert!(lists.insert(id, list).is_none(), "stack {id} defined twice");
            }
            Some("c") => {
                let _thread = it.next();
                let frames: Vec<i32> =
                    lists[&it.next().unwrap().parse::<i64>().unwrap()].iter().map(|&f| f as i32).collect();
                o.total += 1;
                let callee = *frames.last().unwrap();
                o.functions.entry(callee).or_default().1 += 1;
                let caller = frames.len().checked_sub(2).map(|k| frames[k]);
                *o.edges.entry((caller, callee)).or_default() += 1;
                let mut distinct = frames.clone();
                distinct.sort_unstable();
                distinct.dedup();
                for f in distinct {
                    o.functions.entry(f).or_default().0 += 1;
                }
                *o.paths.entry(frames).or_default() += 1;
            }
            _ => {}
        }
    }
    assert!(defined_functions > 0);
    o
}

fn check_calls(log: &[u8], model: &Model, what: &str) {
    let o = call_oracle(std::str::from_utf8(log).unwrap());
    assert!(o.total > 0, "{what}: the log has calls");
    let c = calls(model).unwrap();
    assert_eq!(c.total, o.total, "{what}: calls");
    let got: BTreeMap<i32, (u64, u64)> = c.functions.iter().map(|f| (f.id, (f.inclusive, f.exclusive))).collect();
    assert_eq!(got, o.functions, "{what}: per function");
    let got: BTreeMap<(Option<i32>, i32), u64> = c.edges.iter().map(|e| ((e.caller, e.callee), e.count)).collect();
    assert_eq!(got, o.edges, "{what}: edges");
    // The whole tree: each node's own calls are the calls with its exact
    // path; its inclusive count those with its path as a prefix.
    let tree = call_tree(model, &CallTreeOptions::default()).unwrap();
    assert_eq!(tree.total, o.total);
    let mut nodes = 0;
    let mut stack: Vec<(Vec<i32>, &clrprof::query::calls::CallNode)> =
        tree.roots.iter().map(|n| (vec![n.id], n)).collect();
    while let Some((path, n)) = stack.pop() {
        nodes += 1;
        assert_eq!(n.calls, o.paths.get(&path).copied().unwrap_or(0), "{what}: calls at {path:?}");
        let under: u64 = o.paths.iter().filter(|(p, _)| p.starts_with(&path)).map(|(_, c)| c).sum();
        assert_eq!(n.inclusive, under, "{what}: inclusive at {path:?}");
        assert_eq!(n.pruned_children, 0);
        for ch in &n.children {
            let mut p = path.clone();
            p.push(ch.id);
            stack.push((p, ch));
        }
    }
    let prefixes: std::collections::HashSet<&[i32]> =
        o.paths.keys().flat_map(|p| (1..=p.len()).map(move |k| &p[..k])).collect();
    assert_eq!(nodes, prefixes.len(), "{what}: one node per call path");
    // Pruning keeps the counts: what is cut is reported.
    let pruned = call_tree(model, &CallTreeOptions { min_count: o.total / 50, depth: 3 }).unwrap();
    let kept: u64 = pruned.roots.iter().map(|r| r.inclusive).sum();
    assert_eq!(kept + pruned.pruned_calls, o.total);
    fn max_depth(n: &clrprof::query::calls::CallNode) -> usize {
        1 + n.children.iter().map(max_depth).max().unwrap_or(0)
    }
    assert!(pruned.roots.iter().map(max_depth).max().unwrap_or(0) <= 3);
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch build.rs after installing)")]
fn calls_equal_the_lines_of_gen_small() {
    let Some(dir) = common::reference_dir() else { return };
    let log = std::fs::read(dir.join("gen-small.log")).unwrap();
    let model = load(&log, &Default::default()).unwrap();
    check_calls(&log, &model, "gen-small");
}

#[test]
fn calls_equal_the_lines_of_a_generated_log() {
    let (log, _, model) = gen(&GenOptions { objects: 20_000, calls: true, seed: 23, ..Preset::Tiny.options() });
    check_calls(&log, &model, "generated");
    let (_, _, model) = gen(&GenOptions { objects: 2_000, seed: 24, ..Preset::Tiny.options() });
    assert!(calls(&model).is_err());
    assert!(call_tree(&model, &CallTreeOptions::default()).is_err());
}

#[test]
fn filters_split_the_lifetime_view() {
    let (_, _, model) = gen(&GenOptions { objects: 30_000, seed: 25, ..Preset::Tiny.options() });
    let all = lifetime(&model, &Filter::all()).total;
    let end = model.time().seconds(TickIndex(model.time().len() as u32 - 1)).unwrap() * 1000.0;
    let mid = (end / 2.0).floor();
    let a = lifetime(&model, &Filter::resolve(&model, &TimeWindow::Millis { from: None, to: Some(mid) }, &[]).unwrap());
    let b = lifetime(
        &model,
        &Filter::resolve(&model, &TimeWindow::Millis { from: Some(mid + 0.5), to: None }, &[]).unwrap(),
    );
    let mut sum = a.total.clone();
    for (x, y) in [
        (&mut sum.allocated, b.total.allocated),
        (&mut sum.gen0, b.total.gen0),
        (&mut sum.alive_at_end, b.total.alive_at_end),
    ] {
        x.merge(y);
    }
    assert!(a.total.allocated.objects > 0 && b.total.allocated.objects > 0);
    assert_eq!((sum.allocated, sum.gen0, sum.alive_at_end), (all.allocated, all.gen0, all.alive_at_end));
}

/// Where the model's clock and the generator's differ: a log whose first
/// ticks are 2^31 ms or more. CLRProfiler reads those as negative and
/// ignores them until the values wrap to small ones, so every event before
/// the wrap is at time 0; the generator measures elapsed milliseconds.
/// Figures by GC agree; ages in ms are those of CLRProfiler's clock, which
/// this test recomputes from a replay of the log.
#[test]
fn ages_follow_clrprofilers_clock_where_it_ignores_ticks() {
    let start: u64 = (1 << 32) - 12;
    let opts = GenOptions { objects: 40_000, tick_start: start, seed: 15, ..Preset::Tiny.options() };
    let (log, truth, model) = gen(&opts);
    let l = lifetime(&model, &Filter::all());
    let by_gen: Vec<Tally> = truth.deaths.by_generation.iter().map(|g| t(g.objects, g.bytes)).collect();
    assert_eq!(vec![l.total.gen0, l.total.gen1, l.total.gen2, l.total.loh], by_gen);
    let a = ages(&model, &Filter::all());
    let want_gcs: Vec<(u32, Tally)> =
        truth.deaths.by_gcs_survived.iter().map(|s| (s.gcs_survived, t(s.objects, s.bytes))).collect();
    let got_gcs: Vec<(u32, Tally)> =
        a.by_gcs.iter().filter(|r| !r.died.is_empty()).map(|r| (r.gcs_survived, r.died)).collect();
    assert_eq!(got_gcs, want_gcs);
    // Ages: elapsed ms (the generator's) and CLRProfiler's clock.
    let r = replay(&log);
    let elapsed = |v: i64| (v as u64).wrapping_sub(start) & 0xFFFF_FFFF;
    let clr = |v: i64| if v >= 1 << 31 { 0 } else { v as u64 };
    let (mut truth_total, mut clr_total) = (0u64, 0u64);
    for o in &r.objects {
        if let Some(d) = o.5 {
            truth_total += elapsed(d) - elapsed(o.4);
            clr_total += clr(d) - clr(o.4);
        }
    }
    assert_eq!(truth_total, truth.deaths.total_age_ms, "the replay measures the generator's ages");
    assert!(clr_total < truth_total, "the log crosses the wrap with objects alive");
    assert_eq!(a.died_total_age_ms, clr_total);
}
