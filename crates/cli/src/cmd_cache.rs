//! `clrprof cache`: the model cache's entries (which logs, how large, when
//! last used), or `--clear` to remove them.

use crate::common::{print_json, thousands};
use anyhow::Result;
use std::time::UNIX_EPOCH;

/// Arguments of `clrprof cache`.
#[derive(clap::Args)]
pub struct Args {
    /// Remove every entry.
    #[arg(long)]
    clear: bool,
    /// Print the entries as JSON.
    /// An error is printed as `{"error": MESSAGE}` on standard output (exit status 1).
    #[arg(long)]
    json: bool,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let Some(cache) = clrprof_cache::Cache::from_env() else {
        if args.json {
            return print_json(&serde_json::json!({ "enabled": false, "entries": [] }));
        }
        println!("the model cache is off (CLRPROF_CACHE=off or CLRPROF_CACHE_MB=0)");
        return Ok(());
    };
    if args.clear {
        let (n, bytes) = cache.clear();
        if args.json {
            return print_json(&serde_json::json!({ "enabled": true, "dir": cache.dir(), "removed": n, "removed_bytes": bytes }));
        }
        println!("removed {n} entries ({} bytes) from {}", thousands(bytes), cache.dir().display());
        return Ok(());
    }
    let entries = cache.entries();
    let total: u64 = entries.iter().map(|e| e.bytes).sum();
    if args.json {
        let list: Vec<_> = entries
            .iter()
            .map(|e| {
                serde_json::json!({
                    "file": e.file,
                    "log": e.log,
                    "bytes": e.bytes,
                    "last_used_unix": e.last_used.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
                })
            })
            .collect();
        return print_json(&serde_json::json!({
            "enabled": true, "dir": cache.dir(), "limit_bytes": cache.limit_bytes(), "bytes": total, "entries": list,
        }));
    }
    println!(
        "{}: {} entries, {} of {} MB",
        cache.dir().display(),
        entries.len(),
        thousands(total.div_ceil(1 << 20)),
        thousands(cache.limit_bytes() >> 20)
    );
    for e in &entries {
        let ago = e.last_used.elapsed().map_or(0, |d| d.as_secs());
        let log = e.log.as_ref().map_or_else(|| "(unreadable header)".to_string(), |p| p.display().to_string());
        println!("{:>10} MB  used {:>8} ago  {log}", thousands(e.bytes.div_ceil(1 << 20)), age(ago));
    }
    Ok(())
}

/// A duration in seconds, in its largest unit.
fn age(s: u64) -> String {
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min", s / 60),
        3600..=86_399 => format!("{} h", s / 3600),
        _ => format!("{} d", s / 86_400),
    }
}
