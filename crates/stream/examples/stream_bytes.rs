//! Streams MB megabytes of log-like lines to a collector and says how it
//! went: the client's side of the TLS-against-plain-TCP cost figures in
//! the guide's Collector chapter.
//!
//! ```text
//! cargo run --release -p clrprof-stream --example stream_bytes -- TARGET TOKEN MB [FINGERPRINT]
//! ```

use clrprof_stream::{Host, Identity, Spool, StreamConfig, Streamer, Tls};

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [target, token, mb, rest @ ..] = args.as_slice() else {
        return Err("usage: stream_bytes TARGET TOKEN MB [FINGERPRINT]".into());
    };
    let token = clrprof_wire::Token::from_hex(token).map_err(|e| format!("token: {e}"))?;
    let mb: usize = mb.parse().map_err(|e| format!("MB: {e}"))?;
    let tls = Tls::from_settings(rest.first().map(String::as_str), None);
    let config = StreamConfig {
        target: target.clone(),
        tls,
        token: Some(token),
        spool: Spool::Private(format!("stream_bytes_{}.spool.log", std::process::id())),
        buffer_bytes: 64 << 20,
        linger_ms: 30_000,
        reconnect_ms: 500,
        content: clrprof_wire::Content::Log,
        speaker: "stream_bytes",
        host: Host::default(),
    };
    let identity = Identity { pid: std::process::id(), program: "stream_bytes".into(), runtime: "none".into() };
    let mut s = Streamer::start(config, identity);
    // One 64 KB buffer of lines, made once and handed over again and
    // again: what is measured is the streaming, not the making of lines.
    let mut chunk = Vec::with_capacity(64 << 10);
    let mut line = 0u64;
    while chunk.len() < (64 << 10) - 64 {
        line += 1;
        chunk.extend_from_slice(format!("! {line} 0x{:x} 4 {}\n", 0x1000_0000 + line * 24, line % 97).as_bytes());
    }
    let mut sent = 0usize;
    while sent < mb << 20 {
        sent += chunk.len();
        s.write(chunk.clone());
        s.poll();
        if sent % (8 << 20) < chunk.len() {
            // Within the client's bound of unacknowledged bytes, as a
            // program's own pace keeps it.
            s.wait_sent(std::time::Duration::from_secs(30));
        }
    }
    s.finish();
    let o = s.outcome();
    println!("{sent} bytes; session {:?}; spool {:?}; streamed {}", o.session, o.spool, o.streamed);
    if o.spool.is_some() || o.streamed != sent as u64 {
        return Err("not everything was acknowledged by the collector".into());
    }
    Ok(())
}
