//! What an agent-free heap dump costs, on a real .NET 8 program
//! (agent/testapps/costly.cs: a heap of many small objects in linked
//! chains and large `long[]` arrays, built by four threads that keep
//! allocating): `heap-dump`'s own peak memory stays small whatever the
//! number of objects, the program's resident memory grows by no more than
//! the session's buffer cap, and `watch` skips a dump (and says why) when
//! the program's memory cgroup leaves too little room.
//!
//! The cgroup test makes a child memory cgroup (v2, else v1's memory
//! controller) beside the test's own: it needs root and a writable cgroup
//! file system (else SKIPPED, or a failure under `CI=true`).
//!
//! The big-heap figures are `scripts/dump-cost.sh`'s; these heaps stay
//! small enough for CI.

mod common;

use common::dotnet::{self, Dotnet, Runtime};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

fn dotnet_env() -> Option<&'static Dotnet> {
    dotnet::dotnet(&Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("dump-cost-{}", std::process::id())))
}

/// The costly program, driven through its standard input.
struct Program {
    child: Child,
    stdin: ChildStdin,
    _stdout: BufReader<ChildStdout>,
    pid: u32,
    ready: Value,
}

impl Program {
    fn start(dn: &Dotnet, dir: &Path, mb: u64) -> Program {
        Program::start_in(dn, dir, mb, None)
    }

    /// Started inside `cgroup` (its `cgroup.procs`), so that every page
    /// it touches is charged there.
    fn start_in(dn: &Dotnet, dir: &Path, mb: u64, cgroup: Option<&Path>) -> Program {
        let mut cmd = match cgroup {
            None => Command::new(dn.host(Runtime::Net8)),
            Some(cg) => {
                let mut c = Command::new("sh");
                c.arg("-c")
                    .arg("echo $$ > \"$1/cgroup.procs\" && exec \"$2\" costly.dll \"$3\" 4")
                    .arg("sh")
                    .arg(cg)
                    .arg(dn.host(Runtime::Net8));
                c
            }
        };
        if cgroup.is_none() {
            cmd.arg("costly.dll");
        }
        let mut child = cmd
            .arg(mb.to_string())
            .args(cgroup.is_none().then_some("4"))
            .current_dir(dir)
            .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
            // A small allocation budget: the program's memory stays flat
            // while it runs (in a cgroup near its limit).
            .env("DOTNET_GCgen0size", "0x400000")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start costly");
        let stdin = child.stdin.take().expect("stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let ready = read_json(&mut stdout);
        assert_eq!(ready["ready"], true, "{ready}");
        let pid = ready["pid"].as_u64().expect("pid") as u32;
        Program { child, stdin, _stdout: stdout, pid, ready }
    }

    fn n(&self, key: &str) -> u64 {
        self.ready[key].as_u64().unwrap_or_else(|| panic!("{key} in {}", self.ready))
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "exit");
        let _ = self.stdin.flush();
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_json(r: &mut impl BufRead) -> Value {
    let mut line = String::new();
    r.read_line(&mut line).expect("read the program's output");
    serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("not a JSON line from the program: {line:?}: {e}"))
}

/// A `/proc/PID/status` figure, kB.
fn status_kb(pid: u32, key: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':')?.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in the status of {pid}"))
}

/// Runs clrprof to its end; its output and its own peak resident memory
/// (kB, from wait4's rusage of that one child).
fn clrprof_measured(dir: &Path, args: &[&str]) -> (std::process::Output, u64) {
    let child = Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run clrprof");
    let pid = child.id() as libc::pid_t;
    let (mut out, mut err) = (child.stdout.expect("stdout"), child.stderr.expect("stderr"));
    let reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).expect("stderr");
        v
    });
    let mut stdout = Vec::new();
    std::io::Read::read_to_end(&mut out, &mut stdout).expect("stdout");
    let stderr = reader.join().expect("stderr reader");
    let mut status = 0;
    // Safety: a zeroed rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // Safety: wait4 on our own child, with valid pointers to locals.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4: {}", std::io::Error::last_os_error());
    use std::os::unix::process::ExitStatusExt;
    let output = std::process::Output { status: std::process::ExitStatus::from_raw(status), stdout, stderr };
    (output, usage.ru_maxrss as u64)
}

/// One agent-free dump of `p`: its JSON, clrprof's own peak resident
/// memory (MB) and what the dump added to the program's peak resident
/// memory (MB; VmHWM reset just before).
fn dump(p: &Program, dir: &Path, name: &str, extra: &[&str]) -> (Value, u64, u64) {
    std::fs::write(format!("/proc/{}/clear_refs", p.pid), "5").expect("reset the program's peak resident memory");
    let before = status_kb(p.pid, "VmRSS");
    let pid = p.pid.to_string();
    let mut args = vec!["heap-dump", &pid, "-o", name, "--json"];
    args.extend_from_slice(extra);
    let (out, own_kb) = clrprof_measured(dir, &args);
    let added_mb = status_kb(p.pid, "VmHWM").saturating_sub(before) >> 10;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let d: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    eprintln!(
        "heap-dump {extra:?}: {d}; clrprof's peak {} MB; the program's resident memory {} MB, added {added_mb} MB",
        own_kb >> 10,
        before >> 10
    );
    (d, own_kb >> 10, added_mb)
}

/// Every Node, its int[] and every large array are in a whole dump, with
/// the program's own objects besides.
fn assert_whole(p: &Program, d: &Value) {
    assert_eq!(d["dump"]["complete"], true, "{d}");
    assert_eq!(d["dump"]["lost_events"], 0, "{d}");
    let kept = 2 * p.n("nodes") + p.n("arrays");
    let objects = d["dump"]["objects"].as_u64().expect("objects");
    assert!(objects >= kept && objects < kept + 50_000, "{objects} objects, the program keeps {kept}");
    let types = d["dump"]["types"].as_array().expect("types");
    assert_eq!(types[0]["name"], "System.Int64[]", "the large arrays hold the most: {d}");
    assert_eq!(types[0]["objects"].as_u64(), Some(p.n("arrays")), "{d}");
}

/// `heap-dump` of a program with 1 M objects: the dump is whole and
/// matches the program's own counts, and clrprof's peak resident memory
/// stays under 64 MB (loading the dump back into a model to print its
/// figures took 156 MB here).
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn heap_dump_prints_its_figures_in_bounded_memory() {
    let Some(dn) = dotnet_env() else { return };
    let dir = dn.app_dir("costly", Runtime::Net8, &dn.work.join("figures"));
    let p = Program::start(dn, &dir, 100);
    let (d, own_mb, _) = dump(&p, &dir, "d.nettrace", &[]);
    assert_whole(&p, &d);
    assert!(own_mb < 64, "heap-dump's own peak resident memory was {own_mb} MB");
}

/// `heap-dump` of a program with 3 M objects (a trace of about 130 MB):
/// the program's peak resident memory grows by no more than the session's
/// buffer cap (64 MB at this size) and 16 MB (the runtime kept the whole
/// trace before: 130 MB); a dump the cap made incomplete says so, with
/// the buffer that would hold it, and `--buffer-mb` of that gives the
/// whole dump.
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn a_dump_adds_at_most_its_buffer_cap_to_the_program() {
    let Some(dn) = dotnet_env() else { return };
    let dir = dn.app_dir("costly", Runtime::Net8, &dn.work.join("bounded"));
    let p = Program::start(dn, &dir, 300);
    let (d, own_mb, added_mb) = dump(&p, &dir, "capped.nettrace", &[]);
    let cap = d["dump"]["buffer_mb"].as_u64().expect("buffer_mb");
    assert_eq!(cap, 64, "{d}");
    assert!(added_mb <= cap + 16, "the dump added {added_mb} MB to the program's resident memory (cap {cap} MB)");
    assert!(own_mb < 64, "heap-dump's own peak resident memory was {own_mb} MB");
    let needed = if d["dump"]["complete"] == true {
        assert_whole(&p, &d);
        512
    } else {
        // Said, never passed over.
        assert!(d["dump"]["lost_events"].as_u64() > Some(0), "{d}");
        let needed = d["dump"]["buffer_mb_needed"].as_u64().expect("the buffer that would hold it");
        assert!(needed > cap, "{d}");
        needed
    };
    let (whole, _, _) = dump(&p, &dir, "whole.nettrace", &["--buffer-mb", &needed.to_string()]);
    assert_whole(&p, &whole);
}

/// A memory cgroup made for a test, removed when dropped.
struct Cgroup {
    dir: PathBuf,
    parent: PathBuf,
    v2: bool,
}

impl Cgroup {
    /// A child of this process's memory cgroup (v2, else v1); `None` after
    /// saying why it cannot be made (a failure under `CI=true`).
    fn make() -> Option<Cgroup> {
        let made = Self::try_make();
        if let Err(why) = &made {
            assert!(!dotnet::in_ci(), "CI=true and no memory cgroup can be made: {why}");
            eprintln!("SKIPPED: no memory cgroup can be made: {why}");
        }
        made.ok()
    }

    fn try_make() -> Result<Cgroup, String> {
        let own = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
        for (v2, mount) in [(true, "/sys/fs/cgroup"), (true, "/sys/fs/cgroup/unified"), (false, "/sys/fs/cgroup/memory")] {
            let path = own.lines().find_map(|l| {
                let mut f = l.splitn(3, ':');
                let (id, ctl, path) = (f.next()?, f.next()?, f.next()?);
                let ok = if v2 { id == "0" && ctl.is_empty() } else { ctl.split(',').any(|c| c == "memory") };
                ok.then(|| path.trim_start_matches('/').to_string())
            });
            let Some(path) = path else { continue };
            let parent = Path::new(mount).join(path);
            let probe = if v2 { "memory.max" } else { "memory.limit_in_bytes" };
            if v2 && !std::fs::read_to_string(parent.join("cgroup.subtree_control")).is_ok_and(|c| c.contains("memory")) {
                continue;
            }
            let dir = parent.join(format!("clrprof-test-{}", std::process::id()));
            if std::fs::create_dir(&dir).is_ok() && dir.join(probe).exists() {
                return Ok(Cgroup { dir, parent, v2 });
            }
            let _ = std::fs::remove_dir(&dir);
        }
        Err("neither a cgroup v2 with the memory controller nor v1's memory controller is writable here".into())
    }

    fn usage(&self) -> u64 {
        let f = if self.v2 { "memory.current" } else { "memory.usage_in_bytes" };
        std::fs::read_to_string(self.dir.join(f)).expect("usage").trim().parse().expect("a number")
    }

    fn limit(&self, bytes: u64) {
        let f = if self.v2 { "memory.max" } else { "memory.limit_in_bytes" };
        std::fs::write(self.dir.join(f), bytes.to_string()).expect("set the limit");
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        if let Ok(procs) = std::fs::read_to_string(self.dir.join("cgroup.procs")) {
            for pid in procs.lines() {
                let _ = std::fs::write(self.parent.join("cgroup.procs"), pid);
            }
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// `watch` with a dump rule on a program whose memory cgroup leaves 48 MB:
/// the dump (which may add 64 + 16 MB) is skipped, said on standard error
/// and in the firing's record; no dump file is written.
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn watch_skips_a_dump_the_cgroup_has_no_room_for() {
    let Some(dn) = dotnet_env() else { return };
    let Some(cg) = Cgroup::make() else { return };
    let dir = dn.app_dir("costly", Runtime::Net8, &dn.work.join("cgroup"));
    let p = Program::start_in(dn, &dir, 100, Some(&cg.dir));
    std::thread::sleep(Duration::from_secs(1));
    // 48 MB of room: a counters session fits, a dump (64 + 16 MB) does not.
    let usage = cg.usage();
    cg.limit(usage + (48 << 20));
    let pid = p.pid.to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .args(["watch", "-p", &pid, "--json", "--duration", "6", "-o", "out", "--rule", "gc-heap-size > 1MB limit 1 per 1h do dump"])
        .current_dir(&dir)
        .output()
        .expect("run clrprof watch");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let fired: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()?.get("fired").cloned()).collect();
    assert_eq!(fired.len(), 1, "{stderr}");
    let act = &fired[0]["actions"][0];
    assert_eq!(act["action"], "dump", "{act}");
    assert_eq!(act["skipped"], true, "{act}");
    assert_eq!(act["ok"], false, "{act}");
    let why = act["error"].as_str().expect("why");
    assert!(why.contains("memory limit of its cgroup") && why.contains(cg.dir.to_str().expect("UTF-8")), "{why}");
    assert!(stderr.contains("dump SKIPPED: the memory limit of its cgroup"), "{stderr}");
    let record: Value =
        serde_json::from_slice(&std::fs::read(dir.join("out").join(&pid).join("fired-1.json")).expect("the record")).expect("JSON");
    assert_eq!(record["actions"][0]["skipped"], true, "{record}");
    assert!(!dir.join("out").join(&pid).join("fired-1-dump.nettrace").exists(), "a skipped dump wrote a file");
    drop(p);
}
