//! The heap dumps of two files compared per type: `dump-diff FILE_A
//! FILE_B`, and the dump section of `diff` (two `.gcdump`s, two traces'
//! heap walks, a log's dump against another file's).

use crate::common::{cut_json, print_json, print_table, thousands, LoadArgs, OutputArgs};
use crate::cmd_dump_diff::{delta_row, DELTA_HEADER};
use anyhow::{bail, Result};
use clrprof::model::Model;
use clrprof::query::dumps::{compare_files, DumpComparison, DumpIndex};

/// Which dump of `model`: `chosen`, else its last; `None` without dumps.
pub fn pick(model: &Model, chosen: Option<u32>) -> Option<DumpIndex> {
    let n = model.heap_dumps().dumps().len() as u32;
    match chosen {
        Some(i) if i < n => Some(DumpIndex(i)),
        Some(_) => None,
        None => n.checked_sub(1).map(DumpIndex),
    }
}

/// The comparison of the chosen dumps of two loaded files, or an error
/// naming the file without that dump.
pub fn compare(a: (&Model, &str), b: (&Model, &str), dumps: [Option<u32>; 2]) -> Result<DumpComparison> {
    let mut index = [DumpIndex(0); 2];
    for (k, ((model, name), chosen)) in [a, b].into_iter().zip(dumps).enumerate() {
        let n = model.heap_dumps().dumps().len();
        match (pick(model, chosen), chosen) {
            (Some(i), _) => index[k] = i,
            (None, Some(i)) => bail!("{name}: no heap dump {i} (it has {n}; `clrprof dumps` lists them)"),
            (None, None) => bail!("{name}: no heap dump to compare"),
        }
    }
    match compare_files(a.0, index[0], b.0, index[1]) {
        Some(c) => Ok(c),
        None => bail!("{} or {}: no such heap dump", a.1, b.1),
    }
}

/// Prints the per-type table of a comparison (the `top` largest changes).
pub fn print_types(c: &DumpComparison, top: usize) {
    if c.types.is_empty() {
        println!("  no difference: the same objects and bytes per type");
        return;
    }
    let rows: Vec<Vec<String>> = c
        .types
        .iter()
        .take(top)
        .map(|t| delta_row(&t.name, [t.objects_a, t.objects_b], [t.bytes_a, t.bytes_b]))
        .collect();
    print_table(&DELTA_HEADER, &rows);
    if c.types.len() > top {
        println!("... and {} more types (--top N shows more)", thousands((c.types.len() - top) as u64));
    }
}

/// `dump-diff FILE_A FILE_B`.
pub fn run(first: &LoadArgs, second: &str, dumps: [Option<u32>; 2], by: bool, out: &OutputArgs) -> Result<()> {
    if by {
        bail!("--by needs the allocations behind one log's dumps: it compares two dumps of one LOG (`dump-diff LOG A B --by ...`)");
    }
    let second = LoadArgs { log: second.into(), threads: first.threads, strict: first.strict, decompress: first.decompress };
    let a = crate::load::load(first, out.quiet)?;
    let b = crate::load::load(&second, out.quiet)?;
    let (na, nb) = (first.shown().display().to_string(), second.shown().display().to_string());
    let c = compare((&a.model, &na), (&b.model, &nb), dumps)?;
    if out.json {
        let mut v = serde_json::to_value(&c)?;
        cut_json(&mut v, "types", out.limit());
        return print_json(&v);
    }
    println!(
        "dump {} of {na}: {} objects, {} bytes\ndump {} of {nb}: {} objects, {} bytes",
        c.a.index,
        thousands(c.a.objects),
        thousands(c.a.bytes),
        c.b.index,
        thousands(c.b.objects),
        thousands(c.b.bytes)
    );
    println!("objects cannot be matched across files: per type, B minus A");
    print_types(&c, out.limit());
    Ok(())
}
