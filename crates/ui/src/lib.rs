//! `clrprof ui`: a local web UI over the same library queries the
//! command-line tool runs.
//!
//! # API structure
//!
//! - [`serve`] loads the logs of [`ServeOptions`] in the background (a
//!   progress bar on the terminal, the same progress in the page), binds
//!   the address (loopback by default), tells the caller the page's address,
//!   which carries a random [`Token`], and answers until interrupted.
//! - [`App`] is the server's state: the [`LogSet`] and the token;
//!   [`App::router`] gives the axum [`Router`](axum::Router), which a
//!   benchmark or a test can call without a socket.
//! - [`serve_connections`] answers a listener's connections within
//!   [`ConnectionLimits`]: each request's head must come within 10 s (so
//!   idle connections are closed after 10 s too), and at most 512
//!   connections are held (fewer under a low file limit): at the cap, a
//!   new connection closes the one idle the longest, so connections held
//!   by another local user cannot keep the browser out.
//! - Served on a loopback address, a request whose `Host` header does not
//!   name that address (`127.0.0.1:PORT`, `[::1]:PORT` or `localhost:PORT`)
//!   is refused with 403 ([`App::router_at`]; against DNS rebinding).
//! - Every request must carry the token (`?token=` or the `x-clrprof-token`
//!   header) or it is refused with 403. Logs are named by [`LogId`]s (their
//!   position on the command line), never by paths: no file other than the
//!   given logs can be reached.
//! - The JSON of each `/api/...` route is the `--json` output of the CLI
//!   command it mirrors (the table in `api/mod.rs`), built by the same
//!   library query.
//! - With a collector's directory ([`SessionDir`], `--collector DIR`),
//!   its sessions are listed (`/api/sessions`), any of them can be opened
//!   as a log of the server (a new [`LogId`]), a live one's log is read
//!   as it grows, only the bytes added each time ([`App::refresh_sessions`],
//!   every second; `growing_session.rs`), and
//!   commands reach it through the collector's admin socket as
//!   `clrprof ctl` sends them. Only session records and their logs in
//!   that directory can be reached, by session name.
//! - The page (`assets/`: plain HTML, CSS and JavaScript, no build step) is
//!   embedded in the library.
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

mod answer_cache;
mod api;
mod app;
mod assets;
mod collector;
mod connections;
mod error;
mod flame_tree;
mod growing_session;
mod host;
mod dominator_tree;
mod logs;
mod params;
mod progress;
mod serve;
mod token;
mod watch_series;

pub use app::App;
pub use collector::{CtlReply, ListedSession, SessionDir};
pub use connections::{
    serve_connections, ConnectionLimits, FD_MARGIN, HEAD_TIMEOUT, MAX_CONNECTIONS, OUT_OF_FILES_PAUSE, SHUTDOWN_GRACE,
};
pub use error::{ApiError, UiError};
pub use logs::{LogId, LogSet, LogStatus, SessionStatus};
pub use serve::{serve, serve_watching, ServeOptions, DEFAULT_LISTEN, LISTEN_BACKLOG};
pub use token::Token;
