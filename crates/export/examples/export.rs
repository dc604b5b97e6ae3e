//! Loads a log and exports it with the library: the three calls
//! `clrprof export` makes.
//!
//! `cargo run --release -p clrprof-export --example export -- LOG pprof|speedscope|parquet OUT`

use clrprof_export::{parquet, pprof, speedscope, ExportOptions};
use std::error::Error;

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, log, format, out] = args.as_slice() else {
        return Err("usage: export LOG pprof|speedscope|parquet OUT".into());
    };
    let data = std::fs::read(log)?;
    let t = std::time::Instant::now();
    let model = clrprof::model::load(&data, &Default::default())?;
    eprintln!("loaded in {:.2} s", t.elapsed().as_secs_f64());
    let options = ExportOptions::default();
    let t = std::time::Instant::now();
    match format.as_str() {
        "pprof" => pprof::write(&model, &options, std::fs::File::create(out)?)?,
        "speedscope" => speedscope::write(&model, &options, log, std::fs::File::create(out)?)?,
        "parquet" => {
            for r in parquet::write(&model, &options, std::path::Path::new(out))? {
                eprintln!("{}: {} rows, {} row groups, {} bytes", r.name, r.rows, r.row_groups, r.bytes);
            }
        }
        other => return Err(format!("unknown format {other}").into()),
    }
    eprintln!("exported in {:.2} s", t.elapsed().as_secs_f64());
    Ok(())
}
