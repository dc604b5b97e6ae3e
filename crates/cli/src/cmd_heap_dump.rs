//! `clrprof heap-dump PID`: a heap dump of a running .NET process.
//!
//! A process started under the agent (`clrprof record`, or the
//! `CORECLR_*` variables) is asked through its control socket; the dump
//! goes into its log, or with `-o` into a file of its own. A process
//! started without the agent is dumped over EventPipe, as `dotnet-gcdump`
//! does, with no profiler loaded ([`crate::cmd_heap_dump_eventpipe`]),
//! unless `--attach` (or `--label`, or `--agent`, which only the agent
//! takes) asks for the agent: it is then loaded through the runtime's
//! diagnostics socket first (attach), and the dump goes into a file of
//! its own (`-o`, default `heapdump_PID_yyyyMMdd_HHmmss.log`, or `_2`,
//! `_3`, ... when that name is taken), which loads alone. A later
//! `heap-dump` of the same process reuses the agent.
//!
//! An existing file is replaced only with `--force`, and then removed
//! first (a link is removed, not followed); the agent creates the dump's
//! file exclusively, never through a link. The recording's own log is
//! never an `-o` target.

use anyhow::{bail, Context, Result};
use clrprof_control::protocol::Request;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Arguments of `clrprof heap-dump`.
#[derive(clap::Args)]
#[command(after_help = "Which way the dump is taken: a process started under the agent is asked through the agent (exact, into its log). \
A process started without it is dumped over EventPipe, the heap walk `dotnet-gcdump` asks the runtime for: no profiler is loaded, \
the dump is a `.nettrace` every dump view opens, and events the runtime dropped are said (\"incomplete\"). \
--attach loads the agent instead (.NET Core 3.0 or later), which then stays for later dumps and `clrprof ctl`; \
an attached agent sees GCs, moves, survivals, handles and heap walks, but never allocations: \
the runtime allows allocation events only from start-up, so the objects of either kind of dump have no allocation stacks.")]
pub struct Args {
    /// The process id (its socket is found through its namespaces when it
    /// runs in another container).
    #[arg(required_unless_present = "diagnostic_port")]
    pid: Option<u32>,
    /// Instead of a process id: listen on a diagnostics port at PATH (a
    /// socket in a folder shared with the application's container, which
    /// runs with DOTNET_DiagnosticPorts=PATH) and dump the first runtime
    /// that connects, over EventPipe.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["pid", "agent", "label", "attach"])]
    diagnostic_port: Option<PathBuf>,
    /// A log file of its own for the dump (default: the agent's log when it
    /// has one, else `heapdump_PID_<yyyyMMdd>_<HHmmss>.log`).
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Replace a file that is already at `--output` (a link there is
    /// removed, never followed). The recording's own log is never replaced.
    #[arg(long, requires = "output")]
    force: bool,
    /// A comment (`z` line) written just before the dump.
    #[arg(long, value_name = "TEXT")]
    label: Option<String>,
    /// The agent library to attach (default: `$CLRPROF_AGENT`, else
    /// `libclrprof_agent.so` next to this program); implies `--attach`.
    #[arg(long, value_name = "PATH")]
    agent: Option<PathBuf>,
    /// Load the capture agent into a process started without it and take
    /// the dump through it, instead of over EventPipe. The agent stays
    /// loaded: later dumps and `clrprof ctl` reuse it.
    #[arg(long)]
    attach: bool,
    /// How long to wait for the dump, in seconds (over EventPipe the
    /// process then has 10 s more to end its trace, or it is cut off).
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    timeout: u64,
    /// Over EventPipe: the most bytes of trace the dump writes (suffixes
    /// K, M, G, T; 0 for no cap). A trace that reaches it is cut there,
    /// kept, and reported incomplete.
    #[arg(long, value_name = "SIZE", value_parser = crate::interrupt::parse_bytes, default_value = "4G")]
    max_bytes: u64,
    /// Take the dump over EventPipe even when the agent is loaded (the
    /// heap walk `dotnet-gcdump` asks the runtime for; the default for a
    /// process without the agent), into a `.nettrace` every dump view
    /// opens. Objects have no allocation stacks; events the runtime
    /// dropped are said.
    #[arg(long, conflicts_with_all = ["agent", "label", "attach"])]
    eventpipe: bool,
    /// Over EventPipe: the most memory, in MB, the runtime may hold in
    /// the process for the dump's events while clrprof reads them (what
    /// the dump adds to the process's resident memory). Default: chosen
    /// from the process's resident memory (see the guide's "What a dump
    /// costs the process"). Events that find it full are dropped by the
    /// runtime and the dump is reported incomplete.
    #[arg(long, value_name = "MB", value_parser = clap::value_parser!(u32).range(1..=4096))]
    buffer_mb: Option<u32>,
    /// Print the dump's figures as JSON.
    /// An error is printed as `{"error": MESSAGE}` on standard output (exit status 1).
    #[arg(long)]
    json: bool,
}

/// Makes sure the dump may be written at `output`: nothing is there, or
/// with `force` what is there (a file or a link, never a directory, never
/// the recording's own log) is removed. The agent then creates the file
/// exclusively, so anything planted in between makes the dump fail
/// rather than write through it.
fn make_room(output: &Path, own_log: Option<&Path>, force: bool) -> Result<()> {
    let Ok(meta) = output.symlink_metadata() else { return Ok(()) };
    if !force {
        bail!("{} exists; clrprof heap-dump never replaces a file (--force replaces it, or pick another --output)", output.display());
    }
    if meta.is_dir() {
        bail!("cannot write {}: it is a directory", output.display());
    }
    if let Some(log) = own_log {
        if same_file(output, log) {
            bail!(
                "{} is the log the agent in this process is writing; a dump of its own goes to another file (its log takes the dump without -o)",
                output.display()
            );
        }
    }
    std::fs::remove_file(output).with_context(|| format!("cannot replace {}", output.display()))
}

/// Whether two paths name one file: the same path, the same file reached
/// through links, or the same inode.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    if a == b {
        return true;
    }
    let id = |m: std::fs::Metadata| (m.dev(), m.ino());
    let (la, lb) = (a.symlink_metadata().map(id), b.symlink_metadata().map(id));
    let (fa, fb) = (std::fs::metadata(a).map(id), std::fs::metadata(b).map(id));
    matches!((&la, &lb), (Ok(x), Ok(y)) if x == y) || matches!((&fa, &fb), (Ok(x), Ok(y)) if x == y)
}

/// The default dump name, or `_2`, `_3`, ... beside it when something
/// (perhaps a link another user planted under the guessable name) is
/// there already.
fn free_default_name(path: &Path) -> Result<PathBuf> {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let mut candidate = path.to_path_buf();
    for n in 2..1000 {
        if candidate.symlink_metadata().is_err() {
            return Ok(candidate);
        }
        candidate = path.with_file_name(format!("{stem}_{n}.log"));
    }
    bail!("no free name beside {}", path.display())
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    use crate::cmd_heap_dump_eventpipe::{Options, Source};
    let options = Options {
        output: args.output.as_deref(),
        force: args.force,
        timeout: args.timeout,
        max_bytes: args.max_bytes,
        buffer_mb: args.buffer_mb,
        json: args.json,
    };
    if let Some(port) = &args.diagnostic_port {
        return crate::cmd_heap_dump_eventpipe::run(Source::Port(port), &options);
    }
    let Some(pid) = args.pid else { bail!("a process id, or --diagnostic-port PATH") };
    if args.eventpipe {
        return crate::cmd_heap_dump_eventpipe::run(Source::Pid(pid), &options);
    }
    // An agent already in the process is used (it is exact); a planted
    // control socket is refused here, before anything else is tried.
    let (mut client, attached) = match crate::live::existing_agent(pid)? {
        Some(c) => (c, false),
        None if args.attach || args.agent.is_some() || args.label.is_some() => {
            (crate::live::attach(pid, args.agent.as_deref(), &[])?, true)
        }
        None => return crate::cmd_heap_dump_eventpipe::run(Source::Pid(pid), &options),
    };
    let output = args.output.as_deref().map(crate::cmd_record::absolute).transpose()?;
    let timeout = Duration::from_secs(args.timeout.max(1));
    let own_log = client.request(&Request::Status, timeout)?.status.and_then(|s| s.log);
    let output = match output {
        Some(o) => {
            make_room(&o, own_log.as_deref(), args.force)?;
            Some(o)
        }
        None if own_log.is_some() => None,
        None => {
            let named = crate::cmd_record::absolute(&PathBuf::from(format!("heapdump_{pid}_{}.log", crate::cmd_record::local_timestamp())))?;
            Some(free_default_name(&named)?)
        }
    };
    let reply = client.request(&Request::Dump { label: args.label.clone(), output }, timeout)?;
    let Some(d) = reply.dump else { anyhow::bail!("the agent in process {pid} answered without the dump's figures") };
    if args.json {
        let dump = serde_json::json!({
            "index": d.index, "log": d.log, "objects": d.objects, "roots": d.roots, "bytes": d.bytes, "millis": d.millis,
        });
        println!("{}", serde_json::to_string(&serde_json::json!({ "pid": pid, "attached": attached, "eventpipe": false, "dump": dump }))?);
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
