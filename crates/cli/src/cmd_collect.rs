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
    /// or `unix:/path`. An address beyond loopback needs --tls (or
    /// --plain-off-loopback).
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// TLS on the agents' port: the collector makes its own key and
    /// certificate in DIR/tls/ at its first start (or loads them, or
    /// --tls-cert and --tls-key) and prints CLRPROF_TLS_FINGERPRINT, by
    /// which agents and `record --target` know it.
    #[arg(long)]
    tls: bool,
    /// With --tls: the certificate chain (PEM) to serve instead of the
    /// collector's own (clients then use a CA file or its fingerprint).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// With --tls-cert: its private key (PEM), a file of the collector's
    /// user that no one else can read.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Listen beyond loopback without TLS (the profiles cross the network
    /// in clear; the token still does not): for a network of your own, a
    /// tunnel or a VPN.
    #[arg(long, conflicts_with = "tls")]
    plain_off_loopback: bool,
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
    /// Append each session that ends whole to this Parquet dataset (one
    /// partition per session, named after it; see `clrprof export
    /// --dataset`), as `clrprof export --format parquet --dataset DIR LOG`
    /// would. Made 0700 when missing; an existing folder must be the
    /// collector user's own and closed to others' writes.
    #[arg(long, value_name = "DIR")]
    dataset: Option<PathBuf>,
}

/// The callback that appends an ended session's log to `dataset`. The
/// session is loaded in a child process under its memory budget
/// (`clrprof_cache::child`): a session that needs more fails alone, and
/// the collector goes on.
fn to_dataset(dataset: PathBuf, loader: clrprof_cache::child::ChildLoader) -> clrprof_collect::OnEnded {
    clrprof_collect::OnEnded(std::sync::Arc::new(move |log: &std::path::Path, rec: &clrprof_collect::SessionRecord| {
        use clrprof_export::parquet::dataset::{append, LogInfo};
        let model = match loader.load(log, None) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("clrprof collect: session {} not added to the dataset: {e}", rec.session);
                return;
            }
        };
        let (start_ms, start_source) = match chrono::DateTime::parse_from_rfc3339(&rec.start) {
            Ok(t) => (t.timestamp_millis(), "the collector's session start".to_string()),
            Err(e) => (0, format!("unknown: the session record's start {:?} did not read ({e})", rec.start)),
        };
        // The agent's machine: the host part of its address.
        let host = rec.peer.rsplit_once(':').map_or(rec.peer.as_str(), |(h, _)| h).trim_matches(['[', ']']).to_string();
        let info = LogInfo { name: rec.session.clone(), host, start_ms, start_source, source: log.display().to_string() };
        match append(&model, &Default::default(), &dataset, &info) {
            Ok(_) => eprintln!("clrprof collect: session {} added to the dataset {}", rec.session, dataset.display()),
            Err(e) => eprintln!("clrprof collect: session {} not added to the dataset {}: {e}", rec.session, dataset.display()),
        }
    }))
}

/// Runs the collector until SIGINT or SIGTERM.
pub fn run(args: Args) -> Result<()> {
    let listen = match &args.listen {
        Some(a) => a.parse::<ListenAddr>()?,
        None => ListenAddr::default(),
    };
    if let Some(d) = &args.dataset {
        // Refused at start, as --dir is: a dataset folder of another user,
        // a link, or one others can write to (each append checks again).
        clrprof_export::parquet::dataset::open(d).map_err(|e| anyhow::anyhow!("cannot use --dataset {}: {e}", d.display()))?;
    }
    let opts = Options {
        listen,
        dir: args.dir,
        token_file: args.token_file,
        handshake_timeout: Duration::from_secs_f64(args.handshake_timeout.clamp(0.01, 3600.0)),
        tls: (args.tls || args.tls_cert.is_some())
            .then(|| clrprof_collect::tls::TlsFiles { cert: args.tls_cert.clone(), key: args.tls_key.clone() }),
        plain_off_loopback: args.plain_off_loopback,
        on_ended: match args.dataset.clone() {
            Some(d) => Some(to_dataset(d, crate::cmd_load_model::child_loader()?)),
            None => None,
        },
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
        if let Some((fingerprint, _, _)) = c.tls() {
            let _ = writeln!(out, "CLRPROF_TLS_FINGERPRINT={fingerprint}");
        }
        let _ = out.flush();
        drop(out);
        clrprof_collect::say!(
            "clrprof collect: listening on {}; token {} {}; admin socket {}",
            c.target(),
            if made { "made and kept in" } else { "read from" },
            file.display(),
            c.admin_path().display()
        );
        if let Some((_, cert, made)) = c.tls() {
            clrprof_collect::say!(
                "clrprof collect: TLS on; certificate {} {}",
                if made { "made and kept in" } else { "read from" },
                cert.display()
            );
        }
        for s in c.stale_sessions() {
            clrprof_collect::say!("clrprof collect: session {s} was live when the collector last stopped: marked cut");
        }
    })?;
    Ok(())
}
