//! `clrprof ps`: the .NET processes this user can see (every one as
//! root), as `dotnet-trace ps` lists them: process id (and the id inside
//! its container), runtime version, whether clrprof's agent (or another
//! profiler) is loaded, how many connections its diagnostics socket holds
//! (EventPipe sessions and commands in progress), the container (the PID
//! namespace and cgroup, when not ours) and the command line.

use anyhow::Result;
use clrprof_control::{paths, process};
use std::path::Path;

/// Arguments of `clrprof ps`.
#[derive(clap::Args)]
pub struct Args {
    /// One JSON object per process, one per line.
    #[arg(long)]
    json: bool,
}

/// What `ps` says of one process.
#[derive(Debug, serde::Serialize)]
pub struct Row {
    /// The process id here.
    pub pid: u32,
    /// Its id in its own PID namespace.
    pub ns_pid: u32,
    /// The runtime's version, when its folder names it.
    pub runtime: Option<String>,
    /// The user.
    pub uid: u32,
    /// A profiler loaded: `clrprof` (the agent), `other`, or none.
    pub profiler: Option<&'static str>,
    /// Open connections to its diagnostics socket (sessions, commands).
    pub sessions: usize,
    /// `None` outside containers; else its PID namespace and cgroup.
    pub container: Option<String>,
    /// Its command line.
    pub command: String,
}

/// The rows, by process id.
pub fn rows() -> Vec<Row> {
    process::dotnet_processes()
        .into_iter()
        .map(|(p, rt)| {
            let place = paths::place_of(p.pid);
            let maps = std::fs::read_to_string(format!("/proc/{}/maps", p.pid)).unwrap_or_default();
            let profiler = if maps.contains("libclrprof_agent") {
                Some("clrprof")
            } else if environ_has(p.pid, b"CORECLR_ENABLE_PROFILING=1") {
                Some("other")
            } else {
                None
            };
            let sessions = diagnostics_connections(p.pid, &place);
            let container = container_of(p.pid, &place);
            let command = std::fs::read(format!("/proc/{}/cmdline", p.pid))
                .map(|c| c.split(|&b| b == 0).filter(|a| !a.is_empty()).map(String::from_utf8_lossy).collect::<Vec<_>>().join(" "))
                .unwrap_or_default();
            Row { pid: p.pid, ns_pid: place.ns_pid, runtime: rt.version, uid: p.uid, profiler, sessions, container, command }
        })
        .collect()
}

fn environ_has(pid: u32, entry: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|e| e.split(|&b| b == 0).any(|kv| kv == entry))
}

/// Connections its diagnostics socket holds: the connected entries of
/// `/proc/PID/net/unix` (its network namespace's) that bear the
/// socket's name, as the process sees it.
fn diagnostics_connections(pid: u32, place: &paths::Place) -> usize {
    let Some(socket) = paths::diagnostics_socket(&place.dir, place.ns_pid) else { return 0 };
    let Some(name) = socket.file_name().map(|n| n.to_string_lossy().into_owned()) else { return 0 };
    let Ok(table) = std::fs::read_to_string(format!("/proc/{pid}/net/unix")) else { return 0 };
    table
        .lines()
        .skip(1)
        .filter(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            // Num RefCount Protocol Flags Type St Inode Path; St 03 = connected.
            cols.len() >= 8 && cols[5] == "03" && Path::new(cols[7]).file_name().is_some_and(|n| n.to_string_lossy() == name)
        })
        .count()
}

/// The container of a process in other namespaces than ours: its PID
/// namespace's inode and its cgroup.
fn container_of(pid: u32, place: &paths::Place) -> Option<String> {
    if !place.other_namespace && !paths::other_namespace(pid, "pid") {
        return None;
    }
    let ns =
        std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok().map(|l| l.to_string_lossy().replace("pid:[", "pidns:").replace(']', ""));
    let cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .ok()
        .and_then(|c| c.lines().next().and_then(|l| l.rsplit(':').next()).map(str::to_string))
        .filter(|c| c != "/");
    Some(match (ns, cgroup) {
        (Some(n), Some(c)) => format!("{n} {c}"),
        (Some(n), None) => n,
        (None, Some(c)) => c,
        (None, None) => "other namespace".into(),
    })
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let rows = rows();
    if args.json {
        for r in &rows {
            println!("{}", serde_json::to_string(r)?);
        }
        return Ok(());
    }
    if rows.is_empty() {
        println!("no .NET process that you may look at (run as root to see every user's)");
        return Ok(());
    }
    println!("{:>8} {:>6}  {:<8} {:<8} {:>8}  {:<20} COMMAND", "PID", "NSPID", "RUNTIME", "PROFILER", "SESSIONS", "CONTAINER");
    for r in rows {
        println!(
            "{:>8} {:>6}  {:<8} {:<8} {:>8}  {:<20} {}",
            r.pid,
            r.ns_pid,
            r.runtime.as_deref().unwrap_or("?"),
            r.profiler.unwrap_or("-"),
            r.sessions,
            r.container.as_deref().unwrap_or("-"),
            r.command
        );
    }
    Ok(())
}
