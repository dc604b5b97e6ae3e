//! Small traces and snapshots that claim huge amounts (issue 38, item 2),
//! each built here, loaded by the real `clrprof` under a memory limit on
//! the child (`RLIMIT_DATA` = the memory rule's budget, 256 MiB + 16 x the
//! file's size): read within the rule (peak resident memory asserted), or
//! refused with a clear error; never a crash. Then the services: the UI
//! with a good log and a file over its budget open at once keeps serving
//! the good one and shows the other as failed with the reason; the
//! collector receiving a bomb from a token holder stays up, marks the
//! session ended, and says why the session could not be added to its
//! dataset when it cannot.
//!
//! `UPDATE_SEEDS=1` also writes the bombs to `fuzz/seeds/` (seeds of the
//! `nettrace` and `gcdump` fuzz targets).

use clrprof::eventpipe::{ThreadId, Timestamp};
use clrprof_gen::nettrace::events::{self, AllocationTick, Payload};
use clrprof_gen::nettrace::{EventOut, KindDef, NetTraceWriter, TraceInfo, WriterOptions};
use std::io::{BufRead, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

const RUNTIME: &str = "Microsoft-Windows-DotNETRuntime";

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_clrprof")
}

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("trace-bombs-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch folder");
    d
}

/// The memory rule's budget for a file of `bytes` bytes.
fn rule(bytes: u64) -> u64 {
    clrprof_cache::child::budget(bytes)
}

fn writer() -> NetTraceWriter<Vec<u8>> {
    let info = TraceInfo {
        sync_time_utc: [2026, 11, 0, 29, 1, 0, 0, 0],
        sync_time_qpc: Timestamp(1_000),
        qpc_frequency: 1_000_000_000,
        pointer_size: 8,
        process_id: 4242,
        processors: 2,
        expected_cpu_sampling_rate: 1000,
    };
    NetTraceWriter::new(Vec::new(), &info, WriterOptions::default()).expect("writer")
}

fn kind(event_id: u32, version: u32) -> KindDef {
    KindDef { provider: RUNTIME, event_id, name: "", keywords: 0x40_0001, version, level: 5, opcode: None }
}

fn event(w: &mut NetTraceWriter<Vec<u8>>, kind: clrprof::eventpipe::MetadataId, ts: i64, stack: &[u64], payload: &[u8]) {
    w.event(&EventOut { kind, thread: ThreadId(7), processor: 0, timestamp: Timestamp(ts), stack, payload }).expect("event");
}

/// A GC whose `GC/BulkSurvivingObjectRanges` claims `ranges` ranges of
/// 2^64 - 1 bytes each (the log's `v` lines being 1 GiB at most, one such
/// range was 2^34 lines).
fn surviving_range_bomb(ranges: u32) -> Vec<u8> {
    let mut w = writer();
    let start = w.define(&events::GC_START);
    let surviving = w.define(&kind(21, 0));
    let stop = w.define(&events::GC_STOP);
    let mut p = Vec::new();
    events::gc_start(&mut Payload::new(&mut p, 8), 1, 2, true);
    event(&mut w, start, 2_000, &[], &p);
    let mut s = Vec::new();
    s.extend_from_slice(&0u32.to_le_bytes()); // Index
    s.extend_from_slice(&ranges.to_le_bytes()); // Count
    s.extend_from_slice(&9u16.to_le_bytes()); // ClrInstanceID
    for k in 0..u64::from(ranges) {
        s.extend_from_slice(&(0x7f00_0000_0000u64 + (k << 12)).to_le_bytes()); // RangeBase
        s.extend_from_slice(&u64::MAX.to_le_bytes()); // RangeLength
    }
    event(&mut w, surviving, 3_000, &[], &s);
    let mut p = Vec::new();
    events::gc_stop(&mut Payload::new(&mut p, 8), 1, 2);
    event(&mut w, stop, 4_000, &[], &p);
    w.finish().expect("finish").0
}

/// `events` sampled allocations on one stack of `depth` frames, each of
/// another size (a stack line per allocation, were stacks copied per
/// type and size).
fn deep_stack_bomb(depth: u64, events: u64) -> Vec<u8> {
    let mut w = writer();
    let tick = w.define(&events::ALLOCATION_TICK);
    let stack: Vec<u64> = (0..depth).map(|k| 0x7f10_0000_0000 + 0x40 * k).collect();
    let mut p = Vec::new();
    for k in 0..events {
        AllocationTick {
            amount: 100_000,
            large: false,
            type_id: 0x100,
            type_name: "T",
            address: 0x7f20_0000_0000 + 0x100 * k,
            size: 24 + 8 * k,
        }
        .encode(&mut Payload::new(&mut p, 8));
        event(&mut w, tick, 2_000 + k as i64, &stack, &p);
    }
    w.finish().expect("finish").0
}

/// A `.gcdump` of `nodes` objects of 2 GB - 1 each that all share one
/// node's description in the node blob (4 bytes per object in the file).
fn gcdump_shared_label_bomb(nodes: u32) -> Vec<u8> {
    gcdump_synth::objects(nodes, true)
}

/// What a limited run gave.
struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    /// Peak resident memory, bytes.
    max_rss: u64,
}

/// Runs `clrprof ARGS` with its data limited to `limit` bytes; gives its
/// output and peak resident memory (`wait4`).
fn run_limited(args: &[&std::ffi::OsStr], limit: u64) -> Run {
    let mut cmd = Command::new(exe());
    cmd.args(args).env("CLRPROF_CACHE", "off").stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // Safety: only setrlimit (async-signal-safe) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let l = libc::rlimit { rlim_cur: limit as libc::rlim_t, rlim_max: limit as libc::rlim_t };
            if libc::setrlimit(libc::RLIMIT_DATA, &l) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("start clrprof");
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let o = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let e = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let mut status = 0;
    // Safety: a zeroed rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // Safety: waits for our own child, whose pid std gave us.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t, "wait4");
    Run {
        status: ExitStatus::from_raw(status),
        stdout: o.join().unwrap_or_default(),
        stderr: e.join().unwrap_or_default(),
        max_rss: usage.ru_maxrss as u64 * 1024,
    }
}

/// Writes `bytes` to `dir/name`; under `UPDATE_SEEDS=1`, a bomb of at
/// most 64 KB also to `fuzz/seeds/TARGET/name` (a seed of that fuzz
/// target; larger ones have a small variant made for the purpose).
fn keep(dir: &Path, name: &str, target: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write the bomb");
    if std::env::var_os("UPDATE_SEEDS").is_some() && bytes.len() <= 64 << 10 {
        let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds").join(target);
        std::fs::create_dir_all(&seeds).expect("seeds folder");
        std::fs::write(seeds.join(name), bytes).expect("write the seed");
    }
    p
}

/// Loads `file` with `clrprof summary` under the rule's budget: it must
/// be read within the rule (or refused with an error naming the file's
/// problem), never killed.
fn within_the_rule(file: &Path) -> Run {
    let size = std::fs::metadata(file).expect("size").len();
    let limit = rule(size);
    let r = run_limited(&["summary".as_ref(), file.as_os_str()], limit);
    eprintln!(
        "{}: {size} bytes, budget {} MiB, peak RSS {:.1} MiB, {}",
        file.display(),
        limit >> 20,
        r.max_rss as f64 / (1 << 20) as f64,
        r.status
    );
    assert!(r.status.signal().is_none(), "killed ({}), peak RSS {} bytes: {}", r.status, r.max_rss, r.stderr);
    assert!(r.status.success(), "refused: {}", r.stderr);
    assert!(r.max_rss <= limit, "peak RSS {} bytes over the rule's {limit} for a {size}-byte file", r.max_rss);
    r
}

#[test]
fn a_surviving_range_of_2_to_the_64_bytes_is_read_within_the_rule() {
    let dir = scratch("ranges");
    let bytes = surviving_range_bomb(1);
    assert!(bytes.len() < 1024, "{} bytes", bytes.len());
    let one = keep(&dir, "surviving-range-2e64.nettrace", "nettrace", &bytes);
    let r = within_the_rule(&one);
    assert!(r.stdout.contains("Gen 2 collections"), "{}", r.stdout);
    // Many such ranges: the budget of lines is the trace's, not each
    // range's.
    let many = keep(&dir, "surviving-ranges-2e64-x2000.nettrace", "nettrace", &surviving_range_bomb(2000));
    within_the_rule(&many);
    // The cut is said, in the facts the model keeps.
    let imported = clrprof::import::nettrace::to_log(&surviving_range_bomb(3)).expect("import");
    assert!(imported.facts.warnings.iter().any(|w| w.contains("cut short")), "{:?}", imported.facts.warnings);
    assert!(imported.log.len() < 64 << 20, "{} bytes of log", imported.log.len());
}

#[test]
fn one_deep_stack_with_many_sizes_is_written_once() {
    let dir = scratch("stack");
    let bytes = deep_stack_bomb(4_000, 6_000);
    let file = keep(&dir, "deep-stack-many-sizes.nettrace", "nettrace", &bytes);
    within_the_rule(&file);
    keep(&dir, "deep-stack-many-sizes-small.nettrace", "nettrace", &deep_stack_bomb(1_000, 500));
    // The made log holds the frames once, not once per size.
    let imported = clrprof::import::nettrace::to_log(&bytes).expect("import");
    assert!(imported.log.len() < 2 * bytes.len(), "{} bytes of log for a {}-byte trace", imported.log.len(), bytes.len());
    let model = clrprof::model::load_trace(&bytes, &Default::default(), |_| {}).expect("load");
    assert_eq!(model.allocations().len(), 6_000);
}

/// Objects that share one description are refused (only undefined nodes
/// share theirs); as many objects described each on its own, the
/// smallest a description can be (6 bytes each), are read within the
/// rule.
#[test]
fn a_gcdump_of_shared_descriptions_is_refused_and_one_of_small_objects_read_within_the_rule() {
    let dir = scratch("gcdump");
    let bytes = gcdump_shared_label_bomb(2_000_000);
    let file = keep(&dir, "shared-label-2gb-objects.gcdump", "gcdump", &bytes);
    let size = bytes.len() as u64;
    let r = run_limited(&["summary".as_ref(), file.as_os_str()], rule(size));
    eprintln!("{}: {size} bytes, peak RSS {:.1} MiB, {}", file.display(), r.max_rss as f64 / (1 << 20) as f64, r.status);
    assert_eq!(r.status.code(), Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("a node label of its own (only undefined nodes share one)"), "{}", r.stderr);
    // The error names the offset of the second node's label.
    assert!(r.stderr.contains("byte"), "{}", r.stderr);
    let small = keep(&dir, "many-small-objects.gcdump", "gcdump", &gcdump_synth::objects(2_000_000, false));
    within_the_rule(&small);
    keep(&dir, "shared-label-2gb-objects-small.gcdump", "gcdump", &gcdump_shared_label_bomb(5_000));
}

/// `clrprof ui` on a good log and a file over its budget (a trace, with a
/// budget of 300 MiB forced through `CLRPROF_LOAD_MEMORY_MB`, that needs
/// more): the good log is served, the other is shown as failed with the
/// reason, the server stays up. And the surviving-range bomb under the
/// default budget: read (or failed), the server up.
#[test]
fn the_ui_keeps_serving_the_good_log_beside_a_file_over_its_budget() {
    let dir = scratch("ui");
    let good = dir.join("good.log");
    let gen = Command::new(exe()).args(["gen", "--preset", "tiny", "--objects", "2000", "-o"]).arg(&good).output().expect("clrprof gen");
    assert!(gen.status.success(), "{}", String::from_utf8_lossy(&gen.stderr));
    // A heavy (honest) trace: many distinct deep stacks.
    let heavy = keep(&dir, "heavy.nettrace", "nettrace", &heavy_trace());
    let bomb = keep(&dir, "surviving-range-2e64.nettrace", "nettrace", &surviving_range_bomb(1));
    let (mut ui, addr, token) = start_ui(&[good.as_os_str(), heavy.as_os_str(), bomb.as_os_str()], Some(300));
    let logs = wait_loaded(&addr, &token, 3);
    let state = |k: usize| logs[k]["state"].as_str().unwrap_or("").to_string();
    assert_eq!(state(0), "ready", "{logs:#?}");
    assert_eq!(state(1), "failed", "{logs:#?}");
    let why = logs[1]["error"].as_str().unwrap_or("");
    assert!(why.contains("more memory than its budget of 300 MiB"), "{why}");
    assert!(state(2) == "ready" || state(2) == "failed", "{logs:#?}");
    let (code, body) = get(&addr, &format!("/api/log/0/summary?token={token}"));
    assert_eq!(code, 200, "{body}");
    assert!(ui.try_wait().expect("poll the UI").is_none(), "the UI stopped");
    let _ = ui.kill();
    let _ = ui.wait();
}

/// 800 allocations on distinct stacks of 3,000 frames each, whose frames
/// are all distinct: honest, and heavy to load (its model holds every
/// frame of every stack; 400 such stacks, a peak of 233 MB, came within
/// the 300 MiB budget once the import stopped writing log text).
fn heavy_trace() -> Vec<u8> {
    let mut w = writer();
    let tick = w.define(&events::ALLOCATION_TICK);
    let mut p = Vec::new();
    for k in 0..800u64 {
        let stack: Vec<u64> = (0..3_000u64).map(|f| 0x7f10_0000_0000 + 0x10_0000 * k + 0x40 * f).collect();
        AllocationTick {
            amount: 100_000,
            large: false,
            type_id: 0x100 + k,
            type_name: "T",
            address: 0x7f20_0000_0000 + 0x100 * k,
            size: 24,
        }
        .encode(&mut Payload::new(&mut p, 8));
        event(&mut w, tick, 2_000 + k as i64, &stack, &p);
    }
    w.finish().expect("finish").0
}

/// Starts `clrprof ui ARGS` (with a forced budget in MiB if given); gives
/// the server, its address and token.
fn start_ui(args: &[&std::ffi::OsStr], budget_mb: Option<u64>) -> (std::process::Child, String, String) {
    let mut cmd = Command::new(exe());
    cmd.args(["ui", "--listen", "127.0.0.1:0", "--quiet"]).args(args).env("CLRPROF_CACHE", "off");
    if let Some(mb) = budget_mb {
        cmd.env("CLRPROF_LOAD_MEMORY_MB", mb.to_string());
    }
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("start clrprof ui");
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    stdout.read_line(&mut first).expect("read the address");
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    let url =
        first.trim().strip_prefix("clrprof ui: open http://").unwrap_or_else(|| panic!("unexpected first line {first:?}")).to_string();
    let (addr, token) = url.split_once("/?token=").expect("address and token");
    (child, addr.to_string(), token.to_string())
}

/// Polls `/api/logs` until none of the first `n` logs is loading (at
/// most 5 minutes); gives the list.
fn wait_loaded(addr: &str, token: &str, n: usize) -> Vec<serde_json::Value> {
    for _ in 0..3000 {
        let (code, body) = get(addr, &format!("/api/logs?token={token}"));
        assert_eq!(code, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        let logs = v.as_array().cloned().or_else(|| v["logs"].as_array().cloned()).expect("a list of logs");
        if logs.len() >= n && logs.iter().take(n).all(|l| l["state"] != "loading") {
            return logs;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("the logs did not load within 5 minutes");
}

fn get(addr: &str, path: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the UI");
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).expect("send");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("read the answer");
    let code = text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let body = match text.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        true => body.split_once("\r\n").map_or("", |(_, rest)| rest).rsplit_once("\r\n0\r\n").map_or(body, |(b, _)| b).to_string(),
        false => body.to_string(),
    };
    (code, body)
}

/// `clrprof collect --dataset`: a token holder streams the heavy trace
/// (over a 300 MiB budget) and then a good log; the collector stays up,
/// marks both sessions ended, says why the first could not be added to
/// the dataset, and adds the second.
#[test]
fn the_collector_stays_up_when_a_session_is_over_its_budget() {
    use clrprof_wire::Content;
    let dir = scratch("collect");
    let sessions = dir.join("sessions");
    let dataset = dir.join("dataset");
    let mut child = Command::new(exe())
        .args(["collect", "--listen", "127.0.0.1:0", "--dir"])
        .arg(&sessions)
        .arg("--dataset")
        .arg(&dataset)
        .env("CLRPROF_LOAD_MEMORY_MB", "300")
        .env("CLRPROF_CACHE", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start clrprof collect");
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let (mut target, mut token) = (String::new(), String::new());
    for _ in 0..2 {
        let mut line = String::new();
        out.read_line(&mut line).expect("read the collector's variables");
        if let Some(t) = line.trim().strip_prefix("CLRPROF_TARGET=") {
            target = t.to_string();
        } else if let Some(t) = line.trim().strip_prefix("CLRPROF_TOKEN=") {
            token = t.to_string();
        }
    }
    let token = clrprof_wire::Token::from_hex(&token).expect("token");
    let (tx, said) = std::sync::mpsc::channel::<String>();
    let mut err = std::io::BufReader::new(child.stderr.take().expect("stderr"));
    std::thread::spawn(move || {
        let mut line = String::new();
        while err.read_line(&mut line).is_ok_and(|n| n > 0) {
            let _ = tx.send(line.clone());
            line.clear();
        }
    });
    let send = |program: &str, content: Content, bytes: &[u8]| -> String { agent::stream(&target, &token, program, content, bytes) };
    let heavy = send("heavy", Content::NetTrace, &heavy_trace());
    let good_log = {
        let o = Command::new(exe()).args(["gen", "--preset", "tiny", "--objects", "2000", "-o", "-"]).output().expect("gen");
        assert!(o.status.success());
        o.stdout
    };
    let good = send("good", Content::Log, &good_log);
    // Both end; the heavy one is refused by the dataset with its reason,
    // the good one added.
    let mut lines = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    let done = |lines: &[String], name: &str| lines.iter().any(|l| l.contains(&format!("session {name} ")) && l.contains("dataset"));
    while !(done(&lines, &heavy) && done(&lines, &good)) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match said.recv_timeout(left) {
            Ok(l) => lines.push(l),
            Err(_) => panic!("the collector did not finish both sessions: {lines:#?}"),
        }
    }
    let text = lines.join("");
    assert!(
        lines.iter().any(|l| l.contains(&heavy) && l.contains("not added") && l.contains("more memory than its budget of 300 MiB")),
        "{text}"
    );
    assert!(lines.iter().any(|l| l.contains(&good) && l.contains("added to the dataset")), "{text}");
    assert!(child.try_wait().expect("poll").is_none(), "the collector stopped: {text}");
    for name in [&heavy, &good] {
        let rec: serde_json::Value =
            serde_json::from_slice(&std::fs::read(sessions.join(format!("{name}.json"))).expect("record")).expect("JSON");
        assert_eq!(rec["state"], "ended", "{rec:#}");
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A minimal `.gcdump` writer (PerfView's layout, version 9, as
/// `tests/gcdump_reader.rs` writes them) for the bombs.
mod gcdump_synth {
    const SIGNATURE: &[u8] = b"\x14\x00\x00\x00!FastSerialization.1";

    struct W {
        b: Vec<u8>,
    }

    impl W {
        fn i32(&mut self, v: i32) {
            self.b.extend_from_slice(&v.to_le_bytes());
        }
        fn i64(&mut self, v: i64) {
            self.b.extend_from_slice(&v.to_le_bytes());
        }
        fn string(&mut self, s: Option<&str>) {
            match s {
                None => self.i32(-1),
                Some(s) => {
                    self.i32(s.len() as i32);
                    self.b.extend_from_slice(s.as_bytes());
                }
            }
        }
        fn begin(&mut self, name: &str, version: i32, min_reader: i32) {
            self.b.extend_from_slice(&[4, 4, 1]);
            self.i32(version);
            self.i32(min_reader);
            self.string(Some(name));
            self.b.push(6);
        }
    }

    fn compressed(v: i32, out: &mut Vec<u8>) {
        let fits = |bits: u32| (v << (32 - bits)) >> (32 - bits) == v;
        let n = (1..=4).find(|&k| fits(7 * k)).unwrap_or(5);
        for k in (1..n).rev() {
            out.push(((v >> (7 * k)) as u8) | 0x80);
        }
        out.push((v & 0x7F) as u8);
    }

    /// Node 0 is a root group naming node 1; nodes 1.. are objects of
    /// type 2 and size 2^31 - 1 without children, which all share one
    /// description (`shared`) or have one each.
    pub fn objects(nodes: u32, shared: bool) -> Vec<u8> {
        let mut w = W { b: SIGNATURE.to_vec() };
        w.begin("GCHeapDump", 9, 8);
        w.begin("Graphs.MemoryGraph", 1, 0);
        w.i64(i64::from(nodes) * i64::from(i32::MAX));
        w.i32(0);
        w.i32(3);
        for (name, size) in [("UNDEFINED", 0), ("[static vars]", 0), ("Big", i32::MAX)] {
            w.string(Some(name));
            w.i32(size);
            w.string(None);
        }
        let mut blob = Vec::new();
        // Node 0: type 1, one child, node 1.
        compressed(1 << 1, &mut blob);
        // The root holds every object of the file of small objects (each
        // object a root's child, as a heap's statics hold theirs); the
        // shared-label bomb's root holds the first alone.
        let held = if shared { 1 } else { nodes };
        compressed(held as i32, &mut blob);
        for k in 1..=held {
            compressed(k as i32, &mut blob);
        }
        // Type 2's size is the objects' (no size of their own).
        let mut labels = Vec::with_capacity(nodes as usize);
        for k in 0..nodes {
            if k == 0 || !shared {
                labels.push(blob.len() as u32);
                compressed(2 << 1, &mut blob);
                compressed(0, &mut blob);
            } else {
                labels.push(labels[0]);
            }
        }
        w.i32(nodes as i32 + 1);
        w.b.extend_from_slice(&0u32.to_le_bytes());
        for l in labels {
            w.b.extend_from_slice(&l.to_le_bytes());
        }
        w.i32(blob.len() as i32);
        w.b.extend_from_slice(&blob);
        w.i32(0); // no addresses
        w.b.extend_from_slice(&[8, 1]); // 64-bit
        w.b.push(6); // end of the graph
        w.b.push(1); // 64-bit
        w.b.extend_from_slice(&1f32.to_le_bytes());
        w.b.extend_from_slice(&1f32.to_le_bytes());
        w.b.push(1); // no JSHeapInfo
        w.b.push(1); // no DotNetHeapInfo
        w.string(Some("a bomb"));
        w.i64(0);
        w.string(Some("machine"));
        w.string(Some("app"));
        w.i32(4242);
        w.i64(0);
        w.i64(0);
        w.i32(0);
        w.b.push(6); // end of GCHeapDump
        w.b.push(6); // end of the objects
        let table = w.b.len() as u32;
        w.i32(0);
        let suffix = w.b.len() as u32;
        w.b.extend_from_slice(&table.to_le_bytes());
        w.b.extend_from_slice(&suffix.to_le_bytes());
        w.b
    }
}

/// A token holder streaming a session, as an agent does (the wire crate's
/// handshake, then data frames and the end frame).
mod agent {
    use clrprof_wire::frame::{small_frame, HEADER};
    use clrprof_wire::{handshake, Content, FrameHeader, FrameKind, Hello, Nonce, Role, Token};
    use std::io::{BufRead, BufReader, Read, Write};

    /// Streams `bytes` as a new session of `program`; gives the session's
    /// name once the collector has acknowledged every byte.
    pub fn stream(target: &str, token: &Token, program: &str, content: Content, bytes: &[u8]) -> String {
        let s = std::net::TcpStream::connect(target).expect("connect to the collector");
        s.set_read_timeout(Some(std::time::Duration::from_secs(60))).expect("timeout");
        let mut r = BufReader::new(s);
        let mut line = Vec::new();
        r.read_until(b'\n', &mut line).expect("challenge");
        let server = handshake::parse_challenge(&line).expect("a challenge");
        let client = Nonce([5; 32]);
        let h = Hello {
            role: Role::Stream,
            nonce: clrprof_wire::token::to_hex(&client.0),
            pid: 4242,
            program: program.into(),
            runtime: "8.0.4".into(),
            session: None,
            spool: None,
            spool_from: None,
            catch_up: false,
            resume_mac: None,
            content,
        };
        let hello = handshake::hello_line(token, &server, &h).expect("hello");
        r.get_mut().write_all(hello.as_bytes()).expect("send the hello");
        line.clear();
        r.read_until(b'\n', &mut line).expect("the answer");
        let session = handshake::parse_ok(&line, token, &client, &server).expect("accepted");
        for piece in bytes.chunks(64 << 10) {
            let w = r.get_mut();
            w.write_all(&FrameHeader::encode(FrameKind::Data, piece.len() as u32)).expect("data");
            w.write_all(piece).expect("data");
        }
        r.get_mut().write_all(&small_frame(FrameKind::End, b"")).expect("end");
        let mut acked = 0u64;
        while acked < bytes.len() as u64 {
            let mut h = [0u8; HEADER];
            r.read_exact(&mut h).expect("a frame from the collector");
            let h = FrameHeader::parse(h).expect("a frame header");
            let mut p = vec![0u8; h.len as usize];
            r.read_exact(&mut p).expect("a frame's payload");
            if h.kind == FrameKind::Ack {
                acked = u64::from_be_bytes(p[..8].try_into().expect("8 bytes"));
            }
        }
        session
    }
}
