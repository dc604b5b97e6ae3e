//! The runtime's counters as they arrive: the `System.Runtime`
//! EventSource's `EventCounters` events, asked for with
//! `EventCounterIntervalSec=N` (what `dotnet-counters` and
//! `dotnet-monitor` read, .NET Core 3.0 to .NET 8).
//!
//! ```text
//! EventCounters payload: { Payload: {
//!     Name "gc-heap-size", DisplayName, DisplayUnits (".NET 5+"),
//!     Mean | Increment (f64), StandardDeviation, Count, Min, Max (Mean counters),
//!     DisplayRateTimeScale (Increment counters), IntervalSec (f32),
//!     Series "Interval=1000", CounterType "Mean" | "Sum", Metadata } }
//! ```
//!
//! Field order differs between runtimes, so fields are found by name
//! through the event's metadata, never by position.

use crate::blocks::{Blocks, Item};
use crate::protocol::Provider;
use clrprof::eventpipe::{FieldDesc, FieldType};
use std::collections::HashMap;

/// The runtime's counters provider.
pub const SYSTEM_RUNTIME: &str = "System.Runtime";

/// The provider asked for: every `interval_sec` seconds, one
/// `EventCounters` event per counter.
pub fn provider(interval_sec: u32) -> Provider {
    Provider {
        name: SYSTEM_RUNTIME.into(),
        keywords: 0xFFFF_FFFF,
        level: 4,
        filter: Some(format!("EventCounterIntervalSec={}", interval_sec.max(1))),
    }
}

/// What a counter's value means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Bytes (sizes in MB are given in bytes).
    Bytes,
    /// A percentage.
    Percent,
    /// A count (per interval for sums).
    Count,
}

/// One value of one counter.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// The counter's name (`gc-heap-size`).
    pub name: String,
    /// The value in base units: bytes for sizes (a runtime's MB are
    /// 1,000,000 bytes), per interval for sums.
    pub value: f64,
    /// Its unit.
    pub unit: Unit,
    /// Whether it is a sum over the interval (`Increment`) rather than a
    /// mean.
    pub sum: bool,
    /// The interval, in seconds, as the runtime says.
    pub interval_sec: f64,
}

/// The unit of a `System.Runtime` counter, and the factor from its
/// reported value to that unit.
pub fn unit_of(name: &str, display_units: Option<&str>) -> (Unit, f64) {
    match display_units {
        Some("MB") => return (Unit::Bytes, 1e6),
        Some("B") => return (Unit::Bytes, 1.0),
        Some("%") => return (Unit::Percent, 1.0),
        _ => {}
    }
    match name {
        "gc-heap-size" | "working-set" | "gc-committed" => (Unit::Bytes, 1e6),
        "alloc-rate" | "loh-size" | "poh-size" | "gen-0-size" | "gen-1-size" | "gen-2-size" | "il-bytes-jitted" => (Unit::Bytes, 1.0),
        "cpu-usage" | "time-in-gc" | "gc-fragmentation" => (Unit::Percent, 1.0),
        _ => (Unit::Count, 1.0),
    }
}

/// Reads the counters out of a session's trace as it arrives.
#[derive(Default)]
pub struct Counters {
    blocks: Blocks,
    /// Metadata id -> the fields of `System.Runtime`'s `EventCounters`.
    kinds: HashMap<u32, Vec<FieldDesc>>,
}

impl Counters {
    /// A reader of a trace from its first byte.
    pub fn new() -> Counters {
        Counters::default()
    }

    /// Why the trace could not be read, if it could not.
    pub fn broken(&self) -> Option<&str> {
        self.blocks.broken.as_deref()
    }

    /// Takes the next bytes of the trace: the samples they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Sample> {
        let mut out = Vec::new();
        let kinds = &mut self.kinds;
        self.blocks.feed(bytes, |item| match item {
            Item::Metadata(m) => {
                if m.provider == SYSTEM_RUNTIME && m.name == "EventCounters" {
                    if let Some(fields) = m.fields {
                        kinds.insert(m.id.0, fields);
                    }
                }
            }
            Item::Event(header, payload) => {
                if let Some(fields) = kinds.get(&header.metadata_id.0) {
                    if let Some(s) = sample(fields, payload) {
                        out.push(s);
                    }
                }
            }
        });
        out
    }
}

/// A decoded field value that counters need.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Num(f64),
    Text(String),
    Other,
}

/// The sample of one `EventCounters` payload, or `None` when it is not
/// one (fields missing, bytes short).
pub fn sample(fields: &[FieldDesc], payload: &[u8]) -> Option<Sample> {
    let mut named = HashMap::new();
    let mut at = 0usize;
    walk(fields, payload, &mut at, &mut named, 0)?;
    let name = match named.get("Name") {
        Some(Val::Text(n)) => n.clone(),
        _ => return None,
    };
    let (raw, sum) = match (named.get("Mean"), named.get("Increment")) {
        (Some(Val::Num(v)), _) => (*v, false),
        (_, Some(Val::Num(v))) => (*v, true),
        _ => return None,
    };
    let units = match named.get("DisplayUnits") {
        Some(Val::Text(u)) if !u.is_empty() => Some(u.as_str()),
        _ => None,
    };
    let (unit, factor) = unit_of(&name, units);
    let interval_sec = match named.get("IntervalSec") {
        Some(Val::Num(v)) => *v,
        _ => 0.0,
    };
    Some(Sample { name, value: raw * factor, unit, sum, interval_sec })
}

/// Decodes `fields` from `payload[*at..]`, keeping the innermost value of
/// each name; `None` when the bytes end early or a type has no known
/// size.
fn walk(fields: &[FieldDesc], payload: &[u8], at: &mut usize, out: &mut HashMap<String, Val>, depth: u32) -> Option<()> {
    if depth > 8 {
        return None;
    }
    for f in fields {
        let v = match &f.ty {
            FieldType::Struct(inner) => {
                walk(inner, payload, at, out, depth + 1)?;
                continue;
            }
            FieldType::Utf16Z => {
                let rest = payload.get(*at..)?;
                let mut units = Vec::new();
                let mut i = 0;
                loop {
                    let b = rest.get(i..i + 2)?;
                    i += 2;
                    let u = u16::from_le_bytes([b[0], b[1]]);
                    if u == 0 {
                        break;
                    }
                    units.push(u);
                }
                *at += i;
                Val::Text(String::from_utf16_lossy(&units))
            }
            FieldType::F64 => Val::Num(f64::from_le_bytes(take::<8>(payload, at)?)),
            FieldType::F32 => Val::Num(f64::from(f32::from_le_bytes(take::<4>(payload, at)?))),
            FieldType::I32 => Val::Num(f64::from(i32::from_le_bytes(take::<4>(payload, at)?))),
            FieldType::U32 => Val::Num(f64::from(u32::from_le_bytes(take::<4>(payload, at)?))),
            FieldType::I64 => Val::Num(i64::from_le_bytes(take::<8>(payload, at)?) as f64),
            FieldType::U64 => Val::Num(u64::from_le_bytes(take::<8>(payload, at)?) as f64),
            other => {
                let n = other.fixed_size()?;
                payload.get(*at..*at + n)?;
                *at += n;
                Val::Other
            }
        };
        out.insert(f.name.clone(), v);
    }
    Some(())
}

fn take<const N: usize>(payload: &[u8], at: &mut usize) -> Option<[u8; N]> {
    let b: [u8; N] = payload.get(*at..*at + N)?.try_into().ok()?;
    *at += N;
    Some(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16z(s: &str, out: &mut Vec<u8>) {
        for u in s.encode_utf16().chain(std::iter::once(0)) {
            out.extend_from_slice(&u.to_le_bytes());
        }
    }

    fn field(name: &str, ty: FieldType) -> FieldDesc {
        FieldDesc { name: name.into(), ty }
    }

    #[test]
    fn mean_and_sum_payloads() {
        let mean = vec![field(
            "Payload",
            FieldType::Struct(vec![
                field("Name", FieldType::Utf16Z),
                field("DisplayName", FieldType::Utf16Z),
                field("Mean", FieldType::F64),
                field("StandardDeviation", FieldType::F64),
                field("Count", FieldType::I32),
                field("IntervalSec", FieldType::F32),
                field("Series", FieldType::Utf16Z),
                field("CounterType", FieldType::Utf16Z),
                field("DisplayUnits", FieldType::Utf16Z),
            ]),
        )];
        let mut p = Vec::new();
        utf16z("gc-heap-size", &mut p);
        utf16z("GC Heap Size", &mut p);
        p.extend_from_slice(&12.5f64.to_le_bytes());
        p.extend_from_slice(&0f64.to_le_bytes());
        p.extend_from_slice(&1i32.to_le_bytes());
        p.extend_from_slice(&1.0f32.to_le_bytes());
        utf16z("Interval=1000", &mut p);
        utf16z("Mean", &mut p);
        utf16z("MB", &mut p);
        let s = sample(&mean, &p).unwrap();
        assert_eq!((s.name.as_str(), s.value, s.unit, s.sum, s.interval_sec), ("gc-heap-size", 12_500_000.0, Unit::Bytes, false, 1.0));
        // Cut short: no sample.
        assert_eq!(sample(&mean, &p[..p.len() - 3]), None);

        let sum = vec![field(
            "Payload",
            FieldType::Struct(vec![
                field("Name", FieldType::Utf16Z),
                field("Increment", FieldType::F64),
                field("Guid", FieldType::Guid),
                field("CounterType", FieldType::Utf16Z),
            ]),
        )];
        let mut p = Vec::new();
        utf16z("gen-0-gc-count", &mut p);
        p.extend_from_slice(&3f64.to_le_bytes());
        p.extend_from_slice(&[0; 16]);
        utf16z("Sum", &mut p);
        let s = sample(&sum, &p).unwrap();
        assert_eq!((s.name.as_str(), s.value, s.unit, s.sum), ("gen-0-gc-count", 3.0, Unit::Count, true));
        assert_eq!(unit_of("alloc-rate", None), (Unit::Bytes, 1.0));
        assert_eq!(provider(0).filter.as_deref(), Some("EventCounterIntervalSec=1"));
    }
}
