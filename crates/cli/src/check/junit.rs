//! The check as JUnit XML, the report format CI systems display: one
//! `<testsuite>`, one `<testcase>` per rule; a failed rule carries a
//! `<failure>` and an undecided one an `<error>`, each with both figures.
//!
//! ```text
//! <testsuites name="clrprof check" tests="3" failures="1" errors="0">
//!   <testsuite name="clrprof check" tests="3" failures="1" errors="0" skipped="0">
//!     <properties> baseline, candidate, the dumps used </properties>
//!     <testcase classname="clrprof.check.type" name="type:Leak.Node surviving_bytes +10%">
//!       <failure type="regression" message="...">baseline, candidate, change, allowed</failure>
//!     </testcase>
//!   </testsuite>
//! </testsuites>
//! ```

use super::report::{change_text, counts, figure, sentence};
use super::verdict::{Status, Verdict};
use std::fmt::Write as _;

/// Text escaped for an XML attribute or element (characters XML 1.0
/// cannot carry at all are replaced by U+FFFD).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' => out.push_str("&#9;"),
            '\r' => out.push_str("&#13;"),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// The JUnit XML document of a check.
pub fn document(baseline: &str, candidate: &str, dumps: [Option<u32>; 2], verdicts: &[Verdict]) -> String {
    let (_, failed, unknown) = counts(verdicts);
    let n = verdicts.len();
    let mut x = String::new();
    let _ = writeln!(x, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(x, r#"<testsuites name="clrprof check" tests="{n}" failures="{failed}" errors="{unknown}" time="0">"#);
    let _ = writeln!(x, r#"  <testsuite name="clrprof check" tests="{n}" failures="{failed}" errors="{unknown}" skipped="0" time="0">"#);
    let _ = writeln!(x, "    <properties>");
    let dump = |d: Option<u32>| d.map_or_else(|| "none".to_string(), |d| d.to_string());
    for (name, value) in [
        ("baseline", baseline.to_string()),
        ("candidate", candidate.to_string()),
        ("baseline_dump", dump(dumps[0])),
        ("candidate_dump", dump(dumps[1])),
    ] {
        let _ = writeln!(x, r#"      <property name="{name}" value="{}"/>"#, escape(&value));
    }
    let _ = writeln!(x, "    </properties>");
    for v in verdicts {
        let class = format!("clrprof.check.{}", v.rule.subject.kind());
        let _ = write!(x, r#"    <testcase classname="{}" name="{}" time="0""#, escape(&class), escape(&v.rule.text()));
        let figures = format!(
            "rule: {}\nfrom: {}\nbaseline: {}\ncandidate: {}\nchange: {}\nlimit: {}\nallowed: {}\n",
            v.rule.text(),
            v.rule.origin,
            v.baseline.map_or_else(|| "unknown".into(), figure),
            v.candidate.map_or_else(|| "unknown".into(), figure),
            change_text(v),
            v.rule.limit_text,
            v.allowed.map_or_else(|| "-".into(), figure),
        );
        match v.status {
            Status::Pass => {
                let _ = writeln!(x, "/>");
            }
            Status::Fail | Status::Unknown => {
                let (tag, kind) = if v.status == Status::Fail { ("failure", "regression") } else { ("error", "unknown") };
                let _ = writeln!(x, ">");
                let _ = writeln!(
                    x,
                    r#"      <{tag} type="{kind}" message="{}">{}</{tag}>"#,
                    escape(&sentence(v)),
                    escape(&figures).replace("&#10;", "\n")
                );
                let _ = writeln!(x, "    </testcase>");
            }
        }
    }
    let _ = writeln!(x, "  </testsuite>");
    let _ = writeln!(x, "</testsuites>");
    x
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_markup_and_control_characters() {
        assert_eq!(escape("a<b>&\"c\"'"), "a&lt;b&gt;&amp;&quot;c&quot;&apos;");
        assert_eq!(escape("x\u{1}y\nz"), "x\u{FFFD}y&#10;z");
        assert_eq!(escape("Dictionary<String, Int32>"), "Dictionary&lt;String, Int32&gt;");
    }
}
