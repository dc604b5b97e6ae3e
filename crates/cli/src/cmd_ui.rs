//! `clrprof ui`: every view in the browser, over the same queries (the
//! server is the `clrprof-ui` library).

use anyhow::Result;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Arguments of `clrprof ui`.
#[derive(clap::Args)]
pub struct Args {
    /// The logs to show (each is named by its position in the page; no
    /// other file can be reached through the server).
    #[arg(value_name = "LOG", required_unless_present_any = ["collector", "watch"])]
    logs: Vec<PathBuf>,
    /// A collector's directory (`clrprof collect --dir DIR`): the page
    /// lists its sessions, running and ended, opens any of them (a running
    /// one's figures refresh as its log grows) and sends a running one
    /// commands (heap dump, comment, allocations on/off) as `clrprof ctl`.
    #[arg(long, value_name = "DIR")]
    collector: Option<PathBuf>,
    /// A file `clrprof watch --json` writes (`clrprof watch ... --json >
    /// FILE`): the Counters tab charts its counters per process, with the
    /// rules' firings, and follows the file as it grows.
    #[arg(long, value_name = "FILE")]
    watch: Option<PathBuf>,
    /// The address to listen on (loopback by default; port 0: any free
    /// port). The page's address, printed at start, carries a random token
    /// that every request needs.
    #[arg(long, value_name = "ADDR", default_value = clrprof_ui::DEFAULT_LISTEN)]
    listen: SocketAddr,
    /// Threads to parse with (default: all cores).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<u16>,
    /// No progress bars.
    #[arg(long, short)]
    quiet: bool,
}

/// Runs the command: serves until interrupted.
pub fn run(args: Args) -> Result<()> {
    let options = clrprof_ui::ServeOptions {
        logs: args.logs,
        listen: args.listen,
        threads: args.threads.map(usize::from),
        quiet: args.quiet,
        collector: args.collector,
        child_loader: Some(crate::cmd_load_model::child_loader()?),
    };
    // A long-running server: the reader of its output going away must not
    // kill it (see `cmd_collect`); its lines ignore failed writes.
    // Safety: setting a signal's disposition to "ignore" has no other
    // effect.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    clrprof_ui::serve_watching(options, args.watch, |url| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "clrprof ui: open {url}");
        let _ = writeln!(out, "clrprof ui: the logs load in the background; Ctrl-C stops the server");
        let _ = out.flush();
    })?;
    Ok(())
}
