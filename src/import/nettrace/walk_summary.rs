//! A heap walk's figures in one streaming pass: objects, bytes, roots,
//! the types that hold the most, and whether the walk is whole; in memory
//! independent of the number of objects (one counter per type, one number
//! per batch), where the model's import keeps every object and reference.
//! What `clrprof heap-dump` prints after an agent-free dump.
//!
//! Completeness follows the same rules as the import ([`super::walk`]):
//! every batch but the last of its kind is full, so a missing batch
//! number is a full batch lost; references are lost when the nodes'
//! `EdgeCount`s ask for more than the edge batches hold.

use super::fields::{member_string, member_u64, Fields};
use crate::eventpipe::{Error, NetTraceReader};
use std::collections::HashMap;

/// One type's share of a heap walk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeFigures {
    /// The type's name ("" when the trace did not name it).
    pub name: String,
    /// Its objects.
    pub objects: u64,
    /// Their bytes (each object's size rounded up to the pointer size).
    pub bytes: u64,
}

/// A heap walk's figures ([`walk_summary`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WalkSummary {
    /// `GC/BulkNode` batches read (0: the trace holds no heap walk).
    pub node_batches: u64,
    /// Objects.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Roots (`GC/BulkRootEdge`, static and dependent-handle roots), with
    /// an object.
    pub roots: u64,
    /// References (`GC/BulkEdge` entries).
    pub references: u64,
    /// Events the runtime dropped (sequence-number gaps).
    pub lost_events: u64,
    /// Events read (of every kind).
    pub events: u64,
    /// Objects in lost node batches.
    pub missing_objects: u64,
    /// References the nodes announce that no edge batch holds.
    pub missing_references: u64,
    /// Roots in lost root batches.
    pub missing_roots: u64,
    /// The `top` types with the most bytes, most first.
    pub types: Vec<TypeFigures>,
    /// The reader's warnings and the error the events stopped at.
    pub warnings: Vec<String>,
}

impl WalkSummary {
    /// Whether the walk is whole: no event lost, no batch missing.
    pub fn is_complete(&self) -> bool {
        self.lost_events == 0 && self.missing_objects == 0 && self.missing_references == 0 && self.missing_roots == 0
    }
}

/// The batch numbers of one kind seen, and the largest batch.
#[derive(Default)]
struct Numbers {
    seen: Vec<u32>,
    full: u64,
}

impl Numbers {
    fn add(&mut self, index: u64, len: u64) {
        self.seen.push(index.min(u64::from(u32::MAX)) as u32);
        self.full = self.full.max(len);
    }

    /// Entries in the batches whose numbers are missing below the highest.
    fn lost(mut self) -> u64 {
        self.seen.sort_unstable();
        self.seen.dedup();
        let expected = self.seen.last().map_or(0, |&m| u64::from(m) + 1);
        (expected - self.seen.len() as u64).saturating_mul(self.full)
    }
}

/// Reads the heap walk in the trace `bytes` and gives its figures, with
/// the `top` types by bytes. `position` is called now and then with the
/// offset the reader has reached (a caller may give back the pages of a
/// mapped trace behind it). A trace cut short gives the figures of what
/// was read, with a warning; an error is a trace whose start cannot be
/// read.
pub fn walk_summary(bytes: &[u8], top: usize, position: &mut dyn FnMut(u64)) -> Result<WalkSummary, Error> {
    let mut reader = NetTraceReader::new(bytes)?;
    let align = u64::from(reader.header().pointer_size.max(4));
    let mut s = WalkSummary::default();
    let (mut nodes, mut edges, mut roots) = (Numbers::default(), Numbers::default(), Numbers::default());
    let mut announced_edges = 0u64;
    let mut per_type: HashMap<u64, (u64, u64)> = HashMap::new();
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut told = 0u64;
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
        if e.offset >= told + (16 << 20) {
            told = e.offset;
            position(told);
        }
        if !e.provider().starts_with("Microsoft-Windows-DotNETRuntime") {
            continue;
        }
        let name = e.name();
        if !matches!(
            name,
            "GC/BulkNode"
                | "GC/BulkEdge"
                | "GC/BulkRootEdge"
                | "GC/BulkRootConditionalWeakTableElementEdge"
                | "GC/BulkRootStaticVar"
                | "Type/BulkType"
        ) {
            continue;
        }
        let Some(f) = Fields::of(&e) else { continue };
        let index = f.u64("Index").unwrap_or(0);
        let values = f.structs("Values");
        match name {
            "GC/BulkNode" => {
                s.node_batches += 1;
                nodes.add(index, values.len() as u64);
                for v in values {
                    let size = member_u64(v, "Size").unwrap_or(0).div_ceil(align).saturating_mul(align);
                    let t = per_type.entry(member_u64(v, "TypeID").unwrap_or(0)).or_default();
                    t.0 += 1;
                    t.1 = t.1.saturating_add(size);
                    s.objects += 1;
                    s.bytes = s.bytes.saturating_add(size);
                    announced_edges = announced_edges.saturating_add(member_u64(v, "EdgeCount").unwrap_or(0));
                }
            }
            "GC/BulkEdge" => {
                edges.add(index, values.len() as u64);
                s.references += values.len() as u64;
            }
            "GC/BulkRootEdge" => {
                roots.add(index, values.len() as u64);
                s.roots += values.iter().filter(|v| member_u64(v, "RootedNodeAddress").unwrap_or(0) != 0).count() as u64;
            }
            "GC/BulkRootConditionalWeakTableElementEdge" => {
                s.roots += values
                    .iter()
                    .filter(|v| member_u64(v, "GCKeyNodeID").unwrap_or(0) != 0 && member_u64(v, "GCValueNodeID").unwrap_or(0) != 0)
                    .count() as u64;
            }
            "GC/BulkRootStaticVar" => {
                s.roots += values.iter().filter(|v| member_u64(v, "ObjectID").unwrap_or(0) != 0).count() as u64;
            }
            _ => {
                for v in values {
                    if let Some(id) = member_u64(v, "TypeID") {
                        names.entry(id).or_insert_with(|| member_string(v, "Name"));
                    }
                }
            }
        }
    }
    let summary = reader.finish();
    s.events = summary.events;
    s.lost_events = summary.lost_events;
    s.warnings = summary.warnings.iter().map(ToString::to_string).collect();
    if let Some(err) = stopped {
        s.warnings.push(format!("the events stop at an error: {err}"));
    }
    s.missing_objects = nodes.lost();
    s.missing_references = edges.lost().max(announced_edges.saturating_sub(s.references));
    s.missing_roots = roots.lost();
    let mut types: Vec<TypeFigures> = per_type
        .into_iter()
        .map(|(id, (objects, bytes))| TypeFigures { name: names.get(&id).cloned().unwrap_or_default(), objects, bytes })
        .collect();
    types.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
    types.truncate(top);
    s.types = types;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_numbers_are_full_batches() {
        let mut n = Numbers::default();
        for (i, len) in [(0, 10), (1, 10), (3, 10), (4, 2)] {
            n.add(i, len);
        }
        assert_eq!(n.lost(), 10);
        let mut whole = Numbers::default();
        whole.add(1, 5);
        whole.add(0, 7);
        assert_eq!(whole.lost(), 0);
        assert_eq!(Numbers::default().lost(), 0);
    }

    #[test]
    fn a_trace_that_is_not_one_is_an_error() {
        assert!(walk_summary(b"not a trace", 5, &mut |_| {}).is_err());
    }
}
