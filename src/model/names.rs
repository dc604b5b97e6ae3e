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
#[derive(Clone, Debug, Default)]
pub struct NameTable {
    text: String,
    ends: Vec<u32>,
    /// Hash of a name -> its id; `chain` links ids whose hashes collide.
    by_hash: HashMap<u64, u32>,
    chain: Vec<u32>,
    hasher: std::collections::hash_map::RandomState,
}

const NO_NEXT: u32 = u32::MAX;

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
