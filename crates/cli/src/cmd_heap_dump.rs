//! `clrprof heap-dump PID`: a heap dump of a running .NET process.
//!
//! A process started under the agent (`clrprof record`, or the
//! `CORECLR_*` variables) is asked through its control socket; the dump
//! goes into its log, or with `-o` into a file of its own. A process
//! started without the agent gets it loaded through the runtime's
//! diagnostics socket first (attach); the dump then goes into a file of
//! its own (`-o`, default `heapdump_PID_yyyyMMdd_HHmmss.log`), which
//! loads alone. A later `heap-dump` of the same process reuses the agent.

use anyhow::Result;
use clrprof_control::protocol::Request;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `clrprof heap-dump`.
#[derive(clap::Args)]
#[command(after_help = "A process started without the agent gets it loaded now (attach, .NET Core 3.0 or later). \
An attached agent sees GCs, moves, survivals, handles and heap walks, but never allocations: \
the runtime allows allocation events only from start-up, so the objects of such a dump have no allocation stacks.")]
pub struct Args {
    /// The process id.
    pid: u32,
    /// A log file of its own for the dump (default: the agent's log when it
    /// has one, else `heapdump_PID_<yyyyMMdd>_<HHmmss>.log`).
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// A comment (`z` line) written just before the dump.
    #[arg(long, value_name = "TEXT")]
    label: Option<String>,
    /// The agent library to attach (default: `$CLRPROF_AGENT`, else
    /// `libclrprof_agent.so` next to this program).
    #[arg(long, value_name = "PATH")]
    agent: Option<PathBuf>,
    /// How long to wait for the dump, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    timeout: u64,
    /// Print the dump's figures as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let pid = args.pid;
    let output = args.output.as_deref().map(crate::cmd_record::absolute).transpose()?;
    let (mut client, attached) = match crate::live::existing_agent(pid)? {
        Some(c) => (c, false),
        None => (crate::live::attach(pid, args.agent.as_deref(), &[])?, true),
    };
    let timeout = Duration::from_secs(args.timeout.max(1));
    let output = match output {
        Some(o) => Some(o),
        None => {
            let status = client.request(&Request::Status, timeout)?.status;
            if status.and_then(|s| s.log).is_some() {
                None
            } else {
                Some(crate::cmd_record::absolute(&PathBuf::from(format!(
                    "heapdump_{pid}_{}.log",
                    crate::cmd_record::local_timestamp()
                )))?)
            }
        }
    };
    let reply = client.request(&Request::Dump { label: args.label.clone(), output }, timeout)?;
    let Some(d) = reply.dump else { anyhow::bail!("the agent in process {pid} answered without the dump's figures") };
    if args.json {
        let dump = serde_json::json!({
            "index": d.index, "log": d.log, "objects": d.objects, "roots": d.roots, "bytes": d.bytes, "millis": d.millis,
        });
        println!("{}", serde_json::to_string(&serde_json::json!({ "pid": pid, "attached": attached, "dump": dump }))?);
    } else {
        println!(
            "heap dump {} of process {pid}{}: {} objects, {} bytes, {} roots, {} ms; written to {}",
            d.index,
            if attached { " (agent attached)" } else { "" },
            d.objects,
            d.bytes,
            d.roots,
            d.millis,
            d.log.display()
        );
        println!("try `clrprof dump {} {} --retained`", d.log.display(), d.index);
    }
    Ok(())
}
