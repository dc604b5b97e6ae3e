//! The reference logs in `../shared/corpus/reference/`: record counts equal
//! an independent count of lines by first character, and the damaged and
//! quirk logs produce warnings on the right lines. Skips when the folder is
//! absent.

use clrprof::format::{ChunkOptions, Kind, LogSource, LogStats};
use std::collections::BTreeMap;
use std::path::Path;

mod common;
use common::*;

/// Counts lines by their first byte (lower-cased), the naive way.
fn count_lines_by_first_char(data: &[u8]) -> BTreeMap<char, u64> {
    let mut m = BTreeMap::new();
    for line in data.split(|&b| b == b'\n') {
        if let Some(&b) = line.first() {
            *m.entry(b.to_ascii_lowercase() as char).or_insert(0) += 1;
        }
    }
    m
}

fn stats(path: &Path, chunk_bytes: usize) -> LogStats {
    let src = LogSource::open(path).expect("open reference log");
    LogStats::compute(src.bytes(), &ChunkOptions { chunk_bytes, threads: Some(2), in_flight: 0 })
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch build.rs after installing)")]
fn well_formed_logs_count_every_line() {
    let Some(dir) = reference_dir() else { return };
    for name in ["sample-all-kinds", "gen-tiny", "gen-small", "real-CLRProfilerTestBedMk1"] {
        let path = dir.join(format!("{name}.log"));
        let data = std::fs::read(&path).expect("read");
        let naive = count_lines_by_first_char(&data);
        // small chunks exercise the parallel path on every log
        for chunk in [1 << 12, 1 << 20] {
            let s = stats(&path, chunk);
            assert_eq!(s.diagnostics.total(), 0, "{name}: {:?}", s.diagnostics.warnings());
            for k in Kind::ALL {
                let expected = naive.get(&k.letter()).copied().unwrap_or(0);
                assert_eq!(s.count(k), expected, "{name}: kind {}", k.letter());
            }
            assert_eq!(s.total_records(), naive.values().sum::<u64>(), "{name}");
            assert_eq!(s.lines, data.iter().filter(|&&b| b == b'\n').count() as u64, "{name}");
        }
    }
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch build.rs after installing)")]
fn damaged_log_warns_at_each_damage() {
    let Some(dir) = reference_dir() else { return };
    let truth: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("gen-tiny-damaged.truth.json")).expect("truth")).expect("json");
    let s = stats(&dir.join("gen-tiny-damaged.log"), 1 << 14);
    let warned: Vec<u64> = s.diagnostics.warnings().iter().map(|w| w.line).collect();
    let damage = truth["damage"].as_array().expect("damage list");
    let mut checked = 0;
    for d in damage {
        if let Some(line) = d["line"].as_u64() {
            assert!(warned.contains(&line), "no warning at line {line} ({}); warned {warned:?}", d["kind"]);
            checked += 1;
        }
    }
    assert_eq!(checked, 4);
    // Apart from the damage, every line is read: the naive count agrees,
    // except for the truncated last allocation, which is dropped.
    let data = std::fs::read(dir.join("gen-tiny-damaged.log")).expect("read");
    let naive = count_lines_by_first_char(&data);
    for k in Kind::ALL {
        let expected = naive.get(&k.letter()).copied().unwrap_or(0);
        let dropped = u64::from(k == Kind::Alloc);
        assert_eq!(s.count(k), expected - dropped, "kind {}", k.letter());
    }
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch build.rs after installing)")]
fn quirk_logs_warn_on_the_right_line() {
    let Some(dir) = reference_dir() else { return };
    // (log, lines that must carry a warning); logs not listed must read clean.
    let expected: &[(&str, &[u64])] = &[
        ("quirk-q1_unknown_eof", &[4]),
        ("quirk-q2_last_line_no_nl", &[4]),
        ("quirk-q3_leading_ws", &[3, 4]),
        ("quirk-q4_trailing", &[3, 4]),
        ("quirk-q5_error_line", &[6]),
        ("quirk-q9_bad_ref", &[1]),
        ("quirk-q10_bad_alloc", &[2]),
        ("quirk-q11_gen4", &[1]),
    ];
    for entry in std::fs::read_dir(&dir).expect("list") {
        let path = entry.expect("entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let Some(stem) = name.strip_suffix(".log").filter(|s| s.starts_with("quirk-")) else { continue };
        let s = stats(&path, 1 << 12);
        let lines: Vec<u64> = s.diagnostics.warnings().iter().map(|w| w.line).collect();
        match expected.iter().find(|(n, _)| *n == stem) {
            Some((_, want)) => {
                for l in *want {
                    assert!(lines.contains(l), "{stem}: no warning on line {l}: {lines:?}");
                }
                assert!(lines.iter().all(|l| want.contains(l)), "{stem}: unexpected warning lines {lines:?}");
            }
            None => assert!(lines.is_empty(), "{stem}: unexpected warnings {:?}", s.diagnostics.warnings()),
        }
    }
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch build.rs after installing)")]
fn fast_path_reads_every_reference_log_as_the_general_parser_does() {
    let Some(dir) = reference_dir() else { return };
    let mut logs = 0;
    let mut records = 0;
    for entry in std::fs::read_dir(&dir).expect("list reference logs") {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("log") {
            continue;
        }
        let data = std::fs::read(&path).expect("read");
        let mut fast = clrprof::format::RecordReader::new(&data);
        let mut general = clrprof::format::RecordReader::new(&data).general_only();
        loop {
            let (a, b) = (fast.next_record(), general.next_record());
            assert_eq!(a, b, "{}", path.display());
            if a.is_none() {
                break;
            }
            records += 1;
        }
        let w = |r: &clrprof::format::RecordReader<'_>| format!("{:?}", r.diagnostics().warnings());
        assert_eq!(w(&fast), w(&general), "{}", path.display());
        logs += 1;
    }
    assert!(logs >= 4 && records > 100_000, "{logs} logs, {records} records");
}
