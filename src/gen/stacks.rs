//! Stack ids and `n` lines, as CLRProfiler's profiler assigns and writes
//! them.
//!
//! Call paths are interned in a prefix tree (trie): node 0 is the empty
//! path, and a node is its parent path plus one function, so a thread's
//! current stack is just a node and a call is one lookup of (parent,
//! function). A *call stack* is a node; an *allocation stack* is a node
//! plus the allocated type and size (they are part of its identity). Each
//! distinct stack gets one id, in order of first use, and its `n` line is
//! written then. Both lookups use [`IdMap`]s keyed by packed integers; a
//! small direct-mapped cache of recent allocation stacks sits in front of
//! the large map (four allocations in five hit it, in L2).
//!
//! Prefix compression follows the profiler (`_StackTraceId` in
//! `ProfilerCallback.cpp`): every thread remembers the last stack it used
//! (found or created); a new stack's line shares with it the frames of
//! their common prefix, which in the trie is the depth of the two nodes'
//! lowest common ancestor. `flag` = 1 for an allocation stack, | 2 if the
//! thread's previous stack was an allocation stack, | 4 * shared frames;
//! the previous stack's id is written only when `flag >= 4`.

use super::lines::Lines;
use super::error::GenError;
use super::idmap::{IdMap, EMPTY};
use crate::format::records::StackDef;
use crate::format::{FunctionId, Record, StackId, TypeId};
use std::io::Write;

/// The trie node of the empty path.
pub const ROOT: u32 = 0;

/// Call paths are below 2^24 (the allocation-stack key packs the node in 24
/// bits, the type in 12 and the size in 28).
const NODE_LIMIT: usize = 1 << 24;
/// Entries of the recent-stacks cache (2^13 x 16 bytes: stays in L2).
const RECENT_BITS: u32 = 16;

#[derive(Clone, Copy)]
struct Node {
    parent: u32,
    func: FunctionId,
    depth: u32,
    /// Call-stack id, 0 while the path has never been used as a stack.
    stack: StackId,
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
    /// (node << 40 | type << 28 | size) -> allocation-stack id.
    allocs: IdMap,
    /// Recent entries of `allocs`, direct-mapped.
    recent: Vec<(u64, StackId)>,
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
            nodes: vec![Node { parent: u32::MAX, func: FunctionId(-1), depth: 0, stack: StackId(0) }],
            children: IdMap::new(),
            allocs: IdMap::new(),
            recent: vec![(EMPTY, StackId(0)); 1 << RECENT_BITS],
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
        if let Some(n) = self.children.get(key) {
            return Ok(n);
        }
        let n = self.nodes.len();
        if n >= NODE_LIMIT {
            return Err(GenError::Limit("call-path"));
        }
        let depth = self.nodes[parent as usize].depth + 1;
        self.nodes.push(Node { parent, func, depth, stack: StackId(0) });
        self.children.insert_new(key, n as u32);
        Ok(n as u32)
    }

    /// The call-stack id of `node`, writing its `n` line on first use.
    #[inline]
    pub fn call_stack<W: Write>(
        &mut self,
        node: u32,
        latest: &mut Option<Latest>,
        out: &mut Lines<W>,
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

    /// The allocation-stack id of (`node`, type, size), writing its `n`
    /// line on first use. `type_key` is the generator's type index (below
    /// 2^12) and `size` is below 2^28.
    #[inline]
    pub fn alloc_stack<W: Write>(
        &mut self,
        node: u32,
        type_key: u32,
        type_id: TypeId,
        size: u32,
        latest: &mut Option<Latest>,
        out: &mut Lines<W>,
    ) -> Result<StackId, GenError> {
        if type_key >= 1 << 12 || size >= 1 << 28 {
            return Err(GenError::Limit("allocation-stack key"));
        }
        let key = (node as u64) << 40 | (type_key as u64) << 28 | size as u64;
        let slot = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - RECENT_BITS)) as usize;
        let id = if self.recent[slot].0 == key {
            self.recent[slot].1
        } else if let Some(id) = self.allocs.get(key) {
            self.recent[slot] = (key, StackId(id as i32));
            StackId(id as i32)
        } else {
            let id = self.next_id()?;
            self.write_def(id, node, Some((type_id, size as i32)), latest, out)?;
            self.allocs.insert_new(key, id.0 as u32);
            self.recent[slot] = (key, id);
            self.alloc_stacks += 1;
            id
        };
        *latest = Some(Latest { id, node, alloc: true });
        Ok(id)
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
        out: &mut Lines<W>,
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
    use crate::format::{read_all, LogWriter, Style};

    fn text(f: impl FnOnce(&mut StackTable, &mut Lines<Vec<u8>>)) -> String {
        let mut t = StackTable::new();
        let mut out = Lines::new(LogWriter::new(Vec::new(), Style::BITS64));
        f(&mut t, &mut out);
        String::from_utf8(out.finish().unwrap()).unwrap()
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
