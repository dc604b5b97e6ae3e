//! [`HeapGraph`]: the snapshot's types and nodes as columns.
//!
//! ```text
//! types:  names [Box<str>]  modules [Option<Box<str>>]  sizes [i32]
//! nodes:  types [TypeIndex]  sizes [u32]  addresses [u64] (empty if none)
//!         child_start [u32; nodes + 1] -> children [NodeIndex]
//!         children of node n = children[child_start[n]..child_start[n + 1]]
//! ```

use super::ids::{NodeIndex, TypeIndex};

/// What a node stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// An object of the heap.
    Object,
    /// A node PerfView adds to group roots ("[.NET Roots]",
    /// "[static vars]", "[local vars]", ...): not an object.
    Pseudo,
    /// A node that was referenced but never described (PerfView's
    /// `UNDEFINED` type 0): not an object of the snapshot.
    Undefined,
}

/// How the snapshot was sampled. PerfView and `dotnet-gcdump` keep only a
/// sample of the objects of a big heap; the counts and sizes of the kept
/// objects times these multipliers estimate the whole heap.
#[derive(Clone, Debug, PartialEq)]
pub struct Sampling {
    /// Objects in the heap per object kept, on average (1 when all were kept).
    pub average_count_multiplier: f32,
    /// Bytes in the heap per byte kept, on average (1 when all were kept).
    pub average_size_multiplier: f32,
    /// Per type index, objects in the heap per object kept (empty when the
    /// file has none).
    pub count_multipliers_by_type: Vec<f32>,
}

impl Sampling {
    /// True when the snapshot holds a sample: figures from it are estimates.
    pub fn is_sampled(&self) -> bool {
        let off = |m: f32| m.is_finite() && m != 0.0 && m != 1.0;
        off(self.average_count_multiplier) || off(self.average_size_multiplier) || self.count_multipliers_by_type.iter().any(|&m| off(m))
    }
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling { average_count_multiplier: 1.0, average_size_multiplier: 1.0, count_multipliers_by_type: Vec::new() }
    }
}

/// What the file says about where and how the snapshot was taken.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DumpInfo {
    /// The `GCHeapDump` format version.
    pub version: i32,
    /// The collector's log, when the file has one.
    pub collection_log: Option<String>,
    /// When it was taken, in .NET ticks (100 ns since 0001-01-01), 0 if unknown.
    pub time_collected_ticks: i64,
    /// The machine's name.
    pub machine_name: Option<String>,
    /// The process's name.
    pub process_name: Option<String>,
    /// The process id.
    pub process_id: i32,
    /// The process's committed memory in bytes (0 if unknown).
    pub total_process_commit: i64,
    /// The process's working set in bytes (0 if unknown).
    pub total_process_working_set: i64,
    /// The tool that wrote the file, when it says (newer files).
    pub creation_tool: Option<String>,
}

/// A heap snapshot read from a `.gcdump`: the graph of objects (nodes),
/// their types, the root node and what the file says about its making.
#[derive(Clone, Debug, Default)]
pub struct HeapGraph {
    pub(crate) type_names: Vec<Box<str>>,
    pub(crate) type_modules: Vec<Option<Box<str>>>,
    pub(crate) type_sizes: Vec<i32>,
    pub(crate) node_types: Vec<TypeIndex>,
    pub(crate) node_sizes: Vec<u32>,
    pub(crate) addresses: Vec<u64>,
    pub(crate) child_start: Vec<u32>,
    pub(crate) children: Vec<NodeIndex>,
    pub(crate) root: NodeIndex,
    pub(crate) is_64bit: bool,
    pub(crate) total_size: u64,
    pub(crate) sampling: Sampling,
    pub(crate) info: DumpInfo,
}

impl HeapGraph {
    /// Number of nodes (objects and pseudo-nodes; PerfView's `NumNodes`).
    pub fn node_count(&self) -> usize {
        self.node_types.len()
    }

    /// The nodes, in index order.
    pub fn nodes(&self) -> impl ExactSizeIterator<Item = NodeIndex> {
        (0..self.node_types.len() as u32).map(NodeIndex)
    }

    /// Number of types (PerfView's `NumTypes`).
    pub fn type_count(&self) -> usize {
        self.type_names.len()
    }

    /// The types, in index order.
    pub fn types(&self) -> impl ExactSizeIterator<Item = TypeIndex> {
        (0..self.type_names.len() as u32).map(TypeIndex)
    }

    /// The root node, whose children are the roots (usually through
    /// grouping pseudo-nodes).
    pub fn root(&self) -> NodeIndex {
        self.root
    }

    /// True for a 64-bit process.
    pub fn is_64bit(&self) -> bool {
        self.is_64bit
    }

    /// Pointer size of the process in bytes (4 or 8).
    pub fn pointer_size(&self) -> u8 {
        if self.is_64bit {
            8
        } else {
            4
        }
    }

    /// Sum of the sizes of all nodes as the file states it (PerfView's
    /// `TotalSize`).
    pub fn total_size(&self) -> u64 {
        self.total_size
    }

    /// How the snapshot was sampled.
    pub fn sampling(&self) -> &Sampling {
        &self.sampling
    }

    /// Where and how the snapshot was taken.
    pub fn info(&self) -> &DumpInfo {
        &self.info
    }

    /// The collector's log, when the file has one.
    pub fn collection_log(&self) -> Option<&str> {
        self.info.collection_log.as_deref()
    }

    /// A type's name (the file's name, or "" when it has none).
    ///
    /// # Panics
    /// When `t` is not below [`HeapGraph::type_count`].
    pub fn type_name(&self, t: TypeIndex) -> &str {
        &self.type_names[t.index()]
    }

    /// The module (assembly) that defines a type, when the file says.
    ///
    /// # Panics
    /// When `t` is not below [`HeapGraph::type_count`].
    pub fn type_module(&self, t: TypeIndex) -> Option<&str> {
        self.type_modules[t.index()].as_deref()
    }

    /// A type's size: the size of its nodes that do not state their own,
    /// `None` when unknown (a type no node uses).
    ///
    /// # Panics
    /// When `t` is not below [`HeapGraph::type_count`].
    pub fn type_size(&self, t: TypeIndex) -> Option<u32> {
        u32::try_from(self.type_sizes[t.index()]).ok()
    }

    /// A node's type.
    ///
    /// # Panics
    /// When `n` is not below [`HeapGraph::node_count`] (also for the
    /// accessors below).
    pub fn node_type(&self, n: NodeIndex) -> TypeIndex {
        self.node_types[n.index()]
    }

    /// A node's size in bytes.
    pub fn node_size(&self, n: NodeIndex) -> u32 {
        self.node_sizes[n.index()]
    }

    /// The nodes a node references, in the file's order (repeats kept).
    pub fn children(&self, n: NodeIndex) -> &[NodeIndex] {
        let i = n.index();
        &self.children[self.child_start[i] as usize..self.child_start[i + 1] as usize]
    }

    /// True when the file gives the nodes' addresses.
    pub fn has_addresses(&self) -> bool {
        !self.addresses.is_empty()
    }

    /// A node's address, `None` when the file has none for it (pseudo-nodes
    /// have address 0).
    pub fn node_address(&self, n: NodeIndex) -> Option<u64> {
        self.addresses.get(n.index()).copied().filter(|&a| a != 0)
    }

    /// What a node stands for: with addresses, a node at address 0 is a
    /// pseudo-node; without, the root and the size-0 nodes whose type name
    /// is in brackets (`[static vars]`) are. Nodes of type 0 (`UNDEFINED`)
    /// are undefined.
    pub fn node_kind(&self, n: NodeIndex) -> NodeKind {
        let t = self.node_type(n);
        if t.0 == 0 {
            return NodeKind::Undefined;
        }
        let pseudo = if self.has_addresses() {
            self.node_address(n).is_none()
        } else {
            n == self.root || (self.node_size(n) == 0 && self.type_name(t).starts_with('['))
        };
        if pseudo {
            NodeKind::Pseudo
        } else {
            NodeKind::Object
        }
    }

    /// Number of object nodes ([`NodeKind::Object`]).
    pub fn object_count(&self) -> usize {
        self.nodes().filter(|&n| self.node_kind(n) == NodeKind::Object).count()
    }

    /// Sum of the sizes of the object nodes.
    pub fn object_bytes(&self) -> u64 {
        self.nodes().filter(|&n| self.node_kind(n) == NodeKind::Object).map(|n| u64::from(self.node_size(n))).sum()
    }

    /// Number of references (edges) in the graph.
    pub fn reference_count(&self) -> usize {
        self.children.len()
    }

    /// Bytes of memory this graph holds (its columns and names).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.type_names.iter().map(|s| s.len()).sum::<usize>()
            + self.type_modules.iter().flatten().map(|s| s.len()).sum::<usize>()
            + self.type_names.capacity() * size_of::<Box<str>>()
            + self.type_modules.capacity() * size_of::<Option<Box<str>>>()
            + self.type_sizes.capacity() * 4
            + self.node_types.capacity() * 4
            + self.node_sizes.capacity() * 4
            + self.addresses.capacity() * 8
            + self.child_start.capacity() * 4
            + self.children.capacity() * 4
            + self.sampling.count_multipliers_by_type.capacity() * 4
            + self.info.collection_log.as_ref().map_or(0, |s| s.capacity())
    }
}
