//! The Time Line query and picture against independent figures:
//!
//! - the cell grid equals a naive oracle that rebuilds the bands, rows and
//!   column ticks its own way and looks every cell up by walking the grain's
//!   history from the newest entry (CLRProfiler's `FindSampleObject`);
//! - live bytes by type at the end equal CLRProfiler's final heap by type
//!   (reference files) and the generator's truth; at other moments they
//!   equal a recount from each object's allocation tick and death tick; the
//!   sample-table estimate equals a per-grain history walk and stays close
//!   to the exact figure;
//! - the GC and comment markers equal the generator's truth;
//! - the PNG of `gen-small.log` has the asked size, at least as many
//!   distinct colours in its plot as the legend shows (each legend colour
//!   among them), and its legend lists the oracle's top types.

mod common;

use clrprof::format::{LogSource, TypeId};
use clrprof_gen::{generate, GenOptions, Preset};
use clrprof::model::{Fate, Model, ObjectId, TickIndex};
use clrprof::query::timeline::{
    address_axis, comment_marks, end_ms, gc_marks, grid, last_tick, tick_at_ms, Grid, GridSpec, BAND_GAP_BYTES,
};
use clrprof::query::{estimated_live_at, live_at, Filter};
use common::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashSet};

fn load_path(path: &std::path::Path) -> Model {
    let src = LogSource::open(path).expect("open");
    clrprof::model::load(src.bytes(), &Default::default()).expect("load")
}

fn generated(opts: &GenOptions) -> (Model, clrprof_gen::Truth) {
    let (log, truth) = generate(opts, Vec::new()).expect("generate");
    (clrprof::model::load(&log, &Default::default()).expect("load"), truth)
}

// ------------------------------------------------------------ the oracle

/// Bands as (first grain, last grain), rebuilt from an unordered set.
fn oracle_bands(m: &Model, max_bands: usize) -> Vec<(u64, u64)> {
    let grains: BTreeSet<u64> = m.samples().grains().grains().map(|(g, _)| g).collect();
    let mut gap = BAND_GAP_BYTES;
    loop {
        let mut bands: Vec<(u64, u64)> = Vec::new();
        for &g in &grains {
            match bands.last_mut() {
                Some(b) if g - b.1 <= gap => b.1 = g,
                _ => bands.push((g, g)),
            }
        }
        if bands.len() <= max_bands.max(1) {
            return bands;
        }
        gap = gap.saturating_mul(2).saturating_add(1);
    }
}

/// The type valid at `tick` in the grain at `addr`: walk newest first.
fn oracle_type_at(m: &Model, addr: u64, tick: u32) -> i32 {
    let mut next = m.samples().grains().newest(addr);
    while let Some(id) = next {
        let s = m.samples().get(id).expect("sample");
        if s.change.0 <= tick {
            return s.type_id.0;
        }
        next = s.prev;
    }
    0
}

/// The whole grid, cell by cell; types ranked by bytes.
fn oracle_grid(m: &Model, columns: u32, rows: u32, from_ms: f64, to_ms: f64, max_bands: usize) -> (Vec<i32>, Vec<(String, i32, u64)>) {
    let bands = oracle_bands(m, max_bands);
    let grains: BTreeSet<u64> = m.samples().grains().grains().map(|(g, _)| g).collect();
    let n = |b: &(u64, u64)| (b.1 - b.0) / 1024 + 1;
    let max = bands.iter().map(n).max().unwrap_or(1);
    let mut gpr = 1;
    while gpr < max && bands.iter().map(|b| n(b).div_ceil(gpr)).sum::<u64>() > rows as u64 {
        gpr += 1;
    }
    // Rows top first: (low, high, representative grain).
    let mut row_list = Vec::new();
    for b in bands.iter().rev() {
        let k = n(b).div_ceil(gpr);
        for i in (0..k).rev() {
            let low = b.0 + i * gpr * 1024;
            let high = (low + (gpr - 1) * 1024).min(b.1);
            let rep = grains.range(low..=high).next().copied();
            row_list.push((low, high, rep));
        }
    }
    // Column ticks: the last slot at or before each column's end.
    let slots: Vec<f64> = (0..m.time().len()).map(|k| m.time().seconds(TickIndex(k as u32)).unwrap()).collect();
    let ticks: Vec<u32> = (0..columns)
        .map(|c| {
            let end = if c + 1 == columns { to_ms } else { from_ms + (to_ms - from_ms) * (c + 1) as f64 / columns as f64 };
            let mut t = 0;
            for (k, &s) in slots.iter().enumerate() {
                if s <= end / 1000.0 {
                    t = k as u32;
                }
            }
            t
        })
        .collect();
    let mut cells = Vec::new();
    let mut weight: BTreeMap<i32, u128> = BTreeMap::new();
    for &(low, high, rep) in &row_list {
        for &t in &ticks {
            let ty = rep.map_or(0, |g| oracle_type_at(m, g, t));
            cells.push(ty);
            if ty != 0 {
                *weight.entry(ty).or_default() += ((high - low) / 1024 + 1) as u128 * 1024;
            }
        }
    }
    let mut ranked: Vec<(String, i32, u64)> = weight
        .into_iter()
        .map(|(t, w)| (m.type_name(TypeId(t)).into_owned(), t, (w / columns as u128) as u64))
        .collect();
    ranked.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)).then(a.1.cmp(&b.1)));
    (cells, ranked)
}

fn check_grid(m: &Model, columns: u32, rows: u32, from_ms: f64, to_ms: f64, max_bands: usize, what: &str) -> Grid {
    let axis = address_axis(m, None, max_bands);
    let g = grid(m, &axis, &GridSpec { columns, rows, from_ms, to_ms });
    let (cells, ranked) = oracle_grid(m, columns, rows, from_ms, to_ms, max_bands);
    assert_eq!(g.cells.len(), cells.len(), "{what}: cell count");
    for (i, (a, b)) in g.cells.iter().zip(&cells).enumerate() {
        assert_eq!(a, b, "{what}: cell row {} column {}", i / columns as usize, i % columns as usize);
    }
    let ours: Vec<(String, i32, u64)> = g.types.iter().map(|t| (t.name.clone(), t.type_id, t.bytes)).collect();
    assert_eq!(ours, ranked, "{what}: types by bytes");
    g
}

#[test]
fn cells_equal_the_naive_oracle() {
    let (m, _) = generated(&Preset::Tiny.options());
    let end = end_ms(&m);
    let g = check_grid(&m, 60, 40, 0.0, end, 8, "tiny, whole log");
    assert!(g.types.len() > 3, "the tiny log shows several types");
    assert!(g.cells.contains(&0) && g.cells.iter().any(|&c| c != 0));
    check_grid(&m, 37, 500, end * 0.25, end * 0.6, 3, "tiny, a window, 1 KB rows");
    check_grid(&m, 13, 7, 0.0, end, 1, "tiny, one band");
    check_grid(&m, 5, 3, end * 0.5, end * 0.5, 100, "tiny, an instant");
    let opts = GenOptions { seed: 11, objects: 6_000, gcs: 5, mean_size: 900.0, loh_fraction: 0.2, ..Preset::Tiny.options() };
    let (m, _) = generated(&opts);
    check_grid(&m, 50, 120, 0.0, end_ms(&m), 20, "large objects");
    if let Some(dir) = reference_dir() {
        for name in ["sample-all-kinds", "gen-tiny", "quirk-q7_same_tick_gc", "real-CLRProfilerTestBedMk1"] {
            let m = load_path(&dir.join(format!("{name}.log")));
            check_grid(&m, 41, 33, 0.0, end_ms(&m), 6, name);
        }
    }
}

// ------------------------------------------------------------ live bytes

fn live_map(m: &Model, tick: TickIndex) -> BTreeMap<String, (u64, u64)> {
    live_at(m, tick, &Filter::all())
        .into_iter()
        .filter(|r| r.count > 0)
        .map(|r| (r.name, (r.bytes, r.count)))
        .collect()
}

/// Alive at `tick` from each object's own allocation tick and death tick
/// (the searching accessors, one object at a time).
fn recount(m: &Model, tick: TickIndex) -> BTreeMap<String, (u64, u64)> {
    let a = m.allocations();
    let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for i in 0..a.len() as u32 {
        let o = ObjectId(i);
        if a.tick(o) > tick || a.fate(o) == Fate::Untracked {
            continue;
        }
        if m.death_tick(o).is_some_and(|d| d <= tick) {
            continue;
        }
        let Some((t, size)) = m.stacks().type_and_size(a.stack(o)) else { continue };
        let e = out.entry(m.type_name(t).into_owned()).or_default();
        e.0 += size as u64;
        e.1 += 1;
    }
    out
}

/// CLRProfiler's estimate, grain by grain.
fn oracle_estimate(m: &Model, tick: TickIndex) -> BTreeMap<i32, u64> {
    let mut out = BTreeMap::new();
    for (g, _) in m.samples().grains().grains() {
        let t = oracle_type_at(m, g, tick.0);
        if t != 0 {
            *out.entry(t).or_default() += 1024;
        }
    }
    out
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn live_at_the_end_is_the_final_heap() {
    let Some(dir) = reference_dir() else { return };
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).expect("dir").flatten() {
        let path = entry.path();
        let Some(stem) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".log")) else { continue };
        let reference: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{stem}.clrprofiler.json"))).expect("json"))
                .expect("json");
        if reference["reader_exit_code"] != 0 {
            continue;
        }
        let src = LogSource::open(&path).expect("open");
        let Ok(m) = clrprof::model::load(src.bytes(), &Default::default()) else { continue };
        let want: BTreeMap<String, (u64, u64)> = reference["final_heap_by_type"]
            .as_object()
            .expect("final heap")
            .iter()
            .map(|(k, v)| (k.clone(), (v["bytes"].as_u64().unwrap(), v["count"].as_u64().unwrap())))
            .collect();
        assert_eq!(live_map(&m, last_tick(&m)), want, "{stem}");
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} reference logs checked");
}

#[test]
fn live_at_any_moment_equals_the_objects() {
    let (m, truth) = generated(&Preset::Tiny.options());
    // At the end: the generator's truth per type.
    let want: BTreeMap<String, (u64, u64)> = truth
        .types
        .iter()
        .filter(|t| t.objects_at_end > 0)
        .map(|t| (t.name.clone(), (t.bytes_at_end, t.objects_at_end)))
        .collect();
    assert_eq!(live_map(&m, last_tick(&m)), want, "end of the tiny log against the truth");
    let end = end_ms(&m);
    for k in 0..=8 {
        let tick = tick_at_ms(&m, end * k as f64 / 8.0);
        assert_eq!(live_map(&m, tick), recount(&m, tick), "tick {}", tick.0);
        let est: BTreeMap<i32, u64> = estimated_live_at(&m, tick).into_iter().map(|(t, b)| (t.0, b)).collect();
        assert_eq!(est, oracle_estimate(&m, tick), "estimate at tick {}", tick.0);
        // The estimate (whole grains, from grain crossings) stays close to
        // the exact bytes on this densely packed heap.
        let exact: u64 = live_map(&m, tick).values().map(|v| v.0).sum();
        let estimated: u64 = est.values().sum();
        let diff = exact.abs_diff(estimated);
        assert!(diff <= exact / 10 + 64 * 1024, "tick {}: exact {exact}, estimated {estimated}", tick.0);
    }
    // A thread filter keeps that thread's objects only.
    let thread = m.threads().id(clrprof::model::ThreadRef(1)).expect("a thread").0;
    let f = Filter::resolve(&m, &clrprof::query::TimeWindow::All, &[thread]).expect("filter");
    let one: u64 = live_at(&m, last_tick(&m), &f).iter().map(|r| r.count).sum();
    let all: u64 = live_at(&m, last_tick(&m), &Filter::all()).iter().map(|r| r.count).sum();
    assert!(one > 0 && one < all, "{one} of {all}");
}

// ------------------------------------------------------------ markers

#[test]
fn markers_equal_the_truth() {
    let (m, truth) = generated(&Preset::Tiny.options());
    let gcs = gc_marks(&m, 0.0, end_ms(&m));
    let want: Vec<(i32, f64)> =
        truth.gcs.list.iter().map(|g| (g.condemned_generation as i32, g.end_tick as f64)).collect();
    let got: Vec<(i32, f64)> = gcs.iter().map(|g| (g.generation, g.ms)).collect();
    assert_eq!(got, want);
    let cs = comment_marks(&m, 0.0, end_ms(&m));
    let want: Vec<(String, f64)> = truth.comments.list.iter().map(|c| (c.text.clone(), c.tick as f64)).collect();
    let got: Vec<(String, f64)> = cs.iter().map(|c| (c.text.clone(), c.ms)).collect();
    assert_eq!(got, want);
    // A window keeps what lies inside it.
    let mid = end_ms(&m) / 2.0;
    assert_eq!(gc_marks(&m, 0.0, mid).len() + gc_marks(&m, mid + 1e-9, end_ms(&m)).len(), gcs.len());
}

// ------------------------------------------------------------ the picture

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn png_of_gen_small() {
    let Some(dir) = reference_dir() else { return };
    let log = dir.join("gen-small.log");
    let out = std::env::temp_dir().join(format!("clrprof-timeline-{}.png", std::process::id()));
    let r = clrprof(&[
        "timeline",
        log.to_str().unwrap(),
        "--png",
        out.to_str().unwrap(),
        "--width",
        "900",
        "--height",
        "560",
        "--json",
        "-q",
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let v: Value = serde_json::from_slice(&r.stdout).expect("json");
    let bytes = std::fs::read(&out).expect("png written");
    let _ = std::fs::remove_file(&out);
    let decoder = png::Decoder::new(&bytes[..]);
    let mut reader = decoder.read_info().expect("a png");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("a frame");
    assert_eq!((info.width, info.height), (900, 560));
    assert_eq!(info.color_type, png::ColorType::Rgb);
    let (px, py, pw, ph) = (
        v["plot"]["x"].as_u64().unwrap() as usize,
        v["plot"]["y"].as_u64().unwrap() as usize,
        v["plot"]["width"].as_u64().unwrap() as usize,
        v["plot"]["height"].as_u64().unwrap() as usize,
    );
    let mut colours: HashSet<[u8; 3]> = HashSet::new();
    for y in py..py + ph {
        for x in px..px + pw {
            let i = (y * 900 + x) * 3;
            colours.insert([buf[i], buf[i + 1], buf[i + 2]]);
        }
    }
    let legend = v["legend"].as_array().expect("legend");
    assert!(legend.len() >= 10, "gen-small shows many types: {}", legend.len());
    assert!(colours.len() >= legend.len(), "{} colours in the plot, {} in the legend", colours.len(), legend.len());
    for e in legend {
        let hex = e["colour"].as_str().unwrap();
        let c = [1, 3, 5].map(|k| u8::from_str_radix(&hex[k..k + 2], 16).unwrap());
        assert!(colours.contains(&c), "legend colour {hex} of {} is not in the plot", e["name"]);
    }
    // The legend lists the top types by bytes, as the oracle ranks them.
    let m = load_path(&log);
    let (_, ranked) = oracle_grid(
        &m,
        v["columns"].as_u64().unwrap() as u32,
        v["rows"].as_u64().unwrap() as u32,
        v["from_ms"].as_f64().unwrap(),
        v["to_ms"].as_f64().unwrap(),
        v["max_bands"].as_u64().unwrap() as usize,
    );
    let names: Vec<&str> = legend.iter().map(|e| e["name"].as_str().unwrap()).collect();
    let top: Vec<&str> = ranked.iter().take(names.len()).map(|r| r.0.as_str()).collect();
    assert_eq!(names, top);
    assert_eq!(v["other_types"].as_u64().unwrap() as usize, ranked.len() - names.len());
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn cli_table_and_json() {
    let Some(dir) = reference_dir() else { return };
    let log = dir.join("gen-small.log");
    let log = log.to_str().unwrap();
    let r = clrprof(&["timeline", log, "--json", "--top", "5", "--at", "120", "-q"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    golden("timeline-gen-small.json", &String::from_utf8_lossy(&r.stdout));
    let r = clrprof(&["timeline", log, "--top", "5", "--from", "40", "--to", "160", "-q"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    golden("timeline-gen-small.txt", &String::from_utf8_lossy(&r.stdout).replace(log, "gen-small.log"));
    // Bad input gives a message, not a panic.
    let r = clrprof(&["timeline", log, "--png", "/tmp/x.png", "--width", "5", "-q"]);
    assert!(!r.status.success());
    assert!(String::from_utf8_lossy(&r.stderr).contains("cannot be drawn"));
    let r = clrprof(&["timeline", log, "--from", "50", "--to", "10", "-q"]);
    assert!(!r.status.success());
}
