//! Threads, numbered densely in order of first appearance.

use super::ids::ThreadRef;
use crate::format::ThreadId;
use std::collections::HashMap;

/// Thread ids and their dense numbers (0 is "no thread").
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct ThreadTable {
    ids: Vec<Option<ThreadId>>,
    rows: HashMap<i32, u32>,
    last: Option<(i32, u32)>,
}

impl ThreadTable {
    pub(crate) fn new() -> Self {
        ThreadTable { ids: vec![None], rows: HashMap::new(), last: None }
    }

    /// The dense number of a thread id (`None`: the older records without
    /// one).
    #[inline]
    pub(crate) fn intern(&mut self, id: Option<ThreadId>) -> ThreadRef {
        let Some(id) = id else { return ThreadRef(0) };
        if let Some((i, r)) = self.last {
            if i == id.0 {
                return ThreadRef(r);
            }
        }
        let n = self.ids.len() as u32;
        let r = *self.rows.entry(id.0).or_insert(n);
        if r == n {
            self.ids.push(Some(id));
        }
        self.last = Some((id.0, r));
        ThreadRef(r)
    }

    /// The thread id of a dense number.
    pub fn id(&self, t: ThreadRef) -> Option<ThreadId> {
        self.ids.get(t.index()).copied().flatten()
    }

    /// Number of threads seen (plus the "no thread" entry).
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Never true: entry 0 always exists.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.ids.capacity() * 8 + self.rows.capacity() * 8
    }
}
