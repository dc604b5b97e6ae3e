//! `clrprof stats` on a `.nettrace` or a `.gcdump`: what the file holds and
//! which questions it can answer (no import, no heap simulation).

use crate::common::{print_json, thousands};
use anyhow::{bail, Result};
use clrprof::eventpipe::{Census, Question};
use serde_json::{json, Value};

/// How many warnings the table prints.
const SHOWN_WARNINGS: usize = 10;

/// One question's answer: whether the file can answer it, the events (or
/// records) it would rest on, and why not when it cannot.
struct Answer {
    question: Question,
    from: Vec<(String, u64)>,
    reason: Option<String>,
}

impl Answer {
    fn json(&self) -> Value {
        let from: serde_json::Map<String, Value> = self.from.iter().map(|(n, c)| (n.clone(), json!(c))).collect();
        json!({"answered": self.reason.is_none(), "from": from, "reason": self.reason})
    }
}

/// What a trace's missing events mean for each question.
fn trace_answers(c: &Census) -> Vec<Answer> {
    Question::ALL
        .iter()
        .map(|&q| {
            let from: Vec<(String, u64)> = c.answers(q).into_iter().map(|(n, k)| (n.to_string(), k)).collect();
            let reason = from.is_empty().then(|| format!("no {} events in the trace", q.events().join(" or ")));
            Answer { question: q, from, reason }
        })
        .collect()
}

/// `stats` on a NetTrace trace.
pub fn trace(path: &str, data: &[u8], strict: bool, as_json: bool) -> Result<()> {
    let c = match Census::read(data) {
        Ok(c) => c,
        Err(e) => bail!("{path}: {e}"),
    };
    if strict {
        if let Some(w) = c.warnings.first() {
            bail!("{path}: {w}");
        }
    }
    let answers = trace_answers(&c);
    if as_json {
        let kinds: Vec<Value> = c.kinds.iter().map(|k| json!({"provider": k.provider, "name": k.name, "events": k.events})).collect();
        let questions: serde_json::Map<String, Value> = answers.iter().map(|a| (a.question.name().to_string(), a.json())).collect();
        let span = c.span_ms.map(|(a, b)| json!({"first_ms": a, "last_ms": b, "ms": b - a}));
        print_json(&json!({
            "file": path,
            "file_bytes": data.len(),
            "format": c.format,
            "process_id": c.process_id,
            "events": c.events,
            "lost_events": c.lost_events,
            "span": span,
            "kinds": kinds,
            "questions": questions,
            "warnings": {"total": c.warnings.len(), "first": c.warnings.iter().take(SHOWN_WARNINGS).collect::<Vec<_>>()},
        }))?;
        return Ok(());
    }
    println!("{path}");
    println!("  {:<22} {}", "format", c.format);
    println!("  {:<22} {:>16}", "process", c.process_id);
    println!("  {:<22} {:>16}", "file bytes", thousands(data.len() as u64));
    println!("  {:<22} {:>16}", "events", thousands(c.events));
    println!("  {:<22} {:>16}", "lost events", thousands(c.lost_events));
    match c.span_ms {
        Some((a, b)) => println!("  {:<22} {:>16}  ({a:.3} ms to {b:.3} ms)", "time span (ms)", format!("{:.3}", b - a)),
        None => println!("  {:<22} {:>16}", "time span (ms)", "none"),
    }
    println!();
    let shown = |s: &str, empty: &'static str| if s.is_empty() { empty.to_string() } else { s.to_string() };
    let rows: Vec<(String, String, String)> =
        c.kinds.iter().map(|k| (shown(&k.provider, "(unknown)"), shown(&k.name, "(no metadata)"), thousands(k.events))).collect();
    let w0 = rows.iter().map(|r| r.0.len()).chain([8]).max().unwrap_or(8);
    let w1 = rows.iter().map(|r| r.1.len()).chain([5]).max().unwrap_or(5);
    let w2 = rows.iter().map(|r| r.2.len()).chain([6]).max().unwrap_or(6);
    println!("  {:<w0$}  {:<w1$}  {:>w2$}", "provider", "event", "events");
    for (provider, name, events) in &rows {
        println!("  {provider:<w0$}  {name:<w1$}  {events:>w2$}");
    }
    print_answers(&answers);
    print_warnings(&c.warnings);
    Ok(())
}

/// `stats` on a `.gcdump`.
pub fn gcdump(path: &str, data: &[u8], as_json: bool) -> Result<()> {
    let g = match clrprof::gcdump::read(data) {
        Ok(g) => g,
        Err(e) => bail!("{path}: {e}"),
    };
    let sampled = g.sampling().is_sampled();
    let why = |what: &str| Some(format!("a .gcdump holds one heap snapshot, no {what}"));
    let answers: Vec<Answer> = Question::ALL
        .iter()
        .map(|&q| match q {
            Question::HeapWalks => Answer { question: q, from: vec![("heap snapshot".to_string(), 1)], reason: None },
            Question::Allocations => Answer { question: q, from: vec![], reason: why("allocation events") },
            Question::Gcs => Answer { question: q, from: vec![], reason: why("GC events") },
            Question::Survival => Answer { question: q, from: vec![], reason: why("survival ranges") },
            Question::CpuSamples => Answer { question: q, from: vec![], reason: why("CPU samples") },
        })
        .collect();
    let info = g.info();
    if as_json {
        let questions: serde_json::Map<String, Value> = answers.iter().map(|a| (a.question.name().to_string(), a.json())).collect();
        print_json(&json!({
            "file": path,
            "file_bytes": data.len(),
            "format": format!("gcdump (GCHeapDump version {})", info.version),
            "process_id": info.process_id,
            "process_name": info.process_name,
            "objects": g.object_count(),
            "object_bytes": g.object_bytes(),
            "references": g.reference_count(),
            "types": g.type_count(),
            "sampled": sampled,
            "questions": questions,
        }))?;
        return Ok(());
    }
    println!("{path}");
    println!("  {:<22} gcdump (GCHeapDump version {})", "format", info.version);
    if info.process_id > 0 {
        println!("  {:<22} {:>16}", "process", info.process_id);
    }
    println!("  {:<22} {:>16}", "file bytes", thousands(data.len() as u64));
    println!("  {:<22} {:>16}", "objects", thousands(g.object_count() as u64));
    println!("  {:<22} {:>16}", "object bytes", thousands(g.object_bytes()));
    println!("  {:<22} {:>16}", "references", thousands(g.reference_count() as u64));
    println!("  {:<22} {:>16}", "types", thousands(g.type_count() as u64));
    if sampled {
        println!("  the snapshot is sampled (a large heap): object counts are scaled estimates");
    }
    print_answers(&answers);
    Ok(())
}

fn print_answers(answers: &[Answer]) {
    println!();
    println!("  {:<14} {:<4} from", "question", "can");
    for a in answers {
        let from = match &a.reason {
            Some(r) => r.clone(),
            None => a.from.iter().map(|(n, c)| format!("{} {n}", thousands(*c))).collect::<Vec<_>>().join(", "),
        };
        let yes = if a.reason.is_none() { "yes" } else { "no" };
        println!("  {:<14} {yes:<4} {from}", a.question.name());
    }
}

fn print_warnings(warnings: &[String]) {
    println!();
    println!("  warnings: {}", thousands(warnings.len() as u64));
    for w in warnings.iter().take(SHOWN_WARNINGS) {
        println!("    {w}");
    }
    if warnings.len() > SHOWN_WARNINGS {
        println!("    ... and {} more", thousands((warnings.len() - SHOWN_WARNINGS) as u64));
    }
}
