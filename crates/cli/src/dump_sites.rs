//! `--by type|stack|function` of `clrprof dump --retained` and `clrprof
//! dump-diff`: dump objects grouped by their allocation, as tables.

use crate::common::{count, more_note, print_table, thousands};
use clrprof::query::dumps::{DumpDiffBySite, DumpIndex, Matching, RetainedBySite, Site, SiteBy, UnknownAllocations, UnknownReason};

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
        _ => "group",
    }
}

/// The noun of one row, singular and plural (for the note under a cut
/// table).
fn noun(by: SiteBy) -> (&'static str, &'static str) {
    match by {
        SiteBy::Type => ("type", "types"),
        SiteBy::Stack => ("stack", "stacks"),
        SiteBy::Function => ("function", "functions"),
        _ => ("group", "groups"),
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
        UnknownReason::None => "every allocation known",
        UnknownReason::NoAllocationsInLog => {
            "the log has no allocation records: attached to a running process, or allocation logging off"
        }
        UnknownReason::DumpBeforeFirstAllocation => "the dump comes before the log's first allocation",
        UnknownReason::NotInSimulation => {
            "allocated before logging started or while allocation logging was off, or under 12 bytes"
        }
        _ => "no allocation record of the log made them",
    };
    let types: Vec<String> =
        u.types.iter().take(3).map(|t| format!("{} {}", t.name, thousands(t.objects))).collect();
    let more = if u.types.len() > 3 { format!(", ... ({} more types)", u.types.len() - 3) } else { String::new() };
    format!(
        "{what}: {}, {} bytes with no known allocation: {}{more}\n  ({why})",
        count(u.objects, "object", "objects"),
        thousands(u.bytes),
        types.join(", ")
    )
}

/// Prints `clrprof dump N --retained --by ...`.
pub fn print_retained(r: &RetainedBySite, top: usize) {
    println!(
        "dump {}: {}, {} bytes; reachable from strong roots: {}, {} bytes; unreachable: {}, {} bytes",
        r.index,
        count(r.objects, "object", "objects"),
        thousands(r.bytes),
        count(r.reachable_objects, "object", "objects"),
        thousands(r.reachable_bytes),
        count(r.unreachable_objects, "object", "objects"),
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
    let (one, many) = noun(r.by);
    if let Some(note) = more_note(r.sites.len().saturating_sub(top), one, many) {
        println!("{note}");
    }
}

/// Prints the first lines of `clrprof dump-diff`: the totals of new, gone
/// and kept objects (`[new objects, new bytes, gone objects, gone bytes,
/// kept objects]`), and how objects were matched.
pub fn print_diff_head(a: DumpIndex, b: DumpIndex, totals: [u64; 5], m: &Matching) {
    let [new_objects, new_bytes, gone_objects, gone_bytes, kept] = totals.map(thousands);
    println!("dump {a} -> dump {b}: {new_objects} new objects ({new_bytes} bytes), {gone_objects} gone ({gone_bytes} bytes), {kept} kept");
    if m.relocation_followed {
        println!("objects matched through the heap simulation (relocations followed)");
    } else {
        println!(
            "{} objects matched through the heap simulation (relocations followed), {} by address and type only (relocations not known for those)",
            thousands(m.by_identity),
            thousands(m.by_address)
        );
    }
}

/// Prints `clrprof dump-diff A B --by ...`.
pub fn print_diff(d: &DumpDiffBySite, top: usize) {
    print_diff_head(d.a, d.b, [d.new_objects, d.new_bytes, d.gone_objects, d.gone_bytes, d.kept_objects], &d.matching);
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
    let (one, many) = noun(d.by);
    if let Some(note) = more_note(d.sites.len().saturating_sub(top), one, many) {
        println!("{note}");
    }
}
