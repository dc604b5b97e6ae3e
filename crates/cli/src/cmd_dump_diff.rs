//! `clrprof dump-diff`: what changed between two heap dumps of a log, per
//! type, or (`--by`) per type, allocation stack or allocating function;
//! or the dumps of two files per type (`dump_compare`).

use crate::common::{cut_json, print_json, print_table, thousands, LoadArgs, OutputArgs};
use crate::load::load;
use anyhow::{anyhow, bail, Result};
use crate::dump_sites::{print_diff, print_diff_head, ByArg};
use clrprof::query::dumps::{diff, diff_by, DumpIndex, TypeDelta};

/// Arguments of `clrprof dump-diff`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    load: LoadArgs,
    /// The earlier dump's index in LOG; or, with no third argument, a
    /// second file whose dump is compared with LOG's (`dump-diff A.gcdump
    /// B.gcdump`).
    #[arg(value_name = "A|FILE")]
    a: String,
    /// The later dump's index in LOG.
    #[arg(value_name = "B")]
    b: Option<u32>,
    /// Two files: which dump of the first (default: its last).
    #[arg(long, value_name = "N")]
    dump_a: Option<u32>,
    /// Two files: which dump of the second (default: its last).
    #[arg(long, value_name = "N")]
    dump_b: Option<u32>,
    /// New, gone and kept objects per type, per allocation stack or per
    /// allocating function ("new since A" by the code that allocated them),
    /// with every object counted (those without a known allocation in a
    /// group of their own).
    #[arg(long, value_enum, value_name = "KEY")]
    by: Option<ByArg>,
    #[command(flatten)]
    out: OutputArgs,
}

fn signed(v: i64) -> String {
    if v < 0 {
        format!("-{}", thousands(v.unsigned_abs()))
    } else {
        format!("+{}", thousands(v as u64))
    }
}

/// The columns of a per-type change between two dumps.
pub(crate) const DELTA_HEADER: [&str; 7] = ["type", "objects A", "objects B", "delta", "bytes A", "bytes B", "delta bytes"];

/// One row under [`DELTA_HEADER`]: a type's objects and bytes in A and B.
pub(crate) fn delta_row(name: &str, objects: [u64; 2], bytes: [u64; 2]) -> Vec<String> {
    let change = |[a, b]: [u64; 2]| (i128::from(b) - i128::from(a)).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
    vec![
        name.to_string(),
        thousands(objects[0]),
        thousands(objects[1]),
        signed(change(objects)),
        thousands(bytes[0]),
        thousands(bytes[1]),
        signed(change(bytes)),
    ]
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let Some(b) = args.b else { return crate::dump_compare::run(&args.load, &args.a, [args.dump_a, args.dump_b], args.by.is_some(), &args.out) };
    if args.dump_a.is_some() || args.dump_b.is_some() {
        bail!("--dump-a and --dump-b choose the dumps of two files: with one LOG, give the two dumps' indices");
    }
    let a: u32 = match args.a.parse() {
        Ok(a) => a,
        Err(_) => bail!("`{}`: with two dump indices after LOG, the first must be one too (to compare two files: `dump-diff FILE_A FILE_B`)", args.a),
    };
    let loaded = load(&args.load, args.out.quiet)?;
    let model = &loaded.model;
    let count = model.heap_dumps().dumps().len();
    let missing = || anyhow!("no heap dumps {a} and {b} (the log has {count}; `clrprof dumps` lists them)");
    if !args.out.json {
        if let Some(line) = crate::common::incomplete_line(model) {
            println!("{line}");
        }
    }
    if let Some(by) = args.by {
        let d = diff_by(model, DumpIndex(a), DumpIndex(b), by.into()).ok_or_else(missing)?;
        if args.out.json {
            let mut v = serde_json::to_value(&d)?;
            cut_json(&mut v, "sites", args.out.limit());
            return print_json(&v);
        }
        print_diff(&d, args.out.limit());
        return Ok(());
    }
    let d = diff(model, DumpIndex(a), DumpIndex(b))
        .ok_or_else(missing)?;
    let top = args.out.limit();
    if args.out.json {
        let mut v = serde_json::to_value(&d)?;
        cut_json(&mut v, "types", top);
        return print_json(&v);
    }
    print_diff_head(d.a, d.b, [d.new_objects, d.new_bytes, d.gone_objects, d.gone_bytes, d.kept_objects], &d.matching);
    println!("\nnew objects by type");
    let new: Vec<&TypeDelta> = d.types.iter().filter(|t| t.new_objects > 0).take(top).collect();
    let rows: Vec<Vec<String>> =
        new.iter().map(|t| vec![t.name.clone(), thousands(t.new_objects), thousands(t.new_bytes)]).collect();
    print_table(&["type", "new objects", "new bytes"], &rows);
    println!("\ntypes that grew or shrank (bytes in B minus bytes in A)");
    let mut changed: Vec<&TypeDelta> = d.types.iter().filter(|t| t.bytes_delta() != 0 || t.objects_a != t.objects_b).collect();
    changed.sort_by(|x, y| y.bytes_delta().abs().cmp(&x.bytes_delta().abs()).then(x.type_id.cmp(&y.type_id)));
    let rows: Vec<Vec<String>> = changed
        .iter()
        .take(top)
        .map(|t| delta_row(&t.name, [t.objects_a, t.objects_b], [t.bytes_a, t.bytes_b]))
        .collect();
    print_table(&DELTA_HEADER, &rows);
    Ok(())
}
