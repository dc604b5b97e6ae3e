//! `clrprof ui --collector DIR` without a browser: a real collector (in
//! this process) and a fake agent streaming a generated log. The page's
//! routes list the sessions, open one (its figures are the library's on
//! the lines stored so far), read what it adds as it grows, send it commands
//! through the collector's admin socket (the agent's answer, or the
//! collector's refusal once it ended), and reach nothing in the directory
//! that is not a session.

#[path = "../../collect/tests/fake_agent.rs"]
mod fake_agent;
#[path = "../../../tests/common/other_user.rs"]
mod other_user;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use clrprof::model::{load, LoadOptions};
use clrprof::query;
use clrprof_gen::{generate, GenOptions, Preset};
use clrprof_ui::{App, LogSet, SessionDir, Token};
use fake_agent::{opts, Fake, Running};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use std::sync::Arc;
use tower::ServiceExt;

const TOKEN: &str = "feedfacefeedfacefeedfacefeedface";

async fn call(app: &App, method: &str, uri: &str, body: Option<Value>, token: bool) -> (StatusCode, Value) {
    let mut req = Request::builder().method(method).uri(uri);
    if token {
        req = req.header("x-clrprof-token", TOKEN);
    }
    let body = match body {
        Some(v) => {
            req = req.header("content-type", "application/json");
            Body::from(v.to_string())
        }
        None => Body::empty(),
    };
    let resp = app.router().oneshot(req.body(body).expect("request")).await.expect("response");
    let status = resp.status();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned())))
}

async fn ok(app: &App, method: &str, uri: &str, body: Option<Value>) -> Value {
    let (status, v) = call(app, method, uri, body, true).await;
    assert_eq!(status, StatusCode::OK, "{method} {uri}: {v}");
    v
}

/// A generated log cut in two at a line boundary, the first part ending
/// before the first heap dump.
fn log_in_two() -> (Vec<u8>, usize) {
    let opts = GenOptions { objects: 20_000, gcs: 6, heap_dumps: 2, comments: 2, ..Preset::Tiny.options() };
    let (log, _) = generate(&opts, Vec::new()).expect("generate");
    let mut cut = log.len() * 2 / 5;
    while log[cut - 1] != b'\n' {
        cut -= 1;
    }
    (log, cut)
}

fn session_status(logs: &Value, id: u64) -> Value {
    logs.as_array().expect("logs").iter().find(|l| l["id"].as_u64() == Some(id)).expect("the log")["session"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_listed_opened_refreshed_and_steered() {
    let dir = tempfile::tempdir().expect("tempdir");
    let collector = Running::start(opts(dir.path()));
    let (log, cut) = log_in_two();
    let mut agent = Fake::connect(&collector.target, &collector.token, 4242, "phases").expect("connect");
    agent.data(&log[..cut]);
    agent.wait_acked(cut as u64);
    let name = agent.session.clone();

    let app = App::with_collector(
        Token::from_text(TOKEN),
        Arc::new(LogSet::from_paths(&[])),
        SessionDir::new(dir.path()).expect("dir"),
        LoadOptions::default(),
    );
    // Listed as `clrprof sessions --json` lists it, not opened yet.
    let listed = ok(&app, "GET", "/api/sessions", None).await;
    let sessions = listed["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 1, "{listed}");
    assert_eq!(sessions[0]["session"], json!(name));
    assert_eq!(sessions[0]["state"], json!("live"));
    assert_eq!(sessions[0]["bytes"], json!(cut));
    assert_eq!(sessions[0]["log_id"], Value::Null);

    // Opened: a new log id; loaded up to the lines stored.
    let opened = ok(&app, "POST", &format!("/api/session/{name}/open"), None).await;
    assert_eq!(opened["log"], json!(0));
    assert_eq!(ok(&app, "POST", &format!("/api/session/{name}/open"), None).await["log"], json!(0), "opened once");
    app.refresh_sessions();
    let first = load(&log[..cut], &LoadOptions::default()).expect("load the first part");
    assert_eq!(ok(&app, "GET", "/api/log/0/summary", None).await, serde_json::to_value(query::summary(&first)).expect("json"));
    let s = session_status(&ok(&app, "GET", "/api/logs", None).await, 0);
    assert_eq!((s["name"].as_str(), s["live"].as_bool(), s["generation"].as_u64()), (Some(name.as_str()), Some(true), Some(1)), "{s}");
    assert_eq!(s["loaded_bytes"], json!(cut));
    assert!(s["refreshed_ms"].as_u64().unwrap_or(0) > 0);
    assert_eq!(ok(&app, "GET", "/api/sessions", None).await["sessions"][0]["log_id"], json!(0));

    // Nothing changed: no new load.
    app.refresh_sessions();
    assert_eq!(session_status(&ok(&app, "GET", "/api/logs", None).await, 0)["generation"], json!(1));

    // The log grows, the last line half sent: loaded again up to the
    // last whole line.
    let rest = &log[cut..];
    let half = rest.len() - 5;
    agent.data(&rest[..half]);
    let whole = cut + rest[..half].iter().rposition(|&b| b == b'\n').expect("a newline") + 1;
    agent.wait_acked(whole as u64);
    app.refresh_sessions();
    let grown = load(&log[..whole], &LoadOptions::default()).expect("load the grown part");
    let s = session_status(&ok(&app, "GET", "/api/logs", None).await, 0);
    assert_eq!((s["generation"].as_u64(), s["loaded_bytes"].as_u64()), (Some(2), Some(whole as u64)), "{s}");
    // Only the lines added were read.
    assert_eq!(s["read_bytes"], json!(whole - cut), "{s}");
    let summary = ok(&app, "GET", "/api/log/0/summary", None).await;
    assert_eq!(summary, serde_json::to_value(query::summary(&grown)).expect("json"));
    assert!(summary["allocated_bytes"].as_u64() > Some(query::summary(&first).allocated_bytes), "the figure grew");

    // A command goes to the agent through the collector; the agent's
    // answer comes back.
    let steer = std::thread::spawn(move || {
        let (seq, text) = agent.next_command();
        agent.reply(&format!("{seq} ok heap dump 2: 7 objects, 640 bytes, 3 roots, 1 ms"));
        let (seq2, text2) = agent.next_command();
        agent.reply(&format!("{seq2} ok (was on)"));
        (agent, text, text2)
    });
    let r = ok(&app, "POST", &format!("/api/session/{name}/ctl"), Some(json!({"command": "dump"}))).await;
    assert_eq!(r["reply"], json!("ok heap dump 2: 7 objects, 640 bytes, 3 roots, 1 ms"));
    let r = ok(&app, "POST", &format!("/api/session/{name}/ctl"), Some(json!({"command": "allocations off"}))).await;
    assert_eq!(r["reply"], json!("ok (was on)"));
    let (mut agent, sent, sent2) = steer.join().expect("agent thread");
    assert_eq!((sent.as_str(), sent2.as_str()), ("dump", "allocations off"));
    let (status, v) = call(&app, "POST", &format!("/api/session/{name}/ctl"), Some(json!({"command": "reboot"})), true).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");

    // The session ends: the whole log, no longer live; a command is
    // refused with the collector's reason, shown as it says it.
    agent.data(&rest[half..]);
    agent.end();
    agent.wait_acked(log.len() as u64);
    fake_agent::eventually(|| {
        clrprof_collect::record::read(dir.path(), &name).ok().filter(|r| r.state != clrprof_collect::SessionState::Live)
    });
    app.refresh_sessions();
    let s = session_status(&ok(&app, "GET", "/api/logs", None).await, 0);
    assert_eq!((s["live"].as_bool(), s["record_state"].as_str(), s["generation"].as_u64()), (Some(false), Some("ended"), Some(3)), "{s}");
    assert_eq!(s["read_bytes"], json!(log.len() - whole), "{s}");
    let whole_log = load(&log, &LoadOptions::default()).expect("load");
    assert_eq!(ok(&app, "GET", "/api/log/0/summary", None).await, serde_json::to_value(query::summary(&whole_log)).expect("json"));
    let (status, v) = call(&app, "POST", &format!("/api/session/{name}/ctl"), Some(json!({"command": "dump"})), true).await;
    assert_eq!(status, StatusCode::CONFLICT, "{v}");
    assert!(v["error"].as_str().is_some_and(|e| e.contains("not live") && e.contains(&name)), "{v}");

    // Every request needs the token, the POSTs too.
    for (m, uri) in
        [("GET", "/api/sessions".to_string()), ("POST", format!("/api/session/{name}/open")), ("POST", format!("/api/session/{name}/ctl"))]
    {
        let (status, _) = call(&app, m, &uri, Some(json!({"command": "dump"})), false).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{m} {uri} without the token");
    }
    drop(collector);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_in_the_directory_but_sessions_can_be_reached() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let secret = tempfile::tempdir().expect("tempdir");
    std::fs::write(secret.path().join("secret.txt"), "z the secret\n").expect("write");
    // A real session (ended), written as the collector writes one.
    let (log, _) = log_in_two();
    std::fs::write(d.join("app_1_20260101_000000.log"), &log).expect("write");
    let record = |session: &str| {
        json!({"session": session, "log": format!("{session}.log"), "pid": 1, "program": "app", "runtime": "8.0.4", "peer": "x",
               "start": "2026-01-01T00:00:00Z", "end": "2026-01-01T00:00:01Z", "bytes": 1, "state": "ended", "reason": null,
               "spool": null, "spool_from": null})
        .to_string()
    };
    std::fs::write(d.join("app_1_20260101_000000.json"), record("app_1_20260101_000000")).expect("write");
    // Not sessions: a log without a record, the token, other files, a
    // record whose log is a link elsewhere, a record naming another
    // session, a link posing as a record.
    std::fs::write(d.join("loose_2_20260101_000000.log"), "z loose\n").expect("write");
    std::fs::write(d.join("collector.token"), "00".repeat(32)).expect("write");
    std::fs::write(d.join("notes.txt"), "z notes\n").expect("write");
    std::os::unix::fs::symlink(secret.path().join("secret.txt"), d.join("link_3_20260101_000000.log")).expect("link");
    std::fs::write(d.join("link_3_20260101_000000.json"), record("link_3_20260101_000000")).expect("write");
    std::fs::write(d.join("alias_4_20260101_000000.json"), record("app_1_20260101_000000")).expect("write");
    std::os::unix::fs::symlink(d.join("app_1_20260101_000000.json"), d.join("fake_5_20260101_000000.json")).expect("link");
    std::fs::write(d.join("fake_5_20260101_000000.log"), "z fake\n").expect("write");

    let app = App::with_collector(
        Token::from_text(TOKEN),
        Arc::new(LogSet::from_paths(&[])),
        SessionDir::new(d).expect("dir"),
        LoadOptions::default(),
    );
    for name in [
        "loose_2_20260101_000000",
        "collector.token",
        "collector",
        "notes.txt",
        "notes",
        "link_3_20260101_000000",
        "alias_4_20260101_000000",
        "fake_5_20260101_000000",
        "..%2F..%2Fetc%2Fpasswd",
        "%2Fetc%2Fpasswd",
        ".app_1_20260101_000000",
        "app_1_20260101_000000.log",
    ] {
        let (status, v) = call(&app, "POST", &format!("/api/session/{name}/open"), None, true).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}: {v}");
        assert!(!v.to_string().contains("the secret"), "{name} leaked");
        let (status, _) = call(&app, "POST", &format!("/api/session/{name}/ctl"), Some(json!({"command": "dump"})), true).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "ctl {name}");
    }
    assert_eq!(ok(&app, "GET", "/api/logs", None).await, json!([]), "nothing was opened");
    // The real one opens, and a command to it says the collector is away.
    assert_eq!(ok(&app, "POST", "/api/session/app_1_20260101_000000/open", None).await["log"], json!(0));
    app.refresh_sessions();
    let model = load(&log, &LoadOptions::default()).expect("load");
    assert_eq!(ok(&app, "GET", "/api/log/0/summary", None).await, serde_json::to_value(query::summary(&model)).expect("json"));
    let (status, v) = call(&app, "POST", "/api/session/app_1_20260101_000000/ctl", Some(json!({"command": "dump"})), true).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{v}");
    assert!(v["error"].as_str().is_some_and(|e| e.contains("collector")), "{v}");
    assert!(!v.to_string().contains(&"00".repeat(32)), "the token is never shown");

    // Without --collector there are no sessions.
    let plain = App::new(Token::from_text(TOKEN), Arc::new(LogSet::from_paths(&[])));
    assert_eq!(call(&plain, "GET", "/api/sessions", None, true).await.0, StatusCode::NOT_FOUND);
    assert_eq!(call(&plain, "POST", "/api/session/app_1_20260101_000000/open", None, true).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_users_session_is_neither_listed_nor_opened() {
    let Some(user) = other_user::get("planting a session in the collector's directory") else { return };
    // Another user plants a record and its trace while the folder is open
    // to all (sticky, as /tmp): `ui --collector` refuses the folder.
    let d = other_user::shared_dir("ui-planted");
    let name = "planted_9_20260101_000000";
    let record = json!({"session": name, "log": format!("{name}.nettrace"), "pid": 9, "program": "planted", "runtime": "8.0.4",
                        "peer": "x", "start": "2026-01-01T00:00:00Z", "end": "2026-01-01T00:00:01Z", "bytes": 8, "state": "ended",
                        "reason": null, "spool": null, "spool_from": null})
    .to_string();
    let (rec_path, trace) = (d.join(format!("{name}.json")), d.join(format!("{name}.nettrace")));
    user.sh("printf '%s' \"$1\" > \"$2\" && printf 'Nettrace' > \"$3\"", &[record.as_ref(), rec_path.as_os_str(), trace.as_os_str()]);
    let e = SessionDir::new(&d).expect_err("a folder open to others").to_string();
    assert!(e.contains("can be written by other users"), "{e}");
    // Its owner closes it; what was planted stays, and is not believed.
    std::fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(0o700)).expect("chmod");
    let app = App::with_collector(
        Token::from_text(TOKEN),
        Arc::new(LogSet::from_paths(&[])),
        SessionDir::new(&d).expect("dir"),
        LoadOptions::default(),
    );
    let listed = ok(&app, "GET", "/api/sessions", None).await;
    assert_eq!(listed["sessions"], json!([]), "{listed}");
    let (status, v) = call(&app, "POST", &format!("/api/session/{name}/open"), None, true).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{v}");
    assert_eq!(ok(&app, "GET", "/api/logs", None).await, json!([]), "nothing was opened");
    std::fs::remove_dir_all(&d).expect("clean up");
}
