//! `--by type|stack|function` of `clrprof dump --retained` and `clrprof
//! dump-diff`: dump objects grouped by their allocation, as tables.

use crate::common::{print_table, thousands};
use clrprof::query::dumps::{DumpDiffBySite, RetainedBySite, Site, SiteBy, UnknownAllocations, UnknownReason};

/// What dump objects are grouped by (`--by`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByArg {
    /// The object's type.
    Type,
    /// The allocation stack's frames (needs allocation records in the log).
    Stack,
    /// The allocating function, the innermost frame (needs allocation
    /// records in the log).
    Function,
}

impl From<ByArg> for SiteBy {
    fn from(b: ByArg) -> SiteBy {
        match b {
            ByArg::Type => SiteBy::Type,
            ByArg::Stack => SiteBy::Stack,
            ByArg::Function => SiteBy::Function,
        }
    }
}

/// Frames shown per stack in a table (the JSON has them all).
const STACK_DEPTH: usize = 3;

fn column(by: SiteBy) -> &'static str {
    match by {
        SiteBy::Type => "type",
        SiteBy::Stack => "allocation stack (innermost first)",
        SiteBy::Function => "allocating function",
    }
}

fn label(site: &Site) -> String {
    if site.frames.is_empty() {
        return site.name.clone();
    }
    let n = STACK_DEPTH.min(site.frames.len());
    let mut s = site.frames[..n].join(" <- ");
    if n < site.frames.len() {
        s.push_str(&format!(" <- ... ({} more)", site.frames.len() - n));
    }
    s
}

fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

fn signed(v: i64) -> String {
    if v < 0 {
        format!("-{}", thousands(v.unsigned_abs()))
    } else {
        format!("+{}", thousands(v as u64))
    }
}

/// One line on the objects of a dump without a known allocation.
fn unknown_line(what: &str, u: &UnknownAllocations) -> String {
    if u.objects == 0 {
        return format!("{what}: every object's allocation is known");
    }
    let why = match u.reason {
        UnknownReason::None => "",
        UnknownReason::NoAllocationsInLog => {
            "the log has no allocation records: attached to a running process, or allocation logging off"
        }
        UnknownReason::DumpBeforeFirstAllocation => "the dump comes before the log's first allocation",
        UnknownReason::NotInSimulation => {
            "allocated before logging started or while allocation logging was off, or under 12 bytes"
        }
    };
    let types: Vec<String> =
        u.types.iter().take(3).map(|t| format!("{} {}", t.name, thousands(t.objects))).collect();
    let more = if u.types.len() > 3 { format!(", ... ({} more types)", u.types.len() - 3) } else { String::new() };
    format!(
        "{what}: {} objects, {} bytes with no known allocation: {}{more}\n  ({why})",
        thousands(u.objects),
        thousands(u.bytes),
        types.join(", ")
    )
}

/// Prints `clrprof dump N --retained --by ...`.
pub fn print_retained(r: &RetainedBySite, top: usize) {
    println!(
        "dump {}: {} objects, {} bytes; reachable from strong roots: {} objects, {} bytes; unreachable: {} objects, {} bytes",
        r.index,
        thousands(r.objects),
        thousands(r.bytes),
        thousands(r.reachable_objects),
        thousands(r.reachable_bytes),
        thousands(r.unreachable_objects),
        thousands(r.unreachable_bytes)
    );
    println!("{}", unknown_line("allocations", &r.unknown));
    println!("\nretained bytes by {} (top level: held by the roots alone; adds up to the reachable bytes)", column(r.by));
    let rows: Vec<Vec<String>> = r
        .sites
        .iter()
        .take(top)
        .map(|s| {
            vec![
                label(&s.site),
                thousands(s.objects),
                thousands(s.bytes),
                thousands(s.retained),
                percent(s.retained, r.reachable_bytes),
                thousands(s.top_level),
                percent(s.top_level, r.reachable_bytes),
            ]
        })
        .collect();
    print_table(&[column(r.by), "objects", "bytes", "retained", "% reachable", "top level", "% top"], &rows);
    if r.sites.len() > top {
        println!("... {} more (--top 0 shows all)", r.sites.len() - top);
    }
}

/// Prints `clrprof dump-diff A B --by ...`.
pub fn print_diff(d: &DumpDiffBySite, top: usize) {
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
    println!("{}", unknown_line(&format!("dump {}", d.a), &d.unknown_a));
    println!("{}", unknown_line(&format!("dump {}", d.b), &d.unknown_b));
    println!("\nnew since dump {} by {}", d.a, column(d.by));
    let rows: Vec<Vec<String>> = d
        .sites
        .iter()
        .take(top)
        .map(|s| {
            vec![
                label(&s.site),
                thousands(s.new_objects),
                thousands(s.new_bytes),
                thousands(s.gone_objects),
                thousands(s.gone_bytes),
                thousands(s.objects_a),
                thousands(s.objects_b),
                signed(s.bytes_delta()),
            ]
        })
        .collect();
    print_table(
        &[column(d.by), "new objects", "new bytes", "gone objects", "gone bytes", "objects A", "objects B", "delta bytes"],
        &rows,
    );
    if d.sites.len() > top {
        println!("... {} more (--top 0 shows all)", d.sites.len() - top);
    }
}
