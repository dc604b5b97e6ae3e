//! The service: listeners, the handshake, and dispatch by role.

use crate::conn::BoxConn;
use crate::refusals::Refusals;
use crate::registry::Registry;
use crate::{record, token_file, CollectError, ListenAddr};
use clrprof_wire::handshake::{self, MAX_LINE};
use clrprof_wire::{Hello, Nonce, Role, Token};
use std::future::Future;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, ReadHalf, WriteHalf};
use tokio::net::{TcpListener, UnixListener};

/// The admin socket's file name in the collector's directory.
pub const ADMIN_SOCKET: &str = "collector.sock";
/// The default token file's name in the collector's directory.
pub const TOKEN_FILE: &str = "collector.token";

/// Settings of a collector.
#[derive(Clone, Debug)]
pub struct Options {
    /// Where agents connect (default: loopback TCP, any free port).
    pub listen: ListenAddr,
    /// Where session logs and records go (created if missing).
    pub dir: PathBuf,
    /// The token file (default `DIR/collector.token`; made if missing).
    pub token_file: Option<PathBuf>,
    /// How long a client may take to send its `HELLO` line.
    pub handshake_timeout: Duration,
    /// The longest log line accepted; a longer one cuts the session.
    pub max_line: usize,
    /// How long `clrprof ctl` waits for an agent's reply.
    pub reply_timeout: Duration,
    /// Called, off the async threads, with each session's log once the
    /// session has ended whole (not when it is cut: its log may go on from
    /// the agent's spool).
    pub on_ended: Option<OnEnded>,
}

/// What to do with the log of a session that ended whole: its path and
/// its record.
#[derive(Clone)]
pub struct OnEnded(pub std::sync::Arc<OnEndedFn>);

/// The function an [`OnEnded`] holds.
pub type OnEndedFn = dyn Fn(&std::path::Path, &crate::SessionRecord) + Send + Sync;

impl std::fmt::Debug for OnEnded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnEnded(..)")
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            listen: ListenAddr::default(),
            dir: PathBuf::from("."),
            token_file: None,
            handshake_timeout: Duration::from_secs(10),
            max_line: 64 << 20,
            reply_timeout: Duration::from_secs(60),
            on_ended: None,
        }
    }
}

/// What every connection's task shares.
pub(crate) struct Ctx {
    pub opts: Options,
    pub token: Token,
    pub refusals: Refusals,
    pub registry: Registry,
}

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, PathBuf),
}

/// A bound collector, ready to serve.
pub struct Collector {
    ctx: Arc<Ctx>,
    listener: Listener,
    admin: UnixListener,
    admin_path: PathBuf,
    target: String,
    token_file: PathBuf,
    token_made: bool,
    stale: Vec<String>,
}

/// Binds a Unix socket at `path`, replacing a socket file nobody listens
/// on (a collector that was killed leaves one behind), never any other
/// file.
fn bind_unix(path: &Path) -> Result<UnixListener, CollectError> {
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        use std::os::unix::fs::FileTypeExt;
        if !meta.file_type().is_socket() {
            return Err(CollectError::Invalid(format!("{} exists and is not a socket", path.display())));
        }
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(CollectError::Invalid(format!("{}: another collector is listening there", path.display())));
        }
        std::fs::remove_file(path).map_err(CollectError::io(format!("cannot remove the stale socket {}", path.display())))?;
    }
    let l = UnixListener::bind(path).map_err(CollectError::io(format!("cannot listen on {}", path.display())))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(CollectError::io(format!("cannot restrict {}", path.display())))?;
    Ok(l)
}

impl Collector {
    /// Creates the directory (mode 0700) or checks it (see
    /// [`files`](crate::files)), loads or makes the token, closes records
    /// a killed collector left live, and binds the listener and the admin
    /// socket.
    pub async fn bind(opts: Options) -> Result<Collector, CollectError> {
        crate::files::check_dir(&opts.dir)?;
        let token_path = opts.token_file.clone().unwrap_or_else(|| opts.dir.join(TOKEN_FILE));
        let (token, token_made) = token_file::load_or_create(&token_path)?;
        let stale = record::close_stale(&opts.dir)?;
        let (listener, target) = match &opts.listen {
            ListenAddr::Tcp(a) => {
                let l = TcpListener::bind(a).await.map_err(CollectError::io(format!("cannot listen on {a}")))?;
                let local = l.local_addr().map_err(CollectError::io("cannot read the listening address"))?;
                (Listener::Tcp(l), local.to_string())
            }
            ListenAddr::Unix(p) => (Listener::Unix(bind_unix(p)?, p.clone()), format!("unix:{}", p.display())),
        };
        let admin_path = opts.dir.join(ADMIN_SOCKET);
        let admin = bind_unix(&admin_path)?;
        let ctx = Arc::new(Ctx { opts, token, refusals: Refusals::default(), registry: Registry::default() });
        Ok(Collector { ctx, listener, admin, admin_path, target, token_file: token_path, token_made, stale })
    }

    /// The `CLRPROF_TARGET` value for agents.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The `CLRPROF_TOKEN` value for agents (print it only to the user who
    /// started the collector).
    pub fn token_hex(&self) -> String {
        self.ctx.token.to_hex()
    }

    /// The token file, and whether this start made it.
    pub fn token_file(&self) -> (&Path, bool) {
        (&self.token_file, self.token_made)
    }

    /// The admin socket (`clrprof ctl`).
    pub fn admin_path(&self) -> &Path {
        &self.admin_path
    }

    /// Sessions a killed collector had left live, now marked cut.
    pub fn stale_sessions(&self) -> &[String] {
        &self.stale
    }

    /// Serves until `shutdown` completes. Live sessions are then cut
    /// (their records say so) as the runtime drops their tasks.
    pub async fn serve(self, shutdown: impl Future<Output = ()>) -> Result<(), CollectError> {
        let ctx = self.ctx;
        tokio::pin!(shutdown);
        let mut tasks = tokio::task::JoinSet::new();
        loop {
            let (conn, peer, admin): (BoxConn, String, bool) = tokio::select! {
                _ = &mut shutdown => break,
                Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
                r = accept(&self.listener) => match r {
                    Ok((c, p)) => (c, p, false),
                    Err(e) => {
                        crate::say!("clrprof collect: accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                r = self.admin.accept() => match r {
                    Ok((c, _)) => (Box::new(c) as BoxConn, "admin socket".to_string(), true),
                    Err(e) => {
                        crate::say!("clrprof collect: admin accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let ctx = Arc::clone(&ctx);
            tasks.spawn(async move { handle(ctx, conn, peer, admin).await });
        }
        // Let every session write its final record.
        for name in ctx.registry.names() {
            ctx.registry.cancel(&name);
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        if let Listener::Unix(_, p) = &self.listener {
            let _ = std::fs::remove_file(p);
        }
        let _ = std::fs::remove_file(&self.admin_path);
        Ok(())
    }
}

async fn accept(l: &Listener) -> std::io::Result<(BoxConn, String)> {
    match l {
        Listener::Tcp(l) => {
            let (s, a) = l.accept().await?;
            let _ = s.set_nodelay(true);
            Ok((Box::new(s), a.to_string()))
        }
        Listener::Unix(l, p) => {
            let (s, _) = l.accept().await?;
            Ok((Box::new(s), format!("unix:{}", p.display())))
        }
    }
}

/// The read side after the handshake (with what it buffered).
pub(crate) type Reader = BufReader<ReadHalf<BoxConn>>;
/// The write side.
pub(crate) type Writer = WriteHalf<BoxConn>;

/// Reads one line of at most `MAX_LINE` bytes.
async fn read_line(r: &mut Reader) -> Result<Vec<u8>, String> {
    let mut line = Vec::new();
    let mut limited = (&mut *r).take(MAX_LINE as u64);
    match limited.read_until(b'\n', &mut line).await {
        Ok(0) => Err("closed before sending a handshake".into()),
        Ok(_) if line.ends_with(b"\n") => Ok(line),
        Ok(n) if n >= MAX_LINE => Err(format!("handshake line longer than {MAX_LINE} bytes")),
        Ok(_) => Err("closed in the middle of the handshake line".into()),
        Err(e) => Err(format!("read error during the handshake: {e}")),
    }
}

async fn handle(ctx: Arc<Ctx>, conn: BoxConn, peer: String, admin_socket: bool) {
    let (r, mut w) = tokio::io::split(conn);
    let mut r = BufReader::new(r);
    let server = match token_file::random_nonce() {
        Ok(n) => n,
        Err(e) => {
            crate::say!("clrprof collect: {e}");
            return;
        }
    };
    if w.write_all(handshake::challenge_line(&server).as_bytes()).await.is_err() {
        return;
    }
    let hello = match tokio::time::timeout(ctx.opts.handshake_timeout, read_line(&mut r)).await {
        Err(_) => Err(format!("no handshake within {} s", ctx.opts.handshake_timeout.as_secs_f32())),
        Ok(Err(e)) => Err(e),
        Ok(Ok(line)) => handshake::parse_hello(&line, &ctx.token, &server).map_err(|e| match e {
            clrprof_wire::WireError::BadProof => "wrong token (the proof does not match)".to_string(),
            clrprof_wire::WireError::Expected { .. } if line.starts_with(b"HELLO") => format!("bad handshake: {e}"),
            clrprof_wire::WireError::Expected { .. } => "no handshake (the first line is not HELLO: no token)".to_string(),
            e => format!("bad handshake: {e}"),
        }),
    };
    let hello = match hello {
        Ok(h) if (h.role == Role::Admin) == admin_socket => h,
        Ok(h) => {
            ctx.refusals.log(&peer, &format!("role {:?} is not accepted on this endpoint", h.role));
            return;
        }
        Err(reason) => {
            ctx.refusals.log(&peer, &reason);
            return;
        }
    };
    let Ok(client) = handshake::client_nonce(&hello) else { return };
    let conn = Handshaken { ctx, reader: r, writer: w, hello, server, client, peer };
    match conn.hello.role {
        Role::Stream => crate::session::stream(conn).await,
        Role::Resume => crate::session::resume(conn).await,
        Role::Spooled => crate::session::spooled(conn).await,
        Role::Admin => crate::admin::serve(conn).await,
        // The token is right: say so (no session named) and close.
        Role::Check => {
            let mut conn = conn;
            let _ = conn.accept("").await;
        }
    }
}

/// A connection whose client has proved it knows the token.
pub(crate) struct Handshaken {
    pub ctx: Arc<Ctx>,
    pub reader: Reader,
    pub writer: Writer,
    pub hello: Hello,
    pub server: Nonce,
    pub client: Nonce,
    pub peer: String,
}

impl Handshaken {
    /// The key of a new session named `session`, as the client derives it
    /// from this handshake once it reads the `OK` line.
    pub fn session_key(&self, session: &str) -> clrprof_wire::SessionKey {
        handshake::session_key(&self.ctx.token, &self.client, &self.server, session)
    }

    /// Sends the `OK` line naming `session`.
    pub async fn accept(&mut self, session: &str) -> std::io::Result<()> {
        let line = handshake::ok_line(&self.ctx.token, &self.client, &self.server, session);
        self.writer.write_all(line.as_bytes()).await?;
        self.writer.flush().await
    }

    /// Reads one more line (admin requests).
    pub async fn read_line(&mut self) -> Result<Vec<u8>, String> {
        read_line(&mut self.reader).await
    }
}

/// Runs a collector on a runtime of its own (two worker threads) until
/// SIGINT or SIGTERM; `ready` is called once it listens (to print the
/// variables agents need).
pub fn run(opts: Options, ready: impl FnOnce(&Collector)) -> Result<(), CollectError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("clrprof-collect")
        .enable_all()
        .build()
        .map_err(CollectError::io("cannot start the async runtime"))?;
    rt.block_on(async move {
        let collector = Collector::bind(opts).await?;
        ready(&collector);
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(CollectError::io("cannot watch SIGTERM"))?;
        collector
            .serve(async move {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            })
            .await
    })
}
