//! Any input: no panic, no hang, the same answer in parallel as in one pass,
//! and truncated logs read up to their last complete record.

use clrprof::format::{parse_chunks, read_all, ChunkOptions, Kind, Parsed, Record};
use proptest::prelude::*;

/// A printable summary of a record stream, for comparisons.
fn digest(records: &[Parsed<'_>]) -> Vec<String> {
    records.iter().map(|p| format!("{}@{}:{:?}", p.record.kind().letter(), p.offset, p.record)).collect()
}

fn parallel(data: &[u8], chunk_bytes: usize, threads: usize) -> (Vec<String>, u64) {
    let mut out = Vec::new();
    let opts = ChunkOptions { chunk_bytes, threads: Some(threads), in_flight: 0 };
    let d = parse_chunks(data, &opts, |r| digest(&r.collect::<Vec<_>>()), |v, _| out.extend(v));
    (out, d.total())
}

/// Bytes that look like log lines often enough to reach deep into the
/// parsers, with arbitrary garbage mixed in.
fn loggy_bytes() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        3 => proptest::sample::select(vec![
            "t ", "f ", "m ", "y ", "n ", "s ", "! ", "a ", "c ", "i ", "z ", "b ", "g ", "u ", "v ", "l ", "h ", "j ",
            "e ", "r ", "o ", "d ", "T ", "N ", "0x", "0X", "-", "1 ", "12 ", "4 ", "7 ", "0x1000 ", "<", ">", "(", ")",
            "\\", "\\u00e9", " ", "\t", "\n", "\r\n", "\r", "Foo", "A::B", "99999999999999999999999",
        ]).prop_map(|s| s.as_bytes().to_vec()),
        1 => proptest::collection::vec(any::<u8>(), 1..4),
    ];
    proptest::collection::vec(token, 0..200).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..400)) {
        let (records, _) = read_all(&data);
        // every record starts inside the data, in increasing order
        for w in records.windows(2) {
            prop_assert!(w[0].offset < w[1].offset);
        }
    }

    #[test]
    fn parallel_equals_sequential(data in loggy_bytes(), chunk in 1usize..64, threads in 1usize..4) {
        let (seq, seq_warnings) = read_all(&data);
        let (par, par_warnings) = parallel(&data, chunk, threads);
        prop_assert_eq!(digest(&seq), par);
        prop_assert_eq!(seq_warnings.total(), par_warnings);
    }
}

/// A well-formed log made with the writer.
fn sample_log() -> Vec<u8> {
    let text = "i 0\nt 1 0 System.String\nf 1 A::B<x y> void (int) 0x0000000000001000 10 0 0\nn 1 1 1 24 1\n\
                ! 7 0x1000 1\n! 7 0x1018 1\nh 7 0x0000000000002000 0x0000000000001000 1\n\
                b 1 0 0 0x0000000000001000 48 4096 0\nu 0x1000 0x1100 24\nv 0x1018 24\n\
                b 0 0 0 0x0000000000001000 48 4096 0\ng 1 0 0\nz done here\nj 7 0x0000000000002000 1\n";
    text.as_bytes().to_vec()
}

#[test]
fn truncated_logs_read_up_to_the_last_complete_record() {
    let full = sample_log();
    let (all, w) = read_all(&full);
    assert_eq!(w.total(), 0);
    for cut in 0..=full.len() {
        let prefix = &full[..cut];
        let (got, _) = read_all(prefix);
        // Every record that ends (with its line end) inside the prefix is read,
        // and matches the full read.
        let complete: Vec<_> = all
            .iter()
            .enumerate()
            .filter(|(i, _)| {
                let end = all.get(i + 1).map_or(full.len() as u64, |n| n.offset);
                end <= cut as u64
            })
            .map(|(_, p)| *p)
            .collect();
        assert!(got.len() >= complete.len(), "cut {cut}: {} < {}", got.len(), complete.len());
        for (g, c) in got.iter().zip(&complete) {
            assert_eq!(g.record, c.record, "cut at {cut}");
        }
        // A record cut inside is either dropped or (for the kinds CLRProfiler
        // applies) delivered and flagged.
        for extra in &got[complete.len()..] {
            assert!(extra.at_end_of_file || cut == full.len(), "cut {cut}: {:?}", extra);
            assert!(!extra.record.kind().dropped_at_end_of_file());
        }
    }
}

#[test]
fn unknown_last_line_without_newline_does_not_hang() {
    let (recs, w) = read_all(b"t 1 0 T\nd foo");
    assert_eq!(recs.len(), 2);
    assert_eq!(w.total(), 1);
    let (recs, w) = read_all(b"t 1 0 T\nqqq");
    assert_eq!(recs.len(), 1);
    assert_eq!(w.warnings()[0].line, 2);
}

#[test]
fn trailing_text_is_read_as_a_new_record() {
    let (recs, w) = read_all(b"a 0x1000 1 a 0x2000 1\n");
    assert_eq!(recs.len(), 2);
    assert_eq!(w.total(), 1);
    let (recs, _) = read_all(b"i 5 z hello\n");
    assert!(matches!(recs[1].record, Record::Comment(c) if c.text == b"hello"));
}

#[test]
fn the_profilers_error_message_reads_as_a_heap_dump_root() {
    let (recs, _) = read_all(b"Error While Shutting Down Helper Threads: 0x00000000\n");
    let kinds: Vec<_> = recs.iter().map(|r| r.record.kind()).collect();
    assert_eq!(kinds, vec![Kind::Root, Kind::Roots]);
}

#[test]
fn crlf_and_case_insensitive_kinds() {
    let (recs, w) = read_all(b"T 1 0 System.String\r\nN 1 1 1 24\r\nA 0x10 1\r\n");
    assert_eq!(w.total(), 0);
    assert_eq!(recs.len(), 3);
    let Record::Type(t) = recs[0].record else { panic!() };
    assert_eq!(t.name, b"System.String");
}
