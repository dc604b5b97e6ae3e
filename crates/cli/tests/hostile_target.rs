//! Every capture ends, whatever the target does: a fake .NET process of
//! this user (it maps a file named `libcoreclr.so` and listens on its own
//! `dotnet-diagnostic-PID-0-socket`, so it passes the checks of a real
//! one) acknowledges `CollectTracing` and `StopTracing` and never stops
//! sending a trace (a NetTrace header, then sequence points, about
//! 3 MB/s). `record --sampled -p PID --duration 3`, the same stopped by
//! SIGTERM, `heap-dump PID --timeout 5`, and a capture that reaches
//! `--max-bytes` each end within three times the stated grace (10 s)
//! after the stop is due, keep what arrived, and say it is incomplete;
//! the readers report the kept trace as cut short.
//!
//! And a heap walk whose end never comes: the fake sends the beginning of
//! a real runtime's heap-dump trace (cut before the walk's `GC/Stop`, as
//! a runtime whose full buffer dropped it) and then nothing; `heap-dump`
//! ends once the stream has been silent 5 s, long before its timeout.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// The grace the capture commands state (clrprof_trace::GRACE).
const GRACE: Duration = Duration::from_secs(10);

const FAKE: &str = r#"
import mmap, os, socket, sys, threading, time
lib, head_file, chunk_file, log = sys.argv[1:5]
f = open(lib, "rb")
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
head = open(head_file, "rb").read()
chunk = open(chunk_file, "rb").read()
tmp = os.environ["TMPDIR"]
path = os.path.join(tmp, "dotnet-diagnostic-%d-0-socket" % os.getpid())
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(16)
def reply(payload):
    return b"DOTNET_IPC_V1\0" + (20 + len(payload)).to_bytes(2, "little") + bytes([0xFF, 0x00, 0, 0]) + payload
def exact(c, n):
    b = b""
    while len(b) < n:
        d = c.recv(n - len(b))
        if not d:
            raise OSError("closed")
        b += d
    return b
def serve(c):
    try:
        h = exact(c, 20)
        exact(c, int.from_bytes(h[14:16], "little") - 20)
        with open(log, "a") as f:
            f.write("%d %d\n" % (h[16], h[17]))
        if (h[16], h[17]) in ((2, 2), (2, 3)):
            c.sendall(reply((1).to_bytes(8, "little")))
            c.sendall(head)
            while True:
                c.sendall(chunk)
                time.sleep(0.02)
        else:
            c.sendall(reply((1).to_bytes(8, "little")))
    except OSError:
        pass
    c.close()
open(log, "a").close()
print("ready", flush=True)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"#;

/// A NetTrace V6 header and trace block, and a run of sequence-point
/// blocks (64 KiB), written by hand from the format's description.
fn trace_parts() -> (Vec<u8>, Vec<u8>) {
    let mut head = b"Nettrace".to_vec();
    head.extend(0u32.to_le_bytes());
    head.extend(6u32.to_le_bytes());
    head.extend(0u32.to_le_bytes());
    let mut t = Vec::new();
    for v in [2026u16, 11, 29, 0, 0, 0, 0, 0] {
        t.extend(v.to_le_bytes());
    }
    t.extend(1u64.to_le_bytes());
    t.extend(1_000_000_000u64.to_le_bytes());
    t.extend(8u32.to_le_bytes());
    t.extend(0u32.to_le_bytes());
    head.extend((t.len() as u32 | 1 << 24).to_le_bytes());
    head.extend(t);
    let mut chunk = Vec::new();
    let mut ts = 2u64;
    while chunk.len() + 20 <= 64 << 10 {
        chunk.extend((16u32 | 4 << 24).to_le_bytes());
        chunk.extend(ts.to_le_bytes());
        chunk.extend(0u32.to_le_bytes());
        chunk.extend(0u32.to_le_bytes());
        ts += 1;
    }
    (head, chunk)
}

/// The fake target, killed when dropped.
struct Fake {
    child: Child,
    pid: u32,
    dir: PathBuf,
}

impl Fake {
    fn start(name: &str) -> Fake {
        let (head, chunk) = trace_parts();
        Fake::start_with(name, &head, &chunk)
    }

    /// A fake that sends `head`, then `chunk` every 20 ms (nothing, when
    /// it is empty).
    fn start_with(name: &str, head: &[u8], chunk: &[u8]) -> Fake {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("hostile-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let lib = dir.join("shared/Microsoft.NETCore.App/8.0.0");
        std::fs::create_dir_all(&lib).expect("mkdir");
        std::fs::write(lib.join("libcoreclr.so"), vec![0u8; 4096]).expect("the fake runtime library");
        std::fs::write(dir.join("head.bin"), head).expect("write");
        std::fs::write(dir.join("chunk.bin"), chunk).expect("write");
        let mut child = Command::new("/usr/bin/python3")
            .args(["-c", FAKE])
            .arg(lib.join("libcoreclr.so"))
            .arg(dir.join("head.bin"))
            .arg(dir.join("chunk.bin"))
            .arg(dir.join("commands.log"))
            .env("TMPDIR", &dir)
            .current_dir(&dir)
            .stdout(Stdio::piped())
            .stdin(Stdio::null())
            .spawn()
            .expect("start the fake target");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("the fake's first line");
        assert_eq!(line.trim(), "ready");
        let pid = child.id();
        Fake { child, pid, dir }
    }

    fn commands(&self) -> String {
        std::fs::read_to_string(self.dir.join("commands.log")).unwrap_or_default()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn clrprof(dir: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start clrprof")
}

/// The capture ended by itself within `limit`, failed, said the trace is
/// incomplete, and kept a non-empty file that the reader calls cut short.
fn check_cut(fake: &Fake, what: &str, (out, killed): (Output, bool), limit: Duration, file: &Path, said: &str) -> u64 {
    let err = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(!killed, "{what}: still running after {} s against a target that never stops sending: {err}", limit.as_secs());
    assert!(!out.status.success(), "{what}: a cut capture must fail: {err}");
    assert!(err.contains("INCOMPLETE") && err.contains(said), "{what}: {err}");
    let size = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
    assert!(size > 0, "{what}: what arrived was not kept in {}: {err}", file.display());
    let stats = Command::new(env!("CARGO_BIN_EXE_clrprof")).arg("summary").arg(file).output().expect("run summary");
    let read = String::from_utf8_lossy(&stats.stderr);
    assert!(read.contains("cut short"), "{what}: the kept trace reads as whole: {read}");
    assert!(fake.commands().lines().any(|l| l == "2 3"), "{what}: no CollectTracing2 reached the fake: {}", fake.commands());
    size
}

#[test]
fn record_sampled_with_a_duration_ends_against_a_target_that_never_stops() {
    let fake = Fake::start("duration");
    let pid = fake.pid.to_string();
    let file = fake.dir.join("d.nettrace");
    let child = clrprof(&fake.dir, &["record", "--sampled", "-p", &pid, "--duration", "3", "-o", "d.nettrace"]);
    let limit = Duration::from_secs(3) + 3 * GRACE;
    check_cut(&fake, "record --duration 3", common::finish_within(child, limit), limit, &file, "within 10 s");
    assert!(fake.commands().lines().any(|l| l == "2 1"), "StopTracing was sent: {}", fake.commands());
}

#[test]
fn record_sampled_stopped_by_sigterm_ends_against_a_target_that_never_stops() {
    let fake = Fake::start("sigterm");
    let pid = fake.pid.to_string();
    let file = fake.dir.join("t.nettrace");
    let mut child = clrprof(&fake.dir, &["record", "--sampled", "-p", &pid, "-o", "t.nettrace"]);
    // Once the session runs (its first line), SIGTERM.
    let mut err = BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    err.read_line(&mut line).expect("record's first line");
    assert!(line.contains("EventPipe session with process"), "{line}");
    std::thread::sleep(Duration::from_secs(1));
    // Safety: a signal to a child of this test.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let limit = 3 * GRACE;
    let (mut out, killed) = {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut rest = Vec::new();
            let _ = err.read_to_end(&mut rest);
            let _ = tx.send(rest);
        });
        let (o, k) = common::finish_within(child, limit);
        (Output { stderr: rx.recv_timeout(Duration::from_secs(5)).unwrap_or_default(), ..o }, k)
    };
    out.stderr.splice(0..0, line.into_bytes());
    check_cut(&fake, "record stopped by SIGTERM", (out, killed), limit, &file, "within 10 s");
}

#[test]
fn heap_dump_with_a_timeout_ends_against_a_target_that_never_stops() {
    let fake = Fake::start("heapdump");
    let pid = fake.pid.to_string();
    let file = fake.dir.join("h.nettrace");
    let child = clrprof(&fake.dir, &["heap-dump", &pid, "--eventpipe", "--timeout", "5", "-o", "h.nettrace"]);
    let limit = Duration::from_secs(5) + 3 * GRACE;
    check_cut(&fake, "heap-dump --timeout 5", common::finish_within(child, limit), limit, &file, "within 10 s");
}

#[test]
fn a_capture_stops_at_its_byte_cap() {
    let fake = Fake::start("cap");
    let pid = fake.pid.to_string();
    let file = fake.dir.join("c.nettrace");
    let child = clrprof(&fake.dir, &["record", "--sampled", "-p", &pid, "--max-bytes", "1M", "-o", "c.nettrace"]);
    let limit = 3 * GRACE;
    let size = check_cut(&fake, "record --max-bytes 1M", common::finish_within(child, limit), limit, &file, "cap of 1048576 bytes");
    assert_eq!(size, 1 << 20, "the trace is cut at the cap");
    // heap-dump's cap too.
    let child = clrprof(&fake.dir, &["heap-dump", &pid, "--max-bytes", "300K", "-o", "hc.nettrace"]);
    let size = check_cut(
        &fake,
        "heap-dump --max-bytes 300K",
        common::finish_within(child, limit),
        limit,
        &fake.dir.join("hc.nettrace"),
        "cap of 307200 bytes",
    );
    assert_eq!(size, 300 << 10);
}

/// The bytes of a real heap-dump trace up to its walk's `GC/Stop` (the
/// first after a `GC/BulkNode`), from `clrprof heap-dump` of a .NET 8
/// program holding a heap of small objects and large arrays on four
/// threads (`agent/testapps/costly.cs`); `None` without the runtimes.
fn walk_without_its_end() -> Option<Vec<u8>> {
    use clrprof::eventpipe::{NetTraceReader, Order, ReadOptions};
    use common::dotnet::{self, Runtime};
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("hostile-walk-{}", std::process::id()));
    let dn = dotnet::dotnet(&work)?;
    let dir = dn.app_dir("costly", Runtime::Net8, &work.join("run"));
    let mut program = Command::new(dn.host(Runtime::Net8))
        .args(["costly.dll", "40", "4"])
        .current_dir(&dir)
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start costly");
    let mut line = String::new();
    BufReader::new(program.stdout.take().expect("stdout")).read_line(&mut line).expect("costly's first line");
    let ready: serde_json::Value = serde_json::from_str(line.trim()).expect("costly's ready line");
    let pid = ready["pid"].as_u64().expect("pid").to_string();
    let whole = dir.join("whole.nettrace");
    let out = Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .args(["heap-dump", &pid, "--buffer-mb", "512", "-o"])
        .arg(&whole)
        .output()
        .expect("run heap-dump");
    let _ = program.kill();
    let _ = program.wait();
    assert!(out.status.success(), "heap-dump of costly: {}", String::from_utf8_lossy(&out.stderr));
    let bytes = std::fs::read(&whole).expect("read the dump");
    let mut r = NetTraceReader::with_options(&bytes, ReadOptions { order: Order::File, ..ReadOptions::default() }).expect("header");
    let (mut nodes, mut cut) = (0u64, None);
    while let Some(e) = r.next_event().expect("event") {
        match e.name() {
            "GC/BulkNode" => nodes += 1,
            "GC/Stop" if nodes > 0 => {
                cut = Some(e.offset as usize);
                break;
            }
            _ => {}
        }
    }
    let cut = cut.expect("the walk's GC/Stop");
    assert!(nodes > 0 && cut < bytes.len(), "{nodes} node batches, GC/Stop at {cut} of {}", bytes.len());
    Some(bytes[..cut].to_vec())
}

#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn heap_dump_ends_when_the_walk_goes_silent_without_its_end() {
    let Some(head) = walk_without_its_end() else { return };
    let fake = Fake::start_with("silent", &head, &[]);
    let pid = fake.pid.to_string();
    let file = fake.dir.join("s.nettrace");
    let child = clrprof(&fake.dir, &["heap-dump", &pid, "--timeout", "120", "-o", "s.nettrace"]);
    // 5 s of silence, then StopTracing and the grace: well within the
    // 120 s it waited before.
    let limit = Duration::from_secs(5) + 3 * GRACE;
    let (out, killed) = common::finish_within(child, limit);
    let said = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(!killed, "heap-dump still waiting {} s after the walk went silent: {said}", limit.as_secs());
    assert!(said.contains("INCOMPLETE"), "{said}");
    let size = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    assert_eq!(size, head.len() as u64, "what arrived is kept: {said}");
}
