//! Every view's request, through the HTTP handlers (the axum router, with
//! the token check, JSON encoding and the blocking-pool hop), on the
//! seed-scale model (19.7 M objects): `clrprof gen --preset seed` written
//! once to `$CLRPROF_BENCH_SEED` (default `target/tmp/clrprof-bench-seed.log`, Cargo's folder for
//! benchmarks' files, never a guessable name in a shared `/tmp`).
//! The whole-log answers the server computes after loading (lifetime,
//! ages, the flame tree, dominator trees) are computed before timing, as
//! they are before a user can ask.
//!
//! The server keeps the encoded answers of the last requests per log, so a
//! request asked again is answered from memory: each view is measured
//! both ways where it matters, `NAME` asked again and `NAME_new` with a
//! window (or moment) never asked before. The collector's routes are
//! measured on a directory of 200 session records (`sessions_list`), and
//! a live session's refresh when its log did not grow (`session_refresh_same`)
//! and when it did (printed, not criterion benches: the seed log as a
//! session, all but its last 8 MB read from its first byte, then those
//! 8 MB read as the collector appends them, against a load of the whole
//! log, which is what a refresh cost when a grown log was loaded again);
//! the commands (`session_ctl`) go through a collector in this process to
//! a fake agent that answers at once.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use clrprof::model::{load, LoadOptions};
use clrprof_ui::{App, LogSet, Token};
use criterion::{criterion_group, criterion_main, Criterion};
use http_body_util::BodyExt;
use std::path::PathBuf;
use std::sync::Arc;
use tower::ServiceExt;

#[path = "../../collect/tests/fake_agent.rs"]
#[allow(dead_code, unused_imports)]
mod fake_agent;

fn seed_log() -> Vec<u8> {
    let path = std::env::var_os("CLRPROF_BENCH_SEED").map_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("clrprof-bench-seed.log"), PathBuf::from);
    if let Ok(bytes) = std::fs::read(&path) {
        if !bytes.is_empty() {
            return bytes;
        }
        // An empty file left by an interrupted run: made anew below.
        let _ = std::fs::remove_file(&path);
    }
    eprintln!("generating the seed preset into {} (once)", path.display());
    let file = std::io::BufWriter::new(std::fs::File::options().write(true).create_new(true).open(&path).expect("create the seed log"));
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
        ("handles", "handles?top=0".into()),
        ("handles_window", format!("handles?top=0&{window}")),
    ];
    // Requests with a window or a moment never asked before: the server
    // computes them (no kept answer).
    let fresh = std::cell::Cell::new(0u32);
    // Windows that differ in their ticks too (the flame trees are kept
    // by tick window): steps of 0.1% of the log, up to 20% on each end.
    let unique = |k: u32| -> (f64, f64, f64) {
        let step = end_ms * 0.001;
        let (a, b) = (f64::from(k % 200), f64::from((k / 200) % 200));
        (end_ms * 0.2 + a * step, end_ms * 0.6 + b * step, end_ms * 0.3 + a * step + b * step)
    };
    let new_views: Vec<(&str, Box<dyn Fn(f64, f64, f64) -> String>)> = vec![
        ("types_final_at_middle_new", Box::new(|_, _, m| format!("types?kind=final&at={m:.3}"))),
        ("types_allocated_window_new", Box::new(|a, b, _| format!("types?kind=allocated&from={a:.3}&to={b:.3}"))),
        ("functions_window_exclusive_new", Box::new(|a, b, _| format!("functions?sort=exclusive&top=15&from={a:.3}&to={b:.3}"))),
        ("flame_window_new", Box::new(|a, b, _| format!("flame?from={a:.3}&to={b:.3}"))),
        ("lifetime_window_new", Box::new(|a, b, _| format!("lifetime?top=200&from={a:.3}&to={b:.3}"))),
        ("ages_at_middle_new", Box::new(|_, _, m| format!("ages?at={m:.3}&bars=10"))),
        ("survivors_window_new", Box::new(|a, b, _| format!("survivors?top=50&from={a:.3}&to={b:.3}"))),
        ("handles_window_new", Box::new(|a, b, _| format!("handles?top=0&from={a:.3}&to={b:.3}"))),
        ("timeline_grid_window_new", Box::new(|a, b, _| format!("timeline/grid?columns=1300&rows=470&from={a:.3}&to={b:.3}"))),
    ];
    let mut g = c.benchmark_group("ui");
    g.sample_size(10);
    for (name, make) in &new_views {
        let next = || {
            fresh.set(fresh.get() + 1);
            let (a, b, m) = unique(fresh.get());
            format!("/api/log/0/{}", make(a, b, m))
        };
        let (cpu, runs) = (cpu_seconds(), 5);
        let t = std::time::Instant::now();
        for _ in 0..runs {
            get(&next());
        }
        eprintln!(
            "{name}: {:.1} ms CPU, {:.1} ms wall per request (never asked before)",
            (cpu_seconds() - cpu) * 1000.0 / runs as f64,
            t.elapsed().as_secs_f64() * 1000.0 / runs as f64
        );
        g.bench_function(*name, |b| b.iter(|| get(&next())));
    }
    for (name, path) in &views {
        let uri = format!("/api/log/0/{path}");
        let (cpu, t) = (cpu_seconds(), std::time::Instant::now());
        let bytes = get(&uri);
        let (first_cpu, first_wall) = ((cpu_seconds() - cpu) * 1000.0, t.elapsed().as_secs_f64() * 1000.0);
        let (cpu, runs) = (cpu_seconds(), 5);
        for _ in 0..runs {
            get(&uri);
        }
        eprintln!(
            "{name}: {bytes} bytes of JSON; first request {first_wall:.1} ms wall, {first_cpu:.0} ms CPU (in 10 ms ticks); asked again {:.1} ms CPU per request",
            (cpu_seconds() - cpu) * 1000.0 / runs as f64
        );
        g.bench_function(*name, |b| b.iter(|| get(&uri)));
    }
    // Zooming into a frame of a window just drawn (the window's tree is
    // kept: a new focus is a new answer from the same tree).
    let drawn = get_json(&format!("/api/log/0/flame?{window}"));
    let frame = drawn["tree"]["children"][0]["name"].as_str().expect("a first frame").to_string();
    let encoded: String =
        frame.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect();
    let zoom = format!("/api/log/0/flame?{window}&focus={encoded}&search=String");
    g.bench_function("flame_window_zoom", |b| b.iter(|| get(&zoom)));
    g.bench_function("page", |b| b.iter(|| get("/")));
    g.finish();
    drop(router);
    drop(app);
    sessions(c, &rt);
}

/// The collector's routes: the list, a refresh, a command; and the
/// reload of a grown seed-scale session (printed).
fn sessions(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    use clrprof_collect::record::{self, SessionRecord, SessionState};
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = std::env::var_os("CLRPROF_BENCH_SEED").map_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("clrprof-bench-seed.log"), PathBuf::from);
    for k in 0..200u32 {
        let session = format!("app_{k}_20260101_000000");
        std::fs::write(record::log_path(dir.path(), &session), "z x\n").expect("log");
        let rec = SessionRecord {
            session: session.clone(),
            log: format!("{session}.log"),
            pid: k,
            program: "app".into(),
            runtime: "8.0.4".into(),
            peer: "127.0.0.1:1".into(),
            start: "2026-01-01T00:00:00Z".into(),
            end: Some("2026-01-01T00:00:01Z".into()),
            bytes: 4,
            state: SessionState::Ended,
            reason: None,
            spool: None,
            spool_from: None,
        };
        record::write(dir.path(), &rec).expect("record");
    }
    // The seed log as a live session, all but its last 8 MB (whole lines)
    // written at first.
    let big = "seed_1_20260101_000000";
    let seed_log = std::fs::read(&seed).expect("read the seed log");
    let mut cut = seed_log.len() - (8 << 20);
    while seed_log[cut - 1] != b'\n' {
        cut -= 1;
    }
    let big_path = record::log_path(dir.path(), big);
    std::fs::write(&big_path, &seed_log[..cut]).expect("write the session's log");
    let mut rec = record::read(dir.path(), "app_0_20260101_000000").expect("record");
    rec.session = big.into();
    rec.log = format!("{big}.log");
    rec.state = SessionState::Live;
    record::write(dir.path(), &rec).expect("record");
    let app = App::with_collector(
        Token::from_text("bench"),
        Arc::new(LogSet::from_paths(&[])),
        clrprof_ui::SessionDir::new(dir.path()).expect("dir"),
        LoadOptions::default(),
    );
    let router = app.router();
    let call = |method: &str, uri: &str, body: &str| {
        let req = Request::builder()
            .method(method)
            .uri(uri)
            .header("x-clrprof-token", "bench")
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .expect("request");
        rt.block_on(async {
            let resp = router.clone().oneshot(req).await.expect("response");
            let status = resp.status();
            let body = resp.into_body().collect().await.expect("body").to_bytes();
            assert_eq!(status, StatusCode::OK, "{uri}: {}", String::from_utf8_lossy(&body));
            body.len()
        })
    };
    call("POST", &format!("/api/session/{big}/open"), "");
    let t = std::time::Instant::now();
    let cpu = cpu_seconds();
    app.refresh_sessions();
    eprintln!(
        "session_first_read_seed: the seed log but its last 8 MB as a live session, read from its first byte in {:.2?} ({:.2} s CPU)",
        t.elapsed(),
        cpu_seconds() - cpu
    );
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&big_path).expect("open the session's log");
        f.write_all(&seed_log[cut..]).expect("append its last 8 MB");
    }
    let t = std::time::Instant::now();
    let cpu = cpu_seconds();
    app.refresh_sessions();
    eprintln!(
        "session_grew_8mb_seed: its last {} bytes read as they came, with a new model of the whole log, in {:.2?} ({:.2} s CPU)",
        seed_log.len() - cut,
        t.elapsed(),
        cpu_seconds() - cpu
    );
    let t = std::time::Instant::now();
    let cpu = cpu_seconds();
    drop(load(&seed_log, &LoadOptions::default()).expect("load the seed log"));
    eprintln!(
        "session_reload_seed: the whole seed log loaded again (what that refresh cost before logs were read as they grow) in {:.2?} ({:.2} s CPU)",
        t.elapsed(),
        cpu_seconds() - cpu
    );
    drop(seed_log);
    // A live session whose agent answers every command at once (its
    // connection times out 30 s after the last command).
    let collector = fake_agent::Running::start(fake_agent::opts(dir.path()));
    let mut agent = fake_agent::Fake::connect(&collector.target, &collector.token, 7, "steered").expect("connect");
    agent.data(b"z start\n");
    agent.wait_acked(8);
    let steered = agent.session.clone();
    std::thread::spawn(move || {
        while let Some((kind, payload)) = agent.frame() {
            if kind == clrprof_wire::FrameKind::Command {
                let text = String::from_utf8_lossy(&payload).into_owned();
                let seq = text.split(' ').next().unwrap_or("0").to_string();
                agent.reply(&format!("{seq} ok"));
            }
        }
    });
    let mut g = c.benchmark_group("ui_sessions");
    g.sample_size(10);
    for (name, method, uri, body) in [
        ("session_ctl", "POST", format!("/api/session/{steered}/ctl"), r#"{"command":"dump"}"#),
        ("sessions_list", "GET", "/api/sessions".to_string(), ""),
        ("logs_with_a_session", "GET", "/api/logs".to_string(), ""),
        ("session_summary", "GET", "/api/log/0/summary".to_string(), ""),
    ] {
        let (cpu, runs) = (cpu_seconds(), 20);
        for _ in 0..runs {
            call(method, &uri, body);
        }
        eprintln!("{name}: {:.2} ms CPU per request", (cpu_seconds() - cpu) * 1000.0 / runs as f64);
        g.bench_function(name, |b| b.iter(|| call(method, &uri, body)));
    }
    g.bench_function("session_refresh_same", |b| b.iter(|| app.refresh_sessions()));
    g.finish();
    drop(collector);
}

criterion_group!(benches, bench);
criterion_main!(benches);
