//! `clrprof watch`'s rules: a trigger on a counter, limits, actions.
//!
//! ```text
//! RULE     := TRIGGER [limit N per DURATION] [cooldown DURATION] do ACTION {, ACTION}
//! TRIGGER  := COUNTER (> | >= | < | <=) AMOUNT          gc-heap-size > 2GB
//!           | COUNTER grows AMOUNT in DURATION           gc-heap-size grows 200MB in 10m
//! ACTION   := dump | trace DURATION | run COMMAND...    (run takes the rest of the rule)
//! AMOUNT   := NUMBER [B | KB | MB | GB | KiB | MiB | GiB | %]   (KB = 1000 B, as the runtime's MB)
//! DURATION := NUMBER (ms | s | m | h)
//! ```
//!
//! A rule fires for a process when its trigger holds on a sample, at most
//! N times in any window of the given length (default 5 per hour), never
//! sooner than the cooldown (default 1 minute) after its last firing,
//! and never while its last firing's actions still run.

use std::collections::VecDeque;
use std::time::Duration;

/// How a counter is compared.
#[derive(Clone, Debug, PartialEq)]
pub enum Trigger {
    /// The value against a threshold.
    Compare {
        /// The counter.
        counter: String,
        /// `>`, `>=`, `<`, `<=`.
        op: Op,
        /// The threshold, in the counter's base unit.
        value: f64,
    },
    /// The value now, less the lowest within the window, at least `by`.
    Grows {
        /// The counter.
        counter: String,
        /// The growth.
        by: f64,
        /// The window.
        within: Duration,
    },
}

impl Trigger {
    /// The counter the trigger reads.
    pub fn counter(&self) -> &str {
        match self {
            Trigger::Compare { counter, .. } | Trigger::Grows { counter, .. } => counter,
        }
    }
}

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
}

/// What a firing does.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// A heap dump over EventPipe.
    Dump,
    /// A sampled trace of this long.
    Trace(Duration),
    /// A shell command.
    Run(String),
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Action::Dump => f.write_str("dump"),
            Action::Trace(d) => write!(f, "trace {}s", d.as_secs_f64()),
            Action::Run(c) => write!(f, "run {c}"),
        }
    }
}

/// One rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// As written.
    pub text: String,
    /// When.
    pub trigger: Trigger,
    /// At most this many firings ...
    pub limit: u32,
    /// ... in any window of this length.
    pub per: Duration,
    /// The least time between two firings.
    pub cooldown: Duration,
    /// What it does.
    pub actions: Vec<Action>,
}

/// Parses an amount: `2GB`, `200MB`, `1.5`, `90%`.
pub fn amount(s: &str) -> Result<f64, String> {
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().map_err(|_| format!("`{s}` is not an amount (a number, then B, KB, MB, GB, KiB, MiB, GiB or %)"))?;
    let k = match unit {
        "" | "B" | "%" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(format!("`{s}`: unknown unit `{unit}` (B, KB, MB, GB, KiB, MiB, GiB or %)")),
    };
    Ok(n * k)
}

/// Parses a duration: `500ms`, `10s`, `10m`, `1h`.
pub fn duration(s: &str) -> Result<Duration, String> {
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().map_err(|_| format!("`{s}` is not a duration (a number, then ms, s, m or h)"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" | "" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("`{s}`: unknown unit `{unit}` (ms, s, m or h)")),
    };
    Duration::try_from_secs_f64(secs).map_err(|_| format!("`{s}` is not a duration"))
}

/// Parses one rule.
pub fn parse(text: &str) -> Result<Rule, String> {
    let text = text.trim();
    let (head, tail) = match text.split_once(" do ") {
        Some(p) => p,
        None => return Err(format!("rule `{text}`: no ` do ` before its actions (e.g. `gc-heap-size > 2GB do dump`)")),
    };
    let err = |what: String| format!("rule `{text}`: {what}");
    let words: Vec<&str> = head.split_whitespace().collect();
    let (trigger, rest) = match words.as_slice() {
        [counter, "grows", by, "in", within, rest @ ..] => {
            (Trigger::Grows { counter: counter.to_string(), by: amount(by).map_err(err)?, within: duration(within).map_err(err)? }, rest)
        }
        [counter, op, value, rest @ ..] => {
            let op = match *op {
                ">" => Op::Gt,
                ">=" => Op::Ge,
                "<" => Op::Lt,
                "<=" => Op::Le,
                other => return Err(err(format!("`{other}` is not a comparison (>, >=, <, <=) or `grows AMOUNT in DURATION`"))),
            };
            (Trigger::Compare { counter: counter.to_string(), op, value: amount(value).map_err(err)? }, rest)
        }
        _ => return Err(err("expected COUNTER > AMOUNT or COUNTER grows AMOUNT in DURATION".into())),
    };
    let (mut limit, mut per, mut cooldown) = (5u32, Duration::from_secs(3600), Duration::from_secs(60));
    let mut rest = rest;
    loop {
        match rest {
            ["limit", n, "per", d, more @ ..] => {
                limit = n.parse().map_err(|_| err(format!("`limit {n}`: not a whole number")))?;
                per = duration(d).map_err(err)?;
                rest = more;
            }
            ["cooldown", d, more @ ..] => {
                cooldown = duration(d).map_err(err)?;
                rest = more;
            }
            [] => break,
            other => {
                return Err(err(format!("unexpected `{}` (limit N per DURATION, cooldown DURATION, then do ACTIONS)", other.join(" "))))
            }
        }
    }
    let mut actions = Vec::new();
    let mut left = tail.trim();
    while !left.is_empty() {
        if let Some(cmd) = left.strip_prefix("run ") {
            actions.push(Action::Run(cmd.trim().to_string()));
            break;
        }
        let (one, more) = left.split_once(',').unwrap_or((left, ""));
        let w: Vec<&str> = one.split_whitespace().collect();
        actions.push(match w.as_slice() {
            ["dump"] => Action::Dump,
            ["trace", d] => Action::Trace(duration(d).map_err(err)?),
            _ => return Err(err(format!("`{}` is not an action (dump, trace DURATION, run COMMAND)", one.trim()))),
        });
        left = more.trim();
    }
    if actions.is_empty() {
        return Err(err("no action after `do`".into()));
    }
    if limit == 0 {
        return Err(err("`limit 0` would never fire".into()));
    }
    Ok(Rule { text: text.to_string(), trigger, limit, per, cooldown, actions })
}

/// Parses a rules file: one rule a line; blank lines and `#` comments
/// skipped. Errors name the line.
pub fn parse_file(text: &str, name: &str) -> Result<Vec<Rule>, String> {
    let mut rules = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        rules.push(parse(line).map_err(|e| format!("{name}: line {}: {e}", i + 1))?);
    }
    Ok(rules)
}

/// Why a trigger held: the value and what it was compared with.
#[derive(Clone, Debug, PartialEq)]
pub struct Why {
    /// The counter's value.
    pub value: f64,
    /// For growth: the lowest value within the window.
    pub low: Option<f64>,
    /// In words.
    pub said: String,
}

/// A rule's state for one process: the counter's recent values and the
/// rule's firings.
#[derive(Default)]
pub struct State {
    /// (seconds since the watch began, value) within the rule's window.
    history: VecDeque<(f64, f64)>,
    /// When it fired.
    fired: VecDeque<f64>,
    /// Firings refused by the limits so far.
    pub held_back: u64,
}

/// Whether the trigger holds now, after taking the sample `value` at
/// `now` (seconds).
pub fn holds(rule: &Rule, state: &mut State, now: f64, value: f64) -> Option<Why> {
    match &rule.trigger {
        Trigger::Compare { op, value: t, counter } => {
            let yes = match op {
                Op::Gt => value > *t,
                Op::Ge => value >= *t,
                Op::Lt => value < *t,
                Op::Le => value <= *t,
            };
            yes.then(|| Why { value, low: None, said: format!("{counter} {} {}", show(value), cmp_text(*op, *t)) })
        }
        Trigger::Grows { by, within, counter } => {
            state.history.push_back((now, value));
            while state.history.front().is_some_and(|(t, _)| *t < now - within.as_secs_f64()) {
                state.history.pop_front();
            }
            let low = state.history.iter().map(|(_, v)| *v).fold(f64::INFINITY, f64::min);
            (value - low >= *by).then(|| Why {
                value,
                low: Some(low),
                said: format!(
                    "{counter} grew {} (from {} to {}) within {} s, at least {}",
                    show(value - low),
                    show(low),
                    show(value),
                    within.as_secs_f64(),
                    show(*by)
                ),
            })
        }
    }
}

fn cmp_text(op: Op, t: f64) -> String {
    let s = match op {
        Op::Gt => ">",
        Op::Ge => ">=",
        Op::Lt => "<",
        Op::Le => "<=",
    };
    format!("{s} {}", show(t))
}

/// A value in words (whole numbers without decimals).
fn show(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.2}")
    }
}

/// Whether the limits let the rule fire at `now`: fewer than `limit`
/// firings within the last `per`, the cooldown past. Counts the firing
/// when they do.
pub fn may_fire(rule: &Rule, state: &mut State, now: f64) -> bool {
    while state.fired.front().is_some_and(|t| *t <= now - rule.per.as_secs_f64()) {
        state.fired.pop_front();
    }
    let cooled = state.fired.back().map_or(true, |t| now - t >= rule.cooldown.as_secs_f64());
    if cooled && (state.fired.len() as u32) < rule.limit {
        state.fired.push_back(now);
        true
    } else {
        state.held_back += 1;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse() {
        let r = parse("gc-heap-size > 2GB limit 2 per 10m cooldown 30s do dump, trace 5s, run echo a, b").unwrap();
        assert_eq!(r.trigger, Trigger::Compare { counter: "gc-heap-size".into(), op: Op::Gt, value: 2e9 });
        assert_eq!((r.limit, r.per, r.cooldown), (2, Duration::from_secs(600), Duration::from_secs(30)));
        assert_eq!(r.actions, vec![Action::Dump, Action::Trace(Duration::from_secs(5)), Action::Run("echo a, b".into())]);
        let g = parse("gc-heap-size grows 200MB in 10m do dump").unwrap();
        assert_eq!(g.trigger, Trigger::Grows { counter: "gc-heap-size".into(), by: 2e8, within: Duration::from_secs(600) });
        assert_eq!((g.limit, g.cooldown), (5, Duration::from_secs(60)));
        for bad in [
            "gc-heap-size > 2GB",
            "gc-heap-size ~ 2 do dump",
            "x > 2XB do dump",
            "x > 2 do nap",
            "x > 2 limit 0 per 1m do dump",
            "x > 2 soon do dump",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let e = parse_file("# rules\n\nx > 1 do dump\nx > do dump\n", "r.txt").unwrap_err();
        assert!(e.starts_with("r.txt: line 4:"), "{e}");
    }

    #[test]
    fn limits_and_growth() {
        let r = parse("x > 10 limit 2 per 100s cooldown 5s do dump").unwrap();
        let mut s = State::default();
        assert!(holds(&r, &mut s, 0.0, 10.0).is_none());
        assert!(holds(&r, &mut s, 0.0, 11.0).is_some());
        let fired: Vec<f64> = (0..40).map(f64::from).filter(|&t| may_fire(&r, &mut s, t)).collect();
        assert_eq!(fired, vec![0.0, 5.0]);
        // After the window, again.
        assert!(may_fire(&r, &mut s, 100.5));
        let g = parse("x grows 100 in 10s do dump").unwrap();
        let mut s = State::default();
        assert!(holds(&g, &mut s, 0.0, 50.0).is_none());
        assert!(holds(&g, &mut s, 5.0, 120.0).is_none());
        assert!(holds(&g, &mut s, 9.0, 150.0).is_some());
        // 50 has left the window: 120 -> 200 is 80.
        assert!(holds(&g, &mut s, 14.0, 200.0).is_none());
    }
}
