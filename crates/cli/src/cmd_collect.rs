//! `clrprof collect`: receives logs that capture agents stream (see the
//! `clrprof-collect` crate), until interrupted.

use anyhow::Result;
use clrprof_collect::{ListenAddr, Options};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `clrprof collect`.
#[derive(clap::Args)]
pub struct Args {
    /// Where agents connect: `IP:PORT` (default 127.0.0.1, any free port)
    /// or `unix:/path`. A non-loopback address is accepted: the token never
    /// crosses the connection (see the guide, docs/src/collector.md).
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// Where session logs and records go (created if missing).
    #[arg(long, value_name = "DIR", default_value = ".")]
    dir: PathBuf,
    /// The token file (default DIR/collector.token; made with a new random
    /// token, readable by its owner only, when missing).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Seconds a client may take to send its handshake.
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    handshake_timeout: f64,
}

/// Runs the collector until SIGINT or SIGTERM.
pub fn run(args: Args) -> Result<()> {
    let listen = match &args.listen {
        Some(a) => a.parse::<ListenAddr>()?,
        None => ListenAddr::default(),
    };
    let opts = Options {
        listen,
        dir: args.dir,
        token_file: args.token_file,
        handshake_timeout: Duration::from_secs_f64(args.handshake_timeout.clamp(0.01, 3600.0)),
        ..Options::default()
    };
    // A long-running service: the reader of its output going away (a
    // stopped `tee`, a closed pipe) must not kill it. Writes to a closed
    // pipe then fail, and the collector's lines ignore such failures.
    // Safety: setting a signal's disposition to "ignore" has no other
    // effect.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    clrprof_collect::run(opts, |c| {
        let (file, made) = c.token_file();
        // The two variables on standard output, for `eval` or copying; the
        // rest on standard error.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "CLRPROF_TARGET={}", c.target());
        let _ = writeln!(out, "CLRPROF_TOKEN={}", c.token_hex());
        let _ = out.flush();
        drop(out);
        clrprof_collect::say!(
            "clrprof collect: listening on {}; token {} {}; admin socket {}",
            c.target(),
            if made { "made and kept in" } else { "read from" },
            file.display(),
            c.admin_path().display()
        );
        for s in c.stale_sessions() {
            clrprof_collect::say!("clrprof collect: session {s} was live when the collector last stopped: marked cut");
        }
    })?;
    Ok(())
}
