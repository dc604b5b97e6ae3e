//! Whether a model's figures miss events its source lost: a trace whose
//! runtime dropped events (its sequence numbers have gaps) gives heap
//! dumps that may lack objects and references, and fewer samples.

use crate::model::Model;
use serde::Serialize;

/// What a model misses, for every view to say beside its figures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Incomplete {
    /// Events the runtime dropped (gaps in the trace's sequence numbers).
    pub lost_events: u64,
    /// What that means for the figures, in a sentence that starts with
    /// "incomplete:".
    pub note: String,
}

/// What the model misses; `None` when nothing is known to be missing (a
/// CLRProfiler log, or a trace without sequence-number gaps).
pub fn incomplete(model: &Model) -> Option<Incomplete> {
    let facts = model.imported()?;
    let walk_gaps = facts.heap_walk_missing_objects + facts.heap_walk_missing_references + facts.heap_walk_missing_roots;
    if facts.lost_events == 0 && walk_gaps == 0 {
        return None;
    }
    let n = facts.lost_events;
    let events = if n == 1 { "event" } else { "events" };
    let mut note = if n > 0 {
        format!("incomplete: {n} {events} lost (the runtime dropped them: gaps in the trace's sequence numbers)")
    } else {
        "incomplete:".to_string()
    };
    if walk_gaps > 0 {
        if n > 0 {
            note.push(';');
        }
        note.push_str(&format!(
            " its heap dumps lack {} object(s), {} reference(s) and {} root(s) of the runtime's heap walk",
            facts.heap_walk_missing_objects, facts.heap_walk_missing_references, facts.heap_walk_missing_roots
        ));
    } else if facts.heap_snapshots > 0 {
        note.push_str("; its heap dumps may lack objects, references or roots");
    }
    if n > 0 && facts.sampled_allocations > 0 {
        note.push_str("; allocation samples may be missing, so estimates may be low");
    }
    Some(Incomplete { lost_events: n, note })
}
