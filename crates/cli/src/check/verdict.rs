//! A rule applied to two logs: both figures, the change, pass or fail.

use super::figures::{Figures, Missing};
use super::rule::{Limit, Rule};

/// How a rule came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The change is within the limit.
    Pass,
    /// The figure grew more than the limit allows.
    Fail,
    /// A log cannot tell the figure (no heap dump, "Unknown" in the
    /// Summary): the rule cannot be decided.
    Unknown,
}

impl Status {
    /// `pass`, `fail` or `unknown`.
    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Unknown => "unknown",
        }
    }
}

/// One rule's result.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// The rule.
    pub rule: Rule,
    /// The baseline's figure.
    pub baseline: Option<i64>,
    /// The candidate's figure.
    pub candidate: Option<i64>,
    /// Candidate minus baseline.
    pub change: Option<i64>,
    /// The change as a percentage of the baseline (`None` when the
    /// baseline is 0 or a figure is missing).
    pub change_percent: Option<f64>,
    /// The largest candidate figure the limit allows.
    pub allowed: Option<i64>,
    /// Pass, fail or unknown.
    pub status: Status,
    /// Why the rule is unknown.
    pub reason: Option<String>,
    /// The baseline's 95% range when its figure is an estimate (a
    /// trace's samples).
    pub baseline_range: Option<[i64; 2]>,
    /// The candidate's, likewise.
    pub candidate_range: Option<[i64; 2]>,
}

/// Pass or fail when a figure is an estimate: decided only when the
/// candidate's distance to the limit keeps its sign across both figures'
/// ranges (each side's distance to its range's ends, added in
/// quadrature: the two files are sampled independently); else unknown,
/// with why.
fn judge_ranges(b: i64, c: i64, limit: Limit, br: [i64; 2], cr: [i64; 2]) -> (Status, Option<String>) {
    let (a, a_lo, a_hi) = (allowed(b, limit) as f64, allowed(br[0], limit) as f64, allowed(br[1], limit) as f64);
    let c = c as f64;
    let margin = a - c;
    let low = margin - (a - a_lo).hypot(cr[1] as f64 - c);
    let high = margin + (a_hi - a).hypot(c - cr[0] as f64);
    if low >= 0.0 {
        (Status::Pass, None)
    } else if high < 0.0 {
        (Status::Fail, None)
    } else {
        let f = |v: f64| super::report::figure(v.round() as i64);
        (
            Status::Unknown,
            Some(format!(
                "the sampling cannot tell: the candidate's figure is {} to {} (95% range) against at most {} to {} allowed by the baseline's range",
                f(cr[0] as f64),
                f(cr[1] as f64),
                f(a_lo),
                f(a_hi)
            )),
        )
    }
}

/// The largest candidate figure `limit` allows over `baseline`.
pub fn allowed(baseline: i64, limit: Limit) -> i64 {
    match limit {
        Limit::Absolute(a) => baseline.saturating_add(a),
        Limit::Relative(p) => {
            // A small tolerance keeps 10% of 1,000 at 100, not 99.99999.
            let delta = (baseline as f64 * p / 100.0 + 1e-9).floor();
            let v = baseline as f64 + delta;
            if v >= i64::MAX as f64 {
                i64::MAX
            } else if v <= i64::MIN as f64 {
                i64::MIN
            } else {
                v as i64
            }
        }
    }
}

/// Applies a rule. `Err` when neither log knows the rule's type or
/// function (a misspelt name would otherwise pass at 0 against 0); when
/// one log does not, the rule is undecided (never that figure taken as 0).
pub fn judge(rule: &Rule, baseline: &Figures, candidate: &Figures) -> Result<Verdict, String> {
    let b = baseline.value(&rule.subject, &rule.metric);
    let c = candidate.value(&rule.subject, &rule.metric);
    // A figure is there, or would be if the log had the name.
    let named = |r: &Result<i64, Missing>| matches!(r, Ok(_) | Err(Missing::Absent(_)));
    if (named(&b) || named(&c))
        && rule.subject.name().is_some()
        && !baseline.knows(&rule.subject, &rule.metric)
        && !candidate.knows(&rule.subject, &rule.metric)
    {
        let mut names = baseline.names(&rule.subject, &rule.metric);
        names.extend(candidate.names(&rule.subject, &rule.metric));
        let name = rule.subject.name().unwrap_or_default();
        let close = names
            .iter()
            .map(|n| (strsim::jaro_winkler(name, n), n))
            .filter(|(s, _)| *s > 0.8)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, n)| format!(" (did you mean `{n}`?)"))
            .unwrap_or_default();
        let where_ = if matches!(rule.metric.as_str(), "dump_objects" | "dump_bytes" | "retained_bytes") {
            "in the heap dump of either log"
        } else if rule.subject.kind() == "function" {
            "on an allocation stack of either log"
        } else {
            "allocated in either log"
        };
        return Err(format!("{}: {} `{name}` is not {where_}{close}", rule.origin, rule.subject.kind()));
    }
    let missing = |which: &str, m: &Missing| format!("{which}: {}", m.reason());
    let mut v = Verdict {
        rule: rule.clone(),
        baseline: b.as_ref().ok().copied(),
        candidate: c.as_ref().ok().copied(),
        change: None,
        change_percent: None,
        allowed: None,
        status: Status::Unknown,
        reason: None,
        baseline_range: baseline.range(&rule.subject, &rule.metric),
        candidate_range: candidate.range(&rule.subject, &rule.metric),
    };
    match (&b, &c) {
        (Ok(b), Ok(c)) => {
            let limit = allowed(*b, rule.limit);
            v.change = Some(c.saturating_sub(*b));
            v.change_percent = (*b != 0).then(|| (*c as f64 - *b as f64) / *b as f64 * 100.0);
            v.allowed = Some(limit);
            v.status = if *c <= limit { Status::Pass } else { Status::Fail };
            if v.baseline_range.is_some() || v.candidate_range.is_some() {
                let exact = |x: i64| [x, x];
                let (status, reason) =
                    judge_ranges(*b, *c, rule.limit, v.baseline_range.unwrap_or(exact(*b)), v.candidate_range.unwrap_or(exact(*c)));
                v.status = status;
                v.reason = reason;
            }
        }
        (Err(e), Ok(_)) => v.reason = Some(missing("baseline", e)),
        (Ok(_), Err(e)) => v.reason = Some(missing("candidate", e)),
        (Err(x), Err(y)) if x == y => v.reason = Some(format!("both logs: {}", x.reason())),
        (Err(x), Err(y)) => v.reason = Some(format!("{}; {}", missing("baseline", x), missing("candidate", y))),
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_figures() {
        assert_eq!(allowed(1000, Limit::Relative(10.0)), 1100);
        assert_eq!(allowed(1000, Limit::Relative(-10.0)), 900);
        assert_eq!(allowed(0, Limit::Relative(50.0)), 0);
        assert_eq!(allowed(3, Limit::Relative(10.0)), 3);
        assert_eq!(allowed(1000, Limit::Absolute(1)), 1001);
        assert_eq!(allowed(i64::MAX, Limit::Absolute(1)), i64::MAX);
        assert_eq!(allowed(i64::MAX / 2, Limit::Relative(1000.0)), i64::MAX);
        // 0.1 is not exact in binary: 10% of 10 is still 1.
        assert_eq!(allowed(10, Limit::Relative(10.0)), 11);
        assert_eq!(allowed(70, Limit::Relative(10.0)), 77);
    }

    #[test]
    fn estimates_decide_only_beyond_their_ranges() {
        let ten = Limit::Relative(10.0);
        // 1,000 -> 1,500 against at most 1,100: failed even at the ends.
        assert_eq!(judge_ranges(1000, 1500, ten, [950, 1050], [1400, 1600]).0, Status::Fail);
        // 1,000 -> 1,000: passed at the ends.
        assert_eq!(judge_ranges(1000, 1000, ten, [980, 1020], [980, 1020]).0, Status::Pass);
        // 1,000 -> 1,150 with ±20%: the sampling cannot tell.
        let (s, why) = judge_ranges(1000, 1150, ten, [800, 1200], [920, 1380]);
        assert_eq!(s, Status::Unknown);
        assert!(why.is_some_and(|w| w.contains("sampling")));
        // Exact figures on both sides: the point comparison.
        assert_eq!(judge_ranges(1000, 1101, ten, [1000, 1000], [1101, 1101]).0, Status::Fail);
        assert_eq!(judge_ranges(1000, 1100, ten, [1000, 1000], [1100, 1100]).0, Status::Pass);
    }
}
