//! Fuzz target: any bytes through the collector protocol's parsers (the
//! challenge, `HELLO` and `OK` lines, frame headers, a stream of frames,
//! the commands a collector sends) without a panic, a hang or memory beyond
//! the input; what parses is written back and parses to the same value; a
//! `HELLO` whose MAC does not match the token is refused.
//!
//! Run (see the guide's Testing chapter):
//! `cargo +nightly fuzz run wire -- -rss_limit_mb=2048 -max_total_time=240`.
#![no_main]

use clrprof_wire::command::Command;
use clrprof_wire::frame::{FrameHeader, FrameKind, HEADER, MAX_FRAME};
use clrprof_wire::handshake::{self, Hello};
use clrprof_wire::token::{Nonce, Token};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let token = Token::from_bytes([7; 32]);
    let server = Nonce([9; 32]);
    let client = Nonce([3; 32]);

    // Lines as a peer sends them.
    let _ = handshake::parse_challenge(data);
    if let Ok(hello) = handshake::parse_hello(data, &token, &server) {
        // Only a line made with the token gets here; it reads back the same.
        let line = handshake::hello_line(&token, &server, &hello).expect("a parsed hello encodes");
        assert_eq!(handshake::parse_hello(line.as_bytes(), &token, &server).expect("re-parse"), hello);
    }
    let _ = handshake::parse_ok(data, &token, &client, &server);

    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(hello) = Hello::decode(text) {
            let again = Hello::decode(&hello.encode()).expect("an encoded hello decodes");
            assert_eq!(again, hello);
            // Signed with the token, it passes if its nonce is one (64 hex
            // digits); with another token, never.
            let line = handshake::hello_line(&token, &server, &hello).expect("encode");
            let parsed = handshake::parse_hello(line.as_bytes(), &token, &server);
            if handshake::client_nonce(&hello).is_ok() {
                assert_eq!(parsed.expect("signed hello"), hello);
            } else {
                assert!(parsed.is_err());
            }
            assert!(handshake::parse_hello(line.as_bytes(), &Token::from_bytes([8; 32]), &server).is_err());
        }
        if let Ok(cmd) = Command::parse(text) {
            assert_eq!(Command::parse(&cmd.text()).expect("a command's text parses"), cmd);
        }
    }

    // A stream of frames: every header is checked before its payload is
    // taken, and no payload is larger than the limit or than what is there.
    let mut rest = data;
    while rest.len() >= HEADER {
        let mut h = [0u8; HEADER];
        h.copy_from_slice(&rest[..HEADER]);
        let Ok(header) = FrameHeader::parse(h) else { break };
        assert!(header.len <= MAX_FRAME);
        assert_eq!(FrameHeader::encode(header.kind, header.len), h);
        let body = &rest[HEADER..];
        let Some(payload) = body.get(..header.len as usize) else { break };
        if header.kind == FrameKind::Command {
            if let Ok(text) = std::str::from_utf8(payload) {
                let _ = Command::parse(text.split_once(' ').map_or(text, |(_, c)| c));
            }
        }
        rest = &body[header.len as usize..];
    }
});
