//! `clrprof check`: a memory regression gate. Compares a candidate log
//! with a baseline under rules (`type:Leak.Node surviving_bytes +10%`),
//! prints each rule with both figures and the change, and exits 0 when
//! every rule passes, 1 when one fails, 2 when it cannot decide (a log
//! without the heap dump a rule needs, a usage or input error).
//!
//! The pieces: [`check::rule`] reads rules, [`check::figures`] computes a
//! log's figures on demand from the library's queries, [`check::verdict`]
//! applies a rule to two logs, [`check::report`] prints the table and the
//! JSON, [`check::junit`] writes JUnit XML.

#[path = "check/mod.rs"]
mod check;

use crate::common::{create_output, print_table, LoadArgs};
use crate::load::load;
use anyhow::{bail, Context, Result};
use check::figures::{DumpChoice, Figures};
use check::rule::{parse, parse_file, Rule};
use check::verdict::{judge, Status, Verdict};
use check::{junit, report};
use clrprof::format::display_path;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit status when a rule fails.
const FAILED: u8 = 1;
/// Exit status when the check cannot decide: a usage or input error, or a
/// rule whose figure a log cannot tell.
const UNDECIDED: u8 = 2;

/// What `clrprof help check` says after the options: the rule syntax,
/// the figures and the exit status.
const RULES_HELP: &str = "\
Rules: SUBJECT METRIC LIMIT, one per --rule or per line of a --rules file:
  summary allocated_bytes +10%
  type:Leak.Node surviving_objects +1000 objects
  function:App.Cache::Add exclusive_allocated_bytes +1MB
  type:System.Byte [] retained_bytes +5%
  dump reachable_bytes +2MiB
LIMIT is the largest change allowed from the baseline to the candidate:
relative (+10%) or absolute (+1MB, +2MiB, +1000 objects, +0; KB/MB/GB are
powers of 1000, KiB/MiB/GiB of 1024); a negative limit asks for a decrease.

Figures:
  summary        every key of `clrprof summary --json`: allocated_bytes,
                 relocated_bytes, final_heap_bytes, gen0_collections,
                 gen1_collections, gen2_collections, induced_collections,
                 gen0_heap_bytes, gen1_heap_bytes, gen2_heap_bytes, loh_bytes,
                 objects_finalized, critical_objects_finalized,
                 handles_created, handles_destroyed, handles_surviving,
                 heap_dumps, comments
  type:NAME      allocated_bytes, allocated_objects, surviving_bytes,
                 surviving_objects (alive at the end of the log); dump_objects,
                 dump_bytes, retained_bytes (in the heap dump)
  function:NAME  allocated_bytes, allocated_objects, surviving_bytes,
                 surviving_objects (allocated with the function on the stack),
                 the same with exclusive_ (allocated by the function itself)
  dump           objects, bytes, reachable_objects, reachable_bytes,
                 unreachable_objects, unreachable_bytes

Exit status: 0 every rule passes, 1 a rule fails, 2 the check cannot decide
(a figure a log cannot tell, such as a dump figure of a log without heap
dumps) or a usage or input error.";

/// Arguments of `clrprof check`.
#[derive(clap::Args)]
#[command(after_help = RULES_HELP)]
pub struct Args {
    /// The log the candidate is compared with (`-` for standard input).
    pub baseline: PathBuf,
    /// The log under test (`-` for standard input).
    pub candidate: PathBuf,
    /// A rule, as `type:Leak.Node surviving_bytes +10%` (repeatable).
    #[arg(long = "rule", value_name = "RULE")]
    pub rules: Vec<String>,
    /// A rules file: one rule per line, `#` starts a comment (repeatable).
    #[arg(long = "rules", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The heap dump that dump figures come from, numbered from 0 as `clrprof
    /// dumps` lists them, in both logs (default: each log's last).
    #[arg(long, value_name = "N")]
    pub dump: Option<u32>,
    /// Print the results as JSON (every rule, both figures, the change and
    /// the status). An error is printed as `{"error": MESSAGE}` on standard
    /// output (exit status 2).
    #[arg(long)]
    pub json: bool,
    /// Also write the results as JUnit XML to this file (one test case per
    /// rule).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Replace the JUnit file if it exists.
    #[arg(long)]
    pub force: bool,
    /// No progress bars.
    #[arg(long, short)]
    pub quiet: bool,
    /// Threads to parse with (default: all cores).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
}

/// Runs the command and gives its exit status; an error is status 2,
/// printed as the other commands print theirs.
pub fn main(args: Args) -> ExitCode {
    let json = args.json;
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            if json {
                println!("{}", serde_json::json!({ "error": crate::message(&e) }));
            } else {
                eprintln!("clrprof: {}", crate::message(&e));
            }
            ExitCode::from(UNDECIDED)
        }
    }
}

/// Every rule of the command line and the files, in that order.
fn rules(args: &Args) -> Result<Vec<Rule>> {
    let mut rules = Vec::new();
    for (i, text) in args.rules.iter().enumerate() {
        rules.push(parse(text, &format!("--rule {}", i + 1)).map_err(anyhow::Error::msg)?);
    }
    for file in &args.files {
        let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
        rules.extend(parse_file(&text, &file.display().to_string()).map_err(anyhow::Error::msg)?);
    }
    if rules.is_empty() {
        bail!("no rule: give --rule 'type:NAME surviving_bytes +10%' or --rules FILE (`clrprof help check` lists the figures)");
    }
    Ok(rules)
}

fn run(args: Args) -> Result<ExitCode> {
    if args.baseline.as_os_str() == "-" && args.candidate.as_os_str() == "-" {
        bail!("standard input (`-`) can be read once: give at most one of the two logs as `-`");
    }
    let rules = rules(&args)?;
    // Refuse an existing JUnit file before the work, not after it.
    if let Some(path) = &args.junit {
        if path.symlink_metadata().is_ok() && !args.force {
            bail!("{} exists; choose another file or give --force to replace it", path.display());
        }
    }
    let open = |log: &PathBuf| LoadArgs { log: log.clone(), threads: args.threads, strict: false, decompress: Default::default() };
    let quiet = args.quiet || args.json;
    let a = load(&open(&args.baseline), quiet)?;
    let b = load(&open(&args.candidate), quiet)?;
    let choice = args.dump.map_or(DumpChoice::Last, DumpChoice::Index);
    let (fa, fb) = (Figures::new(&a.model, choice), Figures::new(&b.model, choice));
    let verdicts: Vec<Verdict> = rules.iter().map(|r| judge(r, &fa, &fb)).collect::<Result<_, String>>().map_err(anyhow::Error::msg)?;
    let names = [display_path(&args.baseline).display().to_string(), display_path(&args.candidate).display().to_string()];
    let uses_dump =
        rules.iter().any(|r| r.subject.kind() == "dump" || matches!(r.metric.as_str(), "dump_objects" | "dump_bytes" | "retained_bytes"));
    let dumps = if uses_dump { [fa.dump_used(), fb.dump_used()] } else { [None, None] };
    if let Some(path) = &args.junit {
        let xml = junit::document(&names[0], &names[1], dumps, &verdicts);
        let mut f = create_output(path, args.force)?;
        f.write_all(xml.as_bytes()).and_then(|()| f.flush()).with_context(|| format!("writing {}", path.display()))?;
    }
    if args.json {
        println!("{}", report::json(&names[0], &names[1], dumps, &verdicts)?);
    } else {
        print_text(&names, dumps, &verdicts);
    }
    Ok(match report::overall(&verdicts) {
        Status::Pass => ExitCode::SUCCESS,
        Status::Fail => ExitCode::from(FAILED),
        Status::Unknown => ExitCode::from(UNDECIDED),
    })
}

fn print_text(names: &[String; 2], dumps: [Option<u32>; 2], verdicts: &[Verdict]) {
    println!("baseline:  {}", names[0]);
    println!("candidate: {}", names[1]);
    if dumps.iter().any(Option::is_some) {
        let d = |d: Option<u32>| d.map_or_else(|| "none".to_string(), |d| d.to_string());
        println!("heap dump: {} in the baseline, {} in the candidate", d(dumps[0]), d(dumps[1]));
    }
    println!();
    let (header, rows) = report::table(verdicts);
    print_table(&header, &rows);
    let (passed, failed, unknown) = report::counts(verdicts);
    let problems: Vec<&Verdict> = verdicts.iter().filter(|v| v.status != Status::Pass).collect();
    if !problems.is_empty() {
        println!();
        for v in problems {
            let tag = if v.status == Status::Fail { "FAIL" } else { "UNKNOWN" };
            println!("{tag} {}", report::sentence(v));
        }
    }
    println!();
    let mut line = format!("{}: {passed} passed, {failed} failed", crate::common::count(verdicts.len() as u64, "rule", "rules"));
    if unknown > 0 {
        line.push_str(&format!(", {unknown} undecided"));
    }
    println!("{line}");
}
