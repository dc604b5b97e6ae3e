//! The server's routes without a browser: the token check, that nothing but
//! the logs (by id) and the embedded page can be reached, and that answers
//! are the library's (the same values the CLI prints as JSON).

use axum::body::Body;
use axum::http::{Request, StatusCode};
use clrprof::model::{load, LoadOptions, Model};
use clrprof::query::{self, dumps, Filter};
use clrprof_gen::{generate, GenOptions, Preset};
use clrprof_ui::{App, LogSet, Token};
use http_body_util::BodyExt;
use serde_json::Value;
use std::sync::Arc;
use tower::ServiceExt;

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

fn model() -> Model {
    let opts = GenOptions { objects: 20_000, gcs: 6, heap_dumps: 2, comments: 2, ..Preset::Tiny.options() };
    let (log, _) = generate(&opts, Vec::new()).expect("generate");
    load(&log, &LoadOptions::default()).expect("load")
}

fn app() -> App {
    App::new(Token::from_text(TOKEN), Arc::new(LogSet::from_models(vec![("tiny.log".into(), model())])))
}

async fn get(app: &App, uri: &str, token: Option<&str>) -> (StatusCode, Vec<u8>) {
    let mut req = Request::builder().uri(uri);
    if let Some(t) = token {
        req = req.header("x-clrprof-token", t);
    }
    let resp = app.router().oneshot(req.body(Body::empty()).expect("request")).await.expect("response");
    let status = resp.status();
    (status, resp.into_body().collect().await.expect("body").to_bytes().to_vec())
}

async fn json(app: &App, uri: &str) -> Value {
    let (status, body) = get(app, uri, Some(TOKEN)).await;
    assert_eq!(status, StatusCode::OK, "{uri}: {}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).expect("json")
}

#[tokio::test]
async fn requests_without_the_token_are_refused() {
    let app = app();
    for uri in ["/", "/api/logs", "/assets/app.js", "/api/log/0/summary", "/nothing"] {
        assert_eq!(get(&app, uri, None).await.0, StatusCode::FORBIDDEN, "{uri} without a token");
        assert_eq!(get(&app, uri, Some("0123456789abcdef0123456789abcdee")).await.0, StatusCode::FORBIDDEN, "{uri} with a wrong token");
    }
    let (status, body) = get(&app, &format!("/?token={TOKEN}"), None).await;
    assert_eq!(status, StatusCode::OK);
    let page = String::from_utf8(body).expect("utf-8");
    assert!(page.contains(TOKEN), "the page carries the token for its own requests");
    assert!(!page.contains("http://") && !page.contains("https://"), "the page loads nothing from elsewhere");
}

#[tokio::test]
async fn nothing_but_the_logs_and_the_page_can_be_reached() {
    let app = app();
    for uri in [
        "/etc/passwd",
        "/assets/..%2F..%2FCargo.toml",
        "/assets/Cargo.toml",
        "/api/log/..%2F..%2Fetc%2Fpasswd/summary",
        "/api/log/%2Fetc%2Fpasswd/summary",
        "/api/log/1/summary",
        "/api/log/0/dump/9/types",
        "/api/compare/0/1",
    ] {
        let (status, body) = get(&app, uri, Some(TOKEN)).await;
        assert!(status == StatusCode::NOT_FOUND || status == StatusCode::BAD_REQUEST, "{uri}: {status}");
        assert!(!String::from_utf8_lossy(&body).contains("[package]"), "{uri} leaked a file");
    }
    for a in ["style.css", "util.js", "views.js", "timeline.js", "flame.js", "dumps.js", "live.js", "app.js"] {
        let (status, body) = get(&app, &format!("/assets/{a}"), Some(TOKEN)).await;
        assert_eq!(status, StatusCode::OK, "{a}");
        // The SVG namespace is a name, not an address to load.
        let text = String::from_utf8(body).expect("utf-8").replace("http://www.w3.org/2000/svg", "");
        assert!(!text.contains("http://") && !text.contains("https://") && !text.contains("//cdn"), "{a} refers to nothing elsewhere");
    }
}

#[tokio::test]
async fn answers_are_the_library_queries() {
    let app = app();
    let m = model();
    assert_eq!(json(&app, "/api/log/0/summary").await, serde_json::to_value(query::summary(&m)).expect("json"));
    assert_eq!(json(&app, "/api/log/0/lifetime?top=0").await, serde_json::to_value(query::lifetime(&m, &Filter::all())).expect("json"));
    let functions = query::by_function(&m, &Filter::all(), query::SortBy::Exclusive);
    assert_eq!(json(&app, "/api/log/0/functions?sort=exclusive&top=0").await, serde_json::to_value(&functions).expect("json"));
    let d = json(&app, "/api/log/0/dump/1/types").await;
    assert_eq!(d, serde_json::to_value(dumps::by_type(&m, dumps::DumpIndex(1))).expect("json"));
    // The dominator tree's first level: the objects the roots dominate, as
    // `dump --retained` lists them (largest retained first).
    let r = dumps::retained(&m, dumps::DumpIndex(1), usize::MAX).expect("dump 1");
    let tree = json(&app, "/api/log/0/dump/1/tree?limit=1000000").await;
    let shown: Vec<(u64, u64)> = tree["children"]
        .as_array()
        .expect("children")
        .iter()
        .map(|c| (c["address"].as_u64().expect("address"), c["retained"].as_u64().expect("retained")))
        .collect();
    let want: Vec<(u64, u64)> = r.top_objects.iter().filter(|o| o.dominator.is_none()).map(|o| (o.address, o.retained)).collect();
    assert!(!want.is_empty());
    assert_eq!(shown, want);
    assert_eq!(tree["parent"]["retained"].as_u64(), Some(r.root_retained));
    // Handles by creating stack: `clrprof handles --json`.
    let h = query::handles_by_stack(&m, &Filter::all());
    let got = json(&app, "/api/log/0/handles?top=0").await;
    for k in ["created", "destroyed", "surviving", "groups"] {
        assert_eq!(got[k], serde_json::to_value(&h).expect("json")[k], "handles {k}");
    }
    assert_eq!(got["groups_left_out"].as_u64(), Some(0));
    let one = json(&app, "/api/log/0/handles?top=1").await;
    assert_eq!(one["groups"].as_array().map(Vec::len), Some(h.groups.len().min(1)));
    assert_eq!(one["groups_left_out"].as_u64(), Some(h.groups.len().saturating_sub(1) as u64));
    // A window is the CLI's --from/--to.
    let end = query::timeline::end_ms(&m);
    let (from, to) = (end * 0.25, end * 0.5);
    let f = Filter::resolve(&m, &query::TimeWindow::Millis { from: Some(from), to: Some(to) }, &[]).expect("window");
    let s = query::survivors(&m, &f, None, 20);
    let got = json(&app, &format!("/api/log/0/survivors?from={from}&to={to}&top=20")).await;
    assert_eq!(got["surviving"], serde_json::to_value(s.surviving).expect("json"));
    assert_eq!(got["by_type"], serde_json::to_value(&s.by_type[..s.by_type.len().min(20)]).expect("json"));
}

fn encode(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

#[tokio::test]
async fn the_flame_graph_adds_up_and_zooms_in_a_window() {
    let app = app();
    let m = model();
    let end = query::timeline::end_ms(&m);
    let (from, to) = (end * 0.1, end * 0.6);
    let f = Filter::resolve(&m, &query::TimeWindow::Millis { from: Some(from), to: Some(to) }, &[]).expect("window");
    let folded = query::folded_stacks(&m, &f);
    let total: u64 = folded.iter().map(|s| s.bytes).sum();
    for _ in 0..2 {
        // The second time from the kept tree.
        let v = json(&app, &format!("/api/log/0/flame?from={from}&to={to}")).await;
        assert_eq!(v["total"].as_u64(), Some(total));
        assert_eq!(v["stacks"].as_u64(), Some(folded.len() as u64));
        let first = &v["tree"]["children"][0];
        let name = first["name"].as_str().expect("a first frame");
        let under: u64 = folded.iter().filter(|s| s.stack.split(';').next() == Some(name)).map(|s| s.bytes).sum();
        assert_eq!(first["bytes"].as_u64(), Some(under));
        let z = json(&app, &format!("/api/log/0/flame?from={from}&to={to}&focus={}&search=String", encode(name))).await;
        assert_eq!(z["tree"]["bytes"].as_u64(), Some(under), "zoomed into {name}");
        let matched: u64 = folded.iter().filter(|s| s.stack.split(';').any(|x| x.contains("String"))).map(|s| s.bytes).sum();
        assert_eq!(z["matched"].as_u64(), Some(matched));
    }
    let (status, _) = get(&app, "/api/log/0/flame?focus=no%20such%20frame", Some(TOKEN)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn bad_parameters_say_what_was_expected() {
    let app = app();
    for (uri, says) in [
        ("/api/log/0/types?kind=large", "kind"),
        ("/api/log/0/functions?sort=sideways", "sort"),
        ("/api/log/0/timeline/grid?columns=0", "columns"),
        ("/api/log/0/types?from=20&to=10", "before it starts"),
        ("/api/log/0/functions?threads=x", "threads"),
    ] {
        let (status, body) = get(&app, uri, Some(TOKEN)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}");
        assert!(String::from_utf8_lossy(&body).contains(says), "{uri}: {}", String::from_utf8_lossy(&body));
    }
}

/// An attached recording (its first comment says so; no allocation
/// record): the Summary's figures of simulated objects are `null`, which
/// the page shows as "Unknown", not a wrong 0.
#[tokio::test]
async fn an_attached_recordings_unknown_figures_are_null() {
    let log = b"f 0 NATIVE FUNCTION ( UNKNOWN ARGUMENTS ) 0 0\ni 1\nz clrprof agent 0.1.0 pid 7 stacks none attached (no allocations)\n\
i 5\nb 1 0 0 0x1000 0x100 0x10000 0\ni 6\nl 0 0x1010\ni 7\nb 0 0 0 0x1000 0x100 0x10000 0\ng 1 0 0\n";
    let m = load(log, &LoadOptions::default()).expect("load");
    let app = App::new(Token::from_text(TOKEN), Arc::new(LogSet::from_models(vec![("attached.log".into(), m)])));
    let s = json(&app, "/api/log/0/summary").await;
    for key in ["allocated_bytes", "relocated_bytes", "final_heap_bytes", "objects_finalized", "critical_objects_finalized"] {
        assert!(s[key].is_null(), "{key}: {s}");
    }
    assert_eq!(s["gen0_collections"], 1);
}
