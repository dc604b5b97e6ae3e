//! Another local user holds thousands of idle connections to the server:
//! a new request must still be answered, at once. The server runs in a
//! child process (this test binary run again, `child_server`), so that the
//! held sockets and the server's count against different processes' file
//! limits, as in the real attack:
//!
//! - `clrprof ui` as it is (`serve`, the default limits), with the usual
//!   default file limit of 1024 (`ulimit -n`), against 20,000 held
//!   connections (or this machine's file limit's worth, less a margin);
//! - a server whose cap is above its file limit (256 files): it runs out
//!   of file descriptors, and must go on answering.

mod common;

use clrprof_gen::{generate, GenOptions, Preset};
use common::*;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The attack's size: the file limit of the process it was found on.
const HELD: usize = 20_000;

/// The bound on a request's answer while the connections are held: a
/// loopback request answered at once takes a few milliseconds; one second
/// is generous, and far less than the 36 s (and the failures) seen before.
const ANSWER_WITHIN: Duration = Duration::from_secs(1);

/// The server's file limit in the first test: the usual default soft
/// limit (`ulimit -n`), far below the connections held.
const SERVE_FILE_LIMIT: u64 = 1024;

/// The tests here each use thousands of file descriptors: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The file limit (soft, hard), the soft one first raised to the hard one.
fn raise_file_limit() -> (u64, u64) {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // Safety: getrlimit and setrlimit read or write the struct given, a
    // valid one of the right type.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        limit.rlim_cur = limit.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
    }
    (limit.rlim_cur, limit.rlim_max)
}

/// The server in a child process, killed (and waited for) when dropped.
struct ChildServer {
    child: Child,
    addr: SocketAddr,
    token: String,
}

impl ChildServer {
    /// Runs `child_server` in `mode` and reads the page's address it
    /// prints.
    fn start(mode: &str, log: &std::path::Path) -> ChildServer {
        let mut child = Command::new(std::env::current_exe().expect("this test binary"))
            .args(["child_server", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
            .env("CLRPROF_UI_TEST_CHILD", mode)
            .env("CLRPROF_UI_TEST_LOG", log)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the server");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let url = loop {
            let line = lines.next().expect("the server's address").expect("a line");
            // The harness writes "test child_server ... " before it.
            if let Some((_, url)) = line.split_once("clrprof ui: open ") {
                break url.to_string();
            }
        };
        // Keep reading, so that the child never writes to a closed pipe.
        std::thread::spawn(move || lines.for_each(drop));
        let rest = url.strip_prefix("http://").expect("http");
        let (addr, token) = rest.split_once("/?token=").expect("address and token");
        ChildServer { child, addr: addr.parse().expect("address"), token: token.to_string() }
    }

    /// The CPU time the server has used (user + system, from /proc).
    fn cpu_time(&self) -> Option<Duration> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).ok()?;
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
        // Safety: sysconf has no preconditions.
        let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        Some(Duration::from_secs_f64(ticks as f64 / per_second as f64))
    }

    /// The server's file descriptors in use (from /proc).
    fn open_files(&self) -> Option<usize> {
        Some(std::fs::read_dir(format!("/proc/{}/fd", self.child.id())).ok()?.count())
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tiny_log() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("ui-held-{}.log", std::process::id()));
    let opts = GenOptions { objects: 2_000, ..Preset::Tiny.options() };
    let file = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    let (file, _) = generate(&opts, file).expect("generate");
    file.into_inner().expect("flush");
    path
}

/// A normal request, as the page makes them: gives its status and how
/// long it took, from the connect to the last byte.
fn timed_get(server: &ChildServer) -> (u16, Duration) {
    let start = Instant::now();
    let mut s = TcpStream::connect_timeout(&server.addr, PATIENCE).expect("connect");
    s.set_read_timeout(Some(PATIENCE)).expect("timeout");
    let request = get_request("/api/logs", Some(&server.addr.to_string()), Some(&server.token), true);
    s.write_all(request.as_bytes()).expect("send");
    let r = read_response(&mut s);
    (r.status, start.elapsed())
}

/// Opens up to `n` connections to the server and sends nothing on them;
/// stops at the first that cannot be opened within 5 s (a server that no
/// longer accepts). Also says how long that took.
fn hold(server: &ChildServer, n: usize) -> (Vec<TcpStream>, String) {
    let start = Instant::now();
    let (mut slow, mut slowest) = (0, Duration::ZERO);
    let mut held = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        match TcpStream::connect_timeout(&server.addr, Duration::from_secs(5)) {
            Ok(s) => held.push(s),
            Err(e) => {
                eprintln!("connection {i} of {n} failed: {e}");
                break;
            }
        }
        let took = t.elapsed();
        slow += usize::from(took > Duration::from_millis(200));
        slowest = slowest.max(took);
    }
    (held, format!("opened in {:?}, {slow} connects over 200 ms, the slowest {slowest:?}", start.elapsed()))
}

/// Makes 5 requests while the connections are held: each must be answered
/// (200) within [`ANSWER_WITHIN`]. Gives the slowest.
fn answered_at_once(server: &ChildServer) -> Duration {
    let mut slowest = Duration::ZERO;
    for i in 0..5 {
        let (status, took) = timed_get(server);
        assert_eq!(status, 200, "request {i}");
        assert!(took < ANSWER_WITHIN, "request {i} took {took:?} with the connections held");
        slowest = slowest.max(took);
    }
    slowest
}

#[test]
fn a_request_is_answered_at_once_while_20000_idle_connections_are_held() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (soft, hard) = raise_file_limit();
    // This process holds the client sockets; a margin for its other files.
    let n = HELD.min(usize::try_from(soft).unwrap_or(usize::MAX).saturating_sub(200));
    let log = tiny_log();
    let server = ChildServer::start("serve", &log);
    assert_eq!(timed_get(&server).0, 200);
    let (held, took) = hold(&server, n);
    let held_n = held.len();
    let cpu_before = server.cpu_time();
    let slowest = answered_at_once(&server);
    let closed = held.iter().filter(|s| is_closed(s)).count();
    eprintln!(
        "test file limit (soft, hard) {soft} {hard}, the server's {SERVE_FILE_LIMIT}; held {held_n} of {n} idle connections ({took}); \
         the server closed {closed} of them and holds {} files; 5 requests answered, the slowest in {slowest:?}; \
         server CPU time {:?} -> {:?}",
        server.open_files().map_or("?".into(), |n| n.to_string()),
        cpu_before,
        server.cpu_time()
    );
    if n < HELD {
        eprintln!("note: {n} connections, not {HELD}: this machine's file limit is {soft}");
    }
    assert_eq!(held.len(), n, "every connection was accepted");
    // The server holds at most its cap (512) of them.
    assert!(closed >= n.saturating_sub(clrprof_ui::MAX_CONNECTIONS + 16), "only {closed} of {n} closed");
    drop(held);
    let _ = std::fs::remove_file(log);
}

#[test]
fn a_server_out_of_file_descriptors_goes_on_answering() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    raise_file_limit();
    let log = tiny_log();
    let server = ChildServer::start("out-of-files", &log);
    assert_eq!(timed_get(&server).0, 200);
    let n = 2_000;
    let (held, took) = hold(&server, n);
    let held_n = held.len();
    let cpu_before = server.cpu_time();
    // While the accept loop has no file descriptor left, it must neither
    // spin nor stop: answered at once, and again a little later.
    let slowest = answered_at_once(&server);
    std::thread::sleep(Duration::from_secs(1));
    let slowest = slowest.max(answered_at_once(&server));
    let closed = held.iter().filter(|s| is_closed(s)).count();
    eprintln!(
        "server file limit {OUT_OF_FILES_LIMIT}, cap 100000; held {held_n} of {n} idle connections ({took}); the server closed {closed} \
         and holds {} files; the slowest of 10 requests {slowest:?}; server CPU time {:?} -> {:?} (over 1 s and 10 requests)",
        server.open_files().map_or("?".into(), |n| n.to_string()),
        cpu_before,
        server.cpu_time()
    );
    assert_eq!(held.len(), n, "every connection was accepted");
    assert!(closed >= n - OUT_OF_FILES_LIMIT as usize, "only {closed} of {n} closed");
    drop(held);
    let _ = std::fs::remove_file(log);
}

/// The server's file limit in `a_server_out_of_file_descriptors_goes_on_answering`.
const OUT_OF_FILES_LIMIT: u64 = 256;

/// Sets this process's soft file limit to `n` (the hard one stays).
fn lower_file_limit(n: u64) {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // Safety: getrlimit and setrlimit read or write the struct given, a
    // valid one of the right type.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        limit.rlim_cur = n.min(limit.rlim_max);
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
    }
}

/// The server of the tests above, in the child process: `serve` (as
/// `clrprof ui` runs it, with a file limit of 1024) or, `out-of-files`,
/// `serve_connections` with a cap above a file limit of 256. Exits when its stdin closes (the test is
/// done or gone). Does nothing in a test run of its own.
#[test]
#[ignore = "the server of the other tests, run in a child process"]
fn child_server() {
    let Ok(mode) = std::env::var("CLRPROF_UI_TEST_CHILD") else { return };
    let log = PathBuf::from(std::env::var_os("CLRPROF_UI_TEST_LOG").expect("CLRPROF_UI_TEST_LOG"));
    std::thread::spawn(|| {
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        std::process::exit(0);
    });
    let say = |url: &str| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "clrprof ui: open {url}");
        let _ = out.flush();
    };
    match mode.as_str() {
        "serve" => {
            lower_file_limit(SERVE_FILE_LIMIT);
            let options = clrprof_ui::ServeOptions {
                logs: vec![log],
                listen: "127.0.0.1:0".parse().expect("address"),
                threads: Some(1),
                quiet: true,
                collector: None,
                child_loader: None,
            };
            clrprof_ui::serve(options, say).expect("serve");
        }
        "out-of-files" => {
            lower_file_limit(OUT_OF_FILES_LIMIT);
            let app = clrprof_ui::App::new(
                clrprof_ui::Token::from_text(TOKEN),
                std::sync::Arc::new(clrprof_ui::LogSet::from_paths(&[log])),
            );
            let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
            rt.block_on(async {
                // As `serve` binds (a queue of 4096).
                let socket = tokio::net::TcpSocket::new_v4().expect("socket");
                socket.bind("127.0.0.1:0".parse().expect("address")).expect("bind");
                let listener = socket.listen(clrprof_ui::LISTEN_BACKLOG).expect("listen");
                let addr = listener.local_addr().expect("address");
                say(&format!("http://{addr}/?token={TOKEN}"));
                let limits = clrprof_ui::ConnectionLimits { max_connections: 100_000, ..Default::default() };
                clrprof_ui::serve_connections(listener, app.router_at(addr), &limits, std::future::pending()).await;
            });
        }
        other => panic!("unknown mode {other}"),
    }
}
