//! `clrprof ctl`: sends a command to a live session through the
//! collector's admin socket (which takes the collector's token).

use anyhow::{bail, Result};
use clrprof_collect::admin::{self, Request};
use std::path::PathBuf;

/// Arguments of `clrprof ctl`.
#[derive(clap::Args)]
pub struct Args {
    /// The collector's directory (its admin socket and default token file
    /// are there).
    #[arg(long, value_name = "DIR", default_value = ".")]
    dir: PathBuf,
    /// The token file (default DIR/collector.token).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// The session (as `clrprof sessions` lists it).
    session: String,
    /// `dump`, `comment TEXT`, `allocations on|off`, `calls on|off` or
    /// `flush`.
    #[arg(required = true, num_args = 1.., allow_hyphen_values = true)]
    command: Vec<String>,
}

/// Runs the command; waits for the agent's reply.
pub fn run(args: Args) -> Result<()> {
    // The collector's rule for its directory: this user's, closed to others.
    clrprof_collect::files::check_own_dir(&args.dir)?;
    let token_file = args.token_file.unwrap_or_else(|| args.dir.join(clrprof_collect::TOKEN_FILE));
    let token = clrprof_collect::token_file::read(&token_file)?;
    let command = args.command.join(" ");
    // Checked here too, for a clear message before connecting.
    clrprof_wire::Command::parse(&command)?;
    let socket = args.dir.join(clrprof_collect::ADMIN_SOCKET);
    let reply = admin::request(&socket, &token, &Request::Ctl { session: args.session.clone(), command: command.clone() })?;
    if !reply.ok {
        bail!("{}: {command}: {}", args.session, reply.error.unwrap_or_default());
    }
    println!("{}: {command}: {}", args.session, reply.reply.unwrap_or_default());
    Ok(())
}
