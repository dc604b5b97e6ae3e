//! What a new user tripped over (issue 17), each point pinned by the
//! command line: complete JSON unless `--top` is given (with a count of
//! the rows left out), notes under cut tables, overloads told apart, `who`
//! with no such type, the `threads` command, `diff - -`, DOT sizes in KiB,
//! plurals, one wording for one failure, clamped times, and the Time Line
//! of a log whose clock never moves.

mod common;
use common::*;
use serde_json::Value;
use std::process::Output;

fn text(out: &Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn ok(args: &[&str]) -> (String, String) {
    let out = clrprof(args);
    let (o, e) = text(&out);
    assert!(out.status.success(), "clrprof {args:?} failed: {e}");
    (o, e)
}

fn json(args: &[&str]) -> Value {
    let (o, _) = ok(args);
    serde_json::from_str(&o).unwrap_or_else(|e| panic!("clrprof {args:?}: not JSON: {e}"))
}

fn reference(name: &str) -> Option<String> {
    Some(reference_dir()?.join(name).to_str()?.to_string())
}

/// Every command's JSON lists every row without `--top`, says how many it
/// left out (0), and with `--top 3` keeps 3 rows per list and says how
/// many went.
#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn json_is_complete_unless_top_is_given() {
    let Some(log) = reference("gen-small.log") else { return };
    let log = log.as_str();
    let commands: Vec<Vec<&str>> = vec![
        vec!["functions", log],
        vec!["modules", log],
        vec!["classes", log],
        vec!["types", log],
        vec!["types", "--buckets", "--bucket-scale", "fine", log],
        vec!["who", log, "System"],
        vec!["graph", log],
        vec!["flame", log],
        vec!["lifetime", log],
        vec!["survivors", log],
        vec!["ages", "--at", "200", log],
        vec!["timeline", log],
        vec!["calls", log],
        vec!["handles", log],
        vec!["threads", log],
        vec!["dumps", log],
        vec!["dump", log, "1"],
        vec!["dump", log, "1", "--retained"],
        vec!["dump-diff", log, "0", "1"],
        vec!["diff", log, "../shared/corpus/reference/gen-tiny.log"],
    ];
    let mut longest = 0;
    for cmd in commands {
        let mut all_args = cmd.clone();
        all_args.extend(["--json", "-q"]);
        let all = json(&all_args);
        let mut top_args = all_args.clone();
        top_args.extend(["--top", "3"]);
        let top = json(&top_args);
        let lists: Vec<String> = all
            .as_object()
            .unwrap_or_else(|| panic!("{cmd:?}: JSON is an object"))
            .keys()
            .filter_map(|k| k.strip_suffix("_left_out").map(str::to_string))
            .collect();
        assert!(!lists.is_empty(), "{cmd:?}: no `<list>_left_out` field");
        for list in lists {
            let n = all[&list].as_array().unwrap_or_else(|| panic!("{cmd:?}: {list} is a list")).len();
            longest = longest.max(n);
            let left_out = format!("{list}_left_out");
            assert_eq!(all[&left_out], 0, "{cmd:?}: {list} complete without --top");
            let kept = top[&list].as_array().expect("list").len();
            if list == "edges" {
                // The graph keeps the edges between the nodes it keeps.
                assert!(kept <= n.min(3), "{cmd:?}: --top 3 keeps at most 3 {list}");
            } else {
                assert_eq!(kept, n.min(3), "{cmd:?}: --top 3 keeps 3 {list}");
            }
            assert_eq!(top[&left_out].as_u64(), Some((n - kept) as u64), "{cmd:?}: {list} left out");
        }
    }
    // The old default stopped JSON lists at 20 rows.
    assert!(longest > 20, "the lists are long enough to show the old cut: {longest}");
}

/// `types --buckets --top 8` says that size classes were left out.
#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn cut_tables_say_so() {
    let Some(log) = reference("gen-small.log") else { return };
    let (o, _) = ok(&["types", "--buckets", "--bucket-scale", "fine", "--top", "8", "-q", &log]);
    let after_buckets = o.split("by size").nth(1).expect("the size classes");
    assert!(after_buckets.contains("more size classes; --top 0 shows all)"), "{after_buckets}");
    let (o, _) = ok(&["functions", "--top", "5", "-q", &log]);
    assert!(o.contains("more functions; --top 0 shows all)"), "{o}");
}

/// Overloads that share a name show their parameters (the real log has
/// two `System.Net.WebRequest::Create`).
#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn overloads_are_told_apart() {
    let Some(log) = reference("real-CLRProfilerTestBedMk1.log") else { return };
    let (o, _) = ok(&["functions", "--top", "0", "-q", &log]);
    let creates: Vec<&str> =
        o.lines().filter(|l| l.starts_with("System.Net.WebRequest::Create")).map(|l| l.split("  ").next().unwrap_or(l)).collect();
    assert_eq!(creates, ["System.Net.WebRequest::Create(String)", "System.Net.WebRequest::Create(System.Uri bool)"]);
    let (dot, _) = ok(&["graph", "--dot", "--min-percent", "0", "-q", &log]);
    assert!(dot.contains("System.Net.WebRequest::Create(String)"), "DOT labels name the overload");
}

/// `who` with a name no type has fails, says so, and suggests names.
#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn who_with_no_such_type() {
    let Some(log) = reference("real-CLRProfilerTestBedMk1.log") else { return };
    let out = clrprof(&["who", &log, "NoSuchType", "-q"]);
    let (o, e) = text(&out);
    assert!(!out.status.success());
    assert!(o.is_empty(), "{o}");
    assert!(e.contains("no type whose name contains \"NoSuchType\""), "{e}");
    let out = clrprof(&["who", &log, "string", "-q"]);
    let (_, e) = text(&out);
    assert!(!out.status.success());
    assert!(e.contains("close names: System.String"), "the other case first: {e}");
    let out = clrprof(&["who", &log, "System.Strng", "--exact", "-q"]);
    let (_, e) = text(&out);
    assert!(!out.status.success() && e.contains("System.String"), "{e}");
    // A type that exists but allocated nothing in the window: exit 0.
    let (o, _) = ok(&["who", &log, "System.String", "--exact", "--to", "0", "-q"]);
    assert!(o.contains("none of their objects was allocated"), "{o}");
}

/// `clrprof threads`: ids, objects, bytes, first and last tick and ms.
#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn threads_command() {
    let Some(log) = reference("gen-small.log") else { return };
    let v = json(&["threads", "--json", "-q", &log]);
    let rows = v["threads"].as_array().expect("threads");
    assert!(rows.len() >= 2);
    let objects: u64 = rows.iter().map(|r| r["allocated"]["objects"].as_u64().unwrap()).sum();
    assert_eq!(objects, 200_000, "every allocation belongs to a thread row");
    let first = &rows[0];
    let id = first["thread_id"].as_i64().expect("an id").to_string();
    assert!(first["first_ms"].as_f64() <= first["last_ms"].as_f64());
    // The ids are the ones --thread takes: the filtered run agrees.
    let one = json(&["threads", "--json", "-q", "--thread", &id, &log]);
    assert_eq!(one["threads"].as_array().unwrap().len(), 1);
    assert_eq!(one["threads"][0], *first);
    let (o, _) = ok(&["threads", "-q", &log]);
    assert!(o.lines().nth(1).is_some_and(|l| l.starts_with("thread") && l.contains("first ms") && l.contains("last tick")));
    assert!(o.contains(&id));
}

/// `diff - -` refuses to read standard input twice; one `-` is named
/// `<stdin>`.
#[test]
fn diff_reads_standard_input_once() {
    let out = clrprof(&["diff", "-", "-"]);
    let (_, e) = text(&out);
    assert!(!out.status.success());
    assert!(e.contains("standard input (`-`) can be read once"), "{e}");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_clrprof"))
        .args(["diff", "-q", "corpus/all-kinds.log", "-"])
        .current_dir(repo_root())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run");
    {
        use std::io::Write;
        let log = std::fs::read(repo_root().join("corpus/all-kinds.log")).expect("log");
        child.stdin.take().expect("stdin").write_all(&log).expect("write");
    }
    let out = child.wait_with_output().expect("wait");
    let (o, _) = text(&out);
    assert!(out.status.success());
    assert!(o.starts_with("B = <stdin> minus A = corpus/all-kinds.log"), "{o}");
}

/// DOT labels count in KiB, not "kB".
#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn dot_sizes_in_kib() {
    let Some(log) = reference("gen-small.log") else { return };
    let (dot, _) = ok(&["graph", "--dot", "-q", &log]);
    assert!(dot.contains(" KiB") || dot.contains(" MiB"), "binary units");
    assert!(!dot.contains(" kB") && !dot.contains(" MB\""), "no decimal-looking units");
}

/// No "(s)": one GC, two comments (the call tree's "1 more callee" is a
/// unit test of `cmd_calls`).
#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn plurals() {
    let log = "corpus/all-kinds.log";
    let (o, _) = ok(&["timeline", "-q", log]);
    assert!(!o.contains("(s)"), "{o}");
    let Some(real) = reference("real-CLRProfilerTestBedMk1.log") else { return };
    let (o, _) = ok(&["who", &real, "System.Net.HttpWebRequest", "--exact", "-q"]);
    assert!(o.lines().next().is_some_and(|l| l.contains("of 1 type matching")), "{o}");
}

/// `flame` and `timeline` word one failure (the output file cannot be
/// created) the same way.
#[test]
fn one_wording_for_one_failure() {
    let log = "corpus/all-kinds.log";
    let bad = "/nonexistent-folder/out";
    let flame = clrprof(&["flame", "-q", "-o", &format!("{bad}.svg"), log]);
    let timeline = clrprof(&["timeline", "-q", "--png", &format!("{bad}.png"), log]);
    let (_, fe) = text(&flame);
    let (_, te) = text(&timeline);
    assert!(!flame.status.success() && !timeline.status.success());
    let wording = |e: &str, ext: &str| e.replace(&format!("{bad}.{ext}"), "FILE");
    assert_eq!(wording(&fe, "svg"), wording(&te, "png"));
    assert!(fe.starts_with("clrprof: cannot create "), "{fe}");
}

/// A requested time that the log has no tick for is said, not silently
/// moved: `--at 10` shows 0 ms on the real log, `--at 300` its end.
#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn clamped_times_are_told() {
    let Some(log) = reference("real-CLRProfilerTestBedMk1.log") else { return };
    let (o, e) = ok(&["ages", "--at", "300", "-q", &log]);
    assert!(e.contains("--at 300 ms is after the log's last tick (279 ms): showing 279 ms"), "{e}");
    assert!(o.starts_with("Live objects at 279 ms"), "{o}");
    let (_, e) = ok(&["ages", "--at", "10", "-q", &log]);
    assert!(e.contains("the log has no tick between 0 ms and 10 ms; showing 0 ms"), "{e}");
    let (_, e) = ok(&["types", "--kind", "final", "--at", "300", "-q", &log]);
    assert!(e.contains("--at 300 ms is after"), "{e}");
    let (_, e) = ok(&["ages", "--at", "279", "-q", &log]);
    assert!(!e.contains("--at"), "an exact time says nothing: {e}");
}

/// The real log has one `i` line: on a time axis its Time Line is blank
/// but for the last column. The picture follows the heap changes in log
/// order instead, and says so.
#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn time_line_of_a_log_with_one_tick() {
    let Some(log) = reference("real-CLRProfilerTestBedMk1.log") else { return };
    let out = std::env::temp_dir().join(format!("clrprof-one-tick-{}.png", std::process::id()));
    let (o, e) = ok(&["timeline", &log, "--png", out.to_str().unwrap(), "--json", "-q"]);
    let v: Value = serde_json::from_str(&o).expect("json");
    assert_eq!(v["axis"], "log_order");
    assert!(e.contains("columns follow the 1,021 heap changes in log order"), "{e}");
    let bytes = std::fs::read(&out).expect("png written");
    let _ = std::fs::remove_file(&out);
    let mut reader = png::Decoder::new(&bytes[..]).read_info().expect("a png");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let width = info.width as usize;
    let p = |k: &str| v["plot"][k].as_u64().unwrap() as usize;
    let (px, py, pw, ph) = (p("x"), p("y"), p("width"), p("height"));
    let painted = (px..px + pw)
        .filter(|&x| {
            (py..py + ph).any(|y| {
                let i = (y * width + x) * 3;
                buf[i..i + 3] != [255, 255, 255] && buf[i..i + 3] != [190, 190, 190]
            })
        })
        .count();
    assert!(painted * 10 >= pw * 9, "{painted} of {pw} plot columns show objects");
    // A time window keeps the time axis.
    let (o, _) = ok(&["timeline", &log, "--png", out.to_str().unwrap(), "--json", "-q", "--from", "0"]);
    let _ = std::fs::remove_file(&out);
    let v: Value = serde_json::from_str(&o).expect("json");
    assert_eq!(v["axis"], "time");
}

/// Crowded comment labels (gen-tiny's three comments on a 600-pixel
/// picture) are all drawn and do not overlap (the address and size labels
/// are unit tests of `clrprof-render`).
#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn comment_labels_do_not_overlap() {
    let Some(log) = reference("gen-tiny.log") else { return };
    let out = std::env::temp_dir().join(format!("clrprof-labels-{}.png", std::process::id()));
    let (o, _) = ok(&["timeline", &log, "--png", out.to_str().unwrap(), "--width", "600", "--height", "300", "--json", "-q"]);
    let _ = std::fs::remove_file(&out);
    let v: Value = serde_json::from_str(&o).expect("json");
    let labels = v["comment_labels"].as_array().expect("labels");
    assert_eq!(labels.len(), 3, "every comment labelled: {labels:?}");
    let boxes: Vec<(i64, i64, i64)> =
        labels.iter().map(|l| (l["x"].as_i64().unwrap(), l["y"].as_i64().unwrap(), l["width"].as_i64().unwrap())).collect();
    for (i, a) in boxes.iter().enumerate() {
        assert!(a.0 >= 0 && a.0 + a.2 <= 600, "{a:?} inside the picture");
        for b in &boxes[i + 1..] {
            assert!(a.1 != b.1 || a.0 + a.2 < b.0 || b.0 + b.2 < a.0, "{a:?} overlaps {b:?}");
        }
    }
}
