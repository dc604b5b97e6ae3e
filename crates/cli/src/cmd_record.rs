//! `clrprof record`: runs a .NET program under the capture agent.
//!
//! The program is started with the runtime's profiler variables
//! (`CORECLR_ENABLE_PROFILING`, `CORECLR_PROFILER`, `CORECLR_PROFILER_PATH`)
//! and the agent's own (`CLRPROF_OUTPUT`, `CLRPROF_STACKS`, `CLRPROF_CALLS`,
//! `CLRPROF_STATUS`). Its exit code is passed through. The runtime says
//! nothing when it refuses a profiler, so the command finds out itself:
//! the agent writes a status line when `Initialize` accepts the session
//! (or why it gave up), and while the program runs its memory maps are
//! watched for the runtime (`libcoreclr.so`). From those it tells "not a
//! .NET program" from "the runtime did not load the agent".
//!
//! A bare assembly gets what the `dotnet` host needs to run it: `app.dll`
//! alone is run as `dotnet app.dll`, and a missing `app.runtimeconfig.json`
//! is written for the host's runtime ([`dotnet_app`]). The program's
//! standard error passes through a pipe that is watched for the runtime's
//! start-up failures `record` can explain, such as a missing ICU library
//! ([`startup_failure`]).

use anyhow::{bail, Context, Result};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::time::Duration;

mod diagnostic_ports;
mod dotnet_app;
mod startup_failure;

pub(crate) use diagnostic_ports::refuse_before_start;

/// The agent's file name.
const AGENT_FILE: &str = "libclrprof_agent.so";
/// `CORECLR_PROFILER`: the agent's class id.
pub(crate) const PROFILER_GUID: &str = "{BC620A3A-B286-4C9C-8138-256EE44F802D}";

/// Arguments of `clrprof record`.
#[derive(clap::Args)]
#[command(
    trailing_var_arg = true,
    after_help = "With -p PID the agent is loaded into a running process (attach, .NET Core 3.0 or later). \
The runtime allows allocation events and call hooks only from start-up, so an attached recording has \
GCs, moves, survivals, finalization, handles and heap dumps, but no allocations and no stacks."
)]
pub struct Args {
    /// The log to write (default: `<program>_<pid>_<yyyyMMdd>_<HHmmss>.log`
    /// in the current directory). An existing file is refused unless
    /// `--force` is given.
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Overwrite the `--output` file if it exists.
    #[arg(long)]
    pub(crate) force: bool,
    /// Also log every call (`c` lines; much larger logs).
    #[arg(long)]
    calls: bool,
    /// Record allocations and GCs without call stacks.
    #[arg(long, conflicts_with_all = ["calls", "stacks"])]
    no_stacks: bool,
    /// Where stacks come from: `shadow` (enter/leave hooks, the default) or
    /// `snapshot` (the runtime's stack walker at each allocation; slower).
    #[arg(long, value_name = "MODE", value_parser = ["shadow", "snapshot"])]
    stacks: Option<String>,
    /// The agent library (default: `$CLRPROF_AGENT`, else
    /// `libclrprof_agent.so` next to this program).
    #[arg(long, value_name = "PATH")]
    pub(crate) agent: Option<PathBuf>,
    /// How often the agent flushes the log while the program runs (ms).
    #[arg(long, value_name = "MS")]
    flush_ms: Option<u64>,
    /// Stream the log to a collector at ADDR (`clrprof collect` prints it)
    /// instead of writing it here; the log goes to a spool file beside
    /// `--output`'s place when the collector cannot be reached.
    #[arg(long, value_name = "ADDR", requires = "token_file")]
    pub(crate) target: Option<String>,
    /// The collector's token file (with --target).
    #[arg(long, value_name = "FILE", requires = "target")]
    pub(crate) token_file: Option<PathBuf>,
    /// With --target: the collector runs with --tls, and this is its
    /// certificate's fingerprint (it prints CLRPROF_TLS_FINGERPRINT; default:
    /// that variable). A collector with another certificate is refused
    /// before anything is sent.
    #[arg(long, value_name = "HEX", requires = "target")]
    pub(crate) tls_fingerprint: Option<String>,
    /// With --target: the collector runs with --tls and a certificate that
    /// a CA in FILE (PEM) signed for the address or name of --target
    /// (default: $CLRPROF_TLS_CA).
    #[arg(long, value_name = "FILE", requires = "target", conflicts_with = "tls_fingerprint")]
    pub(crate) tls_ca: Option<PathBuf>,
    /// Print nothing of its own (the program's output is untouched).
    #[arg(long, short)]
    pub(crate) quiet: bool,
    /// A heap dump into the log every so many seconds (fractions allowed).
    #[arg(long, value_name = "SECONDS")]
    pub(crate) heap_dump_every: Option<f64>,
    /// Record over EventPipe instead of the agent: sampled allocations
    /// (about one per 100 KB, with stacks; figures are estimates), GCs and
    /// survivors, no profiler, no restart (.NET 5+ to start a program; any
    /// .NET Core 3.0+ process with -p). Writes a `.nettrace`.
    /// With --target, the trace is streamed to the collector as it arrives
    /// (stored there as `<session>.nettrace`).
    #[arg(long, conflicts_with_all = ["calls", "no_stacks", "stacks", "flush_ms", "heap_dump_every", "agent"])]
    pub(crate) sampled: bool,
    /// Attach to this running .NET process instead of starting a program
    /// (GC events and heap dumps only: no allocations after attach; with
    /// --sampled, sampled allocations too).
    #[arg(short, long, value_name = "PID", conflicts_with_all = ["command", "calls", "no_stacks", "stacks", "flush_ms"])]
    pub(crate) pid: Option<u32>,
    /// With -p: stop recording after this many seconds (default: when the
    /// process ends or on Ctrl-C). With --sampled the process then has
    /// 10 s to end its trace, or it is cut off (kept, said incomplete).
    #[arg(long, value_name = "SECONDS", requires = "pid")]
    pub(crate) duration: Option<f64>,
    /// With --sampled: the most bytes of trace one recording writes
    /// (suffixes K, M, G, T; 0 for no cap). A trace that reaches it is cut
    /// there, kept, and reported incomplete.
    #[arg(long, value_name = "SIZE", value_parser = crate::interrupt::parse_bytes, default_value = "4G", requires = "sampled")]
    pub(crate) max_bytes: u64,
    /// The program and its arguments, e.g. `dotnet app.dll` or `./app`
    /// (`app.dll` alone runs with the `dotnet` on PATH; a missing
    /// `app.runtimeconfig.json` is written for that `dotnet`'s runtime).
    #[arg(required_unless_present = "pid", value_name = "CMD", num_args = 1.., allow_hyphen_values = true)]
    pub(crate) command: Vec<OsString>,
}

/// Runs the command; the exit code is the program's.
pub fn run(args: Args) -> Result<ExitCode> {
    if let Some(s) = args.heap_dump_every {
        if !(s.is_finite() && s > 0.0) {
            bail!("--heap-dump-every must be a positive number of seconds, not {s}");
        }
    }
    if args.sampled {
        return crate::cmd_record_sampled::run(&args);
    }
    if let Some(pid) = args.pid {
        return crate::cmd_record_attached::run(pid, &args);
    }
    let agent = find_agent(args.agent.as_deref())?;
    let command = dotnet_app::command_for(&args.command)?;
    // Without --output the agent names the log itself (its process id is
    // part of the name); the status line says which name it took.
    let given = args.output.as_deref().map(absolute).transpose()?;
    let dir = match &given {
        Some(p) => p.parent().map(Path::to_path_buf).unwrap_or_default(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let shown_place = given.as_ref().unwrap_or(&dir).display().to_string();
    check_place(&dir, &shown_place)?;
    if let Some(p) = &given {
        if p.symlink_metadata().is_ok() && !args.force {
            bail!("{} exists; clrprof record never overwrites a log (--force allows it, or pick another --output)", p.display());
        }
        if p.is_dir() {
            bail!("cannot write {}: it is a directory", p.display());
        }
    }
    let spool_default = dir.join(default_name(&command, &local_timestamp()).replace(".log", ".spool.log"));
    // The agent writes this file only if it starts.
    let mut status_file = StatusFile::new()?;

    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..])
        .env("CORECLR_ENABLE_PROFILING", "1")
        .env("CORECLR_PROFILER", PROFILER_GUID)
        .env("CORECLR_PROFILER_PATH", &agent)
        .env("CLRPROF_STATUS", &status_file.0)
        .env("CLRPROF_STACKS", if args.no_stacks { "none" } else { args.stacks.as_deref().unwrap_or("shadow") })
        .env("CLRPROF_CALLS", if args.calls { "1" } else { "0" });
    match &given {
        Some(p) => cmd.env("CLRPROF_OUTPUT", p),
        None => cmd.env_remove("CLRPROF_OUTPUT"),
    };
    if args.force {
        cmd.env("CLRPROF_FORCE", "1");
    } else {
        cmd.env_remove("CLRPROF_FORCE");
    }
    if let Some(ms) = args.flush_ms {
        cmd.env("CLRPROF_FLUSH_MS", ms.to_string());
    }
    if let Some(s) = args.heap_dump_every {
        cmd.env("CLRPROF_HEAP_DUMP_EVERY", s.to_string());
    }
    if let (Some(target), Some(token_file)) = (&args.target, &args.token_file) {
        let token = clrprof_collect::token_file::read(token_file)?;
        let (tls, tls_env) = args.collector_tls()?;
        check_collector(target, &tls, &token, token_file)?;
        cmd.envs(tls_env);
        let spool = match &given {
            Some(p) => p.with_extension("spool.log"),
            None => spool_default.clone(),
        };
        cmd.env("CLRPROF_TARGET", target).env("CLRPROF_TOKEN", token.to_hex()).env("CLRPROF_SPOOL", &spool);
    }
    let hosted = dotnet_app::HostedApp::parse(&command);
    if let Some(app) = &hosted {
        if let dotnet_app::ConfigOutcome::Written { path, version, host } = dotnet_app::ensure_config(app)? {
            if !args.quiet {
                eprintln!(
                    "clrprof record: {} had no runtimeconfig.json, which `dotnet` needs to run it; wrote {} for \
                     Microsoft.NETCore.App {version}, the newest runtime of {} (delete it to run the program on another runtime)",
                    app.app.display(),
                    path.display(),
                    host.display()
                );
            }
        }
    }
    let shown = command[0].to_string_lossy().into_owned();
    // Orphans of the program become this process's children, so that it
    // knows whether any process that inherited CLRPROF_STATUS still runs.
    clrprof_trace::tree::adopt_orphans().context("cannot become the reaper of the program's processes")?;
    let mut child = cmd.stderr(Stdio::piped()).spawn().with_context(|| format!("cannot start {shown}"))?;
    let relay = child.stderr.take().map(startup_failure::Relay::start);
    let (status, saw_runtime) = wait_watching(child)?;
    let seen = relay.map(startup_failure::Relay::finish).unwrap_or_default();
    let report = std::fs::read_to_string(&status_file.0).ok();
    if clrprof_trace::tree::others_remain() {
        // They may still write the status file: its folder stays, so that
        // no one else can make it again under that name.
        status_file.keep();
        if !args.quiet {
            eprintln!(
                "clrprof record: processes the program started still run and may report into {}; it is left in place (only you can enter it)",
                status_file.0.parent().unwrap_or(&status_file.0).display()
            );
        }
    }
    let code = exit_code(&status);
    // The log the agent wrote: its status names it.
    let output = report
        .as_deref()
        .and_then(|l| l.trim_end().split_once(" output=").map(|(_, rest)| PathBuf::from(rest.split(" write_error=").next().unwrap_or(rest))))
        .or_else(|| given.clone())
        .unwrap_or_else(|| dir.clone());
    let log_bytes = std::fs::metadata(&output).map(|m| m.len()).ok();

    match report.as_deref().map(str::trim) {
        Some(line) if line.starts_with("ok") && seen.no_icu && !status.success() => {
            eprintln!("clrprof record: {shown} exited with {}; {}", describe(&status), no_icu_advice());
            if args.target.is_none() {
                eprintln!(
                    "clrprof record: wrote {} ({} bytes) before the runtime stopped the program",
                    output.display(),
                    log_bytes.unwrap_or(0)
                );
            }
            Ok(ExitCode::from(failure(code)))
        }
        Some(line) if line.starts_with("ok") && args.target.is_some() => {
            if !args.quiet {
                let field = |k: &str| line.split(' ').find_map(|w| w.strip_prefix(k)).map(str::to_string);
                match field("spooling_to=") {
                    Some(spool) => eprintln!(
                        "clrprof record: {} exited with {}; streamed to {} until byte {}, then to the spool {spool}{}{}",
                        shown,
                        describe(&status),
                        args.target.as_deref().unwrap_or(""),
                        field("spooling_from=").unwrap_or_default(),
                        line.split_once(" because=").map(|(_, why)| format!(" ({why})")).unwrap_or_default(),
                        catch_up_outcome(&field)
                    ),
                    None => eprintln!(
                        "clrprof record: {} exited with {}; streamed the log to {}; {}",
                        shown,
                        describe(&status),
                        args.target.as_deref().unwrap_or(""),
                        sessions_hint(args.token_file.as_deref())
                    ),
                }
            }
            Ok(ExitCode::from(code))
        }
        Some(line) if line.starts_with("ok") => {
            if let Some((_, why)) = line.split_once(" write_error=") {
                eprintln!(
                    "clrprof record: writing {} failed ({}): the log is incomplete",
                    output.display(),
                    why.replace('_', " ")
                );
            }
            if !args.quiet {
                eprintln!(
                    "clrprof record: {} exited with {}; wrote {} ({} bytes); try `clrprof summary {}`",
                    shown,
                    describe(&status),
                    output.display(),
                    log_bytes.unwrap_or(0),
                    output.display()
                );
            }
            Ok(ExitCode::from(code))
        }
        Some(line) => {
            eprintln!(
                "clrprof record: the profiler did not start: {}",
                line.strip_prefix("error ").unwrap_or(line)
            );
            Ok(ExitCode::from(failure(code)))
        }
        None if seen.no_framework && !status.success() => {
            let config = hosted.as_ref().map_or("the app's runtimeconfig.json".to_string(), |a| a.config_path().display().to_string());
            eprintln!(
                "clrprof record: the `dotnet` host did not start the program: {config} asks for a runtime this \
                 `dotnet` does not have (the host's message above lists the ones it has); run the program with the \
                 `dotnet` of that runtime, or delete {config} and record again to have one written for this `dotnet`; \
                 no log was written"
            );
            Ok(ExitCode::from(failure(code)))
        }
        None if seen.no_icu && !status.success() => {
            eprintln!("clrprof record: {shown} exited with {}; {}; no log was written", describe(&status), no_icu_advice());
            Ok(ExitCode::from(failure(code)))
        }
        None if saw_runtime => {
            eprintln!(
                "clrprof record: the .NET runtime started but did not load the profiler library {} \
                 (it refuses libraries it cannot open or that are not built for this machine, \
                 and says nothing about it); no log was written",
                agent.display()
            );
            Ok(ExitCode::from(failure(code)))
        }
        None => {
            eprintln!(
                "clrprof record: {shown} does not look like a .NET (CoreCLR) program: the runtime never \
                 loaded, and no log was written (run `dotnet app.dll` or the app's own launcher; \
                 .NET Framework and Mono are not supported)"
            );
            Ok(ExitCode::from(failure(code)))
        }
    }
}

/// What to do when the runtime found no ICU library.
fn no_icu_advice() -> String {
    format!(
        "the .NET runtime stopped the program because it found no ICU library (\"{}\" above), which it needs \
         for culture data from start-up or from the program's first use of it (CoreCLR 3.1 knows ICU versions \
         50 to 70 only). Set DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1 to run without ICU (every culture then \
         behaves as the invariant one) and record again: `DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1 clrprof record ...`; \
         or install an ICU package the runtime knows",
        startup_failure::NO_ICU
    )
}

/// Asks the collector at `target` whether it takes the token of
/// `token_file` before anything is started: a refusal stops `record` (exit
/// 1, nothing run or attached); a collector that cannot be reached is only
/// a warning, since the agent then spools the log and catches up later.
pub(crate) fn check_collector(target: &str, tls: &clrprof_stream::Tls, token: &clrprof_wire::Token, token_file: &Path) -> Result<()> {
    use clrprof_collect::check::{check_token, TokenCheck};
    let addr: clrprof_collect::address::ListenAddr = target.parse()?;
    match check_token(&addr, tls, token, std::time::Duration::from_secs(10)) {
        Ok(TokenCheck::Accepted) => Ok(()),
        Ok(TokenCheck::Refused(why)) => bail!(
            "the collector at {target} refused the token in {}: {why}; nothing was started (is it the token file `clrprof collect` printed or wrote?)",
            token_file.display()
        ),
        Ok(TokenCheck::Untrusted(why)) => bail!("{why}; nothing was started (is --tls-fingerprint what `clrprof collect --tls` printed?)"),
        Ok(TokenCheck::Silent(why)) => bail!(
            "the collector at {target} did not answer in clear: {why}; nothing was started (a collector started with --tls needs --tls-fingerprint or --tls-ca)"
        ),
        Err(e) => {
            eprintln!("clrprof record: warning: {e}; the agent will keep the log in its spool file and send it when the collector is back");
            Ok(())
        }
    }
}

impl Args {
    /// TLS to the collector (`--tls-fingerprint`, `--tls-ca`, else
    /// `CLRPROF_TLS_FINGERPRINT`, `CLRPROF_TLS_CA`), and the settings that
    /// give the agent the same. A fingerprint that does not read stops
    /// `record`: it never falls back to plain TCP.
    pub(crate) fn collector_tls(&self) -> Result<(clrprof_stream::Tls, Vec<(&'static str, String)>)> {
        use clrprof_wire::tls::Trust;
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let fingerprint =
            self.tls_fingerprint.clone().or_else(|| if self.tls_ca.is_some() { None } else { env("CLRPROF_TLS_FINGERPRINT") });
        let ca = self.tls_ca.as_ref().map(|p| p.display().to_string()).or_else(|| env("CLRPROF_TLS_CA"));
        let tls = clrprof_stream::Tls::from_settings(fingerprint.as_deref(), ca.as_deref());
        let settings = match &tls {
            clrprof_stream::Tls::Invalid(why) => bail!("{why}"),
            clrprof_stream::Tls::Plain => Vec::new(),
            clrprof_stream::Tls::Verify(Trust::Fingerprint(f)) => vec![("CLRPROF_TLS_FINGERPRINT", f.to_string())],
            clrprof_stream::Tls::Verify(Trust::CaFile(p)) => {
                // The program may run elsewhere (its own working folder).
                let p = std::path::absolute(p).unwrap_or_else(|_| p.clone());
                vec![("CLRPROF_TLS_CA", p.display().to_string())]
            }
        };
        Ok((tls, settings))
    }
}

/// Where the agent reports how it started: a file in a new folder only
/// this user can enter, so no other user can plant or read it. The folder
/// is removed at the end unless processes that inherited its name still
/// run (then it is kept, so that no one else can make it again).
struct StatusFile(PathBuf, bool);

impl StatusFile {
    fn new() -> Result<StatusFile> {
        let dir = clrprof_files::private_temp_dir("clrprof-record").context("cannot make a private temporary folder")?;
        Ok(StatusFile(dir.join("agent.status"), false))
    }

    /// Leaves the folder in place.
    fn keep(&mut self) {
        self.1 = true;
    }
}

impl Drop for StatusFile {
    fn drop(&mut self) {
        if self.1 {
            return;
        }
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The agent: `--agent`, `$CLRPROF_AGENT`, or next to this program.
pub(crate) fn find_agent(given: Option<&Path>) -> Result<PathBuf> {
    let (path, from) = match given {
        Some(p) => (p.to_path_buf(), "--agent"),
        None => match std::env::var_os("CLRPROF_AGENT").filter(|v| !v.is_empty()) {
            Some(p) => (PathBuf::from(p), "CLRPROF_AGENT"),
            None => {
                let exe = std::env::current_exe().context("cannot find this program's own path")?;
                let dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
                (dir.join(AGENT_FILE), "next to clrprof")
            }
        },
    };
    if !path.is_file() {
        bail!(
            "the capture agent is not at {} ({from}); build it with `cargo build --release` \
             (it is target/release/{AGENT_FILE}) or give its path with --agent or CLRPROF_AGENT",
            path.display()
        );
    }
    absolute(&path)
}

pub(crate) fn absolute(p: &Path) -> Result<PathBuf> {
    if p.is_absolute() {
        return Ok(p.to_path_buf());
    }
    Ok(std::env::current_dir().context("cannot read the current directory")?.join(p))
}

/// Refuses a place the log cannot be written to before the program
/// starts: not a directory, not writable, or a (nearly) full file system.
fn check_place(dir: &Path, shown: &str) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    if !dir.is_dir() {
        bail!("cannot write {shown}: {} is not a directory", dir.display());
    }
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).context("a path with a NUL byte")?;
    // Safety: `c` is NUL-terminated.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
        bail!("cannot write {shown}: {} is not writable ({})", dir.display(), std::io::Error::last_os_error());
    }
    // Safety: a zeroed statvfs is a valid plain C struct; `c` is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } == 0 {
        let free = st.f_bavail as u64 * st.f_frsize as u64;
        if free < MIN_FREE {
            bail!("cannot write {shown}: the file system of {} is full ({free} bytes free)", dir.display());
        }
    }
    Ok(())
}

/// The least free space to start a recording with (the agent checks the
/// same).
const MIN_FREE: u64 = 16 << 20;

/// `<program>_%p_<stamp>.log` (the agent puts its process id for `%p`): the
/// program is the `.dll` given to `dotnet`, or the command's own name.
pub(crate) fn default_name(command: &[OsString], stamp: &str) -> String {
    let stem = |p: &OsString| Path::new(p).file_stem().map(|s| s.to_string_lossy().into_owned());
    let first = command.first().and_then(stem).unwrap_or_else(|| "program".into());
    let program = if first == "dotnet" {
        command
            .iter()
            .skip(1)
            .find(|a| Path::new(a).extension().is_some_and(|e| e.eq_ignore_ascii_case("dll")))
            .and_then(stem)
            .unwrap_or(first)
    } else {
        first
    };
    format!("{program}_%p_{stamp}.log")
}

/// Local time as `yyyyMMdd_HHmmss`.
pub(crate) fn local_timestamp() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as libc::time_t;
    // Safety: `localtime_r` reads `now` and fills `tm`, both ours; a zeroed
    // `tm` is a valid value of the plain C struct.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe { !libc::localtime_r(&now, &mut tm).is_null() };
    if !ok {
        return format!("{now}");
    }
    format!(
        "{:04}{:02}{:02}_{:02}{:02}{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

/// Waits for the program, watching its memory maps for the CoreCLR
/// runtime. Ctrl-C reaches the program (same process group); this process
/// ignores it meanwhile so that it can still report.
fn wait_watching(mut child: Child) -> Result<(ExitStatus, bool)> {
    // Safety: setting a signal's disposition to "ignore" has no other
    // effect; the child already runs with its own dispositions.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGQUIT, libc::SIG_IGN);
    }
    let maps = PathBuf::from(format!("/proc/{}/maps", child.id()));
    let mut saw_runtime = false;
    let mut delay = Duration::from_millis(2);
    loop {
        if let Some(status) = child.try_wait().context("cannot wait for the program")? {
            return Ok((status, saw_runtime));
        }
        if !saw_runtime {
            if let Ok(text) = std::fs::read(&maps) {
                saw_runtime = memchr::memmem::find(&text, b"libcoreclr.so").is_some();
            }
        }
        std::thread::sleep(delay);
        delay = (delay * 2).min(Duration::from_millis(50));
    }
}

/// The exit code to pass on: the program's, or 128 + the signal that
/// ended it.
fn exit_code(status: &ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => c as u8,
        (None, Some(s)) => (128 + s).min(255) as u8,
        (None, None) => 1,
    }
}

/// A failing exit code: the program's when it failed, else 1.
fn failure(code: u8) -> u8 {
    if code == 0 {
        1
    } else {
        code
    }
}

fn describe(status: &ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("code {c}"),
        (None, Some(s)) => format!("signal {s}"),
        _ => "an unknown status".into(),
    }
}

/// What the status line says of the agent's catch-up from its spool.
fn catch_up_outcome(field: &dyn Fn(&str) -> Option<String>) -> String {
    if field("caught_up=").is_some() {
        return "; the collector then caught up from the spool: its stored log is whole".into();
    }
    if let Some(why) = field("catch_up_gave_up=") {
        return format!("; the agent gave up catching the collector up ({})", why.replace('_', " "));
    }
    if field("catching_up=").is_some() {
        return "; a catch-up from the spool was under way when the program ended: the collector's part followed by the spool is the log"
            .into();
    }
    String::new()
}

/// How to list the streamed session: `clrprof sessions --dir D` with the
/// collector's directory when the token file is the collector's own
/// (`D/collector.token`), else with the placeholder said to be one.
pub(crate) fn sessions_hint(token_file: Option<&std::path::Path>) -> String {
    let dir = token_file
        .filter(|f| f.file_name().is_some_and(|n| n == clrprof_collect::TOKEN_FILE))
        .map(|f| f.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new(".")));
    match dir {
        Some(d) => format!("`clrprof sessions --dir {}` lists it", d.display()),
        None => "`clrprof sessions --dir DIR`, DIR being the collector's directory, lists it".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn default_names() {
        assert_eq!(default_name(&os(&["dotnet", "bin/App.dll", "x"]), "20261121_101500"), "App_%p_20261121_101500.log");
        assert_eq!(default_name(&os(&["/usr/bin/dotnet", "--roll-forward", "Major", "a.dll"]), "s"), "a_%p_s.log");
        assert_eq!(default_name(&os(&["./Service", "--port", "1"]), "s"), "Service_%p_s.log");
        assert_eq!(default_name(&os(&["dotnet", "run"]), "s"), "dotnet_%p_s.log");
        let stamp = local_timestamp();
        assert_eq!(stamp.len(), 15, "{stamp}");
        assert_eq!(&stamp[8..9], "_");
    }

    /// The collector's directory when the token file tells it, else a
    /// placeholder said to be one (never a bare `DIR`).
    #[test]
    fn sessions_hint_names_the_directory() {
        use std::path::Path;
        assert_eq!(sessions_hint(Some(Path::new("/srv/c/collector.token"))), "`clrprof sessions --dir /srv/c` lists it");
        assert_eq!(sessions_hint(Some(Path::new("collector.token"))), "`clrprof sessions --dir .` lists it");
        let other = sessions_hint(Some(Path::new("/tmp/my.token")));
        assert!(other.contains("DIR being the collector's directory"), "{other}");
    }
}
