//! What a trace holds: events per provider and kind, losses, time span,
//! and which questions its events can answer.
//!
//! One streaming pass over the events ([`Census::read`]); memory is the
//! reader's plus one counter per event kind.

use super::{Error, NetTraceReader};
use std::collections::BTreeMap;

/// A question a memory profile answers, and the events a trace needs for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Question {
    /// Who allocated what: sampled allocations (`GC/AllocationTick`,
    /// `AllocationSampled`).
    Allocations,
    /// When the GCs ran and of which generation (`GC/Start`, `GC/Stop`).
    Gcs,
    /// Which sampled objects survived which GC
    /// (`GC/BulkSurvivingObjectRanges`, `GC/BulkMovedObjectRanges`).
    Survival,
    /// What holds memory: heap walks (`GC/BulkNode`, `GC/BulkEdge`).
    HeapWalks,
    /// Where the CPU time went (`Thread/Sample`).
    CpuSamples,
}

impl Question {
    /// Every question, in the order tables show them.
    pub const ALL: [Question; 5] = [Question::Allocations, Question::Gcs, Question::Survival, Question::HeapWalks, Question::CpuSamples];

    /// A short name, for tables and JSON keys.
    pub fn name(self) -> &'static str {
        match self {
            Question::Allocations => "allocations",
            Question::Gcs => "gcs",
            Question::Survival => "survival",
            Question::HeapWalks => "heap_walks",
            Question::CpuSamples => "cpu_samples",
        }
    }

    /// The events (TraceEvent's names) that answer it; any one is enough.
    pub fn events(self) -> &'static [&'static str] {
        match self {
            Question::Allocations => &["GC/AllocationTick", "AllocationSampled"],
            Question::Gcs => &["GC/Start", "GC/Stop"],
            Question::Survival => &["GC/BulkSurvivingObjectRanges", "GC/BulkMovedObjectRanges"],
            Question::HeapWalks => &["GC/BulkNode"],
            Question::CpuSamples => &["Thread/Sample"],
        }
    }
}

/// The events of one provider and kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindCount {
    /// The provider ("" when the event's metadata was not in the trace).
    pub provider: String,
    /// The event's name (TraceEvent's; "" when unknown).
    pub name: String,
    /// Events of this kind.
    pub events: u64,
}

/// What a trace holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Census {
    /// The file's format ("NetTrace (Trace object version 4)").
    pub format: String,
    /// The traced process.
    pub process_id: u32,
    /// Events read.
    pub events: u64,
    /// Events the runtime dropped (sequence-number gaps).
    pub lost_events: u64,
    /// Events per provider and kind, by provider then name.
    pub kinds: Vec<KindCount>,
    /// Milliseconds from the trace's start to its first and last event
    /// (`None` without events).
    pub span_ms: Option<(f64, f64)>,
    /// The reader's warnings (a trace cut short, lost events, unknown
    /// blocks), one line each, and the error the events stopped at.
    pub warnings: Vec<String>,
}

impl Census {
    /// Reads the trace in `bytes` to its end (or to the first error, which
    /// becomes the last warning). An error is a trace whose start cannot be
    /// read.
    pub fn read(bytes: &[u8]) -> Result<Census, Error> {
        let mut reader = NetTraceReader::new(bytes)?;
        let header = *reader.header();
        let mut counts: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        let mut span: Option<(f64, f64)> = None;
        let mut stopped = None;
        loop {
            let e = match reader.next_event() {
                Ok(Some(e)) => e,
                Ok(None) => break,
                Err(err) => {
                    stopped = Some(err);
                    break;
                }
            };
            // Looked up by borrowed names: a string is made once per kind.
            let names = match counts.get_mut(e.provider()) {
                Some(names) => names,
                None => counts.entry(e.provider().to_owned()).or_default(),
            };
            match names.get_mut(e.name()) {
                Some(n) => *n += 1,
                None => {
                    names.insert(e.name().to_owned(), 1);
                }
            }
            let ms = header.msec(e.header.timestamp);
            span = Some(match span {
                None => (ms, ms),
                Some((a, b)) => (a.min(ms), b.max(ms)),
            });
        }
        let summary = reader.finish();
        let mut warnings: Vec<String> = summary.warnings.iter().map(ToString::to_string).collect();
        if let Some(err) = stopped {
            warnings.push(format!("the events stop at an error: {err}"));
        }
        Ok(Census {
            format: format!("NetTrace (Trace object version {})", header.version),
            process_id: header.process_id,
            events: summary.events,
            lost_events: summary.lost_events,
            kinds: counts
                .into_iter()
                .flat_map(|(provider, names)| {
                    names.into_iter().map(move |(name, events)| KindCount { provider: provider.clone(), name, events })
                })
                .collect(),
            span_ms: span,
            warnings,
        })
    }

    /// Events whose name is `name`, whatever their provider.
    pub fn count(&self, name: &str) -> u64 {
        self.kinds.iter().filter(|k| k.name == name).map(|k| k.events).sum()
    }

    /// The events that answer `question`, by name, with their counts (only
    /// those the trace has).
    pub fn answers(&self, question: Question) -> Vec<(&'static str, u64)> {
        question.events().iter().map(|&n| (n, self.count(n))).filter(|&(_, c)| c > 0).collect()
    }

    /// Whether the trace can answer `question`.
    pub fn can_answer(&self, question: Question) -> bool {
        !self.answers(question).is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_follow_the_events() {
        let c = Census {
            kinds: vec![
                KindCount { provider: "p".into(), name: "GC/Start".into(), events: 2 },
                KindCount { provider: "p".into(), name: "Thread/Sample".into(), events: 5 },
            ],
            ..Census::default()
        };
        assert!(c.can_answer(Question::Gcs) && c.can_answer(Question::CpuSamples));
        assert!(!c.can_answer(Question::Allocations) && !c.can_answer(Question::HeapWalks));
        assert_eq!(c.answers(Question::Gcs), vec![("GC/Start", 2)]);
    }
}
