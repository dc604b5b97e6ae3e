//! `clrprof ages`: age histograms (GCs survived, milliseconds), or
//! CLRProfiler's Histogram by Age of the live objects at a time.

use crate::common::{cut_json, ms_text as ms, print_estimated_table, print_json, thousands, tick_for, QueryArgs, RANGE_HEADER};
use anyhow::Result;
use clrprof::query::age_histogram::{AgeBars, AgeHistogram};
use clrprof::query::{age_histogram_at, ages, AgeRanges, Ages};

/// Which histogram.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    /// By GCs survived.
    Gcs,
    /// By age in milliseconds (power-of-two bins).
    Ms,
}

/// Arguments of `clrprof ages`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    query: QueryArgs,
    /// CLRProfiler's Histogram by Age of the objects alive at this time
    /// (milliseconds, as the log's `i` lines count them).
    #[arg(long, value_name = "MS")]
    at: Option<f64>,
    /// Without --at: which histogram (default: both).
    #[arg(long, value_enum, conflicts_with = "at")]
    by: Option<By>,
    /// With --at: seconds per bar (CLRProfiler offers 0.05 to 50).
    #[arg(long, value_name = "SECONDS", requires = "at", conflicts_with = "markers")]
    scale: Option<f64>,
    /// With --at: one bar per interval between comments.
    #[arg(long, requires = "at")]
    markers: bool,
    /// With --at and no --scale: choose the scale for about this many bars.
    #[arg(long, default_value_t = 10, requires = "at")]
    bars: u32,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let q = &args.query;
    let loaded = q.load_allocations("`ages`")?;
    let model = &loaded.model;
    let filter = q.filter(model)?;
    if let Some(ms) = args.at {
        let tick = tick_for(model, "--at", ms)?;
        let bars = match (args.scale, args.markers) {
            (Some(s), _) => AgeBars::Scale(s),
            (None, true) => AgeBars::Markers,
            (None, false) => AgeBars::Auto { bars: args.bars },
        };
        let h = age_histogram_at(model, &filter, tick, bars)?;
        if q.out.json {
            let mut v = serde_json::to_value(&h)?;
            cut_json(&mut v, "types", q.limit());
            if let Some(bars) = v.get_mut("bars").and_then(serde_json::Value::as_array_mut) {
                for b in bars {
                    cut_json(b, "types", q.limit());
                }
            }
            return print_json(&v);
        }
        print_at(&h);
    } else {
        let a = ages(model, &filter);
        if q.out.json {
            let mut v = serde_json::to_value(&a)?;
            if let (Some(by), Some(o)) = (args.by, v.as_object_mut()) {
                o.remove(if by == By::Gcs { "by_ms" } else { "by_gcs" });
            }
            return print_json(&v);
        }
        print_ages(&a, args.by);
    }
    q.report_warnings(model);
    Ok(())
}

fn print_ages(a: &Ages, by: Option<By>) {
    let erased = !a.erased.is_empty();
    let mean = |total: u64, n: u64| if n == 0 { "-".to_string() } else { format!("{:.1}", total as f64 / n as f64) };
    // A sampled trace: " (est. ±6.4%)" after an estimated figure.
    let range = |name: &str| a.ranges.get(name).map(|u| format!(" (est. {})", u.cell())).unwrap_or_default();
    println!(
        "Reclaimed by GCs: {} objects, {} bytes{}, mean age {} ms; alive at the end: {} objects, {} bytes{}, mean age {} ms",
        thousands(a.died.objects),
        thousands(a.died.bytes),
        range("died"),
        mean(a.died_total_age_ms, a.died.objects),
        thousands(a.alive_at_end.objects),
        thousands(a.alive_at_end.bytes),
        range("alive_at_end"),
        mean(a.alive_total_age_ms, a.alive_at_end.objects),
    );
    if erased {
        println!("Erased outside a GC: {} objects, {} bytes", thousands(a.erased.objects), thousands(a.erased.bytes));
    }
    if !a.unknown.is_empty() {
        println!(
            "Unknown (the GCs' reports do not say what became of them; in no histogram): {} objects, {} bytes{}",
            thousands(a.unknown.objects),
            thousands(a.unknown.bytes),
            range("unknown")
        );
    }
    let headers = [format!("died {RANGE_HEADER}"), format!("alive {RANGE_HEADER}"), format!("erased {RANGE_HEADER}")];
    let mut header = vec!["", "died objects", "died bytes", "alive objects", "alive bytes"];
    if erased {
        header.extend(["erased objects", "erased bytes"]);
    }
    let estimates: Vec<usize> = (1..header.len()).collect();
    // A sampled trace: each figure's 95% range.
    let ranged = !a.ranges.is_empty();
    if ranged {
        header.extend([headers[0].as_str(), headers[1].as_str()]);
        if erased {
            header.push(headers[2].as_str());
        }
    }
    let cells = |first: String, d: clrprof::query::Tally, al: clrprof::query::Tally, e: clrprof::query::Tally, r: &AgeRanges| {
        let mut v = vec![first, thousands(d.objects), thousands(d.bytes), thousands(al.objects), thousands(al.bytes)];
        if erased {
            v.extend([thousands(e.objects), thousands(e.bytes)]);
        }
        if ranged {
            let cell = |u: &Option<clrprof::query::Uncertainty>| u.as_ref().map(|u| u.cell()).unwrap_or_default();
            v.extend([cell(&r.died), cell(&r.alive_at_end)]);
            if erased {
                v.push(cell(&r.erased));
            }
        }
        v
    };
    if by != Some(By::Ms) {
        println!();
        header[0] = "GCs survived";
        let rows: Vec<Vec<String>> =
            a.by_gcs.iter().map(|r| cells(r.gcs_survived.to_string(), r.died, r.alive_at_end, r.erased, &r.ranges)).collect();
        print_estimated_table(&header, &estimates, &rows);
    }
    if by != Some(By::Gcs) {
        println!();
        header[0] = "age (ms)";
        let rows: Vec<Vec<String>> = a
            .by_ms
            .iter()
            .map(|r| {
                let label = if r.age_ms_max_exclusive - r.age_ms_min == 1 {
                    r.age_ms_min.to_string()
                } else {
                    format!("{}-{}", r.age_ms_min, r.age_ms_max_exclusive - 1)
                };
                cells(label, r.died, r.alive_at_end, r.erased, &r.ranges)
            })
            .collect();
        print_estimated_table(&header, &estimates, &rows);
    }
}

fn print_at(h: &AgeHistogram) {
    let scale = match h.scale_s {
        Some(s) => format!("{s} s per bar"),
        None => "bars between comments".to_string(),
    };
    println!(
        "Live objects at {} ms (tick {}): {} objects, {} bytes{}; {scale}, {} bars ({} with objects)",
        ms(h.time_ms),
        h.tick,
        thousands(h.live.objects),
        thousands(h.live.bytes),
        h.live_range.as_ref().map(|u| format!(" (est. {})", u.cell())).unwrap_or_default(),
        h.bucket_count,
        h.bars.iter().filter(|b| b.objects > 0).count()
    );
    let rows: Vec<Vec<String>> = h
        .bars
        .iter()
        .map(|b| {
            let age = match (&b.min_comment, &b.max_comment) {
                (_, Some(c)) => format!("< {:.3} s (after {c:?})", b.max_age_s),
                (Some(c), None) => format!(">= {:.3} s (before {c:?})", b.min_age_s),
                (None, None) => format!("{:.3}-{:.3} s", b.min_age_s, b.max_age_s),
            };
            let top = b.types.iter().take(3).map(|t| format!("{} {}", t.name, thousands(t.bytes))).collect::<Vec<_>>().join(", ");
            let range = b.uncertainty.as_ref().map(|u| u.cell()).unwrap_or_default();
            vec![age, thousands(b.objects), thousands(b.bytes), range, top]
        })
        .collect();
    // The last column is text: left-aligned, unlike `print_table`'s. A
    // sampled trace's bars have their 95% range.
    let (objects, bytes) = if crate::common::estimated() { ("objects est.", "bytes est.") } else { ("objects", "bytes") };
    let ranged = h.live_range.is_some();
    let header = ["age", objects, bytes, if ranged { RANGE_HEADER } else { "" }, "largest types (bytes)"];
    let width = |k: usize| rows.iter().map(|r| r[k].chars().count()).chain([header[k].len()]).max().unwrap_or(0);
    let (w0, w1, w2, w3) = (width(0), width(1), width(2), width(3));
    for r in std::iter::once(header.map(String::from).to_vec()).chain(rows) {
        if ranged {
            println!("{:<w0$}  {:>w1$}  {:>w2$}  {:>w3$}  {}", r[0], r[1], r[2], r[3], r[4]);
        } else {
            println!("{:<w0$}  {:>w1$}  {:>w2$}  {}", r[0], r[1], r[2], r[4]);
        }
    }
}
