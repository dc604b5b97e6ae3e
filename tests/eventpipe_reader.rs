//! The NetTrace reader against real traces and TraceEvent's own answers
//! (`../shared/corpus/eventpipe/`, see its README): every event kind with
//! TraceEvent's count, and the first event of each kind (the earliest in
//! time, as TraceEvent sorts) with the same thread, time and field values.

use clrprof::eventpipe::{Field, NetTraceReader, Value, Warning};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/eventpipe")
}

/// A value reduced to what both sides can be compared on.
#[derive(Debug, Clone, PartialEq)]
enum Norm {
    Int(i128),
    Float(f64),
    Str(String),
    List(Vec<Norm>),
}

/// Our decoded field: its value, its width for signed reinterpretation, and
/// the name its map gives it.
#[derive(Debug, Clone)]
struct Ours {
    value: Norm,
    width: u8,
    label: Option<String>,
}

fn guid(g: &[u8; 16]) -> String {
    let d1 = u32::from_le_bytes([g[0], g[1], g[2], g[3]]);
    let d2 = u16::from_le_bytes([g[4], g[5]]);
    let d3 = u16::from_le_bytes([g[6], g[7]]);
    format!(
        "{d1:08x}-{d2:04x}-{d3:04x}-{:02x}{:02x}-{}",
        g[8],
        g[9],
        g[10..].iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

fn norm(v: &Value<'_>) -> (Norm, u8) {
    match v {
        Value::Bool(b) => (Norm::Str(if *b { "True" } else { "False" }.into()), 4),
        Value::Char(c) => (Norm::Int(i128::from(*c)), 2),
        Value::Unsigned(u, w) => (Norm::Int(i128::from(*u)), *w),
        Value::Signed(i, w) => (Norm::Int(i128::from(*i)), *w),
        Value::Pointer(p) => (Norm::Int(i128::from(*p)), 8),
        Value::Float(f) => (Norm::Float(*f), 8),
        Value::Str(s) => (Norm::Str(s.to_string()), 0),
        Value::Bytes(b) => (Norm::Str(String::from_utf8_lossy(b).into_owned()), 0),
        Value::Guid(g) => (Norm::Str(guid(g)), 0),
        // TraceEvent shows an array of UTF-16 code units as a string.
        Value::Array(a) if !a.is_empty() && a.iter().all(|v| matches!(v, Value::Char(_))) => {
            let units: Vec<u16> = a.iter().filter_map(|v| if let Value::Char(c) = v { Some(*c) } else { None }).collect();
            (Norm::Str(String::from_utf16_lossy(&units)), 0)
        }
        Value::Array(a) => (Norm::List(a.iter().map(|v| norm(v).0).collect()), 0),
        other => (Norm::Str(format!("{other:?}")), 0),
    }
}

fn ours(fields: &[Field<'_>]) -> BTreeMap<String, Ours> {
    fields
        .iter()
        .map(|f| {
            let (value, width) = norm(&f.value);
            (f.name.to_string(), Ours { value, width, label: f.label() })
        })
        .collect()
}

/// TraceEvent's text for a value, reduced.
fn parse_theirs(s: &str) -> Norm {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x") {
        if let Ok(v) = u64::from_str_radix(h, 16) {
            return Norm::Int(i128::from(v));
        }
    }
    if let Some(inner) = s.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        return Norm::List(inner.split(',').filter(|p| !p.is_empty()).map(parse_theirs).collect());
    }
    let digits = s.replace(',', "");
    if !digits.is_empty() && digits.trim_start_matches('-').chars().all(|c| c.is_ascii_digit()) {
        if let Ok(v) = digits.parse::<i128>() {
            return Norm::Int(v);
        }
    }
    if s.chars().any(|c| c.is_ascii_digit()) && s.chars().all(|c| c.is_ascii_digit() || ".-+eE,".contains(c)) {
        if let Ok(f) = digits.parse::<f64>() {
            return Norm::Float(f);
        }
    }
    Norm::Str(s.to_string())
}

fn same(theirs: &Norm, ours: &Ours) -> bool {
    if let (Norm::Str(t), Some(l)) = (theirs, &ours.label) {
        return t == l;
    }
    match (theirs, &ours.value) {
        (Norm::Int(t), Norm::Int(o)) => {
            t == o || (*t < 0 && ours.width > 0 && ours.width < 16 && (t + (1i128 << (8 * ours.width))) == *o)
        }
        (Norm::Float(t), Norm::Float(o)) => (t - o).abs() <= 1e-9 * t.abs().max(1.0),
        (Norm::Int(t), Norm::Float(o)) => (*t as f64 - o).abs() < 1e-9,
        (Norm::Float(t), Norm::Int(o)) => (t - *o as f64).abs() < 1e-6,
        (t, o) => t == o,
    }
}

fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"").replace("&lt;", "<").replace("&gt;", ">").replace("&apos;", "'").replace("&amp;", "&")
}

/// One baseline line: kind, count, the first event's attributes.
struct Expected {
    kind: String,
    count: u64,
    attrs: Vec<(String, String)>,
}

fn baseline(name: &str) -> Vec<Expected> {
    let text = std::fs::read_to_string(corpus().join(format!("{name}.baseline.txt"))).unwrap();
    let mut out = Vec::new();
    for line in text.trim_start_matches('\u{feff}').lines().filter(|l| !l.trim().is_empty()) {
        let (kind, rest) = line.split_once(", ").unwrap();
        let (count, xml) = rest.split_once(", ").unwrap();
        // the attributes of the first tag only
        let tag = &xml[..xml.find('>').unwrap()];
        let mut attrs = Vec::new();
        let mut r = tag.trim_start_matches("<Event");
        while let Some(eq) = r.find('=') {
            let key = r[..eq].trim().to_string();
            let after = &r[eq + 1..];
            let q = after.find('"').unwrap();
            let end = after[q + 1..].find('"').unwrap();
            attrs.push((key, unescape(&after[q + 1..q + 1 + end])));
            r = &after[q + 1 + end + 1..];
        }
        out.push(Expected { kind: kind.to_string(), count: count.trim().parse().unwrap(), attrs });
    }
    out
}

/// What we read of a kind: its count and its earliest event.
struct Seen {
    count: u64,
    first_ts: i64,
    msec: f64,
    tid: u64,
    fields: Option<BTreeMap<String, Ours>>,
}

fn read(name: &str) -> (BTreeMap<String, Seen>, clrprof::eventpipe::ReadSummary) {
    let bytes = std::fs::read(corpus().join(name)).unwrap();
    let mut r = NetTraceReader::new(&bytes).unwrap();
    let header = *r.header();
    let mut seen: BTreeMap<String, Seen> = BTreeMap::new();
    while let Some(e) = r.next_event().unwrap() {
        let kind = format!("{}/{}", e.provider(), e.name());
        let ts = e.header.timestamp.0;
        let s = seen.entry(kind).or_insert(Seen { count: 0, first_ts: i64::MAX, msec: 0.0, tid: 0, fields: None });
        s.count += 1;
        if ts < s.first_ts {
            s.first_ts = ts;
            s.msec = header.msec(e.header.timestamp);
            s.tid = e.header.thread.0;
            s.fields = e.fields().unwrap_or_else(|err| panic!("{name}: {err}")).map(|f| ours(&f));
        }
    }
    (seen, r.finish())
}

/// Attributes that are TraceEvent's own, not the payload's.
const NOT_FIELDS: &[&str] = &["MSec", "PID", "PName", "TID", "EventName", "ProviderName", "FormattedMessage"];

/// Kinds whose fields are not decoded yet (their counts must still match),
/// with the reason. A kind listed here that decodes fails the test, so the
/// list stays honest.
const NOT_YET_DECODED: &[(&str, &str)] = &[];

/// Attributes of TraceEvent's baseline that are not payload fields of the
/// event at the version the trace holds: values TraceEvent computes
/// (sums, splits of a flags field), or defaults it shows for fields that
/// only a later version of the event has. They are not compared.
const NOT_PAYLOAD: &[(&str, &str, &str)] = &[
    ("Microsoft-Windows-DotNETRuntime/GC/HeapStats", "TotalPromoted", "TraceEvent's sum over generations"),
    ("Microsoft-Windows-DotNETRuntime/GC/HeapStats", "TotalHeapSize", "TraceEvent's sum over generations"),
    ("Microsoft-Windows-DotNETRuntime/GC/HeapStats", "Depth", "TraceEvent's own (the GC/Start depth)"),
    ("Microsoft-Windows-DotNETRuntime/GC/HeapStats", "GenerationSize4", "V2 field, the trace has V1 (TraceEvent shows 0)"),
    ("Microsoft-Windows-DotNETRuntime/GC/HeapStats", "TotalPromotedSize4", "V2 field, the trace has V1 (TraceEvent shows 0)"),
    ("Microsoft-Windows-DotNETRuntime/Contention/Start", "LockID", "V2 field, the trace has V1 (TraceEvent shows 0)"),
    ("Microsoft-Windows-DotNETRuntime/Contention/Start", "AssociatedObjectID", "V2 field, the trace has V1"),
    ("Microsoft-Windows-DotNETRuntime/Contention/Start", "LockOwnerThreadID", "V2 field, the trace has V1"),
    ("Microsoft-Windows-DotNETRuntime/Method/LoadVerbose", "ReJITID", "V2 field, the trace has V1 (TraceEvent shows 0)"),
    ("Microsoft-Windows-DotNETRuntime/Method/LoadVerbose", "OptimizationTier", "TraceEvent splits bits 7-9 of MethodFlags"),
    ("Microsoft-Windows-DotNETRuntime/Method/LoadVerbose", "MethodFlags", "TraceEvent names it without the tier bits"),
];

/// Fields TraceEvent names differently from the runtime's manifest.
const ALIASES: &[(&str, &str, &str)] = &[("Microsoft-Windows-DotNETRuntime/GC/MarkWithType", "Promoted", "Bytes")];

/// Kinds in the traces that TraceEvent's baseline does not list, because
/// the harness that wrote it (TraceEvent.Tests `EventPipeParsing.cs`)
/// unsubscribes `MethodILToNativeMap` and attaches no rundown parser. Their
/// counts are reported, not compared.
const NOT_IN_BASELINE: &[&str] = &[
    "Microsoft-Windows-DotNETRuntime/Method/ILToNativeMap",
    "Microsoft-Windows-DotNETRuntimeRundown/Method/DCStopVerbose",
    "Microsoft-Windows-DotNETRuntimeRundown/Method/ILToNativeMapDCStop",
];

fn check(name: &str) {
    let (seen, summary) = read(name);
    let expected = baseline(name);
    let mut problems = Vec::new();
    let mut fields_matched = 0;
    let mut kinds_decoded = 0;
    for ex in &expected {
        let Some(s) = seen.get(&ex.kind) else {
            problems.push(format!("{}: not found", ex.kind));
            continue;
        };
        if s.count != ex.count {
            problems.push(format!("{}: {} events, TraceEvent {}", ex.kind, s.count, ex.count));
        }
        let attr = |k: &str| ex.attrs.iter().find(|a| a.0 == k).map(|a| a.1.clone());
        if let Some(t) = attr("TID") {
            if parse_theirs(&t) != Norm::Int(i128::from(s.tid)) {
                problems.push(format!("{}: thread {}, TraceEvent {t}", ex.kind, s.tid));
            }
        }
        if let Some(m) = attr("MSec") {
            let m: f64 = m.trim().parse().unwrap();
            if (m - s.msec).abs() > 0.001 {
                problems.push(format!("{}: at {:.4} ms, TraceEvent {m}", ex.kind, s.msec));
            }
        }
        let listed = NOT_YET_DECODED.iter().any(|n| n.0 == ex.kind);
        let mut bad = Vec::new();
        match &s.fields {
            None => bad.push("no fields decoded".to_string()),
            Some(f) => {
                let skipped = |k: &str| NOT_PAYLOAD.iter().any(|n| n.0 == ex.kind && n.1 == k);
                for (k, v) in ex.attrs.iter().filter(|a| !NOT_FIELDS.contains(&a.0.as_str()) && !skipped(&a.0)) {
                    let t = parse_theirs(v);
                    let ours = ALIASES.iter().find(|a| a.0 == ex.kind && a.1 == k).map_or(k.as_str(), |a| a.2);
                    match f.get(ours) {
                        None => bad.push(format!("{k}: missing (TraceEvent {v:?})")),
                        Some(o) if !same(&t, o) => bad.push(format!("{k}: {:?} / {:?}, TraceEvent {v:?}", o.value, o.label)),
                        Some(_) => fields_matched += 1,
                    }
                }
            }
        }
        match (bad.is_empty(), listed) {
            (true, true) => problems.push(format!("{}: listed as not yet decoded, but it decodes", ex.kind)),
            (false, false) => problems.push(format!("{}: {}", ex.kind, bad.join("; "))),
            (true, false) => kinds_decoded += 1,
            (false, true) => {}
        }
    }
    for (k, s) in &seen {
        if NOT_IN_BASELINE.contains(&k.as_str()) {
            eprintln!("{name}: {k}: {} events (not in TraceEvent's baseline)", s.count);
        } else if !expected.iter().any(|e| &e.kind == k) {
            problems.push(format!("{k}: {} events that TraceEvent does not list", s.count));
        }
    }
    eprintln!(
        "{name}: {} kinds, {kinds_decoded} decoded with every field equal ({fields_matched} fields); {} events, {} lost; warnings {:?}",
        expected.len(),
        summary.events,
        summary.lost_events,
        summary.warnings.iter().take(5).map(Warning::to_string).collect::<Vec<_>>()
    );
    assert!(problems.is_empty(), "{name}:\n  {}", problems.join("\n  "));
}

#[test]
#[cfg_attr(no_eventpipe_corpus, ignore = "needs ../shared/corpus/eventpipe, missing when built (touch build.rs after installing)")]
fn dotnetcore3_0_objver4() {
    check("eventpipe-dotnetcore3.0-win-x64-objver4.nettrace");
}

#[test]
#[cfg_attr(no_eventpipe_corpus, ignore = "needs ../shared/corpus/eventpipe, missing when built (touch build.rs after installing)")]
fn dotnetcore5_0_arraytypes() {
    check("eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace");
}

#[test]
#[cfg_attr(no_eventpipe_corpus, ignore = "needs ../shared/corpus/eventpipe, missing when built (touch build.rs after installing)")]
fn dotnetcore6_0_executioncheckpoints() {
    check("eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace");
}
