//! Stack ids and `n` lines, as CLRProfiler's profiler assigns and writes
//! them.
//!
//! Call paths are interned in a prefix tree (trie): node 0 is the empty
//! path, and a node is its parent path plus one function, so a thread's
//! current stack is just a node and a call is one lookup of (parent,
//! function) in an [`IdMap`]. A *call stack* is a node; an *allocation
//! stack* is a node plus the allocated type and size (they are part of its
//! identity). Each distinct stack gets one id, in order of first use, and
//! its `n` line is written then.
//!
//! Every node keeps its allocation stacks in a small open-addressing table
//! of its own, carved out of one arena: threads keep allocating at the
//! same few nodes, so their tables stay in cache, where one big table of a
//! few hundred thousand stacks missed on most lookups (measured: a third
//! of the profiler thread's time at the `seed` scale).
//!
//! Prefix compression follows the profiler (`_StackTraceId` in
//! `ProfilerCallback.cpp`): every thread remembers the last stack it used
//! (found or created); a new stack's line shares with it the frames of
//! their common prefix, which in the trie is the depth of the two nodes'
//! lowest common ancestor. `flag` = 1 for an allocation stack, | 2 if the
//! thread's previous stack was an allocation stack, | 4 * shared frames;
//! the previous stack's id is written only when `flag >= 4`.

use super::error::GenError;
use super::idmap::IdMap;
use clrprof::format::records::StackDef;
use clrprof::format::{FunctionId, LogWriter, Record, StackId, TypeId};
use std::io::Write;

/// The trie node of the empty path.
pub const ROOT: u32 = 0;

/// Call paths are below 2^31.
const NODE_LIMIT: usize = 1 << 31;
/// Entries of the recent-children cache (2^12 x 16 bytes).
const RECENT_CHILDREN_BITS: u32 = 12;
/// An empty slot of a node's table (keys are `type << 32 | size` with a
/// type below 2^12).
const FREE: u64 = u64::MAX;

#[derive(Clone, Copy)]
struct Node {
    parent: u32,
    func: FunctionId,
    depth: u32,
    /// Call-stack id, 0 while the path has never been used as a stack.
    stack: StackId,
    /// This node's allocation-stack table: first slot in the arena,
    /// log2 of its size (0: no table), entries.
    table: u32,
    table_bits: u32,
    table_len: u32,
}

impl Node {
    fn new(parent: u32, func: FunctionId, depth: u32) -> Node {
        Node { parent, func, depth, stack: StackId(0), table: 0, table_bits: 0, table_len: 0 }
    }
}

/// A hint to load the cache line at `p`; nothing on other architectures.
#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // Safety: SSE is part of the x86_64 baseline, and a prefetch never
    // faults or changes memory, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[inline]
fn home(key: u64, bits: u32) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
}

/// The stack a thread used last (the profiler's "latest stack trace").
#[derive(Clone, Copy, Debug)]
pub struct Latest {
    id: StackId,
    node: u32,
    alloc: bool,
}

/// Interned call paths and stack ids.
pub struct StackTable {
    nodes: Vec<Node>,
    /// (parent << 32 | function) -> child node.
    children: IdMap,
    /// Recent entries of `children`, direct-mapped (most calls repeat).
    recent_children: Vec<(u64, u32)>,
    /// The nodes' allocation-stack tables: (type << 32 | size, id).
    arena: Vec<(u64, StackId)>,
    last_id: i32,
    alloc_stacks: u64,
    call_stacks: u64,
    scratch: Vec<FunctionId>,
}

impl Default for StackTable {
    fn default() -> Self {
        Self::new()
    }
}

impl StackTable {
    /// An empty table (ids start at 1; 0 is the reader's empty stack).
    pub fn new() -> StackTable {
        StackTable {
            nodes: vec![Node::new(u32::MAX, FunctionId(-1), 0)],
            children: IdMap::new(),
            recent_children: vec![(u64::MAX, 0); 1 << RECENT_CHILDREN_BITS],
            arena: Vec::new(),
            last_id: 0,
            alloc_stacks: 0,
            call_stacks: 0,
            scratch: Vec::new(),
        }
    }

    /// The node of `parent` plus a call to `func`.
    #[inline]
    pub fn child(&mut self, parent: u32, func: FunctionId) -> Result<u32, GenError> {
        let key = (parent as u64) << 32 | func.0 as u32 as u64;
        let slot = home(key, RECENT_CHILDREN_BITS);
        if self.recent_children[slot].0 == key {
            return Ok(self.recent_children[slot].1);
        }
        if let Some(n) = self.children.get(key) {
            self.recent_children[slot] = (key, n);
            return Ok(n);
        }
        let n = self.nodes.len();
        if n >= NODE_LIMIT {
            return Err(GenError::Limit("call-path"));
        }
        let depth = self.nodes[parent as usize].depth + 1;
        self.nodes.push(Node::new(parent, func, depth));
        self.children.insert_new(key, n as u32);
        self.recent_children[slot] = (key, n as u32);
        Ok(n as u32)
    }

    /// The call-stack id of `node`, writing its `n` line on first use.
    #[inline]
    pub fn call_stack<W: Write>(
        &mut self,
        node: u32,
        latest: &mut Option<Latest>,
        out: &mut LogWriter<W>,
    ) -> Result<StackId, GenError> {
        let id = self.nodes[node as usize].stack;
        if id.0 != 0 {
            *latest = Some(Latest { id, node, alloc: false });
            return Ok(id);
        }
        let id = self.next_id()?;
        self.write_def(id, node, None, latest, out)?;
        self.nodes[node as usize].stack = id;
        self.call_stacks += 1;
        *latest = Some(Latest { id, node, alloc: false });
        Ok(id)
    }

    /// The node a node extends (its caller's path).
    #[inline]
    pub fn parent(&self, node: u32) -> u32 {
        self.nodes[node as usize].parent
    }

    /// Asks the CPU to start loading the slot where the allocation stack of
    /// (`node`, type, size) is looked up first, so that a batch of lookups
    /// overlaps its memory latencies.
    #[inline]
    pub fn prefetch_alloc(&self, node: u32, type_key: u32, size: u32) {
        let n = &self.nodes[node as usize];
        if n.table_bits > 0 {
            let key = (type_key as u64) << 32 | size as u64;
            if let Some(slot) = self.arena.get(n.table as usize + home(key, n.table_bits)) {
                prefetch(slot);
            }
        }
    }

    /// The allocation-stack id of (`node`, type, size), writing its `n`
    /// line on first use. `type_key` is the generator's type index (below
    /// 2^12).
    #[inline]
    pub fn alloc_stack<W: Write>(
        &mut self,
        node: u32,
        type_key: u32,
        type_id: TypeId,
        size: u32,
        latest: &mut Option<Latest>,
        out: &mut LogWriter<W>,
    ) -> Result<StackId, GenError> {
        if type_key >= 1 << 12 {
            return Err(GenError::Limit("allocation-stack key"));
        }
        let key = (type_key as u64) << 32 | size as u64;
        let n = self.nodes[node as usize];
        if n.table_bits > 0 {
            let mask = (1usize << n.table_bits) - 1;
            let base = n.table as usize;
            let mut i = home(key, n.table_bits);
            loop {
                let (k, id) = self.arena[base + i];
                if k == key {
                    *latest = Some(Latest { id, node, alloc: true });
                    return Ok(id);
                }
                if k == FREE {
                    break;
                }
                i = (i + 1) & mask;
            }
        }
        let id = self.next_id()?;
        self.write_def(id, node, Some((type_id, size as i32)), latest, out)?;
        self.insert_alloc(node, key, id)?;
        self.alloc_stacks += 1;
        *latest = Some(Latest { id, node, alloc: true });
        Ok(id)
    }

    /// Adds an allocation stack to a node's table, growing it (into a new
    /// arena block) past half full.
    fn insert_alloc(&mut self, node: u32, key: u64, id: StackId) -> Result<(), GenError> {
        let n = self.nodes[node as usize];
        if n.table_bits == 0 || (n.table_len + 1) * 2 > 1 << n.table_bits {
            let bits = (n.table_bits + 1).max(2);
            let start = self.arena.len();
            if start + (1 << bits) > u32::MAX as usize {
                return Err(GenError::Limit("allocation-stack"));
            }
            self.arena.resize(start + (1 << bits), (FREE, StackId(0)));
            if n.table_bits > 0 {
                for k in 0..(1usize << n.table_bits) {
                    let e = self.arena[n.table as usize + k];
                    if e.0 != FREE {
                        Self::place(&mut self.arena[start..], bits, e);
                    }
                }
            }
            let m = &mut self.nodes[node as usize];
            m.table = start as u32;
            m.table_bits = bits;
        }
        let m = self.nodes[node as usize];
        let start = m.table as usize;
        Self::place(&mut self.arena[start..start + (1 << m.table_bits)], m.table_bits, (key, id));
        self.nodes[node as usize].table_len += 1;
        Ok(())
    }

    fn place(table: &mut [(u64, StackId)], bits: u32, e: (u64, StackId)) {
        let mask = (1usize << bits) - 1;
        let mut i = home(e.0, bits);
        while table[i].0 != FREE {
            i = (i + 1) & mask;
        }
        table[i] = e;
    }

    fn next_id(&mut self) -> Result<StackId, GenError> {
        self.last_id = self.last_id.checked_add(1).ok_or(GenError::Limit("stack"))?;
        Ok(StackId(self.last_id))
    }

    /// Depth of the deepest common ancestor of two nodes: the frames two
    /// stacks share.
    fn common_depth(&self, mut a: u32, mut b: u32) -> u32 {
        let node = |n: u32| &self.nodes[n as usize];
        while node(a).depth > node(b).depth {
            a = node(a).parent;
        }
        while node(b).depth > node(a).depth {
            b = node(b).parent;
        }
        while a != b {
            a = node(a).parent;
            b = node(b).parent;
        }
        node(a).depth
    }

    fn write_def<W: Write>(
        &mut self,
        id: StackId,
        node: u32,
        alloc: Option<(TypeId, i32)>,
        latest: &Option<Latest>,
        out: &mut LogWriter<W>,
    ) -> Result<(), GenError> {
        let reference = latest.map(|l| (l.id, self.common_depth(l.node, node), l.alloc));
        let shared = reference.map_or(0, |r| r.1);
        // Frames below the shared prefix, outermost first.
        self.scratch.clear();
        let mut n = node;
        while self.nodes[n as usize].depth > shared {
            self.scratch.push(self.nodes[n as usize].func);
            n = self.nodes[n as usize].parent;
        }
        self.scratch.reverse();
        let def = StackDef::new(id, alloc, reference, &self.scratch);
        out.record(&Record::Stack(def))?;
        Ok(())
    }

    /// Distinct allocation stacks written.
    pub fn allocation_stacks(&self) -> u64 {
        self.alloc_stacks
    }

    /// Distinct call stacks written.
    pub fn call_stacks(&self) -> u64 {
        self.call_stacks
    }

    /// Call paths interned (the empty path included).
    pub fn trie_nodes(&self) -> u64 {
        self.nodes.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clrprof::format::{read_all, Style};

    fn text(f: impl FnOnce(&mut StackTable, &mut LogWriter<Vec<u8>>)) -> String {
        let mut t = StackTable::new();
        let mut out = LogWriter::new(Vec::new(), Style::BITS64);
        f(&mut t, &mut out);
        String::from_utf8(out.into_inner().unwrap()).unwrap()
    }

    #[test]
    fn writes_the_profilers_compression() {
        let s = text(|t, out| {
            let mut latest = None;
            assert_eq!(t.call_stack(ROOT, &mut latest, out).unwrap(), StackId(1));
            assert_eq!(t.alloc_stack(ROOT, 1, TypeId(1), 136, &mut latest, out).unwrap(), StackId(2));
            assert_eq!(t.alloc_stack(ROOT, 2, TypeId(2), 136, &mut latest, out).unwrap(), StackId(3));
            let a = t.child(ROOT, FunctionId(1)).unwrap();
            let b = t.child(a, FunctionId(2)).unwrap();
            let c = t.child(b, FunctionId(3)).unwrap();
            assert_eq!(t.call_stack(c, &mut latest, out).unwrap(), StackId(4));
            assert_eq!(t.alloc_stack(c, 5, TypeId(5), 448, &mut latest, out).unwrap(), StackId(5));
            let d = t.child(b, FunctionId(4)).unwrap();
            assert_eq!(t.call_stack(d, &mut latest, out).unwrap(), StackId(6));
            // Reusing a stack writes nothing but moves the reference.
            assert_eq!(t.call_stack(c, &mut latest, out).unwrap(), StackId(4));
            let e = t.child(c, FunctionId(9)).unwrap();
            assert_eq!(t.call_stack(e, &mut latest, out).unwrap(), StackId(7));
        });
        assert_eq!(
            s,
            "n 1 0\nn 2 1 1 136\nn 3 3 2 136\nn 4 2 1 2 3\nn 5 13 5 448 4\nn 6 10 5 4\nn 7 12 4 9\n"
        );
        let (records, warnings) = read_all(s.as_bytes());
        assert_eq!(records.len(), 7);
        assert_eq!(warnings.total(), 0);
    }

    #[test]
    fn allocation_stacks_are_deduplicated() {
        let s = text(|t, out| {
            let mut a = None;
            let mut b = None;
            let x = t.alloc_stack(ROOT, 1, TypeId(1), 24, &mut a, out).unwrap();
            let y = t.alloc_stack(ROOT, 1, TypeId(1), 24, &mut b, out).unwrap();
            assert_eq!(x, y);
        });
        assert_eq!(s.lines().count(), 1);
    }
}
