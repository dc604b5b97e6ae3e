//! Writes the synthetic parse-benchmark log (the one `benches/parse.rs`
//! uses) to a file, so that the CLI can be timed on it:
//! `cargo run --release --example synth_log -- 256 /tmp/synth.log`.

#[path = "../benches/common/mod.rs"]
mod common;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let mb: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(256);
    let path = args.next().unwrap_or_else(|| "synth.log".to_string());
    let log = common::synthetic_log(mb << 20);
    std::fs::write(&path, &log)?;
    eprintln!("wrote {} bytes to {path}", log.len());
    Ok(())
}
