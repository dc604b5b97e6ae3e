//! A live session's log is read as it grows: each refresh reads only the
//! bytes added to the file, and the model is the one `load` gives for the
//! file's whole lines. A file cut back (the collector, when an agent
//! resumes from its spool) or changed is read again from its start; an
//! ended session reads its last bytes as the log's end.

use clrprof::model::{load, LoadOptions, Model};
use clrprof::query;
use clrprof_gen::{generate, GenOptions, Preset};
use clrprof_ui::{LogId, LogSet, SessionStatus};
use std::io::Write;
use std::path::Path;

fn generated() -> Vec<u8> {
    let opts = GenOptions { objects: 30_000, gcs: 8, heap_dumps: 2, comments: 3, ..Preset::Tiny.options() };
    generate(&opts, Vec::new()).expect("generate").0
}

/// The end of the last whole line in `log[..n]`.
fn whole(log: &[u8], n: usize) -> usize {
    log[..n].iter().rposition(|&b| b == b'\n').map_or(0, |k| k + 1)
}

fn append(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new().append(true).create(true).open(path).expect("open");
    f.write_all(bytes).expect("append");
}

fn status(logs: &LogSet) -> SessionStatus {
    logs.statuses()[0].session.clone().expect("a session")
}

/// The figures a page shows, for comparison.
fn figures(m: &Model) -> String {
    format!(
        "{:?}\n{:?}\n{:?}\nsamples={} records={} dumps={}",
        query::summary(m),
        query::lifetime(m, &query::Filter::all()),
        query::types::by_type(m, query::types::HistogramKind::Allocated),
        m.samples().len(),
        m.records(),
        m.heap_dumps().dumps().len(),
    )
}

fn shown(logs: &LogSet) -> String {
    figures(&logs.ready(LogId(0)).expect("ready").model)
}

fn loaded(bytes: &[u8]) -> String {
    figures(&load(bytes, &LoadOptions::default()).expect("load"))
}

#[test]
fn a_live_session_reads_only_what_was_added() {
    let log = generated();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.log");
    let logs = LogSet::from_paths(&[]);
    logs.add_session("s", path.clone()).expect("add");
    let live = |_: &str| Some("live".to_string());
    let opts = LoadOptions::default();

    // A first part, its last line half written.
    let a = log.len() / 3 + 7;
    append(&path, &log[..a]);
    assert_eq!(logs.refresh_sessions(&opts, live), vec![LogId(0)]);
    let wa = whole(&log, a);
    let s = status(&logs);
    assert_eq!((s.loaded_bytes, s.read_bytes, s.generation), (wa as u64, wa as u64, 1));
    assert_eq!(shown(&logs), loaded(&log[..wa]));

    // More: only the bytes added are read.
    let b = log.len() * 2 / 3 + 3;
    append(&path, &log[a..b]);
    logs.refresh_sessions(&opts, live);
    let wb = whole(&log, b);
    let s = status(&logs);
    assert_eq!((s.loaded_bytes, s.read_bytes, s.generation), (wb as u64, (wb - wa) as u64, 2), "{s:?}");
    assert_eq!(shown(&logs), loaded(&log[..wb]));
    assert!(query::summary(&logs.ready(LogId(0)).expect("ready").model).allocated_bytes > 0);

    // Nothing new: nothing read, no new model.
    assert!(logs.refresh_sessions(&opts, live).is_empty());
    assert_eq!(status(&logs).generation, 2);

    // The collector cuts the file back to a line before what was read (an
    // agent resuming from its spool) and the same bytes come again: read
    // again from the start, the same figures.
    let back = whole(&log, a / 2);
    std::fs::OpenOptions::new().write(true).open(&path).expect("open").set_len(back as u64).expect("cut back");
    logs.refresh_sessions(&opts, live);
    let s = status(&logs);
    assert_eq!((s.loaded_bytes, s.read_bytes), (back as u64, back as u64), "{s:?}");
    assert_eq!(shown(&logs), loaded(&log[..back]));
    append(&path, &log[back..b]);
    logs.refresh_sessions(&opts, live);
    let s = status(&logs);
    assert_eq!((s.loaded_bytes, s.read_bytes), (wb as u64, (wb - back) as u64), "{s:?}");
    assert_eq!(shown(&logs), loaded(&log[..wb]));

    // A file whose bytes changed under what was read (same length and
    // more): read again from its start.
    let mut changed = log[..b].to_vec();
    let t = changed.windows(2).rposition(|w| w == b"\n!").expect("an allocation line") + 1;
    let line_end = t + changed[t..].iter().position(|&c| c == b'\n').expect("its end");
    changed.splice(t..line_end, b"z a changed line".iter().copied());
    std::fs::write(&path, &changed).expect("rewrite");
    append(&path, &log[b..b + 10]);
    let mut now = changed.clone();
    now.extend_from_slice(&log[b..b + 10]);
    logs.refresh_sessions(&opts, live);
    let w = whole(&now, now.len());
    let s = status(&logs);
    assert_eq!((s.loaded_bytes, s.read_bytes), (w as u64, w as u64), "{s:?}");
    assert_eq!(shown(&logs), loaded(&now[..w]));
    assert_ne!(shown(&logs), loaded(&log[..w]), "the changed line counts");

    // The session ends with the rest of the log: its last bytes read, the
    // figures of the whole file.
    std::fs::write(&path, &log).expect("the whole log");
    logs.refresh_sessions(&opts, live);
    let before_end = status(&logs).loaded_bytes;
    assert_eq!(before_end, whole(&log, log.len()) as u64);
    let mut tail = log.clone();
    tail.extend_from_slice(b"z the end\n");
    append(&path, b"z the end\n");
    logs.refresh_sessions(&opts, |_| Some("ended".to_string()));
    let s = status(&logs);
    assert_eq!((s.live, s.loaded_bytes, s.read_bytes), (false, tail.len() as u64, 10), "{s:?}");
    assert_eq!(shown(&logs), loaded(&tail));
}

#[test]
fn a_session_first_seen_ended_is_loaded_whole() {
    let log = generated();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.log");
    std::fs::write(&path, &log).expect("write");
    let logs = LogSet::from_paths(&[]);
    logs.add_session("s", path).expect("add");
    logs.refresh_sessions(&LoadOptions::default(), |_| Some("ended".to_string()));
    assert_eq!(shown(&logs), loaded(&log));
    assert_eq!(status(&logs).read_bytes, log.len() as u64);
}
