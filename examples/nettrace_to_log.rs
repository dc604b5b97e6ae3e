//! Writes the CLRProfiler log text a `.nettrace` trace becomes, and what
//! the import found: `cargo run --example nettrace_to_log -- TRACE [OUT.log]`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let trace = args.next().ok_or("usage: nettrace_to_log TRACE [OUT.log]")?;
    let bytes = std::fs::read(&trace)?;
    let imported = clrprof::import::nettrace::to_log(&bytes)?;
    eprintln!("{:#?}", imported.facts);
    if let Some(s) = &imported.sampling {
        eprintln!("{} samples ({:?}), {:.0} objects estimated", s.weights.len(), s.method, s.estimated_objects());
    }
    match args.next() {
        Some(out) => std::fs::write(out, &imported.log)?,
        None => {
            use std::io::Write;
            std::io::stdout().write_all(&imported.log)?;
        }
    }
    Ok(())
}
