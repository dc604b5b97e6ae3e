//! Folders another local user could redirect (docs/src/security.md,
//! "Folders clrprof writes and the trust rule for each"), attacked as that
//! user (`tests/common/other_user.rs`):
//!
//! - `export --format parquet --dataset DIR`, `export -o DIR` and `collect
//!   --dataset DIR` refuse a folder another user owns, a link at a name
//!   inside a dataset, and a folder others can write to, with nothing
//!   written outside; the folders they make are 0700.
//! - `record --sampled -p PID --target ...` with the spool's old guessable
//!   names planted as dangling links and the user's private folder
//!   squatted: nothing is lost (the collector's part and the spool are the
//!   whole trace) and the message says what went where.
//!
//! The spool test needs `scripts/setup-dotnet.sh` (else SKIPPED, or a
//! failure under `CI=true`).

mod common;

use common::dotnet::{self, Runtime};
use common::other_user;
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn clrprof(args: &[&str]) -> (Option<i32>, String, String) {
    let out = common::clrprof(args);
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn gen(dir: &Path, name: &str) -> String {
    let path = dir.join(name).display().to_string();
    let (code, _, e) = clrprof(&["gen", "-q", "--preset", "tiny", "--objects", "2000", "--seed", "3", "-o", &path]);
    assert_eq!(code, Some(0), "gen: {e}");
    path
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).expect("stat").mode() & 0o7777
}

fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// Every entry under `dir`, recursively, not following links.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let p = e.path();
        all.push(p.clone());
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            all.extend(tree(&p));
        }
    }
    all
}

/// A folder only root can enter, which a planted link points to: nothing
/// may ever be written in it.
fn victim(top: &Path) -> PathBuf {
    let v = top.join("victimdir");
    std::fs::create_dir(&v).expect("victim");
    std::fs::set_permissions(&v, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    v
}

/// `clrprof collect --dir CDIR [EXTRA]`: its process, and its address once
/// it listens; `None` when it ended first (its standard error then).
fn start_collector(cdir: &Path, extra: &[&str]) -> (Child, Result<String, String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .args(["collect", "--listen", "127.0.0.1:0", "--dir", s(cdir)])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start clrprof collect");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    let _ = out.read_line(&mut line);
    match line.trim().strip_prefix("CLRPROF_TARGET=") {
        Some(t) => {
            std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
            (child, Ok(t.to_string()))
        }
        None => {
            // It stopped without listening: within a generous bound.
            let start = Instant::now();
            while child.try_wait().expect("try_wait").is_none() {
                assert!(start.elapsed() < Duration::from_secs(60), "the collector neither listened nor ended");
                std::thread::sleep(Duration::from_millis(50));
            }
            let mut err = String::new();
            let _ = std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut err);
            (child, Err(err))
        }
    }
}

/// The attack of issue 38 item 6: a dataset folder `X` that another user
/// owns, with `X/objects -> /root/victimdir`; and an `-o` folder and a
/// `collect --dataset` folder of that user. Each refused, naming the
/// owner; nothing written through the link or into their folders.
#[test]
fn folders_of_another_user_are_refused_and_nothing_is_written_through_their_links() {
    let Some(user) = other_user::get("a dataset folder owned by another user") else { return };
    let top = tempfile::tempdir().expect("tempdir");
    let log = gen(top.path(), "s1.log");
    let victim = victim(top.path());
    let shared = other_user::shared_dir("private-folders");
    let (x, y, z, l) = (shared.join("X"), shared.join("Y"), shared.join("Z"), shared.join("L"));
    user.sh(
        r#"mkdir -m 755 "$1" "$3" "$4" && ln -s "$2" "$1/objects" && ln -s "$2" "$4/objects" && ln -s "$2" "$5""#,
        &[x.as_os_str(), victim.as_os_str(), y.as_os_str(), z.as_os_str(), l.as_os_str()],
    );
    let theirs = format!("owned by uid {}", user.uid);

    // export --dataset into their folder.
    let (code, _, e) = clrprof(&["export", "--format", "parquet", "--dataset", s(&x), &log, "--name", "s1", "-q"]);
    assert_eq!(code, Some(1), "{e}");
    assert!(e.contains(&theirs) && e.contains(s(&x)), "{e}");
    // export -o into their folder.
    let (code, _, e) = clrprof(&["export", "--format", "parquet", "-o", s(&y), &log, "-q"]);
    assert_eq!(code, Some(1), "{e}");
    assert!(e.contains(&theirs) && e.contains(s(&y)), "{e}");
    // collect --dataset into their folder: the collector does not start.
    let cdir = top.path().join("sessions");
    let (mut child, started) = start_collector(&cdir, &["--dataset", s(&z)]);
    if started.is_ok() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let e = started.expect_err("collect --dataset accepted another user's folder");
    assert!(e.contains(&theirs) && e.contains(s(&z)), "{e}");

    // Their link to a folder of root's, named with a trailing slash.
    let slash = format!("{}/", l.display());
    let (code, _, e) = clrprof(&["export", "--format", "parquet", "--dataset", &slash, &log, "--name", "s1", "-q"]);
    assert_eq!(code, Some(1), "{e}");
    assert!(e.contains("is a symbolic link"), "{e}");

    assert!(tree(&victim).is_empty(), "written through the link: {:?}", tree(&victim));
    assert_eq!(tree(&x), [x.join("objects")], "nothing made in their dataset folder");
    assert!(tree(&y).is_empty(), "nothing made in their -o folder");
    assert_eq!(tree(&z), [z.join("objects")], "nothing made in their collect --dataset folder");
    let _ = std::fs::remove_dir_all(&shared);
}

/// In a dataset of one's own, a link where a table's folder or a partition
/// goes is refused, not followed; a folder others can write to (sticky or
/// not) is refused for `--dataset`, `-o` and `collect --dataset`.
#[test]
fn links_inside_a_dataset_and_folders_open_to_others_are_refused() {
    let top = tempfile::tempdir().expect("tempdir");
    let log = gen(top.path(), "s1.log");
    let victim = victim(top.path());
    let ds = top.path().join("ds");
    let (code, _, e) = clrprof(&["export", "--format", "parquet", "--dataset", s(&ds), &log, "--name", "first", "-q"]);
    assert_eq!(code, Some(0), "{e}");
    std::fs::remove_dir_all(ds.join("types")).expect("rm types");
    std::os::unix::fs::symlink(&victim, ds.join("types")).expect("link");
    let (code, _, e) = clrprof(&["export", "--format", "parquet", "--dataset", s(&ds), &log, "--name", "second", "-q"]);
    assert_eq!(code, Some(1), "{e}");
    assert!(e.contains(&format!("{} is a symbolic link", ds.join("types").display())), "{e}");
    assert!(tree(&victim).is_empty(), "written through the link: {:?}", tree(&victim));

    for m in [0o777, 0o1777] {
        let open = top.path().join(format!("open{m:o}"));
        std::fs::create_dir(&open).expect("mkdir");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(m)).expect("chmod");
        for args in [vec!["--dataset", s(&open), log.as_str(), "--name", "n"], vec!["-o", s(&open), log.as_str()]] {
            let (code, _, e) = clrprof(&[&["export", "--format", "parquet", "-q"], &args[..]].concat());
            assert_eq!(code, Some(1), "{args:?}: {e}");
            assert!(e.contains("can be written by other users"), "{args:?}: {e}");
        }
        let (_, started) = start_collector(&top.path().join("sessions"), &["--dataset", s(&open)]);
        let e = started.expect_err("collect --dataset accepted a folder others can write to");
        assert!(e.contains("can be written by other users"), "{e}");
        assert!(tree(&open).is_empty(), "{:?}", tree(&open));
    }
}

/// What the commands make is the user's only: every folder of a new
/// dataset and a new `-o` folder 0700, and `collect --dataset` makes its
/// folder 0700 at start.
#[test]
fn new_folders_are_private() {
    let top = tempfile::tempdir().expect("tempdir");
    let log = gen(top.path(), "s1.log");
    let ds = top.path().join("ds");
    let (code, _, e) = clrprof(&["export", "--format", "parquet", "--dataset", s(&ds), &log, "--name", "s1", "-q"]);
    assert_eq!(code, Some(0), "{e}");
    let out = top.path().join("out");
    let (code, _, e) = clrprof(&["export", "--format", "parquet", "-o", s(&out), &log, "-q"]);
    assert_eq!(code, Some(0), "{e}");
    let mut folders = vec![ds.clone(), out.clone()];
    folders.extend(tree(&ds).into_iter().chain(tree(&out)).filter(|p| p.is_dir()));
    assert!(folders.len() > 30, "{folders:?}");
    for f in &folders {
        assert_eq!(mode(f), 0o700, "{}", f.display());
    }
    for f in tree(&ds).into_iter().chain(tree(&out)).filter(|p| p.is_file()) {
        assert_eq!(mode(&f) & 0o077, 0, "{}", f.display());
    }
    let cds = top.path().join("collected");
    let (mut child, started) = start_collector(&top.path().join("sessions"), &["--dataset", s(&cds)]);
    let _ = child.kill();
    let _ = child.wait();
    started.expect("the collector starts");
    assert_eq!(mode(&cds), 0o700);
}

/// Issue 38 item 5: `record --sampled -p PID --target ...` while another
/// user has planted 1,000 dangling links at the spool's old guessable
/// names (`$TMPDIR/clrprof_sampled_PID.spool.nettrace[.1..999]`) and
/// squatted the user's private folder name (`$TMPDIR/clrprof-<uid>`, a
/// folder of theirs full of links). The collector is killed mid-trace:
/// the rest goes to a spool in a fresh private folder, the message says
/// how many bytes went where, and the collector's part joined with the
/// spool is the whole trace.
#[test]
#[cfg_attr(no_dotnet, ignore = "no .NET runtimes at build time: run scripts/setup-dotnet.sh, then touch crates/cli/build.rs")]
fn planted_spool_names_lose_nothing() {
    let Some(user) = other_user::get("planting links at the spool's names") else { return };
    let Some(dn) = dotnet::dotnet(&Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("private-folders-{}", std::process::id()))) else {
        return;
    };
    let dir = dn.app_dir("sampled", Runtime::Net8, &dn.work.join("spool"));
    let victim = dir.join("victimdir");
    let _ = std::fs::remove_dir_all(&victim);
    std::fs::create_dir(&victim).expect("victim");
    let tmp = other_user::shared_dir("spool-tmpdir");
    // The program, waiting.
    let mut program = Command::new(dn.host(Runtime::Net8))
        .args(["sampled.dll", "1", "pause"])
        .current_dir(&dir)
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .env_remove("TMPDIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the program");
    let pid = program.id();
    let mut pin = program.stdin.take().expect("stdin");
    let mut pout = BufReader::new(program.stdout.take().expect("stdout"));
    let read_json = |r: &mut BufReader<std::process::ChildStdout>| -> Value {
        let mut line = String::new();
        r.read_line(&mut line).expect("the program's line");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    };
    assert_eq!(read_json(&mut pout)["ready"], true);
    // The other user plants: the old names as dangling links, and the
    // private folder's name as a folder of theirs holding links.
    let uid = clrprof_files_uid();
    user.sh(
        r#"n="$1/clrprof_sampled_$2.spool.nettrace"; ln -s "$3/stolen" "$n"; i=1
           while [ $i -le 999 ]; do ln -s "$3/stolen.$i" "$n.$i"; i=$((i+1)); done
           mkdir -m 777 "$1/clrprof-$4"; ln -s "$3/stolen.p" "$1/clrprof-$4/clrprof_sampled_$2.spool.nettrace""#,
        &[tmp.as_os_str(), pid.to_string().as_ref(), victim.as_os_str(), uid.to_string().as_ref()],
    );
    let cdir = dir.join("sessions");
    let _ = std::fs::remove_dir_all(&cdir);
    let (mut collector, target) = start_collector(&cdir, &[]);
    let target = target.expect("the collector starts");
    let mut record = Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .args(["record", "--sampled", "-p", &pid.to_string(), "--target", &target, "--token-file"])
        .arg(cdir.join("collector.token"))
        .current_dir(&dir)
        .env("TMPDIR", &tmp)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start record --sampled -p");
    let mut err = BufReader::new(record.stderr.take().expect("stderr"));
    let mut line = String::new();
    err.read_line(&mut line).expect("record's first line");
    assert!(line.contains("EventPipe session with process"), "{line}");
    // The session is live at the collector; then the collector dies.
    let start = Instant::now();
    let stored = loop {
        let found = std::fs::read_dir(&cdir)
            .ok()
            .and_then(|d| d.flatten().map(|e| e.path()).find(|p| p.extension().is_some_and(|x| x == "nettrace")));
        if let Some(p) = found {
            break p;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no session at the collector");
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = collector.kill();
    let _ = collector.wait();
    writeln!(pin, "go").expect("go");
    pin.flush().expect("flush");
    let truth = read_json(&mut pout);
    // Safety: a signal to a child of this test.
    unsafe { libc::kill(record.id() as i32, libc::SIGINT) };
    let status = record.wait().expect("wait for record");
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut err, &mut rest);
    let _ = writeln!(pin, "end");
    let _ = program.wait();
    let _ = std::fs::remove_dir_all(&tmp.join(format!("clrprof-{uid}")));

    eprintln!("record --sampled said: {rest}");
    assert!(status.success(), "record --sampled: {status}: {rest}");
    assert!(!rest.contains("neither streamed nor spooled") && !rest.contains("incomplete"), "{rest}");
    assert!(!rest.contains("streamed the whole trace"), "the collector was killed: no whole stream may be claimed: {rest}");
    let from: usize = rest
        .split("streamed bytes 0 to ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("how much was streamed: {rest}"));
    let spool =
        PathBuf::from(rest.split(" bytes to the spool ").nth(1).and_then(|r| r.split_whitespace().next()).expect("the spool named"));
    let folder = spool.parent().expect("the spool's folder");
    assert_ne!(folder, tmp.join(format!("clrprof-{uid}")), "the squatted folder was used");
    assert!(folder.starts_with(&tmp), "{}", folder.display());
    assert_eq!((mode(folder), std::fs::metadata(folder).expect("stat").uid()), (0o700, uid));
    assert!(std::fs::symlink_metadata(&spool).expect("the spool").is_file());
    assert!(tree(&victim).is_empty(), "written through a planted link: {:?}", tree(&victim));
    // The collector's part up to `from`, then the spool: the whole trace.
    let joined = dir.join("joined.nettrace");
    let _ = std::fs::remove_file(&joined);
    let (code, _, e) = clrprof(&["join", s(&stored), s(&spool), "--spool-from", &from.to_string(), "-o", s(&joined)]);
    assert_eq!(code, Some(0), "{e}");
    let (code, o, e) = clrprof(&["summary", s(&joined), "--json", "-q"]);
    assert_eq!(code, Some(0), "{e}");
    assert!(!e.contains("warning"), "the joined trace reads to its end: {e}");
    let summary: Value = serde_json::from_str(&o).expect("JSON");
    for (k, key) in ["gen0_collections", "gen1_collections", "gen2_collections"].iter().enumerate() {
        assert_eq!(summary[key], truth["gc"][k], "{key}: {summary}");
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

fn clrprof_files_uid() -> u32 {
    // Safety: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}
