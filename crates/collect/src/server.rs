//! The service: listeners, the handshake, and dispatch by role.

use crate::buffers::Buffers;
use crate::conn::BoxConn;
use crate::refusals::Refusals;
use crate::registry::Registry;
use crate::waiting::{self, Ticket, Waiting};
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
    /// The most bytes all sessions together may hold for their unfinished
    /// lines; past it the session holding the most is cut (see
    /// [`buffers`](crate::buffers)).
    pub max_buffered: usize,
    /// The most connections waiting for their handshake; at the cap a new
    /// connection closes the one waiting longest (see
    /// [`waiting`](crate::waiting)).
    pub max_waiting: usize,
    /// How long `clrprof ctl` waits for an agent's reply.
    pub reply_timeout: Duration,
    /// Called, off the async threads, with each session's log once the
    /// session has ended whole (not when it is cut: its log may go on from
    /// the agent's spool).
    pub on_ended: Option<OnEnded>,
    /// TLS on the agents' endpoint (`--tls`): the key and certificate, or
    /// the collector's own (see [`tls`](crate::tls)).
    pub tls: Option<crate::tls::TlsFiles>,
    /// Listen beyond loopback without TLS (`--plain-off-loopback`);
    /// otherwise such a collector does not start.
    pub plain_off_loopback: bool,
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
            max_buffered: crate::buffers::MAX_BUFFERED,
            max_waiting: crate::waiting::default_cap(),
            reply_timeout: Duration::from_secs(60),
            on_ended: None,
            tls: None,
            plain_off_loopback: false,
        }
    }
}

/// What every connection's task shares.
pub(crate) struct Ctx {
    pub opts: Options,
    pub token: Token,
    pub refusals: Refusals,
    pub registry: Registry,
    pub buffers: Arc<Buffers>,
    pub tls: Option<crate::tls::TlsServer>,
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

/// Where a Unix socket is bound: the admin socket in the collector's own
/// directory (checked private), or the agents' socket at a path the user
/// chose, maybe in a shared folder.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SocketPlace {
    /// In the collector's directory, which no other user can write to.
    Private,
    /// Anywhere.
    Chosen,
}

/// Binds a Unix socket at `path`, replacing a socket file of the
/// collector's user that nobody listens on (a collector that was killed
/// leaves one behind), never any other file. A socket of another user is
/// left alone and refused at a chosen path, naming its owner; in the
/// collector's private directory (where it can only be left over from a
/// time the directory was open to others) it is removed, and said.
fn bind_unix(path: &Path, place: SocketPlace) -> Result<UnixListener, CollectError> {
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        let me = crate::files::euid();
        if !meta.file_type().is_socket() {
            return Err(CollectError::Invalid(format!(
                "{} exists and is not a socket (owned by uid {}): left as it is; remove it or choose another path",
                path.display(),
                meta.uid()
            )));
        }
        if meta.uid() != me {
            if place == SocketPlace::Chosen {
                return Err(CollectError::Invalid(format!(
                    "{} is a socket of another user (uid {}, not the collector's uid {me}): not used, not removed (it may have been planted); choose a path in a folder of your own",
                    path.display(),
                    meta.uid()
                )));
            }
            crate::say!(
                "clrprof collect: {} was a socket of another user (uid {}), left from a time the directory was open to others: removed, not used",
                path.display(),
                meta.uid()
            );
        } else if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(CollectError::Invalid(format!("{}: another collector is listening there", path.display())));
        }
        std::fs::remove_file(path).map_err(CollectError::io(format!("cannot remove the stale socket {}", path.display())))?;
    }
    let l = UnixListener::bind(path).map_err(CollectError::io(format!("cannot listen on {}", path.display())))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(CollectError::io(format!("cannot restrict {}", path.display())))?;
    Ok(l)
}

/// The queue of connections the kernel holds for the collector to accept
/// (as the web UI's): a flood of connections fills it less quickly.
pub const LISTEN_BACKLOG: u32 = 4096;

/// Binds a TCP listener at `addr` with a queue of [`LISTEN_BACKLOG`]
/// (tokio's `bind` would give 1024).
fn listen_tcp(addr: &std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(*addr)?;
    socket.listen(LISTEN_BACKLOG)
}

impl Collector {
    /// Creates the directory (mode 0700) or checks it (see
    /// [`files`](crate::files)), loads or makes the token, closes records
    /// a killed collector left live, and binds the listener and the admin
    /// socket.
    pub async fn bind(opts: Options) -> Result<Collector, CollectError> {
        if !opts.listen.is_local() && opts.tls.is_none() && !opts.plain_off_loopback {
            return Err(CollectError::Invalid(format!(
                "{} is beyond loopback, and without --tls the profiles would cross the network in clear: \
                 add --tls (agents then verify the collector by the fingerprint it prints), or \
                 --plain-off-loopback if the network is yours (a tunnel, a VPN)",
                opts.listen
            )));
        }
        crate::files::check_dir(&opts.dir)?;
        let token_path = opts.token_file.clone().unwrap_or_else(|| opts.dir.join(TOKEN_FILE));
        let (token, token_made) = token_file::load_or_create(&token_path)?;
        let stale = record::close_stale(&opts.dir)?;
        let tls = match &opts.tls {
            Some(files) => Some(crate::tls::load_or_make(files, &opts.dir, &opts.listen)?),
            None => None,
        };
        let (listener, target) = match &opts.listen {
            ListenAddr::Tcp(a) => {
                let l = listen_tcp(a).map_err(CollectError::io(format!("cannot listen on {a}")))?;
                let local = l.local_addr().map_err(CollectError::io("cannot read the listening address"))?;
                (Listener::Tcp(l), local.to_string())
            }
            ListenAddr::Unix(p) => (Listener::Unix(bind_unix(p, SocketPlace::Chosen)?, p.clone()), format!("unix:{}", p.display())),
        };
        let admin_path = opts.dir.join(ADMIN_SOCKET);
        let admin = bind_unix(&admin_path, SocketPlace::Private)?;
        let buffers = Arc::new(Buffers::new(opts.max_buffered));
        let ctx = Arc::new(Ctx { opts, token, refusals: Refusals::default(), registry: Registry::default(), buffers, tls });
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

    /// With `--tls`: the certificate's fingerprint
    /// (`CLRPROF_TLS_FINGERPRINT`), its file, and whether this start made
    /// it.
    pub fn tls(&self) -> Option<(clrprof_wire::tls::Fingerprint, &Path, bool)> {
        self.ctx.tls.as_ref().map(|t| {
            let (file, made) = t.cert_file();
            (t.fingerprint(), file, made)
        })
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
    ///
    /// Agents and the admin socket are accepted by loops of their own, so
    /// that neither waits on the other; connections waiting for their
    /// handshake are capped (see [`waiting`](crate::waiting)).
    pub async fn serve(self, shutdown: impl Future<Output = ()>) -> Result<(), CollectError> {
        let ctx = self.ctx;
        // The admin socket's connections wait apart: only the collector's
        // user can reach it, and a flood on the agents' port must not close
        // them. Out of file descriptors, both make room among the agents'.
        let waiting = Arc::new(Waiting::new(ctx.opts.max_waiting));
        let admin_waiting = Arc::new(Waiting::new(ctx.opts.max_waiting));
        let tasks = Arc::new(std::sync::Mutex::new(tokio::task::JoinSet::new()));
        let agents = accept_loop(
            Arc::clone(&ctx),
            [Arc::clone(&waiting), Arc::clone(&waiting)],
            Arc::clone(&tasks),
            Endpoint::Agents(&self.listener),
        );
        let admin = accept_loop(Arc::clone(&ctx), [admin_waiting, Arc::clone(&waiting)], Arc::clone(&tasks), Endpoint::Admin(&self.admin));
        tokio::select! {
            _ = shutdown => {}
            _ = agents => {}
            _ = admin => {}
        }
        // Let every session write its final record.
        for name in ctx.registry.names() {
            ctx.registry.cancel(&name);
        }
        let mut tasks = std::mem::take(&mut *tasks_lock(&tasks));
        let _ = tokio::time::timeout(Duration::from_secs(5), async { while tasks.join_next().await.is_some() {} }).await;
        if let Listener::Unix(_, p) = &self.listener {
            let _ = std::fs::remove_file(p);
        }
        let _ = std::fs::remove_file(&self.admin_path);
        Ok(())
    }
}

type Tasks = Arc<std::sync::Mutex<tokio::task::JoinSet<()>>>;

fn tasks_lock(t: &Tasks) -> std::sync::MutexGuard<'_, tokio::task::JoinSet<()>> {
    t.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Where connections come from.
enum Endpoint<'a> {
    Agents(&'a Listener),
    Admin(&'a UnixListener),
}

/// How often a failure to accept is said at most (the rest are counted).
const ACCEPT_ERROR_EVERY: Duration = Duration::from_secs(10);

/// Accepts connections from `endpoint` until the collector stops: never
/// stops on an error, never spins (see [`waiting`](crate::waiting) for
/// running out of file descriptors). `[admit, shed]`: where the accepted
/// connections wait for their handshake, and where room is made when the
/// process runs out of file descriptors.
async fn accept_loop(ctx: Arc<Ctx>, [admit, waiting]: [Arc<Waiting>; 2], tasks: Tasks, endpoint: Endpoint<'_>) {
    let admin = matches!(endpoint, Endpoint::Admin(_));
    let what = if admin { "admin accept" } else { "accept" };
    let mut pause = waiting::OUT_OF_FILES_PAUSE;
    let mut said: Option<std::time::Instant> = None;
    let mut unsaid = 0u64;
    loop {
        admit.room().await;
        let accepted = match &endpoint {
            Endpoint::Agents(l) => accept(l).await,
            Endpoint::Admin(l) => l.accept().await.map(|(c, _)| (Box::new(c) as BoxConn, "admin socket".to_string())),
        };
        let e = match accepted {
            Ok((conn, peer)) => {
                pause = waiting::OUT_OF_FILES_PAUSE;
                let ticket = admit.admit();
                let ctx = Arc::clone(&ctx);
                let mut tasks = tasks_lock(&tasks);
                // Reap the tasks that have ended, so the set stays small.
                while tasks.try_join_next().is_some() {}
                tasks.spawn(async move { handle(ctx, conn, peer, admin, ticket).await });
                continue;
            }
            Err(e) => e,
        };
        if waiting::is_one_connections(&e) {
            continue;
        }
        // Said at most once per ACCEPT_ERROR_EVERY, with how many were not.
        if said.map_or(true, |t| t.elapsed() >= ACCEPT_ERROR_EVERY) {
            let more = if unsaid > 0 { format!(" ({unsaid} more since the last said)") } else { String::new() };
            let (n, cap) = waiting.len_and_cap();
            crate::say!(
                "clrprof collect: {what} failed: {e}{more}; {n} connections waiting for a handshake (cap {cap}), {} closed to make room so far",
                waiting.shed()
            );
            said = Some(std::time::Instant::now());
            unsaid = 0;
        } else {
            unsaid += 1;
        }
        if waiting::is_out_of_files(&e) {
            // Make room, then go on as soon as a socket is let go of.
            if waiting.out_of_files() > 0 {
                pause = waiting::OUT_OF_FILES_PAUSE;
            } else {
                pause = (pause * 2).min(waiting::OUT_OF_FILES_PAUSE_MAX);
            }
            waiting.freed(pause).await;
        } else {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
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

/// Sends the challenge and reads the hello line.
async fn challenge(w: &mut Writer, r: &mut Reader, server: &Nonce, ticket: &Ticket) -> Result<Vec<u8>, String> {
    w.write_all(handshake::challenge_line(server).as_bytes()).await.map_err(|e| format!("cannot send the challenge: {e}"))?;
    ticket.challenged();
    read_line(r).await
}

async fn handle(ctx: Arc<Ctx>, conn: BoxConn, peer: String, admin_socket: bool, ticket: Ticket) {
    let server = match token_file::random_nonce() {
        Ok(n) => n,
        Err(e) => {
            crate::say!("clrprof collect: {e}");
            return;
        }
    };
    // The whole handshake within its deadline, unless the connection is
    // closed before to make room for a newer one.
    let closed = Arc::clone(&ticket.closed);
    // With --tls, TLS first (within the same deadline, its own): nothing
    // of the token handshake is sent before it is up. It is the client's
    // turn from the accept (its ClientHello), so the connection may be
    // closed for a newcomer from then on, as after a challenge.
    let conn = match (&ctx.tls, admin_socket) {
        (Some(tls), false) => {
            ticket.challenged();
            let accepted = tokio::select! {
                r = tokio::time::timeout(ctx.opts.handshake_timeout, tls.acceptor.accept(conn)) => r,
                _ = closed.notified() => {
                    let cap = ticket.cap();
                    ctx.refusals.log(&peer, &format!("closed before its TLS handshake to make room: {cap} connections were waiting for theirs"));
                    return;
                }
            };
            match accepted {
                Ok(Ok(s)) => Box::new(s) as BoxConn,
                Ok(Err(e)) => {
                    ctx.refusals.log(&peer, &format!("TLS handshake failed ({e}); nothing else was read or sent"));
                    return;
                }
                Err(_) => {
                    let s = ctx.opts.handshake_timeout.as_secs_f32();
                    ctx.refusals.log(&peer, &format!("no TLS handshake within {s} s (a client without TLS?); nothing else was sent"));
                    return;
                }
            }
        }
        _ => conn,
    };
    let (r, mut w) = tokio::io::split(conn);
    let mut r = BufReader::new(r);
    let line = tokio::select! {
        r = tokio::time::timeout(ctx.opts.handshake_timeout, challenge(&mut w, &mut r, &server, &ticket)) => r,
        _ = closed.notified() => {
            let cap = ticket.cap();
            ctx.refusals.log(&peer, &format!("closed before its handshake to make room: {cap} connections were waiting for theirs"));
            return;
        }
    };
    ticket.done();
    let hello = match line {
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
