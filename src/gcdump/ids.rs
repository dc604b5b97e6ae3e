//! Indices into a heap graph, as newtypes so that a node index is never
//! taken for a type index.

/// A node of the graph (an object or a grouping pseudo-node), from 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct NodeIndex(pub u32);

/// A type of the graph, from 0 (type 0 is PerfView's `UNDEFINED`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct TypeIndex(pub u32);

impl NodeIndex {
    /// As an index into the graph's columns.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl TypeIndex {
    /// As an index into the graph's type columns.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}
