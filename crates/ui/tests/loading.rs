//! While a log loads, the server answers: `/api/logs` shows the progress
//! (what the page draws), the loading log's views say it is loading (503),
//! and the other logs answer as usual.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use clrprof::format::ChunkOptions;
use clrprof::model::LoadOptions;
use clrprof_gen::{generate, GenOptions, Preset};
use clrprof_ui::{App, LogSet, Token};
use http_body_util::BodyExt;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::{mpsc, Arc};
use tower::ServiceExt;

fn write_log(name: &str, objects: u64) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("ui-loading-{}-{name}", std::process::id()));
    let opts = GenOptions { objects, ..Preset::Tiny.options() };
    let file = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    let (file, _) = generate(&opts, file).expect("generate");
    file.into_inner().expect("flush");
    path
}

async fn get(app: &App, uri: &str) -> (StatusCode, Value) {
    let req = Request::builder().uri(uri).header("x-clrprof-token", "t").body(Body::empty()).expect("request");
    let resp = app.router().oneshot(req).await.expect("response");
    let status = resp.status();
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_answers_while_a_log_loads() {
    let small = write_log("small.log", 2_000);
    let large = write_log("large.log", 60_000);
    let logs = Arc::new(LogSet::from_paths(&[small.clone(), large.clone()]));
    let app = App::new(Token::from_text("t"), logs.clone());
    let (reached, wait_here) = (mpsc::channel::<()>(), mpsc::channel::<()>());
    let (reached_tx, reached_rx) = reached;
    let (go_tx, go_rx) = wait_here;
    // The loader stops in the middle of the second log until told to go on.
    let loader = std::thread::spawn(move || {
        let mut stopped = false;
        // Small chunks, so that progress is reported many times.
        let options = LoadOptions { chunks: ChunkOptions { chunk_bytes: 64 << 10, ..ChunkOptions::default() } };
        logs.load_all(&options, |id, done, total| {
            if id.0 == 1 && done > 0 && done < total && !stopped {
                stopped = true;
                reached_tx.send(()).expect("tell the test");
                go_rx.recv().expect("wait for the test");
            }
        });
    });
    tokio::task::spawn_blocking(move || reached_rx.recv()).await.expect("join").expect("the loader reached the middle of the second log");

    let (status, list) = get(&app, "/api/logs").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list[0]["state"], "ready", "{list}");
    assert_eq!(list[1]["state"], "loading", "{list}");
    let (done, total) = (list[1]["done"].as_u64().expect("done"), list[1]["total"].as_u64().expect("total"));
    assert!(done > 0 && done < total, "progress {done} of {total}");
    assert_eq!(total, std::fs::metadata(&large).expect("size").len());
    assert_eq!(list[1]["name"], large.file_name().expect("name").to_string_lossy().as_ref(), "the file name, not the path");
    let (status, body) = get(&app, "/api/log/1/summary").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body["error"].as_str().expect("message").contains("still loading"), "{body}");
    let (status, summary) = get(&app, "/api/log/0/summary").await;
    assert_eq!(status, StatusCode::OK, "the loaded log answers meanwhile");
    assert!(summary["allocated_bytes"].as_u64().expect("bytes") > 0);

    go_tx.send(()).expect("let the loader go on");
    tokio::task::spawn_blocking(move || loader.join()).await.expect("join").expect("loader");
    let (_, list) = get(&app, "/api/logs").await;
    assert_eq!(list[1]["state"], "ready", "{list}");
    assert_eq!(get(&app, "/api/log/1/summary").await.0, StatusCode::OK);
    let _ = std::fs::remove_file(small);
    let _ = std::fs::remove_file(large);
}
