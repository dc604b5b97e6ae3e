//! The counters `clrprof watch --json` wrote (`clrprof ui --watch FILE`):
//! one series per process and counter, and the rules' firings, read from
//! the file's last [`TAIL_BYTES`] each time they are asked for (the file
//! grows while `watch` runs).
//!
//! ```text
//! {"t":1.12,"pid":2831,"counter":"gc-heap-size","value":5487736.0,"unit":"bytes","per_interval":false}
//! {"fired":{"pid":2831,"firing":1,"rule":"...","why":"...","seconds_into_watch":1.12,...}}
//! ```

use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// How much of the file's end is read.
pub const TAIL_BYTES: u64 = 16 << 20;

/// The most points kept per series (the newest).
pub const MAX_POINTS: usize = 3600;

/// One counter of one process.
#[derive(Debug, Serialize, PartialEq)]
pub struct Series {
    /// The process.
    pub pid: u64,
    /// The counter.
    pub counter: String,
    /// `bytes`, `percent` or `count`.
    pub unit: String,
    /// (seconds since the watch began, value), oldest first.
    pub points: Vec<(f64, f64)>,
}

/// One firing of a rule.
#[derive(Debug, Serialize, PartialEq)]
pub struct Fired {
    /// The process.
    pub pid: u64,
    /// Its number for the process.
    pub firing: u64,
    /// The rule.
    pub rule: String,
    /// Why it fired.
    pub why: String,
    /// When, in seconds since the watch began.
    pub at: f64,
}

/// What the file holds.
#[derive(Debug, Serialize, PartialEq)]
pub struct Watched {
    /// The series, by process then counter.
    pub series: Vec<Series>,
    /// The firings, in the file's order.
    pub fired: Vec<Fired>,
    /// Lines that were not a sample or a firing.
    pub skipped: u64,
}

/// Reads the series out of `text` (whole lines; a last line cut short is
/// skipped).
pub fn parse(text: &str) -> Watched {
    let mut series: BTreeMap<(u64, String), Series> = BTreeMap::new();
    let mut fired = Vec::new();
    let mut skipped = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            skipped += 1;
            continue;
        };
        if let Some(f) = v.get("fired") {
            fired.push(Fired {
                pid: f["pid"].as_u64().unwrap_or(0),
                firing: f["firing"].as_u64().unwrap_or(0),
                rule: f["rule"].as_str().unwrap_or("").to_string(),
                why: f["why"].as_str().unwrap_or("").to_string(),
                at: f["seconds_into_watch"].as_f64().unwrap_or(0.0),
            });
            continue;
        }
        let (Some(pid), Some(counter), Some(t), Some(value)) =
            (v["pid"].as_u64(), v["counter"].as_str(), v["t"].as_f64(), v["value"].as_f64())
        else {
            skipped += 1;
            continue;
        };
        let s = series.entry((pid, counter.to_string())).or_insert_with(|| Series {
            pid,
            counter: counter.to_string(),
            unit: v["unit"].as_str().unwrap_or("count").to_string(),
            points: Vec::new(),
        });
        s.points.push((t, value));
        if s.points.len() > 2 * MAX_POINTS {
            s.points.drain(..s.points.len() - MAX_POINTS);
        }
    }
    let mut series: Vec<Series> = series.into_values().collect();
    for s in &mut series {
        if s.points.len() > MAX_POINTS {
            s.points.drain(..s.points.len() - MAX_POINTS);
        }
    }
    Watched { series, fired, skipped }
}

/// Reads the file's last [`TAIL_BYTES`] (from its first whole line) and
/// parses them.
pub fn read(path: &Path) -> std::io::Result<Watched> {
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    let from = len.saturating_sub(TAIL_BYTES);
    f.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::new();
    f.take(TAIL_BYTES).read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    let text = if from > 0 { text.split_once('\n').map_or("", |(_, rest)| rest) } else { &text };
    // A line still being written is not whole yet.
    let whole = text.rfind('\n').map_or("", |i| &text[..=i]);
    Ok(parse(whole))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_and_firings() {
        let text = r#"{"t":1.0,"pid":7,"counter":"gc-heap-size","value":100.0,"unit":"bytes","per_interval":false}
{"t":1.0,"pid":7,"counter":"gen-0-gc-count","value":2.0,"unit":"count","per_interval":true}
not json
{"t":2.0,"pid":7,"counter":"gc-heap-size","value":150.0,"unit":"bytes","per_interval":false}
{"fired":{"pid":7,"firing":1,"rule":"gc-heap-size > 120 do dump","why":"gc-heap-size 150 > 120","seconds_into_watch":2.0}}
{"t":2.0,"pid":9,"counter":"gc-heap-size","value":5.0,"unit":"bytes","per_interval":false}
"#;
        let w = parse(text);
        assert_eq!(w.skipped, 1);
        assert_eq!(w.series.len(), 3);
        assert_eq!(w.series[0].counter, "gc-heap-size");
        assert_eq!((w.series[0].pid, w.series[0].points.clone()), (7, vec![(1.0, 100.0), (2.0, 150.0)]));
        assert_eq!(w.series[0].unit, "bytes");
        assert_eq!(
            w.fired,
            vec![Fired { pid: 7, firing: 1, rule: "gc-heap-size > 120 do dump".into(), why: "gc-heap-size 150 > 120".into(), at: 2.0 }]
        );
        // A file whose last line is still being written.
        let dir = std::env::temp_dir().join(format!("clrprof-watch-series-{}", std::process::id()));
        std::fs::write(&dir, format!("{text}{{\"t\":3.0,\"pid\":7,\"coun")).unwrap();
        assert_eq!(read(&dir).unwrap(), w);
        let _ = std::fs::remove_file(&dir);
    }
}
