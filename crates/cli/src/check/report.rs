//! The check's results as a table, as one line per rule, and as JSON.

use super::rule::{Limit, Unit};
use super::verdict::{Status, Verdict};
use crate::common::thousands;
use serde::Serialize;

/// A figure with thousands separators (negative ones too).
pub fn figure(v: i64) -> String {
    if v < 0 {
        format!("-{}", thousands(v.unsigned_abs()))
    } else {
        thousands(v as u64)
    }
}

/// A change with its sign: `+240,000`, `-3`, `0`.
pub fn signed(v: i64) -> String {
    if v > 0 {
        format!("+{}", figure(v))
    } else {
        figure(v)
    }
}

/// A percentage with its sign, one decimal: `+1,000.0%`.
pub fn percent(p: f64) -> String {
    let sign = if p > 0.0 {
        "+"
    } else if p < 0.0 {
        "-"
    } else {
        ""
    };
    let text = format!("{:.1}", p.abs());
    let (whole, tenth) = text.split_once('.').unwrap_or((&text, "0"));
    let whole = whole.parse::<u64>().map_or_else(|_| whole.to_string(), thousands);
    format!("{sign}{whole}.{tenth}%")
}

/// The change as the table shows it: `+240,000 (+1,000.0%)`, `+5 (new)`.
pub fn change_text(v: &Verdict) -> String {
    match (v.change, v.change_percent) {
        (Some(c), Some(p)) => format!("{} ({})", signed(c), percent(p)),
        (Some(c), None) if c != 0 => format!("{} (new)", signed(c)),
        (Some(c), None) => signed(c),
        _ => "-".into(),
    }
}

/// `bytes` or `objects`/`collections`... for a sentence.
fn unit_word(v: &Verdict) -> &'static str {
    match v.rule.unit() {
        Unit::Bytes => "bytes",
        Unit::Count if v.rule.metric.ends_with("objects") || v.rule.metric.starts_with("objects") => "objects",
        Unit::Count => "",
    }
}

/// One sentence about a rule's result, with both figures:
/// `type:Leak.Node surviving_bytes: 24,000 -> 264,000 bytes (+240,000,
/// +1,000.0%); the limit +10% allows at most 26,400`.
pub fn sentence(v: &Verdict) -> String {
    let rule = format!("{} {}", v.rule.subject.text(), v.rule.metric);
    let unit = unit_word(v);
    let unit = if unit.is_empty() { String::new() } else { format!(" {unit}") };
    // An estimate's range shown beside it.
    let shown = |x: i64, r: Option<[i64; 2]>| match r {
        Some([lo, hi]) => format!("{} ({} to {})", figure(x), figure(lo), figure(hi)),
        None => figure(x),
    };
    match (v.baseline, v.candidate) {
        (Some(b), Some(c)) if v.status == Status::Unknown => format!(
            "{rule}: baseline {} -> candidate {}{unit}; cannot be decided: {}",
            shown(b, v.baseline_range),
            shown(c, v.candidate_range),
            v.reason.as_deref().unwrap_or("a figure is unknown")
        ),
        (Some(b), Some(c)) => {
            let change = match (v.change, v.change_percent) {
                (Some(d), Some(p)) => format!("{}, {}", signed(d), percent(p)),
                (Some(d), None) => signed(d),
                _ => String::new(),
            };
            let allowed = v.allowed.map(figure).unwrap_or_default();
            let verb = match v.status {
                Status::Fail => "exceeds",
                _ => "within",
            };
            format!(
                "{rule}: baseline {} -> candidate {}{unit} ({change}); {verb} the limit {} (at most {allowed})",
                shown(b, v.baseline_range),
                shown(c, v.candidate_range),
                v.rule.limit_text
            )
        }
        _ => format!(
            "{rule}: baseline {} -> candidate {}; cannot be decided: {}",
            v.baseline.map_or_else(|| "unknown".into(), figure),
            v.candidate.map_or_else(|| "unknown".into(), figure),
            v.reason.as_deref().unwrap_or("a figure is unknown")
        ),
    }
}

/// The table of every rule: rule, both figures, change, limit, result.
pub fn table(verdicts: &[Verdict]) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let header = vec!["rule", "baseline", "candidate", "change", "limit", "result"];
    let rows = verdicts
        .iter()
        .map(|v| {
            vec![
                format!("{} {}", v.rule.subject.text(), v.rule.metric),
                v.baseline.map_or_else(|| "unknown".into(), figure),
                v.candidate.map_or_else(|| "unknown".into(), figure),
                change_text(v),
                v.rule.limit_text.clone(),
                match v.status {
                    Status::Pass => "pass".into(),
                    Status::Fail => "FAIL".into(),
                    Status::Unknown => "UNKNOWN".into(),
                },
            ]
        })
        .collect();
    (header, rows)
}

/// Counts of passed, failed and unknown rules.
pub fn counts(verdicts: &[Verdict]) -> (usize, usize, usize) {
    let n = |s: Status| verdicts.iter().filter(|v| v.status == s).count();
    (n(Status::Pass), n(Status::Fail), n(Status::Unknown))
}

/// The overall result: `fail` if a rule failed, else `unknown` if one
/// could not be decided, else `pass`.
pub fn overall(verdicts: &[Verdict]) -> Status {
    let (_, failed, unknown) = counts(verdicts);
    if failed > 0 {
        Status::Fail
    } else if unknown > 0 {
        Status::Unknown
    } else {
        Status::Pass
    }
}

/// A rule's limit in the JSON.
#[derive(Serialize)]
struct LimitJson<'a> {
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    percent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    amount: Option<i64>,
    text: &'a str,
}

/// One rule's result in the JSON (a struct, so that the keys keep this
/// order: the rule, then its figures, then the verdict).
#[derive(Serialize)]
struct VerdictJson<'a> {
    rule: String,
    origin: &'a str,
    subject: &'static str,
    name: Option<&'a str>,
    metric: &'a str,
    unit: &'static str,
    limit: LimitJson<'a>,
    baseline: Option<i64>,
    candidate: Option<i64>,
    change: Option<i64>,
    change_percent: Option<f64>,
    allowed: Option<i64>,
    status: &'static str,
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline_range: Option<[i64; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    candidate_range: Option<[i64; 2]>,
    message: String,
}

fn verdict_json(v: &Verdict) -> VerdictJson<'_> {
    let limit = match v.rule.limit {
        Limit::Relative(p) => LimitJson { kind: "relative", percent: Some(p), amount: None, text: &v.rule.limit_text },
        Limit::Absolute(a) => LimitJson { kind: "absolute", percent: None, amount: Some(a), text: &v.rule.limit_text },
    };
    VerdictJson {
        rule: v.rule.text(),
        origin: &v.rule.origin,
        subject: v.rule.subject.kind(),
        name: v.rule.subject.name(),
        metric: &v.rule.metric,
        unit: v.rule.unit().name(),
        limit,
        baseline: v.baseline,
        candidate: v.candidate,
        change: v.change,
        change_percent: v.change_percent,
        allowed: v.allowed,
        status: v.status.name(),
        reason: v.reason.as_deref(),
        baseline_range: v.baseline_range,
        candidate_range: v.candidate_range,
        message: sentence(v),
    }
}

/// The whole check in the JSON.
#[derive(Serialize)]
struct CheckJson<'a> {
    result: &'static str,
    baseline: &'a str,
    candidate: &'a str,
    baseline_dump: Option<u32>,
    candidate_dump: Option<u32>,
    passed: usize,
    failed: usize,
    unknown: usize,
    rules: Vec<VerdictJson<'a>>,
}

/// The whole check as JSON.
pub fn json(baseline: &str, candidate: &str, dumps: [Option<u32>; 2], verdicts: &[Verdict]) -> serde_json::Result<String> {
    let (passed, failed, unknown) = counts(verdicts);
    serde_json::to_string_pretty(&CheckJson {
        result: overall(verdicts).name(),
        baseline,
        candidate,
        baseline_dump: dumps[0],
        candidate_dump: dumps[1],
        passed,
        failed,
        unknown,
        rules: verdicts.iter().map(verdict_json).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(signed(240_000), "+240,000");
        assert_eq!(signed(-3), "-3");
        assert_eq!(signed(0), "0");
        assert_eq!(percent(1000.0), "+1,000.0%");
        assert_eq!(percent(-12.34), "-12.3%");
        assert_eq!(percent(9.96), "+10.0%");
        assert_eq!(percent(0.0), "0.0%");
    }
}
