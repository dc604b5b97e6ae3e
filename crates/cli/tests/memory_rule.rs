//! The memory rule (docs/src/security.md, "The memory rule"): small
//! hostile files that claim gigabytes are refused with an error naming the
//! record (or, for compressed files, the bytes and the last complete line
//! read), or read within the rule.
//!
//! Each bomb is written here and loaded by the real `clrprof` binary under
//! an address-space limit (`RLIMIT_AS`) and a CPU-time limit
//! (`RLIMIT_CPU`), and its peak resident memory (`ru_maxrss` from
//! `wait4`) is checked against `clrprof::limits::memory_allowance` of its
//! size after decompression.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use clrprof::limits::{memory_allowance, DecompressLimits};

/// Address space for the child beyond the rule's allowance: the binary's
/// own mappings, thread stacks and the allocator's arenas are reserved
/// address space, not memory used.
const ADDRESS_SLACK: u64 = 768 << 20;

/// CPU seconds any of these loads may take: they take under one second
/// (the deep shared prefix 0.02 s; before the fixes it took about a
/// minute of CPU).
const CPU_SECONDS: u64 = 10;

struct Outcome {
    success: bool,
    stderr: String,
    /// Peak resident set, bytes.
    peak_rss: u64,
    /// Killed by a signal (SIGXCPU past the CPU limit, SIGABRT when an
    /// allocation failed under the address-space limit).
    signal: Option<i32>,
}

/// Runs `clrprof ARGS` with the address space limited to `address_space`
/// bytes and the CPU time to [`CPU_SECONDS`].
fn run_limited(args: &[&str], address_space: u64) -> Outcome {
    // CLRPROF_MEMORY_RULE_BIN runs these tests against another build (to see
    // them fail on one without the fixes).
    let bin = std::env::var_os("CLRPROF_MEMORY_RULE_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_clrprof").into());
    let mut cmd = Command::new(bin);
    cmd.args(args).env("CLRPROF_CACHE", "off").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    // Safety: the closure runs in the forked child before exec and calls
    // only setrlimit, which is async-signal-safe, on a struct on its stack.
    unsafe {
        cmd.pre_exec(move || {
            let set = |resource, limit: u64| {
                let l = libc::rlimit { rlim_cur: limit, rlim_max: limit };
                if libc::setrlimit(resource, &l) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            };
            set(libc::RLIMIT_AS, address_space)?;
            set(libc::RLIMIT_CPU, CPU_SECONDS)
        });
    }
    let mut child = cmd.spawn().expect("start clrprof");
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        std::io::Read::read_to_string(&mut e, &mut stderr).expect("read stderr");
    }
    let mut status = 0;
    // Safety: wait4 on our own child's pid writes the status and the
    // resource usage into the two locals; `child` is not waited on again.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32, "wait4");
    std::mem::forget(child);
    let signal = libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status));
    Outcome { success: libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, stderr, peak_rss: usage.ru_maxrss as u64 * 1024, signal }
}

/// Loads `path` (holding `decompressed` bytes of log) with `clrprof
/// summary` under the rule's allowance and returns what happened, after
/// checking that it ended by itself within the rule.
fn summary_within_rule(path: &Path, decompressed: u64, extra: &[&str]) -> Outcome {
    let allowance = memory_allowance(decompressed);
    let p = path.to_str().expect("utf-8 path");
    let mut args = vec!["summary", p];
    args.extend_from_slice(extra);
    let out = run_limited(&args, allowance + ADDRESS_SLACK);
    assert_eq!(out.signal, None, "{p}: killed by signal {:?} (CPU or memory limit); stderr: {}", out.signal, out.stderr);
    assert!(
        out.peak_rss <= allowance,
        "{p}: peak resident memory {} MB, the rule allows {} MB for {decompressed} bytes",
        out.peak_rss >> 20,
        allowance >> 20
    );
    out
}

/// Asserts a refusal that names a record: `line N, byte M: `.
fn assert_refused_at_a_record(out: &Outcome, what: &str) {
    assert!(!out.success, "{what}: loaded, expected a refusal");
    assert!(
        out.stderr.contains("line ") && out.stderr.contains(", byte ") && out.stderr.contains("memory rule"),
        "{what}: the error names no record or no rule: {}",
        out.stderr
    );
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write bomb");
    p
}

/// `count` objects of 2 GB each, 4 GB apart.
fn scattered_huge_objects(count: u64) -> Vec<u8> {
    let mut s = String::from("t 1 0 System.Byte[]\nn 1 1 1 2147483000\n");
    for i in 0..count {
        s.push_str(&format!("! 1 0x{:x} 1\n", 0x1000_0000_0000u64 + i * 0x1_0000_0000));
    }
    s.into_bytes()
}

/// A stack of `depth` frames, then `lines` `n` records taking a prefix of
/// it: with `flag` 4 (one frame shared, same kind: the prefix tree shares
/// it) or `depth * 4 + 2` (every frame but two, from a reference of the
/// other kind: copied).
fn deep_prefix(depth: usize, lines: usize, copy: bool) -> Vec<u8> {
    let mut s = String::from("f 1 Main (void) 0x1000 10\nn 1 0");
    s.push_str(&" 1".repeat(depth));
    s.push('\n');
    let flag = if copy { depth * 4 + 2 } else { 4 };
    for i in 0..lines {
        s.push_str(&format!("n {} {flag} 1\n", i + 2));
    }
    s.into_bytes()
}

#[test]
fn scattered_huge_objects_are_refused_at_their_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 2.1 KB (took 2.6 GB), and 42 KB.
    for count in [100, 2000] {
        let log = scattered_huge_objects(count);
        let p = write(dir.path(), &format!("huge{count}.log"), &log);
        let out = summary_within_rule(&p, log.len() as u64, &[]);
        assert_refused_at_a_record(&out, "scattered 2 GB objects");
        assert!(out.stderr.contains("`!` record"), "{}", out.stderr);
    }
}

#[test]
fn stacks_copying_a_long_prefix_are_refused_past_the_rule() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 899 KB: 30,000 copies of 199,998 frames (~96 GB as copies).
    let log = deep_prefix(200_000, 30_000, true);
    let p = write(dir.path(), "copy.log", &log);
    let out = summary_within_rule(&p, log.len() as u64, &[]);
    assert_refused_at_a_record(&out, "copied prefixes");
    assert!(out.stderr.contains("`n` record"), "{}", out.stderr);
}

#[test]
fn stacks_sharing_a_deep_prefix_load_within_the_rule() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 2 MB: 120,000 stacks sharing one frame of a 400,000-frame stack
    // (each used to walk the whole stack: 60,000 of them took 29 s of CPU).
    let log = deep_prefix(400_000, 120_000, false);
    let p = write(dir.path(), "share.log", &log);
    let out = summary_within_rule(&p, log.len() as u64, &[]);
    assert!(out.success, "{}", out.stderr);
}

#[test]
fn stacks_deeper_than_the_limit_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let depth = clrprof::limits::MAX_STACK_DEPTH as usize + 1;
    let log = deep_prefix(depth, 0, false);
    let p = write(dir.path(), "deep.log", &log);
    let out = summary_within_rule(&p, log.len() as u64, &[]);
    assert!(!out.success && out.stderr.contains("line 2, byte 26") && out.stderr.contains("deeper than"), "{}", out.stderr);
}

/// A zstd frame of `blocks` run-length blocks of 128 KB of newlines.
fn zstd_rle(blocks: usize) -> Vec<u8> {
    let mut v = 0xFD2F_B528u32.to_le_bytes().to_vec();
    // Frame header: no content size, no checksum; a 128 KB window.
    v.extend_from_slice(&[0x00, 7 << 3]);
    for i in 0..blocks {
        let last = (i + 1 == blocks) as u32;
        let header = (131_072u32 << 3) | (1 << 1) | last;
        v.extend_from_slice(&header.to_le_bytes()[..3]);
        v.push(b'\n');
    }
    v
}

/// `n` bytes of newlines, gzipped.
fn gzip_newlines(n: usize) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let chunk = vec![b'\n'; 1 << 20];
    for _ in 0..n / chunk.len() {
        e.write_all(&chunk).expect("gzip");
    }
    e.finish().expect("gzip")
}

#[test]
fn decompression_bombs_stop_at_the_ratio() {
    let dir = tempfile::tempdir().expect("tempdir");
    let limits = DecompressLimits::default();
    // 1 MB of zstd claiming 32 GB (went past 8.4 GB), 1 MB of gzip
    // claiming 1 GB (took 1.06 GB).
    for (name, bytes) in [("rle.log.zst", zstd_rle(262_144)), ("newlines.log.gz", gzip_newlines(1 << 30))] {
        let p = write(dir.path(), name, &bytes);
        let held = limits.allowed(bytes.len() as u64);
        let out = summary_within_rule(&p, held, &[]);
        assert!(!out.success, "{name}: loaded");
        assert!(out.stderr.contains(&format!("expands past {held} bytes")) && out.stderr.contains("--max-ratio"), "{name}: {}", out.stderr);
    }
}

#[test]
fn decompression_limits_can_be_lowered_and_raised() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut text = String::from("t 1 0 System.String\nn 1 1 1 24\n");
    for i in 0..2000u64 {
        text.push_str(&format!("! 1 0x{:x} 1\n", 0x1000 + i * 24));
    }
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(text.as_bytes()).expect("gzip");
    let p = write(dir.path(), "small.log.gz", &e.finish().expect("gzip"));
    let p = p.to_str().expect("utf-8");
    let out = run_limited(&["summary", p, "--max-decompressed", "1K"], 4 << 30);
    assert!(!out.success && out.stderr.contains("expands past 1024 bytes"), "{}", out.stderr);
    let out = run_limited(&["summary", p, "--max-decompressed", "1M"], 4 << 30);
    assert!(out.success, "{}", out.stderr);
}
