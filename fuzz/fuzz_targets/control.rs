//! Fuzz target: any bytes through the agent control socket's parsers (a
//! request line as a client sends it, a reply line as the agent sends it)
//! and the diagnostics IPC reply parser, without a panic, a hang or memory
//! beyond the input; what parses is written back, and that line parses
//! and is written back unchanged (writing replaces tabs and line ends
//! inside values with spaces, so the first write may change a value).
//!
//! Run (see the guide's Testing chapter):
//! `cargo +nightly fuzz run control -- -rss_limit_mb=2048 -max_total_time=240`.
#![no_main]

use clrprof_control::{diagnostics, protocol};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = protocol::parse_request(data) {
        let line = protocol::request_line(&r);
        let again = protocol::parse_request(&line).expect("a request's line parses");
        assert_eq!(protocol::request_line(&again), line);
    }
    if let Ok(r) = protocol::parse_reply(data) {
        let line = protocol::reply_line(&r);
        let again = protocol::parse_reply(&line).expect("a reply's line parses");
        assert_eq!(protocol::reply_line(&again), line);
    }
    let _ = diagnostics::parse_reply(data);
});
