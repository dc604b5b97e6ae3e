//! `clrprof dump-diff`: what changed between two heap dumps.

use crate::common::{print_json, print_table, thousands, LoadArgs, OutputArgs};
use crate::load::load;
use anyhow::{anyhow, Result};
use clrprof::query::dumps::{diff, DumpIndex, TypeDelta};

/// Arguments of `clrprof dump-diff`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    load: LoadArgs,
    /// The earlier dump's index.
    a: u32,
    /// The later dump's index.
    b: u32,
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

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let loaded = load(&args.load, args.out.quiet)?;
    let model = &loaded.model;
    let count = model.heap_dumps().dumps().len();
    let d = diff(model, DumpIndex(args.a), DumpIndex(args.b))
        .ok_or_else(|| anyhow!("no heap dumps {} and {} (the log has {count}; `clrprof dumps` lists them)", args.a, args.b))?;
    if args.out.json {
        return print_json(&serde_json::to_value(&d)?);
    }
    let top = if args.out.top == 0 { usize::MAX } else { args.out.top };
    println!(
        "dump {} -> dump {}: {} new objects ({} bytes), {} gone ({} bytes), {} kept",
        d.a,
        d.b,
        thousands(d.new_objects),
        thousands(d.new_bytes),
        thousands(d.gone_objects),
        thousands(d.gone_bytes),
        thousands(d.kept_objects)
    );
    if d.matching.relocation_followed {
        println!("objects matched through the heap simulation (relocations followed)");
    } else {
        println!(
            "{} objects matched through the heap simulation (relocations followed), {} by address and type only (relocations not known for those)",
            thousands(d.matching.by_identity),
            thousands(d.matching.by_address)
        );
    }
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
        .map(|t| {
            vec![
                t.name.clone(),
                thousands(t.objects_a),
                thousands(t.objects_b),
                signed(t.objects_b as i64 - t.objects_a as i64),
                thousands(t.bytes_a),
                thousands(t.bytes_b),
                signed(t.bytes_delta()),
            ]
        })
        .collect();
    print_table(&["type", "objects A", "objects B", "delta", "bytes A", "bytes B", "delta bytes"], &rows);
    Ok(())
}
