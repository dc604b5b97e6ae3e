//! Every view's request, through the HTTP handlers (the axum router, with
//! the token check, JSON encoding and the blocking-pool hop), on the
//! seed-scale model (19.7 M objects): `clrprof gen --preset seed` written
//! once to `$CLRPROF_BENCH_SEED` (default `/tmp/clrprof-bench-seed.log`).
//! The whole-log answers the server computes after loading (lifetime,
//! ages, the flame tree, dominator trees) are computed before timing, as
//! they are before a user can ask.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use clrprof::model::{load, LoadOptions};
use clrprof_ui::{App, LogSet, Token};
use criterion::{criterion_group, criterion_main, Criterion};
use http_body_util::BodyExt;
use std::path::PathBuf;
use std::sync::Arc;
use tower::ServiceExt;

fn seed_log() -> Vec<u8> {
    let path = std::env::var_os("CLRPROF_BENCH_SEED").map_or_else(|| PathBuf::from("/tmp/clrprof-bench-seed.log"), PathBuf::from);
    if let Ok(bytes) = std::fs::read(&path) {
        if !bytes.is_empty() {
            return bytes;
        }
    }
    eprintln!("generating the seed preset into {} (once)", path.display());
    let file = std::io::BufWriter::new(std::fs::File::create(&path).expect("create the seed log"));
    let (file, _) = clrprof_gen::generate(&clrprof_gen::Preset::Seed.options(), file).expect("generate the seed log");
    file.into_inner().expect("write the seed log");
    std::fs::read(&path).expect("read the seed log")
}

/// CPU seconds used by this process so far (user + system, all threads,
/// from `/proc/self/stat`; 0 where it cannot be read). On a shared machine
/// wall times depend on the load; CPU time much less.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    let Some(rest) = stat.rfind(')').map(|k| &stat[k + 2..]) else { return 0.0 };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |k: usize| f.get(k).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn bench(c: &mut Criterion) {
    let log = seed_log();
    let model = load(&log, &LoadOptions::default()).expect("load the seed log");
    drop(log);
    let end_ms = clrprof::query::timeline::end_ms(&model);
    let logs = Arc::new(LogSet::from_models(vec![("seed.log".into(), model)]));
    let t = std::time::Instant::now();
    logs.warm();
    eprintln!("whole-log answers computed in {:.2?}", t.elapsed());
    let app = App::new(Token::from_text("bench"), logs);
    let router = app.router();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let get = |uri: &str| {
        let req = Request::builder().uri(uri).header("x-clrprof-token", "bench").body(Body::empty()).expect("request");
        rt.block_on(async {
            let resp = router.clone().oneshot(req).await.expect("response");
            let status = resp.status();
            let body = resp.into_body().collect().await.expect("body").to_bytes();
            assert_eq!(status, StatusCode::OK, "{uri}: {}", String::from_utf8_lossy(&body));
            body.len()
        })
    };
    let get_json = |uri: &str| -> serde_json::Value {
        let req = Request::builder().uri(uri).header("x-clrprof-token", "bench").body(Body::empty()).expect("request");
        rt.block_on(async {
            let body = router.clone().oneshot(req).await.expect("response").into_body().collect().await.expect("body");
            serde_json::from_slice(&body.to_bytes()).expect("json")
        })
    };
    let (w0, w1, mid) = (end_ms * 0.2, end_ms * 0.4, end_ms * 0.5);
    let window = format!("from={w0:.1}&to={w1:.1}");
    let views: Vec<(&str, String)> = vec![
        ("summary", "summary".into()),
        ("types_allocated", "types?kind=allocated".into()),
        ("types_final_at_middle", format!("types?kind=final&at={mid:.1}")),
        ("types_allocated_window", format!("types?kind=allocated&{window}")),
        ("functions_all_rows", "functions?top=0".into()),
        ("functions_window_exclusive", format!("functions?sort=exclusive&top=15&{window}")),
        ("modules", "modules?top=0".into()),
        ("classes", "classes?top=0".into()),
        ("who_string", "who?type=System.String&exact=true&top=200".into()),
        ("graph_1pct", "graph?min_percent=1".into()),
        ("flame_whole", "flame".into()),
        ("flame_window", format!("flame?{window}")),
        ("lifetime", "lifetime?top=200".into()),
        ("lifetime_window", format!("lifetime?top=200&{window}")),
        ("ages", "ages".into()),
        ("ages_at_middle", format!("ages?at={mid:.1}&bars=10")),
        ("survivors_window", format!("survivors?top=50&{window}")),
        ("timeline_markers", "timeline".into()),
        ("timeline_grid_whole", "timeline/grid?columns=1300&rows=470".into()),
        ("timeline_grid_window", format!("timeline/grid?columns=1300&rows=470&{window}")),
        ("dumps", "dumps?top=0".into()),
        ("dump_types", "dump/1/types".into()),
        ("dump_tree_root", "dump/1/tree".into()),
        ("dump_paths_string", "dump/1/paths?type=System.String&max=10".into()),
        ("dump_diff", "dump-diff/0/1".into()),
    ];
    let mut g = c.benchmark_group("ui");
    g.sample_size(10);
    for (name, path) in &views {
        let uri = format!("/api/log/0/{path}");
        let bytes = get(&uri);
        let (cpu, runs) = (cpu_seconds(), 5);
        for _ in 0..runs {
            get(&uri);
        }
        eprintln!("{name}: {bytes} bytes of JSON, {:.1} ms CPU per request", (cpu_seconds() - cpu) * 1000.0 / runs as f64);
        g.bench_function(*name, |b| b.iter(|| get(&uri)));
    }
    // The server keeps the flame trees of the last 4 windows: a first
    // request for a window (5 windows in turn, so never a kept one), then
    // zooming into a frame of a window just drawn.
    let windows: Vec<String> = (0..5)
        .map(|k| format!("/api/log/0/flame?from={:.1}&to={:.1}", end_ms * (0.1 + 0.05 * k as f64), end_ms * 0.6))
        .collect();
    let mut turn = 0usize;
    g.bench_function("flame_new_window", |b| {
        b.iter(|| {
            turn = (turn + 1) % windows.len();
            get(&windows[turn])
        })
    });
    let drawn = get_json(&format!("/api/log/0/flame?{window}"));
    let frame = drawn["tree"]["children"][0]["name"].as_str().expect("a first frame").to_string();
    let encoded: String =
        frame.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect();
    let zoom = format!("/api/log/0/flame?{window}&focus={encoded}&search=String");
    g.bench_function("flame_window_zoom", |b| b.iter(|| get(&zoom)));
    g.bench_function("page", |b| b.iter(|| get("/")));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
