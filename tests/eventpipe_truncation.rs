//! Traces cut short (a process killed mid-trace) and damaged: the reader
//! hands out the events of every complete block, ends with a warning that
//! says what is missing, and never panics or loops.

use clrprof::eventpipe::{read_block, read_header, BlockKind, EventBlobs, NetTraceReader, Warning};
use std::path::PathBuf;

const TRACES: &[&str] = &[
    "eventpipe-dotnetcore3.0-win-x64-objver4.nettrace",
    "eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace",
    "eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace",
];

fn load(name: &str) -> Vec<u8> {
    std::fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/eventpipe").join(name)).unwrap()
}

/// Every block's end offset and the events the trace holds up to it.
fn boundaries(bytes: &[u8]) -> Vec<(u64, u64)> {
    let mut at = read_header(bytes).unwrap().end_offset;
    let mut events = 0;
    let mut out = vec![(at, 0)];
    while let Some(b) = read_block(bytes, at).unwrap() {
        if b.kind == BlockKind::Event {
            events += EventBlobs::new(b.body, b.body_offset).unwrap().count() as u64;
        }
        at = b.end_offset;
        out.push((at, events));
    }
    out
}

/// (events read, the Truncated warning if any); errors fail the test.
fn read(bytes: &[u8]) -> (u64, Option<Warning>) {
    let mut r = NetTraceReader::new(bytes).unwrap();
    let mut n = 0;
    while r.next_event().unwrap().is_some() {
        n += 1;
    }
    let complete = r.is_complete();
    let s = r.finish();
    let t = s.warnings.into_iter().find(|w| matches!(w, Warning::Truncated { .. }));
    assert_eq!(complete, t.is_none());
    (n, t)
}

#[test]
#[cfg_attr(no_eventpipe_corpus, ignore = "needs ../shared/corpus/eventpipe, missing when built (touch build.rs after installing)")]
fn cut_at_every_block_boundary_and_inside_blocks() {
    for name in TRACES {
        let bytes = load(name);
        let bounds = boundaries(&bytes);
        let total = bounds.last().unwrap().1;
        assert_eq!(read(&bytes), (total, None), "{name}: the whole trace");
        // every boundary of the small traces, about 150 of the large one
        let step = (bounds.len() / 150).max(1);
        let mut checked = 0;
        for (i, &(end, events)) in bounds.iter().enumerate().step_by(step) {
            // at the boundary (the end mark missing), and 1, 7 and half a
            // block after it (mid-block)
            let next = bounds.get(i + 1).map_or(end + 1, |b| b.0);
            for cut in [end, end + 1, end + 7, end + (next - end) / 2] {
                if cut >= bytes.len() as u64 || (cut > end && cut >= next) {
                    continue;
                }
                let (n, w) = read(&bytes[..cut as usize]);
                assert_eq!(n, events, "{name} cut at {cut}: the events of the complete blocks");
                match w {
                    Some(Warning::Truncated { complete_until, unread_bytes, .. }) => {
                        assert_eq!(complete_until, end, "{name} cut at {cut}");
                        assert_eq!(unread_bytes, cut - end, "{name} cut at {cut}");
                        let text = Warning::Truncated { complete_until, unread_bytes, error: read_error(&bytes, cut) }
                            .to_string();
                        assert!(text.contains("cut short") && text.contains(&end.to_string()), "{text}");
                    }
                    other => panic!("{name} cut at {cut}: expected a Truncated warning, got {other:?}"),
                }
                checked += 1;
            }
        }
        assert!(checked >= 4, "{name}: {checked} cuts");
        eprintln!("{name}: {} blocks, {total} events, {checked} cuts checked", bounds.len() - 1);
    }
}

fn read_error(bytes: &[u8], cut: u64) -> clrprof::eventpipe::Error {
    let mut r = NetTraceReader::new(&bytes[..cut as usize]).unwrap();
    while r.next_event().unwrap().is_some() {}
    match r.finish().warnings.into_iter().find_map(|w| if let Warning::Truncated { error, .. } = w { Some(error) } else { None }) {
        Some(e) => e,
        None => panic!("no truncation at {cut}"),
    }
}

#[test]
#[cfg_attr(no_eventpipe_corpus, ignore = "needs ../shared/corpus/eventpipe, missing when built (touch build.rs after installing)")]
fn cut_inside_the_header_is_an_error_with_its_offset() {
    let bytes = load(TRACES[2]);
    let end = read_header(&bytes).unwrap().end_offset as usize;
    for cut in 0..end {
        let e = NetTraceReader::new(&bytes[..cut]).unwrap_err();
        assert!(e.offset <= cut as u64, "cut {cut}: {e}");
    }
}

#[test]
#[cfg_attr(no_eventpipe_corpus, ignore = "needs ../shared/corpus/eventpipe, missing when built (touch build.rs after installing)")]
fn damaged_bytes_never_panic() {
    // 200 bytes spread over each trace (every byte of the smallest),
    // replaced by a few values: the reader returns events, errors or
    // warnings, and stops.
    for name in TRACES {
        let bytes = load(name);
        let step = (bytes.len() / 200).max(1);
        for i in (0..bytes.len()).step_by(step) {
            for v in [0x00, 0x7f, 0xff] {
                let mut b = bytes.clone();
                b[i] = v;
                let Ok(mut r) = NetTraceReader::new(&b) else { continue };
                let mut n = 0u64;
                loop {
                    match r.next_event() {
                        Ok(Some(e)) => {
                            let _ = e.fields();
                            let _ = e.stack.frames().count();
                            n += 1;
                            assert!(n < 10_000_000, "{name}: no end");
                        }
                        Ok(None) | Err(_) => break,
                    }
                }
            }
        }
    }
}
