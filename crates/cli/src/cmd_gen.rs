//! `clrprof gen`: writes a synthetic, heap-consistent log and its truth.

use anyhow::{bail, Context, Result};
use clrprof_gen::nettrace::{generate_nettrace, NetTraceOptions};
use clrprof_gen::{generate, GenOptions, PointerBits, Preset};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Instant;

/// Options of `clrprof gen` (flags override the preset).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Size preset: tiny (~20k objects), small (~300k), medium (~3M), seed
    /// (19.7M objects, 3.85 GB allocated, 32 GCs).
    #[arg(long, default_value = "tiny")]
    pub preset: Preset,
    /// Output log (`-` for standard output).
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
    /// Where to write the truth JSON (default: OUTPUT.truth.json; none for
    /// standard output unless given).
    #[arg(long)]
    pub truth: Option<PathBuf>,
    /// Objects to allocate.
    #[arg(long)]
    pub objects: Option<u64>,
    /// Target mean object size in bytes.
    #[arg(long)]
    pub mean_size: Option<f64>,
    /// Garbage collections.
    #[arg(long)]
    pub gcs: Option<u32>,
    /// Induced GCs (at least --heap-dumps).
    #[arg(long)]
    pub induced: Option<u32>,
    /// Managed threads.
    #[arg(long)]
    pub threads: Option<u32>,
    /// Log every call (`c` lines).
    #[arg(long)]
    pub calls: bool,
    /// Mean calls between allocations with --calls.
    #[arg(long)]
    pub calls_per_alloc: Option<f64>,
    /// Heap dumps, each during an induced gen-2 GC.
    #[arg(long)]
    pub heap_dumps: Option<u32>,
    /// GC handles per million allocations (0: none).
    #[arg(long)]
    pub handles_per_million: Option<f64>,
    /// User comments.
    #[arg(long)]
    pub comments: Option<u32>,
    /// No finalizable types.
    #[arg(long)]
    pub no_finalizers: bool,
    /// Random seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Pointer width: 32 or 64.
    #[arg(long)]
    pub pointer_bits: Option<u32>,
    /// Milliseconds on the first `i` line (values wrap at 2^32; try
    /// 4294960000 to cross the wraparound).
    #[arg(long)]
    pub tick_start: Option<u64>,
    /// Share of allocated bytes in large objects (0 to 0.5).
    #[arg(long)]
    pub loh_fraction: Option<f64>,
    /// Functions in the synthetic call tree.
    #[arg(long)]
    pub functions: Option<u32>,
    /// Output format: a CLRProfiler log, or the same simulation as a
    /// NetTrace (EventPipe `.nettrace`: GC/AllocationTick with stacks,
    /// GC/Start, GC/Stop, GC/HeapStats, Method/LoadVerbose; no truth file).
    #[arg(long, value_enum, default_value = "log")]
    pub format: GenFormat,
    /// With --format nettrace: an allocation tick every this many bytes
    /// per thread (the runtime's 100000); 0 for one per object.
    #[arg(long, default_value_t = 100_000)]
    pub tick_bytes: u64,
    /// With --format nettrace: drop every Nth event, its sequence number
    /// left as a gap, as a runtime whose buffers are full does (a trace
    /// that readers must report as incomplete).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub lose_every: u64,
    /// No report on standard error.
    #[arg(long, short)]
    pub quiet: bool,
}

/// What `clrprof gen` writes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum GenFormat {
    /// A CLRProfiler log and its truth JSON.
    Log,
    /// A NetTrace (EventPipe) trace.
    Nettrace,
}

impl Args {
    /// The generator options: the preset with the flags applied.
    pub fn options(&self) -> Result<GenOptions> {
        let mut o = self.preset.options();
        macro_rules! set {
            ($($field:ident),*) => { $( if let Some(v) = self.$field { o.$field = v; } )* };
        }
        set!(objects, mean_size, gcs, induced, threads, calls_per_alloc, heap_dumps, handles_per_million, comments, seed, tick_start, loh_fraction, functions);
        o.calls |= self.calls;
        if self.no_finalizers {
            o.finalizers = false;
        }
        if let Some(bits) = self.pointer_bits {
            o.pointer_bits = match PointerBits::from_bits(bits) {
                Some(b) => b,
                None => bail!("--pointer-bits must be 32 or 64"),
            };
        }
        o.validate()?;
        Ok(o)
    }
}

/// A writer that hands full blocks to an I/O thread (blocks come back for
/// reuse).
struct OffThread {
    tx: mpsc::SyncSender<Vec<u8>>,
    back: mpsc::Receiver<Vec<u8>>,
}

impl Write for OffThread {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut block = self.back.try_recv().unwrap_or_else(|_| Vec::with_capacity(buf.len().max(1 << 16)));
        block.clear();
        block.extend_from_slice(buf);
        self.tx.send(block).map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the I/O thread stopped"))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The file the log or trace goes to. A character device or a named pipe
/// given as the output (`-o /dev/null`, a FIFO another program reads) is
/// written as it is: replacing it would put a regular file in its place
/// (as root, a 640 MB file instead of `/dev/null`, on a RAM-backed `/dev`)
/// and write there at the speed of memory allocation. Anything else is
/// replaced ([`clrprof_files::replace`]: never through a link).
fn output_file(path: &Path) -> io::Result<File> {
    let special = |t: std::fs::FileType| t.is_char_device() || t.is_fifo();
    match path.symlink_metadata() {
        Ok(m) if special(m.file_type()) => {
            let file = OpenOptions::new().write(true).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC).open(path)?;
            // What was opened, not what the path named a moment before.
            if special(file.metadata()?.file_type()) {
                Ok(file)
            } else {
                Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{} changed while it was opened", path.display())))
            }
        }
        _ => clrprof_files::replace(path),
    }
}

/// The truth file's default path: `FILE.truth.json` beside `FILE.log`.
fn default_truth_path(log: &Path) -> PathBuf {
    let stem = if log.extension().is_some_and(|e| e == "log") { log.with_extension("") } else { log.to_path_buf() };
    let mut s = stem.into_os_string();
    s.push(".truth.json");
    PathBuf::from(s)
}

/// `--format nettrace`: the trace, streamed to the file (or standard output).
fn run_nettrace(args: &Args, opts: &GenOptions) -> Result<()> {
    let nt = NetTraceOptions { tick_bytes: args.tick_bytes, lose_every: args.lose_every, ..NetTraceOptions::default() };
    let started = Instant::now();
    let report = if args.output.as_os_str() == "-" {
        let out = io::BufWriter::with_capacity(1 << 20, io::stdout());
        generate_nettrace(opts, &nt, out).context("generating the trace")?.1
    } else {
        let file = output_file(&args.output).with_context(|| format!("cannot create {}", args.output.display()))?;
        let out = io::BufWriter::with_capacity(1 << 20, file);
        generate_nettrace(opts, &nt, out).with_context(|| format!("writing {}", args.output.display()))?.1
    };
    let seconds = started.elapsed().as_secs_f64();
    if !args.quiet {
        let bytes = report.writer.bytes;
        eprintln!(
            "clrprof gen: {}: {} bytes ({:.1} MB), {} events ({} allocation ticks, {} GCs, {} methods{}), {} objects in {:.3} s: {:.0} MB/s",
            args.output.display(),
            bytes,
            bytes as f64 / 1e6,
            report.writer.events,
            report.counts.allocation_ticks,
            report.counts.gc_starts,
            report.counts.method_loads,
            if report.writer.lost > 0 { format!("; {} dropped, as --lose-every asks", report.writer.lost) } else { String::new() },
            report.counts.objects,
            seconds,
            bytes as f64 / 1e6 / seconds.max(1e-9),
        );
    }
    Ok(())
}

pub fn run(args: Args) -> Result<()> {
    let opts = args.options()?;
    if args.format == GenFormat::Nettrace {
        return run_nettrace(&args, &opts);
    }
    let to_stdout = args.output.as_os_str() == "-";
    let started = Instant::now();
    let truth = if to_stdout {
        let (mut w, truth) = generate(&opts, io::stdout()).context("generating the log")?;
        w.flush()?;
        truth
    } else {
        // The generator makes test data: an existing log is replaced, but
        // never written through (a link at the path is removed, not
        // followed); a device or a pipe is written as it is.
        let file = output_file(&args.output).with_context(|| format!("cannot create {}", args.output.display()))?;
        // The generator keeps both cores busy; the kernel's share of
        // writing the file runs on a third thread, in the gaps.
        let truth = std::thread::scope(|s| -> Result<_> {
            let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(8);
            let (back_tx, back_rx) = mpsc::channel::<Vec<u8>>();
            let io = s.spawn(move || -> io::Result<()> {
                let mut file = file;
                for block in rx {
                    file.write_all(&block)?;
                    let _ = back_tx.send(block);
                }
                file.flush()
            });
            let out = OffThread { tx, back: back_rx };
            // The writer (and its sender) is dropped here, which ends the
            // I/O thread's loop.
            let truth = generate(&opts, out).map(|(_, truth)| truth);
            let written = io.join().map_err(|_| anyhow::anyhow!("the I/O thread panicked"))?;
            written.with_context(|| format!("writing {}", args.output.display()))?;
            truth.with_context(|| format!("writing {}", args.output.display()))
        })?;
        truth
    };
    let seconds = started.elapsed().as_secs_f64();
    let truth_path = match (&args.truth, to_stdout) {
        (Some(p), _) => Some(p.clone()),
        (None, false) => Some(default_truth_path(&args.output)),
        (None, true) => None,
    };
    if let Some(p) = &truth_path {
        let json = truth.to_json()?;
        clrprof_files::write_whole(p, (json + "\n").as_bytes(), true).with_context(|| format!("cannot write {}", p.display()))?;
    }
    if !args.quiet {
        let bytes = truth.log.bytes;
        eprintln!(
            "clrprof gen: {} {} bytes ({:.1} MB), {} lines, {} objects, {} GCs in {:.3} s: {:.0} MB/s{}",
            if to_stdout { "stdout:".to_string() } else { format!("{}:", args.output.display()) },
            bytes,
            bytes as f64 / 1e6,
            truth.log.lines,
            truth.allocated.objects,
            truth.gcs.total,
            seconds,
            bytes as f64 / 1e6 / seconds.max(1e-9),
            truth_path.map(|p| format!("; truth in {}", p.display())).unwrap_or_default(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    struct Gen {
        #[command(flatten)]
        args: Args,
    }

    #[test]
    fn format_nettrace_writes_a_trace_the_reader_reads() {
        use clap::Parser;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.nettrace");
        let p = path.to_str().unwrap();
        let cmd = ["gen", "--preset", "tiny", "--objects", "500", "--gcs", "2", "--format", "nettrace", "--tick-bytes", "0", "-q", "-o", p];
        run(Gen::try_parse_from(cmd).unwrap().args).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let mut ticks = 0;
        let summary = clrprof::eventpipe::NetTraceReader::new(&bytes)
            .unwrap()
            .for_each(|e| ticks += u32::from(e.name() == "GC/AllocationTick"))
            .unwrap();
        assert_eq!(ticks, 500);
        assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
        // No truth file beside a trace.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_named_pipe_given_as_the_output_is_written_not_replaced() {
        use clap::Parser;
        use std::io::Read;
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("out.log");
        let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // Safety: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Opened for reading first (without waiting for a writer), so that
        // the generator's open does not wait either.
        let mut reader = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&fifo).unwrap();
        let read = std::thread::spawn(move || {
            let mut got = Vec::new();
            let mut buf = [0u8; 65536];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) if !got.is_empty() => return got,
                    // No writer yet (0), or nothing to read yet.
                    Ok(0) => std::thread::sleep(std::time::Duration::from_millis(5)),
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(std::time::Duration::from_millis(5)),
                    Err(e) => panic!("{e}"),
                }
            }
        });
        let truth = dir.path().join("t.json");
        let cmd = ["gen", "--preset", "tiny", "-q", "-o", fifo.to_str().unwrap(), "--truth", truth.to_str().unwrap()];
        run(Gen::try_parse_from(cmd).unwrap().args).unwrap();
        assert!(fifo.symlink_metadata().unwrap().file_type().is_fifo(), "the pipe was replaced by a file");
        let got = read.join().unwrap();
        let t: serde_json::Value = serde_json::from_slice(&std::fs::read(&truth).unwrap()).unwrap();
        assert_eq!(got.len() as u64, t["log"]["bytes"].as_u64().unwrap(), "the whole log came through the pipe");
    }

    #[test]
    fn truth_path_sits_beside_the_log() {
        assert_eq!(default_truth_path(Path::new("/tmp/a.log")), PathBuf::from("/tmp/a.truth.json"));
        assert_eq!(default_truth_path(Path::new("a.txt")), PathBuf::from("a.txt.truth.json"));
    }
}
