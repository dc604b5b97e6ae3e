//! `clrprof join`: writes a collector's part of a log followed by the
//! agent's spool (or any logs that continue each other) as one file.

use anyhow::{bail, Context, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Arguments of `clrprof join`.
#[derive(clap::Args)]
pub struct Args {
    /// The pieces in order: the collector's part, then the spool.
    #[arg(required = true, num_args = 2.., value_name = "PIECE")]
    pieces: Vec<PathBuf>,
    /// The file to write (never an existing one).
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Use only the first N bytes of the first piece: the `spooling_from=`
    /// of the agent's status, for a collector's part that was never cut
    /// back (the collector was down until the program ended, so the agent
    /// could not tell it where its spool starts).
    #[arg(long, value_name = "N")]
    spool_from: Option<u64>,
}

/// Reads pieces of one log and gives their concatenation; every piece but
/// the last must end at a line end (a collector stores whole lines only),
/// unless the pieces are a trace (`record --sampled`: the collector stores
/// its bytes as they come, and the spool starts at the byte after).
pub fn concatenate(pieces: &[PathBuf]) -> Result<Vec<u8>> {
    let mut all = Vec::new();
    for (i, p) in pieces.iter().enumerate() {
        let bytes = std::fs::read(p).with_context(|| format!("cannot read {}", p.display()))?;
        let trace = is_trace(if i == 0 { &bytes } else { &all });
        check_piece(p, &bytes, i + 1 == pieces.len() || trace)?;
        all.extend_from_slice(&bytes);
    }
    Ok(all)
}

/// Whether the pieces, starting with `first`, are a NetTrace trace.
fn is_trace(first: &[u8]) -> bool {
    first.starts_with(b"Nettrace")
}

fn check_piece(p: &Path, bytes: &[u8], last: bool) -> Result<()> {
    if !last && !bytes.is_empty() && !bytes.ends_with(b"\n") {
        bail!("{} does not end at a line end: the next piece cannot continue it", p.display());
    }
    Ok(())
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let all = match args.spool_from {
        None => concatenate(&args.pieces)?,
        Some(n) => {
            let first = &args.pieces[0];
            let mut part = std::fs::read(first).with_context(|| format!("cannot read {}", first.display()))?;
            if (part.len() as u64) < n {
                bail!("{} has {} bytes, fewer than --spool-from {n}: bytes are missing", first.display(), part.len());
            }
            part.truncate(n as usize);
            check_piece(first, &part, is_trace(&part))?;
            part.extend(concatenate(&args.pieces[1..])?);
            part
        }
    };
    let mut f = clrprof_files::create_new(&args.output)
        .with_context(|| format!("cannot create {} (an existing file is never replaced)", args.output.display()))?;
    f.write_all(&all).with_context(|| format!("cannot write {}", args.output.display()))?;
    eprintln!("clrprof join: wrote {} ({} bytes from {} pieces)", args.output.display(), all.len(), args.pieces.len());
    Ok(())
}
