//! A log read as it grows ([`GrowingLog`]) gives, after every part, the
//! model [`load`] gives for the same bytes up to the last line end: on
//! every log of the reference corpus and of `corpus/`, cut at random
//! places (inside lines too), and on logs that stop at an error.

mod common;

use clrprof::format::ChunkOptions;
use clrprof::model::{load, GrowingLog, LoadOptions, Model, ObjectId};
use clrprof::query::filter::Filter;
use clrprof::query::lifetime::lifetime;
use clrprof::query::summary::summary;
use clrprof::query::types::{by_type, HistogramKind};
use std::path::PathBuf;

/// FNV-1a over 64-bit words.
fn fold(h: u64, v: u64) -> u64 {
    (h ^ v).wrapping_mul(0x0000_0100_0000_01B3)
}

const SEED: u64 = 0xCBF2_9CE4_8422_2325;

/// Everything the two models must agree on, as text (large tables folded
/// into hashes).
fn figures(m: &Model) -> String {
    let samples = m.samples().samples().iter().fold(SEED, |h, (id, x)| {
        let h = fold(fold(h, id.0 as u64), x.type_id.0 as u64);
        let h = fold(fold(h, x.change.0 as u64), x.alloc.0 as u64);
        fold(h, x.prev.map_or(u64::MAX, |p| p.0 as u64))
    });
    let n = m.allocations().len() as u32;
    let mut objects = SEED;
    m.allocations().for_each_in(ObjectId(0)..ObjectId(n), |row, fate| {
        objects = fold(fold(objects, row.id.0 as u64), row.stack.0 as u64);
        objects = fold(fold(objects, row.thread.0 as u64), row.tick.0 as u64);
        objects = format!("{fate:?}").bytes().fold(objects, |h, b| fold(h, b as u64));
        objects = fold(objects, m.death_tick(row.id).map_or(u64::MAX, |t| t.0 as u64));
    });
    let addresses = m.allocations().addresses().fold(SEED, fold);
    let types: Vec<_> = HistogramKind::ALL.iter().map(|(k, _)| by_type(m, *k)).collect();
    format!(
        "{:?}\ntypes {types:?}\nlifetime {:?}\nobjects={n} {objects:x} {addresses:x} samples={} {samples:x} live={} records={}\n\
         gcs {:?}\ncollections {:?}\ndumps {:?}\ncomments {:?}\ndiagnostics {:?}\nfile_bytes={} alloc_info={} call_info={}",
        summary(m),
        lifetime(m, &Filter::default()),
        m.samples().len(),
        m.live_objects_at_end(),
        m.records(),
        m.gcs(),
        m.collections(),
        m.heap_dumps(),
        m.comments(),
        m.diagnostics(),
        m.file_bytes(),
        m.had_alloc_info(),
        m.had_call_info(),
    )
}

/// What `load` gives for `data`: the figures or the error's text.
fn loaded(data: &[u8]) -> Result<String, String> {
    load(data, &LoadOptions::default()).map(|m| figures(&m)).map_err(|e| e.to_string())
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
}

fn same(name: &str, to: usize, what: &str, want: &Result<String, String>, got: &Result<String, String>) {
    match (want, got) {
        (Ok(a), Ok(b)) => assert!(a == b, "{name}: cut at {to}, {what}:\nload:\n{a}\ngrowing:\n{b}"),
        (Err(a), Err(b)) => assert_eq!(a, b, "{name}: cut at {to}, {what}"),
        _ => panic!("{name}: cut at {to}, {what}: load {want:?}, growing {got:?}"),
    }
}

/// Feeds `data` to a growing log in parts ending at `cuts` (increasing),
/// checking the model against `load` after each part, then once more at
/// the end. Gives how many cuts were compared and at how many a record
/// was held back (it reached the last line end and might go on).
fn check_in_parts(name: &str, data: &[u8], cuts: &[usize]) -> (usize, usize) {
    check_from(name, data, GrowingLog::new(), 0, cuts)
}

/// [`check_in_parts`] from `g`, which holds the first `from` bytes.
fn check_from(name: &str, data: &[u8], mut g: GrowingLog, mut from: usize, cuts: &[usize]) -> (usize, usize) {
    let mut compared = 0;
    let mut held_back = 0;
    for &to in cuts.iter().chain(std::iter::once(&data.len())) {
        let to = to.max(from);
        let fed = g.extend(&data[from..to]);
        from = to;
        let parsed = g.parsed_bytes() as usize;
        // Up to the last line end given, never beyond; short of it only
        // by a record that reaches it (and then not past its line).
        let line_end = data[..to].iter().rposition(|&b| b == b'\n').map_or(0, |k| k + 1);
        assert!(parsed <= line_end, "{name}: parsed {parsed} of {to}, beyond the line end {line_end}");
        if parsed < line_end && g.error().is_none() {
            held_back += 1;
        }
        let want = loaded(&data[..parsed]);
        let got = g.model().map(|m| figures(&m)).map_err(|e| e.to_string());
        same(name, to, "model", &want, &got);
        // As if the log ended at the cut: the load of every byte given.
        let at_end = g.model_at_end().map(|m| figures(&m)).map_err(|e| e.to_string());
        if g.error().is_none() {
            same(name, to, "model_at_end", &loaded(&data[..to]), &at_end);
        }
        if let Err(e) = fed {
            assert_eq!(Err(e.to_string()), got.clone().map(|_| ()), "{name}: extend and model give the same error");
        }
        compared += 1;
    }
    (compared, held_back)
}

fn logs() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![common::repo_root().join("corpus")];
    dirs.extend(common::reference_dir());
    for dir in dirs {
        let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .collect();
        found.sort();
        out.extend(found);
    }
    out
}

#[test]
fn every_corpus_log_read_in_parts_gives_the_loaded_model() {
    let logs = logs();
    assert!(logs.len() >= 4, "too few logs: {logs:?}");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut compared, mut held_back) = (0, 0);
    for path in &logs {
        let data = std::fs::read(path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // Small logs: cut after every byte (every line end and every place
        // inside a line). Large ones: a dozen random places.
        let cuts: Vec<usize> = if data.len() <= 4096 {
            (1..data.len()).collect()
        } else {
            let mut c: Vec<usize> = (0..12).map(|_| rng.below(data.len() as u64) as usize).collect();
            c.sort();
            c
        };
        let (c, h) = check_in_parts(&name, &data, &cuts);
        compared += c;
        held_back += h;
    }
    assert!(compared > 1000, "only {compared} models compared");
    // `tricky.log` has a type name that goes on to the next line: a cut
    // after its first line holds the record back.
    assert!(held_back > 0, "no record was ever held back");
}

#[test]
fn a_log_given_one_line_at_a_time_gives_the_loaded_model_after_each() {
    // Every line end of a log with heap dumps, GCs, moves, handles and
    // comments (each line's model against a load of the same lines).
    let path = common::repo_root().join("corpus/all-kinds.log");
    let data = std::fs::read(&path).unwrap();
    let cuts: Vec<usize> = data.iter().enumerate().filter(|(_, &b)| b == b'\n').map(|(k, _)| k + 1).collect();
    assert!(cuts.len() > 20, "{} has only {} lines", path.display(), cuts.len());
    assert_eq!(check_in_parts("all-kinds.log", &data, &cuts).0, cuts.len() + 1);
}

#[test]
fn a_log_with_an_error_stops_there_as_load_does() {
    let head = "t 1 0 T\nn 1 1 1 16\n! 1 0x1000 1\n";
    let log = format!("{head}! 1 0x1010 7\n! 1 0x1020 1\ni 5\n");
    let data = log.as_bytes();
    let want = load(data, &LoadOptions::default()).unwrap_err();
    assert_eq!(want.line, 4);
    let mut g = GrowingLog::new();
    g.extend(head.as_bytes()).unwrap();
    assert_eq!(g.model().unwrap().allocations().len(), 1);
    let e = g.extend(&data[head.len()..]).unwrap_err();
    assert_eq!(e, want);
    assert_eq!(g.model().unwrap_err(), want);
    assert_eq!(g.error(), Some(&want));
    // Nothing more is read or kept.
    assert_eq!(g.extend(b"! 1 0x1030 1\n").unwrap_err(), want);
    assert_eq!(g.len(), data.len() as u64);
    assert_eq!(g.held_bytes(), 0);
    // Every place the log can be cut agrees with load as well.
    check_in_parts("error", data, &(1..data.len()).collect::<Vec<_>>());
    // The record that fails has more text after it on its line (read as
    // a record of its own): what counts as read is the whole line, whose
    // load gives the same error (found by the fuzz target; a load of the
    // log up to the failing record's end would drop it as cut short).
    let log = format!("{head}! 1 0x1010 7g 1 0 0\n! 1 0x1020 1\n");
    let data = log.as_bytes();
    for a in 0..data.len() {
        let g = GrowingLog::load(&data[..a], &LoadOptions::default(), |_| {});
        check_from(&format!("error with text after, loaded to {a}"), data, g, a, &[(a + 9).min(data.len())]);
    }
}

#[test]
fn a_line_waits_for_its_end() {
    let mut g = GrowingLog::new();
    g.extend(b"t 1 0 System.String\nn 1 1 1 24\n! 7 0x10").unwrap();
    assert_eq!(g.parsed_bytes(), 31);
    assert_eq!(g.model().unwrap().allocations().len(), 0);
    // Half an address is not an object at 0x10: the line waits.
    g.extend(b"00 1\n").unwrap();
    let m = g.model().unwrap();
    assert_eq!(m.allocations().len(), 1);
    assert_eq!(m.allocations().addresses().next(), Some(0x1000));
    assert_eq!(g.len(), 44);
    // Nothing of the log is kept once read (but a heap-dump root line,
    // which the next record may read again).
    assert_eq!(g.held_bytes(), 0);
    g.extend(b"e 0x1000 0 0x0 0\nz half a comm").unwrap();
    assert_eq!(g.held_bytes(), "e 0x1000 0 0x0 0\nz half a comm".len());
}

#[test]
fn the_parser_state_between_heap_dump_lines_is_carried_over() {
    // After an `e` line, an `r` line is skipped to its end, text and all
    // (CLRProfiler ignores the old root form once it has seen the new
    // one). Without the `e` line before it, the reader stops after its
    // addresses, and the text after them is read as records of its own
    // (here an `s` record with a bad stack id: an error). A cut between
    // the two lines must not lose that state.
    let log = "t 1 0 T\nn 1 1 1 16\n! 1 0x1000 1\ne 0x1000 0 0x0 0\nr 0x1000 some words\no 0x1000 1 16\n";
    let data = log.as_bytes();
    let e_end = log.find("r 0x").unwrap();
    let mut g = GrowingLog::new();
    g.extend(&data[..e_end]).unwrap();
    g.extend(&data[e_end..]).unwrap();
    let m = g.model().unwrap();
    let whole = load(data, &LoadOptions::default()).unwrap();
    assert_eq!(figures(&m), figures(&whole));
    let alone = load(log.replace("e 0x1000 0 0x0 0\n", "").as_bytes(), &LoadOptions::default());
    assert!(alone.is_err(), "the state decides nothing here: {:?}", alone.map(|m| figures(&m)));
    check_in_parts("dump state", data, &(1..data.len()).collect::<Vec<_>>());
    // The same through `GrowingLog::load`, which reads all but the last
    // line on the pool: the state after the `e` line comes from there.
    let r_end = log.find("o 0x").unwrap();
    let g = GrowingLog::load(&data[..r_end], &LoadOptions::default(), |_| {});
    assert_eq!(g.parsed_bytes(), r_end as u64);
    assert_eq!(g.model().map(|m| figures(&m)), load(&data[..r_end], &LoadOptions::default()).map(|m| figures(&m)));
    for a in 0..data.len() {
        let g = GrowingLog::load(&data[..a], &LoadOptions::default(), |_| {});
        check_from(&format!("dump state loaded to {a}"), data, g, a, &[]);
    }
}

#[test]
fn a_log_loaded_on_every_core_then_grown_gives_the_loaded_model() {
    // `GrowingLog::load` reads all but the last line as `load` does (the
    // pool parses, chunks of 40 bytes so that small logs have many), then
    // the log grows as before: the builder's state after the pipelined
    // read must be the one a record-by-record read leaves.
    let opts = LoadOptions { chunks: ChunkOptions { chunk_bytes: 40, threads: None, in_flight: 0 } };
    let mut rng = Rng(0x0123_4567_89AB_CDEF);
    let mut compared = 0;
    for path in logs() {
        let data = std::fs::read(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let starts: Vec<usize> = if data.len() <= 4096 {
            (0..data.len()).step_by(7).collect()
        } else {
            (0..3).map(|_| rng.below(data.len() as u64) as usize).collect()
        };
        for a in starts {
            let opts = if data.len() > 4096 { LoadOptions::default() } else { opts.clone() };
            let mut seen = 0;
            let g = GrowingLog::load(&data[..a], &opts, |d| seen = d);
            assert_eq!(g.len(), a as u64);
            assert!(a == 0 || seen == a as u64, "{name}: progress {seen} of {a}");
            let rest: Vec<usize> = if data.len() <= 4096 {
                vec![(a + 50).min(data.len())]
            } else {
                vec![a + (data.len() - a) / 2]
            };
            compared += check_from(&format!("{name} loaded to {a}"), &data, g, a, &rest).0;
        }
    }
    assert!(compared > 300, "only {compared} models compared");
}
