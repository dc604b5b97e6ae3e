//! Interned strings: every distinct name is stored once, in one buffer.

use super::ids::NameId;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

/// A table of distinct strings (type, function, module and assembly names,
/// signatures), each stored once and named by a [`NameId`].
///
/// ```text
/// text:    "System.StringSystem.Object []Main"
/// ends:    [13, 29, 33]          NameId(1) = text[13..29]
/// ```
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(from = "Names", into = "Names")]
pub struct NameTable {
    text: String,
    ends: Vec<u32>,
    /// Hash of a name -> its id; `chain` links ids whose hashes collide.
    by_hash: HashMap<u64, u32>,
    chain: Vec<u32>,
    hasher: std::collections::hash_map::RandomState,
}

const NO_NEXT: u32 = u32::MAX;

/// What a [`NameTable`] is saved as: its strings (the hash index is built
/// again on reading, with a new hasher).
#[derive(serde::Serialize, serde::Deserialize)]
struct Names {
    text: String,
    ends: Vec<u32>,
}

impl From<NameTable> for Names {
    fn from(t: NameTable) -> Names {
        Names { text: t.text, ends: t.ends }
    }
}

impl From<Names> for NameTable {
    fn from(n: Names) -> NameTable {
        let mut t = NameTable::new();
        let mut start = 0usize;
        for &end in &n.ends {
            // Ends that go back or past the text (a damaged file) give
            // empty names rather than a panic.
            let end = (end as usize).min(n.text.len()).max(start);
            t.intern_new(n.text.get(start..end).unwrap_or(""));
            start = end;
        }
        t
    }
}

impl NameTable {
    /// An empty table.
    pub fn new() -> Self {
        NameTable::default()
    }

    fn hash(&self, s: &str) -> u64 {
        let mut h = self.hasher.build_hasher();
        h.write(s.as_bytes());
        h.finish()
    }

    /// Adds `s` as the next id even if it is there already (a saved table
    /// has distinct names, so its ids stay the same).
    fn intern_new(&mut self, s: &str) {
        let h = self.hash(s);
        let id = self.ends.len() as u32;
        self.text.push_str(s);
        self.ends.push(self.text.len() as u32);
        self.chain.push(NO_NEXT);
        match self.by_hash.get(&h) {
            Some(&first) => {
                let mut last = first;
                while self.chain[last as usize] != NO_NEXT {
                    last = self.chain[last as usize];
                }
                self.chain[last as usize] = id;
            }
            None => {
                self.by_hash.insert(h, id);
            }
        }
    }

    /// The id of `s`, adding it if it is new.
    pub fn intern(&mut self, s: &str) -> NameId {
        let h = self.hash(s);
        let mut last = None;
        if let Some(&first) = self.by_hash.get(&h) {
            let mut id = first;
            while id != NO_NEXT {
                if self.get(NameId(id)) == s {
                    return NameId(id);
                }
                last = Some(id);
                id = self.chain[id as usize];
            }
        }
        let id = self.ends.len() as u32;
        self.text.push_str(s);
        self.ends.push(self.text.len() as u32);
        self.chain.push(NO_NEXT);
        match last {
            Some(l) => self.chain[l as usize] = id,
            None => {
                self.by_hash.insert(h, id);
            }
        }
        NameId(id)
    }

    /// The string of an id (empty for an id this table never gave out).
    pub fn get(&self, id: NameId) -> &str {
        let i = id.index();
        let Some(&end) = self.ends.get(i) else { return "" };
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start as usize..end as usize]
    }

    /// Number of distinct strings.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when the table holds no string.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.text.capacity() + self.ends.capacity() * 4 + self.chain.capacity() * 4 + self.by_hash.capacity() * 12
    }

    pub(crate) fn shrink(&mut self) {
        self.text.shrink_to_fit();
        self.ends.shrink_to_fit();
        self.chain.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interns_once() {
        let mut t = NameTable::new();
        let a = t.intern("System.String");
        let b = t.intern("System.Object []");
        assert_eq!(t.intern("System.String"), a);
        assert_ne!(a, b);
        assert_eq!(t.get(b), "System.Object []");
        assert_eq!(t.get(NameId(99)), "");
        assert_eq!(t.len(), 2);
    }
}
