//! The type table: names of type ids (`t` records) and finalizable flags.

use super::idmap::IdMap;
use super::ids::NameId;
use super::names::NameTable;
use crate::format::TypeId;

/// CLRProfiler's name tables start with room for 1000 ids.
pub(crate) const INITIAL_CAPACITY: u64 = 1000;

/// Type ids and their names. Type 0 is "Free Space" (the reader names it
/// before reading anything); a type redefined later takes the later name.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct TypeTable {
    rows: IdMap,
    ids: Vec<TypeId>,
    names: Vec<NameId>,
    finalizable: Vec<bool>,
    finalizable_ids: usize,
    capacity: u64,
}

impl TypeTable {
    pub(crate) fn new(names: &mut NameTable) -> Self {
        let mut t = TypeTable {
            rows: IdMap::new(),
            ids: Vec::new(),
            names: Vec::new(),
            finalizable: Vec::new(),
            finalizable_ids: 0,
            capacity: INITIAL_CAPACITY,
        };
        let free = names.intern("Free Space");
        t.define(TypeId(0), free);
        t
    }

    /// Records the finalizable flag (applied even when the name is not).
    pub(crate) fn set_finalizable(&mut self, id: TypeId) {
        let row = self.row_or_insert(id);
        if !self.finalizable[row] {
            self.finalizable[row] = true;
            self.finalizable_ids += 1;
        }
    }

    fn row_or_insert(&mut self, id: TypeId) -> usize {
        let key = id.0 as u32 as u64;
        match self.rows.get(key) {
            Some(r) => r as usize,
            None => {
                let r = self.ids.len();
                self.rows.insert(key, r as u32);
                self.ids.push(id);
                self.names.push(NameId(u32::MAX));
                self.finalizable.push(false);
                r
            }
        }
    }

    /// Names a type (id >= 0; the caller checks).
    pub(crate) fn define(&mut self, id: TypeId, name: NameId) {
        while self.capacity <= id.0 as u64 {
            self.capacity = (self.capacity * 2).max(id.0 as u64 + 1);
        }
        let row = self.row_or_insert(id);
        self.names[row] = name;
    }

    /// The capacity of CLRProfiler's type-name array (ids below it can be
    /// named without an error).
    pub(crate) fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The name of a type, if it was defined.
    pub fn name(&self, id: TypeId) -> Option<NameId> {
        if id.0 < 0 {
            return None;
        }
        let row = self.rows.get(id.0 as u64)? as usize;
        let n = self.names[row];
        (n.0 != u32::MAX).then_some(n)
    }

    /// Whether the type was declared finalizable.
    pub fn is_finalizable(&self, id: TypeId) -> bool {
        if id.0 < 0 {
            return false;
        }
        self.rows.get(id.0 as u64).is_some_and(|r| self.finalizable[r as usize])
    }

    /// Named types, "Free Space" included.
    pub fn named_count(&self) -> usize {
        self.names.iter().filter(|n| n.0 != u32::MAX).count()
    }

    /// Types declared finalizable.
    pub fn finalizable_count(&self) -> usize {
        self.finalizable_ids
    }

    /// The defined type ids with their names, in order of definition.
    pub fn iter(&self) -> impl Iterator<Item = (TypeId, NameId)> + '_ {
        self.ids.iter().zip(&self.names).filter(|(_, n)| n.0 != u32::MAX).map(|(&i, &n)| (i, n))
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.rows.heap_bytes() + self.ids.capacity() * 4 + self.names.capacity() * 4 + self.finalizable.capacity()
    }

    pub(crate) fn shrink(&mut self) {
        self.rows.shrink();
        self.ids.shrink_to_fit();
        self.names.shrink_to_fit();
        self.finalizable.shrink_to_fit();
    }
}
