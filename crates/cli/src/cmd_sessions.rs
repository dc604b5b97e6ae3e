//! `clrprof sessions`: the collector's sessions, live and finished, from
//! the session records in its directory.

use crate::common::{print_json, thousands};
use anyhow::Result;
use clrprof_collect::record;
use std::path::PathBuf;

/// Arguments of `clrprof sessions`.
#[derive(clap::Args)]
pub struct Args {
    /// The collector's directory.
    #[arg(long, value_name = "DIR", default_value = ".")]
    dir: PathBuf,
    /// Print the records as JSON.
    /// An error is printed as `{"error": MESSAGE}` on standard output (exit status 1).
    #[arg(long)]
    json: bool,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    // The collector's rule: a directory of this user's, closed to others,
    // and only this user's records in it.
    clrprof_collect::files::check_own_dir(&args.dir)?;
    let list = record::list(&args.dir)?;
    if args.json {
        return print_json(&serde_json::to_value(&list)?);
    }
    if list.is_empty() {
        println!("no sessions in {}", args.dir.display());
        return Ok(());
    }
    println!("{:<44} {:<6} {:>8} {:<10} {:>14}  {:<20}  how it ended", "session", "state", "pid", "runtime", "bytes", "start");
    for r in &list {
        let state = serde_json::to_value(r.state)?.as_str().unwrap_or("?").to_string();
        let mut how = r.reason.clone().unwrap_or_default();
        if let Some(s) = &r.spool {
            how.push_str(&format!(" [spool {s} from byte {}]", r.spool_from.unwrap_or(0)));
        }
        println!(
            "{:<44} {:<6} {:>8} {:<10} {:>14}  {:<20}  {}",
            r.session,
            state,
            r.pid,
            r.runtime,
            thousands(r.bytes),
            r.start,
            how.trim()
        );
    }
    Ok(())
}
