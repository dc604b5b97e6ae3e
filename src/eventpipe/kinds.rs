//! The event kinds of a trace, found by metadata id once per event.
//!
//! Writers number metadata 1, 2, 3, ...: ids below [`DENSE`] are found
//! through a vector indexed by the id, larger ones (a damaged or unusual
//! trace) through a map. Either way the kinds themselves are stored once,
//! in definition order; a redefined id replaces its kind.

use super::ids::MetadataId;
use super::reader::EventKind;
use std::collections::HashMap;

/// Ids below this are indexed directly (at most 256 KB of index).
const DENSE: u32 = 1 << 16;

#[derive(Debug, Default)]
pub(crate) struct KindTable {
    kinds: Vec<EventKind>,
    /// By id: 0 for none, else the kind's position + 1.
    dense: Vec<u32>,
    sparse: HashMap<MetadataId, usize>,
}

impl KindTable {
    /// Defines (or redefines) the kind of `kind.metadata.id`.
    pub(crate) fn insert(&mut self, kind: EventKind) {
        let id = kind.metadata.id;
        if let Some(i) = self.position(id) {
            if let Some(k) = self.kinds.get_mut(i) {
                *k = kind;
                return;
            }
        }
        let i = self.kinds.len();
        self.kinds.push(kind);
        if id.0 < DENSE {
            let at = id.0 as usize;
            if at >= self.dense.len() {
                self.dense.resize(at + 1, 0);
            }
            if let Some(slot) = self.dense.get_mut(at) {
                *slot = i as u32 + 1;
            }
        } else {
            self.sparse.insert(id, i);
        }
    }

    fn position(&self, id: MetadataId) -> Option<usize> {
        if id.0 < DENSE {
            match self.dense.get(id.0 as usize) {
                Some(&n) if n > 0 => Some(n as usize - 1),
                _ => None,
            }
        } else {
            self.sparse.get(&id).copied()
        }
    }

    /// The kind of `id`, if defined.
    #[inline]
    pub(crate) fn get(&self, id: MetadataId) -> Option<&EventKind> {
        self.kinds.get(self.position(id)?)
    }

    /// Every kind defined, in definition order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &EventKind> {
        self.kinds.iter()
    }

    /// Forgets every kind (a V6 sequence point that flushes the metadata).
    pub(crate) fn clear(&mut self) {
        self.kinds.clear();
        self.dense.clear();
        self.sparse.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eventpipe::EventMetadata;

    fn kind(id: u32, name: &str) -> EventKind {
        EventKind::new(EventMetadata {
            id: MetadataId(id),
            provider: "P".into(),
            event_id: 1,
            name: name.into(),
            keywords: 0,
            version: 0,
            level: 0,
            opcode: None,
            fields: None,
            message_template: None,
            description: None,
            provider_guid: None,
            attributes: Vec::new(),
        })
    }

    #[test]
    fn small_and_large_ids_redefined_and_cleared() {
        let mut t = KindTable::default();
        t.insert(kind(3, "a"));
        t.insert(kind(DENSE + 5, "b"));
        t.insert(kind(u32::MAX, "c"));
        assert_eq!(t.get(MetadataId(3)).map(|k| k.name.as_str()), Some("a"));
        assert_eq!(t.get(MetadataId(DENSE + 5)).map(|k| k.name.as_str()), Some("b"));
        assert_eq!(t.get(MetadataId(u32::MAX)).map(|k| k.name.as_str()), Some("c"));
        assert!(t.get(MetadataId(0)).is_none() && t.get(MetadataId(4)).is_none() && t.get(MetadataId(DENSE)).is_none());
        t.insert(kind(3, "a2"));
        t.insert(kind(DENSE + 5, "b2"));
        assert_eq!(t.iter().map(|k| k.name.as_str()).collect::<Vec<_>>(), ["a2", "b2", "c"]);
        t.clear();
        assert!(t.get(MetadataId(3)).is_none() && t.iter().next().is_none());
        t.insert(kind(1, "d"));
        assert_eq!(t.get(MetadataId(1)).map(|k| k.name.as_str()), Some("d"));
    }
}
