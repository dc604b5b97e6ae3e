//! `clrprof dump`: one heap dump: its types, or retained sizes
//! (`--retained`, grouped by type, allocation stack or allocating function
//! with `--by`), or shortest paths from roots to a type (`--path-to`).

use crate::common::{cut_json, more_note, print_json, print_table, thousands, LoadArgs, OutputArgs};
use crate::load::load;
use anyhow::{anyhow, Result};
use crate::dump_sites::{print_retained, ByArg};
use clrprof::query::dumps::{by_type, paths_to, retained, retained_by, DumpIndex, DumpInfo};

/// Arguments of `clrprof dump`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    load: LoadArgs,
    /// The dump's index (as `clrprof dumps` lists them, from 0).
    index: u32,
    /// Retained sizes (dominator tree): top types and objects.
    #[arg(long, conflicts_with = "path_to")]
    retained: bool,
    /// With --retained: retained bytes per type, per allocation stack or
    /// per allocating function, with every object counted (those without a
    /// known allocation in a group of their own). Stacks and functions need
    /// allocation records: a log recorded by attaching to a running process
    /// has none.
    #[arg(long, value_enum, value_name = "KEY", requires = "retained")]
    by: Option<ByArg>,
    /// Shortest paths from a root to objects of this type (exact name, or
    /// else any name containing it).
    #[arg(long, value_name = "TYPE")]
    path_to: Option<String>,
    /// With --path-to: at most this many paths.
    #[arg(long, default_value_t = 10, requires = "path_to")]
    max: usize,
    #[command(flatten)]
    out: OutputArgs,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let loaded = load(&args.load, args.out.quiet)?;
    let model = &loaded.model;
    let index = DumpIndex(args.index);
    let count = model.heap_dumps().dumps().len();
    let missing = || anyhow!("no heap dump {} (the log has {count}; `clrprof dumps` lists them)", args.index);
    let top = args.out.limit();
    if !args.out.json {
        if let Some(line) = crate::common::incomplete_line(model) {
            println!("{line}");
        }
    }
    if let Some(pattern) = &args.path_to {
        let r = paths_to(model, index, pattern, args.max).ok_or_else(missing)?;
        if args.out.json {
            return print_json(&serde_json::to_value(&r)?);
        }
        let names: Vec<&str> = r.types.iter().map(|(_, n)| n.as_str()).collect();
        if names.is_empty() {
            println!("dump {index}: no type named {pattern:?} (nor containing it)");
            return Ok(());
        }
        println!(
            "dump {index}: {} {} of {}; {} unreachable",
            thousands(r.reachable),
            if r.reachable == 1 { "reachable object" } else { "reachable objects" },
            names.join(", "),
            thousands(r.unreachable)
        );
        for (k, p) in r.paths.iter().enumerate() {
            let root = match (&p.root.static_field, &p.root.function) {
                (Some(_), _) => p.root.label(),
                (None, Some(f)) => format!("[{} ({f})]", p.root.name),
                (None, None) => format!("[{} (id {:#x})]", p.root.name, p.root.id),
            };
            println!("{:>3}. {root} {}", k + 1, crate::common::count(p.steps.len() as u64, "step", "steps"));
            for s in &p.steps {
                println!("       -> {} {:#x} ({} bytes)", s.name, s.address, thousands(s.size as u64));
            }
        }
        return Ok(());
    }
    if let Some(by) = args.by {
        let r = retained_by(model, index, by.into()).ok_or_else(missing)?;
        if args.out.json {
            let mut v = serde_json::to_value(&r)?;
            cut_json(&mut v, "sites", top);
            return print_json(&v);
        }
        print_retained(&r, top);
        return Ok(());
    }
    if args.retained {
        if args.out.json {
            let r = retained(model, index, usize::MAX).ok_or_else(missing)?;
            let mut v = serde_json::to_value(&r)?;
            for key in ["types", "top_objects", "unreachable_types"] {
                cut_json(&mut v, key, top);
            }
            return print_json(&v);
        }
        let r = retained(model, index, top).ok_or_else(missing)?;
        println!(
            "dump {index}: {} objects, {} bytes; reachable from {} strong roots: {} objects, {} bytes (what the roots retain)",
            thousands(r.objects),
            thousands(r.bytes),
            thousands(r.roots),
            thousands(r.reachable_objects),
            thousands(r.reachable_bytes)
        );
        println!("\ntypes by retained bytes");
        let rows: Vec<Vec<String>> = r
            .types
            .iter()
            .map(|t| {
                vec![
                    t.name.clone(),
                    thousands(t.objects),
                    thousands(t.bytes),
                    thousands(t.retained),
                    percent(t.retained, r.reachable_bytes),
                ]
            })
            .collect();
        print_table(&["type", "objects", "bytes", "retained", "% reachable"], &rows);
        println!("\nobjects by retained bytes");
        let rows: Vec<Vec<String>> = r
            .top_objects
            .iter()
            .map(|o| {
                vec![
                    format!("{:#x}", o.address),
                    o.name.clone(),
                    thousands(o.size as u64),
                    thousands(o.retained),
                    o.dominator.map_or_else(|| "roots".to_string(), |d| format!("{d:#x}")),
                ]
            })
            .collect();
        print_table(&["address", "type", "size", "retained", "dominator"], &rows);
        println!(
            "\nunreachable from strong roots: {} objects, {} bytes",
            thousands(r.unreachable_objects),
            thousands(r.unreachable_bytes)
        );
        if !r.unreachable_types.is_empty() {
            let rows: Vec<Vec<String>> = r
                .unreachable_types
                .iter()
                .take(top)
                .map(|t| vec![t.name.clone(), thousands(t.objects), thousands(t.bytes)])
                .collect();
            print_table(&["type", "objects", "bytes"], &rows);
        }
        return Ok(());
    }
    let r = by_type(model, index).ok_or_else(missing)?;
    if args.out.json {
        let mut v = serde_json::to_value(&r)?;
        cut_json(&mut v, "types", top);
        return print_json(&v);
    }
    print_header(model.heap_dumps().dumps().len(), &r.dump);
    let rows: Vec<Vec<String>> = r
        .types
        .iter()
        .take(top)
        .map(|t| vec![t.name.clone(), thousands(t.objects), thousands(t.bytes), percent(t.bytes, r.dump.bytes)])
        .collect();
    print_table(&["type", "objects", "bytes", "% bytes"], &rows);
    if let Some(note) = more_note(r.types.len().saturating_sub(top), "type", "types") {
        println!("{note}");
    }
    Ok(())
}

fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

fn print_header(dumps: usize, d: &DumpInfo) {
    let when = d.time_ms.map_or_else(String::new, |ms| format!(" at {} ms", thousands(ms)));
    let counted = if d.counted { "" } else { " (not counted by CLRProfiler: same tick as the previous dump)" };
    println!("dump {}{when}{counted}", d.index);
    println!(
        "  {} objects, {} bytes, {} references; {} of {} dumps",
        thousands(d.objects),
        thousands(d.bytes),
        thousands(d.references),
        d.index.0 + 1,
        dumps
    );
    let k = &d.root_kinds;
    let mut kinds: Vec<String> = [("stack", k.stack), ("finalizer", k.finalizer), ("handle", k.handle), ("other", k.other)]
        .iter()
        .map(|(n, c)| format!("{n} {}", thousands(*c)))
        .collect();
    if k.unknown > 0 {
        kinds.push(format!("unknown kind {}", thousands(k.unknown)));
    }
    if k.unspecified > 0 {
        kinds.push(format!("r roots {}", thousands(k.unspecified)));
    }
    let f = &d.root_flags;
    let flags: Vec<String> =
        [("pinning", f.pinning), ("weak", f.weak), ("interior", f.interior), ("refcounted", f.refcounted), ("unnamed", f.unnamed)]
            .iter()
            .filter(|(_, c)| *c > 0)
            .map(|(n, c)| format!("{n} {}", thousands(*c)))
            .collect();
    let flags = if flags.is_empty() { String::new() } else { format!("; flags: {}", flags.join(", ")) };
    println!("  {} roots: {}{flags}", thousands(d.roots), kinds.join(", "));
    println!();
}
