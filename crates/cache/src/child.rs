//! A model loaded in a child process under a memory limit: how the UI and
//! the collector hold each file to the memory rule, so that one file that
//! needs more memory than the rule allows fails alone, with its reason,
//! and never takes the service (and every other open log) down with it.
//!
//! ```text
//! service --spawn, RLIMIT_DATA = budget(input)--> clrprof <LOAD_COMMAND> [--upto N] FILE
//!         <--stdout: the model (the cache's encoding, at most `budget` bytes read)--
//!         <--stderr: why it failed (an error, or "memory allocation of N bytes failed")--
//! ```
//!
//! The rule: a file of `n` bytes (decompressed) may take at most
//! [`BASE_BYTES`] + [`PER_INPUT_BYTE`] x `n` of memory to load. The child's
//! data limit (`RLIMIT_DATA`: the heap and every private writable mapping,
//! not the mapped file itself) is that budget; an allocation beyond it
//! fails and the child stops. The model comes back through a pipe and is
//! read with the same bound, so the service holds no more for the file
//! than the child could.

use clrprof::model::Model;
use std::ffi::OsString;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Memory any load may take whatever its input's size (the library's
/// memory rule, [`clrprof::limits::MEMORY_BASE`]).
pub const BASE_BYTES: u64 = clrprof::limits::MEMORY_BASE;

/// Memory a load may take per byte of input (decompressed; the library's
/// [`clrprof::limits::MEMORY_PER_INPUT_BYTE`]).
pub const PER_INPUT_BYTE: u64 = clrprof::limits::MEMORY_PER_INPUT_BYTE;

/// The hidden `clrprof` subcommand that loads a file and writes its model
/// to standard output (see [`write_model`]).
pub const LOAD_COMMAND: &str = "__load-model";

/// The memory a file of `input_bytes` bytes may take to load.
pub fn budget(input_bytes: u64) -> u64 {
    clrprof::limits::memory_allowance(input_bytes)
}

/// How to load in a child: the `clrprof` binary to run, and the budget
/// when it is not the rule's (tests).
#[derive(Clone, Debug)]
pub struct ChildLoader {
    /// The `clrprof` binary (the service's own, `std::env::current_exe`).
    pub exe: PathBuf,
    /// A fixed budget in bytes instead of [`budget`] of the input.
    pub budget_bytes: Option<u64>,
}

impl ChildLoader {
    /// A loader running the current executable (which must be `clrprof`).
    pub fn current_exe() -> std::io::Result<ChildLoader> {
        Ok(ChildLoader { exe: std::env::current_exe()?, budget_bytes: None })
    }

    /// Loads `path` (its first `upto` bytes when given) in a child under
    /// its budget ([`input_bytes`]); the error says why it failed, in
    /// words for the page or the log.
    pub fn load(&self, path: &Path, upto: Option<u64>) -> Result<Model, String> {
        let input_bytes = input_bytes(path, upto).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let budget = self.budget_bytes.unwrap_or_else(|| budget(input_bytes));
        let mut cmd = Command::new(&self.exe);
        cmd.arg(LOAD_COMMAND);
        if let Some(n) = upto {
            cmd.arg("--upto").arg(n.to_string());
        }
        cmd.arg(OsString::from(path.as_os_str()));
        // The child neither reads nor writes the cache: the service does.
        // One malloc arena: each thread's arena reserves 64 MiB of address
        // space, which RLIMIT_DATA counts though it is never touched (the
        // loader's threads would take the budget of a small file).
        cmd.env("CLRPROF_CACHE", "off").env("MALLOC_ARENA_MAX", "1").stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        {
            use std::os::unix::process::CommandExt;
            let limit = budget;
            // Safety: between fork and exec the closure only calls
            // setrlimit, which is async-signal-safe, on its own stack data.
            unsafe {
                cmd.pre_exec(move || {
                    let l = libc::rlimit { rlim_cur: limit as libc::rlim_t, rlim_max: limit as libc::rlim_t };
                    if libc::setrlimit(libc::RLIMIT_DATA, &l) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let mut child = cmd.spawn().map_err(|e| format!("cannot start the loader {}: {e}", self.exe.display()))?;
        let stderr = child.stderr.take();
        // Standard error is read beside (its last 16 KB kept), so that
        // neither pipe can stall the child.
        let errors = std::thread::spawn(move || {
            let mut kept = Vec::new();
            if let Some(mut e) = stderr {
                let mut buf = [0u8; 8192];
                while let Ok(n) = e.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    kept.extend_from_slice(&buf[..n]);
                    if kept.len() > 16 << 10 {
                        kept.drain(..kept.len() - (16 << 10));
                    }
                }
            }
            String::from_utf8_lossy(&kept).into_owned()
        });
        let model = match child.stdout.take() {
            Some(out) => read_model(BufReader::with_capacity(1 << 20, out), budget),
            None => Err("no output".to_string()),
        };
        let status = child.wait().map_err(|e| format!("the loader: {e}"))?;
        let said = errors.join().unwrap_or_default();
        if status.success() {
            return model.map_err(|e| format!("the loader's model did not read back: {e}"));
        }
        Err(why(status, &said, budget, input_bytes))
    }
}

/// The input's size for the rule: the file's (or `upto`) bytes; for a
/// compressed file (gzip, zstd), whose decompressed size is not known
/// before it is read, the most the library's decompression limits let it
/// expand to ([`clrprof::limits::DecompressLimits`]: 250 times, at least
/// 64 MiB, at most 32 GiB). The library holds the load to the rule for
/// the size it really decompresses to; the child's limit is the backstop.
pub fn input_bytes(path: &Path, upto: Option<u64>) -> std::io::Result<u64> {
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    let len = upto.map_or(len, |n| n.min(len));
    let mut head = [0u8; 4];
    let n = f.read(&mut head)?;
    let compressed = head[..n].starts_with(&[0x1f, 0x8b]) || head[..n] == [0x28, 0xb5, 0x2f, 0xfd];
    Ok(if compressed { decompressed_at_most(len) } else { len })
}

/// The most `compressed` bytes may decompress to under the library's
/// default limits.
fn decompressed_at_most(compressed: u64) -> u64 {
    use clrprof::limits::{DECOMPRESSION_FLOOR, MAX_DECOMPRESSED_BYTES, MAX_DECOMPRESSION_RATIO};
    compressed.saturating_mul(MAX_DECOMPRESSION_RATIO).clamp(DECOMPRESSION_FLOOR, MAX_DECOMPRESSED_BYTES)
}

/// Why a child failed: out of its budget, or its own error message.
fn why(status: std::process::ExitStatus, said: &str, budget: u64, input_bytes: u64) -> String {
    use std::os::unix::process::ExitStatusExt;
    if status.signal() == Some(libc::SIGPIPE) {
        return format!("its model is larger than its budget of {} MiB; it was not read", budget >> 20);
    }
    // An allocation beyond the limit: Rust says so and aborts; the
    // system's out-of-memory killer sends SIGKILL.
    let out_of_memory = said.contains("memory allocation of") || status.signal() == Some(libc::SIGKILL);
    if out_of_memory {
        let rule = if budget == self::budget(input_bytes) {
            format!(" (the memory rule: {} MiB + {PER_INPUT_BYTE} x its {input_bytes} bytes)", BASE_BYTES >> 20)
        } else {
            String::new()
        };
        return format!("loading it needs more memory than its budget of {} MiB{rule}; it was stopped", budget >> 20);
    }
    let last = said.lines().map(str::trim).rfind(|l| !l.is_empty());
    match (last, status.signal()) {
        (Some(l), None) => l.strip_prefix("clrprof: ").unwrap_or(l).to_string(),
        (Some(l), Some(_)) => format!("the loader stopped ({status}): {l}"),
        (None, _) => format!("the loader failed ({status})"),
    }
}

/// Writes a model as the child gives it to the service (the cache's
/// encoding, without its header).
pub fn write_model(out: impl std::io::Write, model: &Model) -> std::io::Result<()> {
    use bincode::Options as _;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, out);
    crate::options(u64::MAX).serialize_into(&mut out, model).map_err(std::io::Error::other)?;
    std::io::Write::flush(&mut out)
}

/// Reads a model written by [`write_model`], reading no more than `limit`
/// bytes and allocating no more than that for what they claim.
pub fn read_model(input: impl Read, limit: u64) -> Result<Model, String> {
    use bincode::Options as _;
    crate::options(limit).deserialize_from(input).map_err(|e| e.to_string())
}
