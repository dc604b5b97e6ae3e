//! Ids of the model's own tables.
//!
//! Ids written in the log (type, function, module and stack ids, threads,
//! addresses) are the newtypes of [`crate::format`]. The model adds dense
//! ids for the rows of its tables, so that a column can be indexed without
//! hashing and a stack row can never be confused with a log stack id.

macro_rules! dense_id {
    ($(#[$doc:meta])* $name:ident($inner:ty)) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub $inner);

        impl $name {
            /// The id as an index into its table's columns.
            #[inline]
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

dense_id!(
    /// A row of the stack table: one per stack index CLRProfiler's reader
    /// used (after its renumbering), in order of first use.
    StackRef(u32)
);
dense_id!(
    /// An allocated object: its position among the log's allocations
    /// (`!`/`a` records that were applied), from 0.
    ObjectId(u32)
);
dense_id!(
    /// A slot of the time table (CLRProfiler's "tick index"). Slot 0 is time
    /// 0.0 and exists before the first record.
    TickIndex(u32)
);
dense_id!(
    /// A garbage collection as the heap simulation saw it: every `b` end line
    /// and every `g` line acted on, in log order, from 0.
    GcIndex(u32)
);
dense_id!(
    /// A thread, numbered in order of first appearance (0 is "no thread", for
    /// the older `a` records).
    ThreadRef(u32)
);
dense_id!(
    /// An interned string of a [`NameTable`](super::NameTable).
    NameId(u32)
);
dense_id!(
    /// A record of the sample table (address history), in creation order.
    SampleId(u32)
);
dense_id!(
    /// A node of the stack prefix tree (0 is the empty path).
    FrameNode(u32)
);
