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
    };
    match (&b, &c) {
        (Ok(b), Ok(c)) => {
            let limit = allowed(*b, rule.limit);
            v.change = Some(c.saturating_sub(*b));
            v.change_percent = (*b != 0).then(|| (*c as f64 - *b as f64) / *b as f64 * 100.0);
            v.allowed = Some(limit);
            v.status = if *c <= limit { Status::Pass } else { Status::Fail };
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
}
