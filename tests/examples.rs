//! The embedder examples (`examples/`) run and print what the library says.
//! `cargo test` builds them next to the test binaries (`target/*/examples`).

mod common;
use common::*;
use std::path::PathBuf;
use std::process::Command;

fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary");
    let dir = exe.parent().and_then(|deps| deps.parent()).expect("target dir").join("examples");
    let path = dir.join(name);
    assert!(path.is_file(), "{} is not built (cargo test builds the examples)", path.display());
    path
}

fn run(name: &str, args: &[&str], stdin: Option<&[u8]>) -> String {
    run_exe(&example(name), args, stdin)
}

/// Runs a built program (an example, or the quick start's binary) from
/// the repository's top folder.
fn run_exe(exe: &std::path::Path, args: &[&str], stdin: Option<&[u8]>) -> String {
    let name = exe.display().to_string();
    let mut cmd = Command::new(exe);
    cmd.args(args).current_dir(repo_root());
    let out = if let Some(input) = stdin {
        use std::io::Write;
        let mut child = cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().expect("spawn");
        child.stdin.take().expect("stdin").write_all(input).expect("write stdin");
        child.wait_with_output().expect("wait")
    } else {
        cmd.output().expect("run example")
    };
    assert!(out.status.success(), "{name} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

fn load(path: &str) -> clrprof::model::Model {
    clrprof::model::load_path(&repo_root().join(path), &Default::default()).expect("load")
}

#[test]
fn summary_prints_the_summary() {
    let out = run_exe(env!("CARGO_BIN_EXE_clrprof-summary").as_ref(), &["corpus/all-kinds.log"], None);
    let s = clrprof::query::summary(&load("corpus/all-kinds.log"));
    assert!(out.contains(&format!("allocated bytes     {}\n", s.allocated_bytes)), "{out}");
    assert!(out.contains(&format!("final heap bytes    {}\n", s.final_heap_bytes)), "{out}");
    assert!(out.contains(&format!("heap dumps          {}\n", s.heap_dumps)), "{out}");
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch build.rs after installing)")]
fn top_functions_lists_the_windows_top_allocators() {
    let Some(dir) = reference_dir() else { return };
    let log = dir.join("gen-small.log");
    let out = run("top_functions", &[log.to_str().expect("path"), "100", "300", "3"], None);
    let model = clrprof::model::load_path(&log, &Default::default()).expect("load");
    let window = clrprof::query::TimeWindow::Millis { from: Some(100.0), to: Some(300.0) };
    let filter = clrprof::query::Filter::resolve(&model, &window, &[]).expect("filter");
    let rows = clrprof::query::by_function(&model, &filter, clrprof::query::SortBy::Inclusive);
    let lines: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(lines.len(), 3, "{out}");
    for (line, row) in lines.iter().zip(&rows) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(fields[0], row.figures.inclusive_bytes.to_string(), "{out}");
        assert_eq!(fields[2], row.name, "{out}");
    }
}

#[test]
fn stream_threads_counts_allocations_per_thread_from_a_pipe() {
    let log = std::fs::read(repo_root().join("corpus/all-kinds.log")).expect("read");
    let out = run("stream_threads", &["-"], Some(&log));
    // all-kinds.log: one `a` record (no thread) and four `!` records on 4242.
    assert!(out.contains("         1  (no thread: `a` records)\n"), "{out}");
    assert!(out.contains("         4  4242\n"), "{out}");
    assert!(out.contains(&format!("{} bytes", log.len())), "{out}");
}

#[test]
fn write_log_writes_a_log_that_loads() {
    let path = std::env::temp_dir().join(format!("clrprof-write-log-{}.log", std::process::id()));
    let out = run("write_log", &[path.to_str().expect("path")], None);
    assert!(out.contains("3 objects, 72 bytes allocated, 1 comment"), "{out}");
    let model = clrprof::model::load_path(&path, &Default::default()).expect("load");
    assert_eq!(model.diagnostics().total(), 0);
    let _ = std::fs::remove_file(path);
}

#[test]
fn follow_prints_the_summary_as_the_log_grows() {
    // A log written in two parts while `follow` runs: every line it prints
    // is the Summary of the log's first BYTES bytes (a line end), and the
    // last one is the whole log's.
    let log = std::fs::read(repo_root().join("corpus/all-kinds.log")).expect("log");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("growing.log");
    let half = log[..log.len() / 2].iter().rposition(|&b| b == b'\n').expect("a line end") + 1 + 5;
    std::fs::write(&path, &log[..half]).expect("write");
    let child = Command::new(example("follow"))
        .args([path.to_str().expect("path"), "--every-ms", "20", "--until-bytes", &log.len().to_string()])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn follow");
    std::thread::sleep(std::time::Duration::from_millis(300));
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).expect("open");
        f.write_all(&log[half..]).expect("append");
    }
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let lines: Vec<&str> = text.lines().collect();
    assert!(!lines.is_empty());
    for line in &lines {
        let f: Vec<u64> = line.split(' ').map(|x| x.parse().expect("a number")).collect();
        let n = f[0] as usize;
        assert!(n == 0 || log[n - 1] == b'\n', "{line}: not at a line end");
        let m = clrprof::model::load(&log[..n], &Default::default()).expect("load the prefix");
        let s = clrprof::query::summary(&m);
        assert_eq!(f[1..], [m.allocations().len() as u64, s.allocated_bytes, s.final_heap_bytes, s.gen0_collections as u64], "{line}");
    }
    assert!(lines.last().expect("a line").starts_with(&format!("{} ", log.len())), "{text}");
}
