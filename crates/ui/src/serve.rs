//! Starting the server: bind, print the address with its token, load the
//! logs in the background, answer until interrupted.

use crate::logs::LogSet;
use crate::progress::TerminalProgress;
use crate::app::WeakApp;
use crate::connections::{serve_connections, ConnectionLimits};
use crate::{App, SessionDir, Token, UiError};
use clrprof::format::ChunkOptions;
use clrprof::model::LoadOptions;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// The default address: loopback only, on a fixed port (as notebook
/// servers use one); `--listen 127.0.0.1:0` lets the system pick a free one.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8765";

/// What [`serve`] does.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// The logs to show.
    pub logs: Vec<PathBuf>,
    /// The address to listen on (port 0: any free port).
    pub listen: SocketAddr,
    /// Threads to parse with (default: all cores).
    pub threads: Option<usize>,
    /// No progress bars.
    pub quiet: bool,
    /// The collector's directory whose sessions the page lists, opens and
    /// steers (`--collector DIR`).
    pub collector: Option<PathBuf>,
    /// Loads each log in a child process under its memory budget (see
    /// [`clrprof_cache::child`]): a file that needs more than the memory
    /// rule allows is shown as failed, and the server and the other logs
    /// go on. `None`: every log is loaded in the server's own process.
    pub child_loader: Option<clrprof_cache::child::ChildLoader>,
}

/// How often the opened sessions' logs are looked at (and loaded again
/// when they grew); a log that takes longer to load is looked at less
/// often (twice its load time).
pub const REFRESH_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Serves the logs until interrupted (Ctrl-C). Once listening, calls
/// `ready` with the page's address (with its token); the logs load in the
/// background meanwhile. Connections are served within the default
/// [`ConnectionLimits`] (see [`serve_connections`]); on a loopback address
/// only requests naming it are answered ([`App::router_at`]).
pub fn serve(options: ServeOptions, ready: impl FnOnce(&str)) -> Result<(), UiError> {
    serve_watching(options, None, ready)
}

/// [`serve`], showing also the counters and firings that `clrprof watch
/// --json` writes to `watch` (`clrprof ui --watch FILE`).
pub fn serve_watching(options: ServeOptions, watch: Option<PathBuf>, ready: impl FnOnce(&str)) -> Result<(), UiError> {
    if options.logs.is_empty() && options.collector.is_none() && watch.is_none() {
        return Err(UiError::NoLogs);
    }
    if let Some(w) = &watch {
        std::fs::File::open(w).map_err(|error| UiError::Open { path: w.clone(), error })?;
    }
    let sessions = match &options.collector {
        Some(dir) => Some(SessionDir::new(dir).map_err(|error| UiError::Open { path: dir.clone(), error })?),
        None => None,
    };
    for p in &options.logs {
        std::fs::File::open(p).map_err(|error| UiError::Open { path: p.clone(), error })?;
    }
    let token = Token::random().map_err(UiError::Token)?;
    let logs = Arc::new(LogSet::from_paths(&options.logs).with_child_loader(options.child_loader.clone()));
    let load_options = LoadOptions { chunks: ChunkOptions { threads: options.threads, ..LoadOptions::default().chunks } };
    let app = match sessions {
        Some(dir) => App::with_collector(token, logs.clone(), dir, load_options.clone()),
        None => App::new(token, logs.clone()),
    };
    if let Some(w) = watch {
        app.set_watch(w);
    }
    if app.collector().is_some() {
        let weak = app.downgrade();
        std::thread::Builder::new().name("clrprof-ui-sessions".into()).spawn(move || refresh_loop(weak))?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let listener =
            listen(options.listen).map_err(|error| UiError::Bind { addr: options.listen.to_string(), error })?;
        let addr = listener.local_addr()?;
        if !addr.ip().is_loopback() {
            let _ = writeln!(
                std::io::stderr().lock(),
                "clrprof ui: listening on {addr}, beyond this machine: anyone who can reach it and has the address with its token can read the logs (plain HTTP)"
            );
        }
        ready(&format!("http://{addr}/?token={}", app.token().as_str()));
        let names: Vec<String> = logs.statuses().into_iter().map(|s| s.name).collect();
        let quiet = options.quiet;
        std::thread::Builder::new().name("clrprof-ui-load".into()).spawn(move || {
            let bars = TerminalProgress::new(&names, quiet);
            logs.load_all(&load_options, |id, done, total| bars.update(id.0 as usize, done, total));
        })?;
        // SIGINT (Ctrl-C) or SIGTERM (`kill`, service managers): the same
        // graceful stop, exit status 0. The handlers are in place before
        // the first connection is served (a future registers its handler
        // only when first polled).
        #[cfg(unix)]
        let shutdown = {
            use tokio::signal::unix::{signal, SignalKind};
            let (int, term) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate()));
            async move {
                match (int, term) {
                    (Ok(mut int), Ok(mut term)) => {
                        tokio::select! {
                            _ = int.recv() => {}
                            _ = term.recv() => {}
                        }
                    }
                    _ => {
                        let _ = tokio::signal::ctrl_c().await;
                    }
                }
            }
        };
        #[cfg(not(unix))]
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        serve_connections(listener, app.router_at(addr), &ConnectionLimits::default(), shutdown).await;
        Ok(())
    })
}

/// The length of the queue of connections the system keeps until the
/// server accepts them: 4096 (the system may keep fewer: Linux's
/// `net.core.somaxconn`, 4096 by default). A burst of connections from
/// another program must not fill it, or the browser's connection is
/// dropped and tried again only a second later.
pub const LISTEN_BACKLOG: u32 = 4096;

/// Binds `addr` (with `SO_REUSEADDR`, as `TcpListener::bind` does) and
/// listens with a queue of [`LISTEN_BACKLOG`].
fn listen(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Brings the opened sessions' logs up to date until the server goes away.
fn refresh_loop(app: WeakApp) {
    loop {
        let Some(app) = app.upgrade() else { return };
        let start = std::time::Instant::now();
        app.refresh_sessions();
        drop(app);
        std::thread::sleep(REFRESH_EVERY.max(start.elapsed() * 2));
    }
}
