//! `record --sampled --target`: the trace of an EventPipe session sent to
//! `clrprof collect` as it arrives, through the same client the capture
//! agent streams its log with (crate `clrprof-stream`): the token
//! handshake, acknowledged bytes, and the spool file the trace goes on in
//! when the collector is away, sent to it again once it is back. The
//! collector stores the trace byte for byte as `<session>.nettrace`.

use clrprof_stream::{Identity, Outcome, Streamer};
use clrprof_stream::{Spool, StreamConfig};
use std::io::Write;

/// In-memory bytes the collector may be behind by before the trace goes
/// to the spool (as the agent's default).
const BUFFER_MB: usize = 64;
/// At the end, how long to wait for the collector to confirm it stored
/// everything (or for a catch-up from the spool to finish).
const LINGER_MS: u64 = 10_000;
/// How often the collector is tried again while the trace goes to the
/// spool.
const RECONNECT_MS: u64 = 500;

/// A `Write` that hands the trace's bytes to the collector's client.
pub struct ToCollector {
    streamer: Streamer,
}

impl ToCollector {
    /// Starts the client (it connects on a thread of its own; bytes
    /// written meanwhile are kept).
    pub fn start(target: &str, tls: clrprof_stream::Tls, token: clrprof_wire::Token, spool: Spool, pid: u32) -> ToCollector {
        let config = StreamConfig {
            target: target.to_string(),
            tls,
            token: Some(token),
            spool,
            buffer_bytes: BUFFER_MB << 20,
            linger_ms: LINGER_MS,
            reconnect_ms: RECONNECT_MS,
            content: clrprof_wire::Content::NetTrace,
            speaker: "clrprof record",
            host: clrprof_stream::Host::default(),
        };
        ToCollector { streamer: Streamer::start(config, identity(pid)) }
    }

    /// The end of the trace: waits for the collector to store it (or for
    /// the spool's catch-up), and says how it went.
    pub fn finish(mut self) -> Outcome {
        self.streamer.finish();
        self.streamer.outcome()
    }
}

impl Write for ToCollector {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if !buf.is_empty() {
            self.streamer.write(buf.to_vec());
        }
        self.streamer.poll();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.streamer.poll();
        Ok(())
    }
}

/// The profiled process as the collector's records name it: its main
/// assembly (the first `.dll` argument) or its executable's name, and its
/// runtime's version.
fn identity(pid: u32) -> Identity {
    let args: Vec<String> = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| b.split(|&c| c == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect())
        .unwrap_or_default();
    let stem = |a: &str| std::path::Path::new(a).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let program = args
        .iter()
        .find(|a| a.ends_with(".dll"))
        .map(|a| stem(a))
        .or_else(|| args.first().map(|a| stem(a)))
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| format!("pid{pid}"));
    let runtime = clrprof_control::process::attachable(pid).ok().and_then(|(_, rt)| rt.version).unwrap_or_default();
    Identity { pid, program, runtime }
}
