//! The routes. Each `/api/log/{id}/...` route answers from the same library
//! query as the CLI command it mirrors, with the same fields (where the CLI
//! prints a list as `{"<list>": [...], "<list>_left_out": n}`, the route
//! gives the list):
//!
//! | route | CLI |
//! |---|---|
//! | `summary` | `clrprof summary --json` |
//! | `types?kind=&at=` | `clrprof types --buckets --kind K [--at MS] --json` |
//! | `functions`, `modules`, `classes` `?sort=` | `clrprof functions/modules/classes --json` |
//! | `who?type=&exact=` | `clrprof who TYPE --json` |
//! | `graph?min_percent=` | `clrprof graph --min-percent P --json` |
//! | `flame?focus=&search=` | `clrprof flame --json`, merged into a tree |
//! | `lifetime` | `clrprof lifetime --json` |
//! | `ages[?at=&bars=]` | `clrprof ages [--at MS --bars N] --json` |
//! | `survivors?alive_at=` | `clrprof survivors --json` |
//! | `timeline` | `clrprof timeline --json` (markers and bands) |
//! | `timeline/grid` | `clrprof timeline --cells --json` (`grid`, cells run-length coded) |
//! | `dumps` | `clrprof dumps --json` |
//! | `dump/{n}/types`, `dump/{n}/retained`, `dump/{n}/paths?type=` | `clrprof dump N [--retained / --path-to T] --json` |
//! | `dump/{n}/tree?node=` | one node of `--retained`'s dominator tree and its children |
//! | `dump-diff/{a}/{b}` | `clrprof dump-diff A B --json` |
//! | `leaks` | `clrprof leaks LOG --json` (the log's own dumps), with each root as a path names it and the allocation stacks |
//! | `handles` | `clrprof handles --top N --json` |
//!
//! and `/api/compare/{a}/{b}` is `clrprof diff A B --json` (with the last
//! heap dumps per type in `dump_by_type`), except that
//! `allocations_unknown` says which side's are (`{"a": WHY, "b": WHY}`)
//! and the allocation lists are then empty rather than null. With
//! `--collector DIR`: `/api/sessions` is `clrprof sessions --dir DIR
//! --json` (with each opened session's log id), `POST
//! /api/session/{name}/open` makes the session a log of the server (its
//! id in the answer), and `POST /api/session/{name}/ctl` with
//! `{"command": "dump"}` is `clrprof ctl --dir DIR SESSION dump`. With
//! `--watch FILE`: `/api/watch` is the counters and firings `clrprof watch
//! --json` wrote to FILE, by process and counter. Every route
//! taking `from`, `to`, `threads` and `top` maps them as the CLI maps
//! `--from`, `--to`, `--thread` and `--top`.

mod code;
mod compare;
mod dumps;
mod handles;
mod leaks;
mod lifetime;
mod page;
mod sessions;
mod summary;
mod timeline;
mod types;
mod watch;

use crate::App;
use axum::routing::{get, post};
use axum::Router;

/// Every route (the token check is added by [`App::router`]).
pub fn routes() -> Router<App> {
    Router::new()
        .route("/", get(page::index))
        .route("/assets/{name}", get(page::asset))
        .route("/api/logs", get(page::logs))
        .route("/api/log/{id}/summary", get(summary::summary))
        .route("/api/log/{id}/types", get(types::types))
        .route("/api/log/{id}/functions", get(code::functions))
        .route("/api/log/{id}/modules", get(code::modules))
        .route("/api/log/{id}/classes", get(code::classes))
        .route("/api/log/{id}/who", get(code::who))
        .route("/api/log/{id}/graph", get(code::graph))
        .route("/api/log/{id}/flame", get(code::flame))
        .route("/api/log/{id}/lifetime", get(lifetime::lifetime))
        .route("/api/log/{id}/ages", get(lifetime::ages))
        .route("/api/log/{id}/survivors", get(lifetime::survivors))
        .route("/api/log/{id}/timeline", get(timeline::markers))
        .route("/api/log/{id}/timeline/grid", get(timeline::grid))
        .route("/api/log/{id}/dumps", get(dumps::list))
        .route("/api/log/{id}/dump/{n}/types", get(dumps::types))
        .route("/api/log/{id}/dump/{n}/retained", get(dumps::retained))
        .route("/api/log/{id}/dump/{n}/tree", get(dumps::tree))
        .route("/api/log/{id}/dump/{n}/paths", get(dumps::paths))
        .route("/api/log/{id}/dump-diff/{a}/{b}", get(dumps::diff))
        .route("/api/log/{id}/leaks", get(leaks::leaks_in_log))
        .route("/api/log/{id}/handles", get(handles::handles))
        .route("/api/compare/{a}/{b}", get(compare::compare))
        .route("/api/sessions", get(sessions::list))
        .route("/api/session/{name}/open", post(sessions::open))
        .route("/api/session/{name}/ctl", post(sessions::ctl))
        .route("/api/watch", get(watch::series))
}
