//! `clrprof __load-model [--upto N] FILE` (hidden): loads a log, a trace
//! or a `.gcdump` as the UI does and writes its model to standard output.
//! The UI and the collector run it as a child process under the file's
//! memory budget (`clrprof_cache::child`), so that a file needing more
//! memory than the rule allows fails alone.

use anyhow::{Context, Result};
use clrprof::format::LogSource;
use clrprof::model::{self, LoadOptions};
use std::path::PathBuf;

/// Arguments of `clrprof __load-model`.
#[derive(clap::Args)]
pub struct Args {
    /// Load only the file's first N bytes (a live session's trace, up to
    /// where the service read it).
    #[arg(long, value_name = "N")]
    upto: Option<u64>,
    /// The file.
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let source = LogSource::open(&args.file).with_context(|| format!("cannot read {}", args.file.display()))?;
    let data = source.bytes();
    let data = match args.upto {
        Some(n) => &data[..usize::try_from(n).unwrap_or(usize::MAX).min(data.len())],
        None => data,
    };
    let options = LoadOptions::default();
    let model = match model::load_foreign(data, &options, |_| {}) {
        Some(loaded) => loaded?,
        None => model::load(data, &options)?,
    };
    clrprof_cache::child::write_model(std::io::stdout().lock(), &model).context("cannot write the model")?;
    Ok(())
}

/// How the UI and the collector load a file: in a child process running
/// this binary's `__load-model`, under the memory rule's budget, or under
/// `CLRPROF_LOAD_MEMORY_MB` MiB when that is set.
pub fn child_loader() -> Result<clrprof_cache::child::ChildLoader> {
    let mut loader = clrprof_cache::child::ChildLoader::current_exe().context("cannot find clrprof's own executable to load files with")?;
    if let Some(v) = std::env::var_os("CLRPROF_LOAD_MEMORY_MB").filter(|v| !v.is_empty()) {
        let mb: u64 = v
            .to_str()
            .and_then(|s| s.trim().parse().ok())
            .with_context(|| format!("CLRPROF_LOAD_MEMORY_MB={v:?} is not a number of MiB"))?;
        loader.budget_bytes = Some(mb.saturating_mul(1 << 20));
    }
    Ok(loader)
}
