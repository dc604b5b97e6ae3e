//! A rule of `clrprof check`: what figure, and how much it may grow.
//!
//! One rule per line, the same text on the command line (`--rule`) and in
//! a rules file (`--rules FILE`, `#` starts a comment):
//!
//! ```text
//! SUBJECT METRIC LIMIT
//! summary  allocated_bytes          +10%
//! type:Leak.Node surviving_objects  +1000 objects
//! function:App.Cache::Add allocated_bytes  +1MB
//! type:System.Byte [] retained_bytes  +5%
//! dump reachable_bytes  +2MiB
//! ```
//!
//! The subject is `summary`, `dump` (the heap dump the check looks at),
//! `type:NAME` or `function:NAME`; a name runs to the metric, spaces
//! included (the line is read from its end: the limit, then the metric).
//! The limit is the largest change allowed from the baseline to the
//! candidate: a percentage of the baseline (`+10%`), or an amount (`+1MB`,
//! `+1000 objects`, `+0`); a negative limit asks for a decrease.

use std::fmt;

/// What a rule looks at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    /// The Summary's figures.
    Summary,
    /// The heap dump as a whole.
    Dump,
    /// One type, by name (types with equal names merged, as `clrprof types`
    /// shows them).
    Type(String),
    /// One function, by name (`Namespace.Type::Method`; overloads merged).
    Function(String),
}

impl Subject {
    /// The subject as the rule writes it.
    pub fn text(&self) -> String {
        match self {
            Subject::Summary => "summary".into(),
            Subject::Dump => "dump".into(),
            Subject::Type(n) => format!("type:{n}"),
            Subject::Function(n) => format!("function:{n}"),
        }
    }

    /// `summary`, `dump`, `type` or `function`.
    pub fn kind(&self) -> &'static str {
        match self {
            Subject::Summary => "summary",
            Subject::Dump => "dump",
            Subject::Type(_) => "type",
            Subject::Function(_) => "function",
        }
    }

    /// The type's or function's name.
    pub fn name(&self) -> Option<&str> {
        match self {
            Subject::Type(n) | Subject::Function(n) => Some(n),
            _ => None,
        }
    }
}

/// What a figure counts: bytes, or things (objects, collections, handles).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Bytes.
    Bytes,
    /// A count.
    Count,
}

impl Unit {
    /// `bytes` or `count`.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Bytes => "bytes",
            Unit::Count => "count",
        }
    }
}

/// The Summary's figures, by their JSON key (`clrprof summary --json`).
pub const SUMMARY_METRICS: [&str; 18] = [
    "allocated_bytes",
    "relocated_bytes",
    "final_heap_bytes",
    "gen0_collections",
    "gen1_collections",
    "gen2_collections",
    "induced_collections",
    "gen0_heap_bytes",
    "gen1_heap_bytes",
    "gen2_heap_bytes",
    "loh_bytes",
    "objects_finalized",
    "critical_objects_finalized",
    "handles_created",
    "handles_destroyed",
    "handles_surviving",
    "heap_dumps",
    "comments",
];

/// A type's figures: allocated in the whole log, alive at its end, and in
/// the heap dump (its objects, their bytes, the bytes they retain).
pub const TYPE_METRICS: [&str; 7] =
    ["allocated_bytes", "allocated_objects", "surviving_bytes", "surviving_objects", "dump_objects", "dump_bytes", "retained_bytes"];

/// A function's figures: objects allocated with it on the stack
/// (inclusive) or by it (exclusive), in all and alive at the end.
pub const FUNCTION_METRICS: [&str; 8] = [
    "allocated_bytes",
    "allocated_objects",
    "surviving_bytes",
    "surviving_objects",
    "exclusive_allocated_bytes",
    "exclusive_allocated_objects",
    "exclusive_surviving_bytes",
    "exclusive_surviving_objects",
];

/// The heap dump's figures.
pub const DUMP_METRICS: [&str; 6] =
    ["objects", "bytes", "reachable_objects", "reachable_bytes", "unreachable_objects", "unreachable_bytes"];

/// The metrics a subject takes.
pub fn metrics_of(subject: &Subject) -> &'static [&'static str] {
    match subject {
        Subject::Summary => &SUMMARY_METRICS,
        Subject::Dump => &DUMP_METRICS,
        Subject::Type(_) => &TYPE_METRICS,
        Subject::Function(_) => &FUNCTION_METRICS,
    }
}

/// The unit of a metric: bytes when its name says so.
pub fn unit_of(metric: &str) -> Unit {
    if metric.ends_with("bytes") {
        Unit::Bytes
    } else {
        Unit::Count
    }
}

/// How much a figure may change from the baseline to the candidate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    /// At most this percentage of the baseline (`+10%`).
    Relative(f64),
    /// At most this many bytes or things (`+1MB`, `+1000 objects`).
    Absolute(i64),
}

/// A rule: a figure of a subject and its limit.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// What it looks at.
    pub subject: Subject,
    /// Which figure (one of [`metrics_of`] the subject).
    pub metric: String,
    /// How much it may grow.
    pub limit: Limit,
    /// The limit as written (`+10%`, `+1 MB`).
    pub limit_text: String,
    /// Where the rule came from: `--rule` or `FILE:LINE`.
    pub origin: String,
}

impl Rule {
    /// The metric's unit.
    pub fn unit(&self) -> Unit {
        unit_of(&self.metric)
    }

    /// The rule as one line: `type:Leak.Node surviving_bytes +10%`.
    pub fn text(&self) -> String {
        format!("{} {} {}", self.subject.text(), self.metric, self.limit_text)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

/// Byte units, decimal and binary.
const BYTE_UNITS: [(&str, i64); 8] =
    [("b", 1), ("bytes", 1), ("kb", 1_000), ("mb", 1_000_000), ("gb", 1_000_000_000), ("kib", 1 << 10), ("mib", 1 << 20), ("gib", 1 << 30)];

/// Count units (any of them for any count metric).
const COUNT_UNITS: [&str; 4] = ["objects", "collections", "handles", "dumps"];

/// Whether a word is a unit (then the number before it is the limit's).
fn is_unit(word: &str) -> bool {
    let w = word.to_ascii_lowercase();
    w == "%" || BYTE_UNITS.iter().any(|(u, _)| *u == w) || COUNT_UNITS.contains(&w.as_str()) || w == "object"
}

/// Parses one rule; `origin` says where it came from, for messages.
pub fn parse(line: &str, origin: &str) -> Result<Rule, String> {
    let syntax = "a rule is SUBJECT METRIC LIMIT, as `type:Leak.Node surviving_bytes +10%` \
                  (SUBJECT: summary, dump, type:NAME, function:NAME; LIMIT: +10%, +1MB, +1000 objects)";
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut end = words.len();
    let Some(&last) = words.last() else {
        return Err(format!("{origin}: an empty rule; {syntax}"));
    };
    // The limit: one word (`+10%`, `+1MB`), or a number and a unit.
    let limit_words = if words.len() >= 2 && is_unit(last) { 2 } else { 1 };
    if end < limit_words + 2 {
        return Err(format!("{origin}: `{line}` has {} words; {syntax}", words.len()));
    }
    end -= limit_words;
    let limit_text = words[end..].join(" ");
    let metric = words[end - 1].to_string();
    let subject_text = words[..end - 1].join(" ");
    let subject = parse_subject(&subject_text).map_err(|e| format!("{origin}: {e}; {syntax}"))?;
    let known = metrics_of(&subject);
    if !known.contains(&metric.as_str()) {
        let close = strsim_close(&metric, known);
        return Err(format!("{origin}: `{metric}` is not a figure of {} rules{close}; they are: {}", subject.kind(), known.join(", ")));
    }
    let limit = parse_limit(&limit_text, unit_of(&metric)).map_err(|e| format!("{origin}: `{limit_text}`: {e}"))?;
    Ok(Rule { subject, metric, limit, limit_text, origin: origin.to_string() })
}

/// ` (did you mean X?)` when a known word is close.
fn strsim_close(word: &str, known: &[&str]) -> String {
    known
        .iter()
        .map(|k| (strsim::jaro_winkler(word, k), k))
        .filter(|(s, _)| *s > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default()
}

fn parse_subject(text: &str) -> Result<Subject, String> {
    let named = |prefix: &str| -> Option<Result<String, String>> {
        let rest = text.strip_prefix(prefix)?;
        let name = rest.trim();
        let name = name.strip_prefix('"').and_then(|n| n.strip_suffix('"')).unwrap_or(name);
        Some(if name.is_empty() { Err(format!("`{prefix}` needs a name")) } else { Ok(name.to_string()) })
    };
    if text == "summary" {
        return Ok(Subject::Summary);
    }
    if text == "dump" {
        return Ok(Subject::Dump);
    }
    if let Some(n) = named("type:") {
        return n.map(Subject::Type);
    }
    if let Some(n) = named("function:") {
        return n.map(Subject::Function);
    }
    Err(format!("`{text}` is not a subject"))
}

/// Parses a limit: `+10%`, `-5 %`, `+1MB`, `+2 MiB`, `+1000 objects`,
/// `+0`. A byte unit on a count or a count unit on bytes is refused.
pub fn parse_limit(text: &str, unit: Unit) -> Result<Limit, String> {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let (sign, body) = match compact.as_bytes().first() {
        Some(b'+') => (1i64, &compact[1..]),
        Some(b'-') => (-1i64, &compact[1..]),
        _ => return Err("a limit starts with + (growth allowed) or - (decrease required), as +10% or +1MB".into()),
    };
    let digits = body.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(body.len());
    let (number, suffix) = body.split_at(digits);
    let value: f64 = number.parse().map_err(|_| format!("`{number}` is not a number"))?;
    if !value.is_finite() {
        return Err(format!("`{number}` is not a number"));
    }
    let suffix = suffix.to_ascii_lowercase();
    if suffix == "%" {
        return Ok(Limit::Relative(sign as f64 * value));
    }
    let factor = if suffix.is_empty() {
        1
    } else if let Some((_, f)) = BYTE_UNITS.iter().find(|(u, _)| *u == suffix) {
        if unit != Unit::Bytes {
            return Err(format!("`{suffix}` is a byte unit, and this figure is a count (give a number, or `objects`)"));
        }
        *f
    } else if COUNT_UNITS.contains(&suffix.as_str()) || suffix == "object" {
        if unit != Unit::Count {
            return Err(format!("`{suffix}` counts things, and this figure is in bytes (give B, KB, MB, GB, KiB, MiB or GiB)"));
        }
        1
    } else {
        return Err(format!("`{suffix}` is not a unit (%, B, KB, MB, GB, KiB, MiB, GiB, objects)"));
    };
    let amount = (value * factor as f64).round();
    if amount > i64::MAX as f64 {
        return Err("the amount is too large".into());
    }
    if unit == Unit::Count && number.contains('.') {
        return Err("a count limit is a whole number".into());
    }
    Ok(Limit::Absolute(sign * amount as i64))
}

/// Parses a rules file: one rule per line, `#` to the end of a line is a
/// comment, blank lines skipped. Errors name the file and line.
pub fn parse_file(text: &str, name: &str) -> Result<Vec<Rule>, String> {
    let mut rules = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        rules.push(parse(line, &format!("{name}:{}", i + 1))?);
    }
    if rules.is_empty() {
        return Err(format!("{name}: no rule in the file"));
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(line: &str) -> Rule {
        parse(line, "--rule").unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    #[test]
    fn rules_read_from_their_end() {
        let r = ok("type:Leak.Node surviving_bytes +10%");
        assert_eq!(r.subject, Subject::Type("Leak.Node".into()));
        assert_eq!(r.metric, "surviving_bytes");
        assert_eq!(r.limit, Limit::Relative(10.0));
        let r = ok("type:System.Byte [] retained_bytes +1 MB");
        assert_eq!(r.subject, Subject::Type("System.Byte []".into()));
        assert_eq!(r.limit, Limit::Absolute(1_000_000));
        assert_eq!(r.text(), "type:System.Byte [] retained_bytes +1 MB");
        let r = ok("type:\"System.Collections.Generic.Dictionary<System.String, System.Int32>\" allocated_objects +1000 objects");
        assert_eq!(r.subject, Subject::Type("System.Collections.Generic.Dictionary<System.String, System.Int32>".into()));
        assert_eq!(r.limit, Limit::Absolute(1000));
        assert_eq!(ok("summary allocated_bytes +2MiB").limit, Limit::Absolute(2 << 20));
        assert_eq!(ok("summary gen2_collections +0").limit, Limit::Absolute(0));
        assert_eq!(ok("dump reachable_bytes -5 %").limit, Limit::Relative(-5.0));
        assert_eq!(ok("function:App.Cache::Add exclusive_allocated_bytes +1.5KB").limit, Limit::Absolute(1500));
    }

    #[test]
    fn bad_rules_say_why() {
        let err = |line: &str| parse(line, "rules.txt:3").err().unwrap_or_default();
        assert!(err("type:A surviving_byte +10%").contains("did you mean `surviving_bytes`"), "{}", err("type:A surviving_byte +10%"));
        assert!(err("type:A allocated_bytes +10 objects").contains("in bytes"));
        assert!(err("type:A allocated_objects +1MB").contains("is a count"));
        assert!(err("type:A allocated_objects 10%").contains("starts with +"));
        assert!(err("types:A allocated_objects +10%").contains("not a subject"));
        assert!(err("type: allocated_objects +10%").contains("needs a name"));
        assert!(err("summary +10%").contains("has 2 words"));
        assert!(err("summary allocated_bytes +10 parsecs").contains("rules.txt:3"));
        assert!(err("type:A allocated_objects +1.5").contains("whole number"));
        assert!(err("").contains("empty"));
    }

    #[test]
    fn files_skip_comments_and_name_lines() {
        let rules =
            parse_file("# the set\n\nsummary allocated_bytes +10%  # all\ntype:A surviving_objects +0\n", "r.txt").unwrap_or_default();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[1].origin, "r.txt:4");
        let e = parse_file("summary allocated_bytes +10%\nsummary nothing +1\n", "r.txt").err().unwrap_or_default();
        assert!(e.starts_with("r.txt:2: "), "{e}");
        assert!(parse_file("# nothing\n", "r.txt").is_err());
    }
}
