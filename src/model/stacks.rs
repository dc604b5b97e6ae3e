//! The stack table: stacks as a prefix tree, with CLRProfiler's numbering.
//!
//! A stack is a list of 32-bit values: for an allocation stack, the
//! allocated type id and size, then function ids outermost first; for other
//! stacks, function ids only. The frames are kept as paths in a prefix tree
//! (one node per frame: parent, function id), and a stack row holds its
//! leaf node and its type and size:
//!
//! ```text
//! nodes:   0 (root)          rows (one per stack index):
//!          |- 1: Main          row  index  node  head       list
//!             |- 2: Run        0    0      0     -          []
//!             |  |- 3: Alloc   1    1      1     -          [Main]
//!             |- 4: Load       2    7      3     (String,28) [String, 28, Main, Run, Alloc]
//!                              3    8      4     -          [Main, Load]
//! ```
//!
//! An `n` record that shares a prefix with its reference stack points at the
//! reference's ancestor node and adds nodes only for the frames it lists.
//!
//! The reader's numbering is reproduced exactly (section 2 of
//! `docs/src/reference-reader.md`): stack ids are stack indices until the first
//! duplicate allocation-only stack (or an `o` record needing a new type and
//! size) creates the renumbering table; from then on every new stack gets
//! index `max + 1`, and ids of `!`, `a`, `c` and `n` references are mapped.
//! A row's content is the latest definition of its index: CLRProfiler reads
//! type and size back from the stack each time, so a redefinition changes
//! objects already allocated with it.

use super::error::Problem;
use super::idmap::{dense_enough, IdMap};
use super::ids::{FrameNode, StackRef};
use super::types::INITIAL_CAPACITY;
use crate::format::{FunctionId, StackId, TypeId};
use std::collections::HashMap;

const DEFINED: u8 = 1;
const HAS_HEAD: u8 = 2;
const LONG_ENOUGH: u8 = 4;

/// The renumbering table ("mapping") of CLRProfiler's stack table.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Mapping {
    /// Its length: ids at or beyond it are errors.
    len: u64,
    /// Its length when it was created: unassigned ids below map to
    /// themselves, unassigned ids above map to 0.
    initial_len: u64,
    assigned: IdMap,
}

impl Mapping {
    fn grow_to(&mut self, id: u64) {
        while self.len <= id {
            self.len *= 2;
        }
    }
}

/// The stack table (see the module documentation).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct StackTable {
    // The prefix tree.
    parent: Vec<u32>,
    frame: Vec<i32>,
    depth: Vec<u32>,
    max_frame: Vec<i32>,
    /// A jump pointer per node (an ancestor; see
    /// [`StackTable::ancestor_at_depth`]), while the log loads.
    #[serde(skip)]
    jump: Vec<u32>,
    /// Frames copied so far from references of the other kind, and the
    /// most that may be (see [`crate::limits::copied_frames`]; 0: no cap).
    #[serde(skip)]
    copied: u64,
    #[serde(skip)]
    copy_limit: u64,
    // Rows.
    /// By stack index: the row and a copy of its head and flags (one memory
    /// access per allocation).
    by_index: IndexSlots,
    index_of_row: Vec<u32>,
    node: Vec<u32>,
    info: Vec<RowInfo>,
    // Reader state.
    capacity: u64,
    max_index: i64,
    alloc_only: HashMap<(i32, i32), u32>,
    mapping: Option<Mapping>,
    /// No defined stack was ever redefined.
    stable: bool,
}

/// The part of a row every allocation reads, kept together (one cache line
/// per lookup).
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
struct RowInfo {
    /// The first two values of the list (type and size).
    head: [i32; 2],
    flags: u8,
}

/// A stack index's row with a copy of the row's head and flags.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Slot {
    head: [i32; 2],
    row: u32,
    flags: u8,
}

/// Slots by stack index: an array below 2^24, a hash map above.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct IndexSlots {
    dense: Vec<Slot>,
    sparse: HashMap<u32, Slot>,
    entries: usize,
}

const NO_ROW: u32 = u32::MAX;
const DENSE_INDICES: u32 = 1 << 24;

impl IndexSlots {
    #[inline]
    fn get(&self, index: u32) -> Option<Slot> {
        match self.dense.get(index as usize) {
            Some(s) if s.row != NO_ROW => Some(*s),
            Some(_) => None,
            None if self.sparse.is_empty() => None,
            None => self.sparse.get(&index).copied(),
        }
    }

    fn set(&mut self, index: u32, slot: Slot) {
        let i = index as usize;
        if let Some(s) = self.dense.get_mut(i) {
            if s.row == NO_ROW {
                self.entries += 1;
            }
            *s = slot;
            return;
        }
        if dense_enough(index as u64, self.entries, DENSE_INDICES as u64) {
            let n = (self.dense.len() * 2).clamp(i + 1, DENSE_INDICES as usize);
            self.dense.resize(n, Slot { head: [0, 0], row: NO_ROW, flags: 0 });
            let len = self.dense.len() as u32;
            let moved: Vec<(u32, Slot)> = self.sparse.iter().filter(|(&k, _)| k < len).map(|(&k, &v)| (k, v)).collect();
            for (k, v) in moved {
                self.sparse.remove(&k);
                self.dense[k as usize] = v;
            }
            self.dense[i] = slot;
            self.entries += 1;
        } else if self.sparse.insert(index, slot).is_none() {
            self.entries += 1;
        }
    }

    fn heap_bytes(&self) -> usize {
        self.dense.capacity() * std::mem::size_of::<Slot>() + self.sparse.capacity() * 20
    }

    fn shrink(&mut self) {
        self.dense.shrink_to_fit();
        self.sparse.shrink_to_fit();
    }
}

/// A prefetch hint for the cache line at `p`.
#[inline(always)]
fn prefetch_read(p: *const i8) {
    #[cfg(target_arch = "x86_64")]
    // Safety: a prefetch is a hint: it reads nothing into the program, never
    // faults, and `p` points into a live slice anyway.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// What an allocation needs from its stack.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AllocStack {
    pub row: StackRef,
    pub type_id: TypeId,
    pub size: u32,
}

impl StackTable {
    pub(crate) fn new() -> Self {
        let mut t = StackTable {
            parent: vec![0],
            frame: vec![-1],
            depth: vec![0],
            max_frame: vec![i32::MIN],
            jump: vec![0],
            copied: 0,
            copy_limit: 0,
            by_index: IndexSlots::default(),
            index_of_row: Vec::new(),
            node: Vec::new(),
            info: Vec::new(),
            capacity: INITIAL_CAPACITY,
            max_index: 0,
            alloc_only: HashMap::new(),
            mapping: None,
            stable: true,
        };
        // Index 0: the empty stack.
        let r = t.row_for_index(0);
        t.set_row(r, None, 0);
        t
    }

    // ----- the prefix tree

    /// Sets how many frames may be copied from references of the other
    /// kind (see [`crate::limits::copied_frames`]); only ever raised.
    pub(crate) fn allow_copies(&mut self, frames: u64) {
        self.copy_limit = self.copy_limit.max(frames);
    }

    fn add_node(&mut self, parent: u32, frame: i32) -> Result<u32, Problem> {
        let id = self.parent.len() as u32;
        let p = parent as usize;
        let depth = self.depth[p] + 1;
        if depth > crate::limits::MAX_STACK_DEPTH {
            return Err(Problem::StackTooDeep { limit: crate::limits::MAX_STACK_DEPTH });
        }
        if id == u32::MAX {
            return Err(Problem::TooMany { what: "stack frames" });
        }
        // The jump pointer (Myers' skew-binary scheme): the parent's jump's
        // jump when the parent's two jumps span equal depths, else the
        // parent. Any ancestor is then reached in O(log depth) steps.
        let jump = match self.jump.get(p) {
            Some(&j) if self.jump.len() == self.parent.len() => {
                let jj = self.jump[j as usize];
                let (dp, dj, djj) = (self.depth[p], self.depth[j as usize], self.depth[jj as usize]);
                if p != 0 && dp - dj == dj - djj {
                    jj
                } else {
                    parent
                }
            }
            _ => parent,
        };
        if self.jump.len() == self.parent.len() {
            self.jump.push(jump);
        }
        self.parent.push(parent);
        self.frame.push(frame);
        self.depth.push(depth);
        self.max_frame.push(self.max_frame[p].max(frame));
        Ok(id)
    }

    /// The ancestor of `node` at `depth` (at most `node`'s depth), in
    /// O(log depth) steps while the jump pointers are kept (the log
    /// loads), by parent steps afterwards.
    fn ancestor_at_depth(&self, mut node: u32, depth: u32) -> u32 {
        let jumps = self.jump.len() == self.parent.len();
        while self.depth[node as usize] > depth {
            let n = node as usize;
            node = if jumps && self.depth[self.jump[n] as usize] >= depth { self.jump[n] } else { self.parent[n] };
        }
        node
    }

    /// The frames of a path, outermost first.
    fn path(&self, mut node: u32) -> Vec<i32> {
        let mut v = Vec::with_capacity(self.depth[node as usize] as usize);
        while node != 0 {
            v.push(self.frame[node as usize]);
            node = self.parent[node as usize];
        }
        v.reverse();
        v
    }

    // ----- rows

    fn row_for_index(&mut self, index: u32) -> StackRef {
        if let Some(s) = self.by_index.get(index) {
            return StackRef(s.row);
        }
        let r = self.index_of_row.len() as u32;
        self.by_index.set(index, Slot { head: [0, 0], row: r, flags: 0 });
        self.index_of_row.push(index);
        self.node.push(0);
        self.info.push(RowInfo::default());
        StackRef(r)
    }

    /// The row holding a stack index, if any.
    pub(crate) fn row_of(&self, index: u32) -> Option<StackRef> {
        self.by_index.get(index).map(|s| StackRef(s.row))
    }

    fn set_row(&mut self, row: StackRef, head: Option<[i32; 2]>, node: u32) {
        let r = row.index();
        if self.info[r].flags & DEFINED != 0 {
            self.stable = false;
        }
        let mut flags = DEFINED;
        let first2 = match head {
            Some(h) => {
                flags |= HAS_HEAD | LONG_ENOUGH;
                h
            }
            None if self.depth[node as usize] >= 2 => {
                flags |= LONG_ENOUGH;
                let second = self.ancestor_at_depth(node, 2);
                let first = self.parent[second as usize];
                [self.frame[first as usize], self.frame[second as usize]]
            }
            None => [0, 0],
        };
        self.node[r] = node;
        self.info[r] = RowInfo { head: first2, flags };
        let index = self.index_of_row[r];
        self.by_index.set(index, Slot { head: first2, row: row.0, flags });
    }

    fn list_len(&self, row: usize) -> usize {
        let head = if self.info[row].flags & HAS_HEAD != 0 { 2 } else { 0 };
        head + self.depth[self.node[row] as usize] as usize
    }

    // ----- the reader's operations

    /// Maps a stack id of `!`, `a`, `c` or an `n` reference to a stack index.
    #[inline]
    pub(crate) fn map(&self, id: i32) -> Result<i64, Problem> {
        match &self.mapping {
            None => Ok(id as i64),
            Some(m) => {
                if id < 0 || id as u64 >= m.len {
                    return Err(Problem::StackIdOutOfRange { id: id as i64, limit: m.len });
                }
                Ok(match m.assigned.get(id as u64) {
                    Some(v) => v as i64,
                    None if (id as u64) < m.initial_len => id as i64,
                    None => 0,
                })
            }
        }
    }

    /// The row of a stack index that must exist (range-checked like the
    /// reader's `IndexToStacktrace`); `Ok(None)` when it is undefined.
    #[inline]
    fn defined_row(&self, index: i64, id: i64) -> Result<Option<usize>, Problem> {
        Ok(self.defined_slot(index, id)?.map(|s| s.row as usize))
    }

    #[inline]
    fn defined_slot(&self, index: i64, id: i64) -> Result<Option<Slot>, Problem> {
        if index < 0 || index as u64 >= self.capacity {
            return Err(Problem::StackIdOutOfRange { id, limit: self.capacity });
        }
        Ok(self.by_index.get(index as u32).filter(|s| s.flags & DEFINED != 0))
    }

    /// Asks the processor to fetch the slot of an allocation's stack id
    /// ahead of its use (a hint; it never changes a result).
    #[inline]
    pub(crate) fn prefetch(&self, id: StackId) {
        if self.mapping.is_none() && id.0 >= 0 {
            if let Some(slot) = self.by_index.dense.get(id.0 as usize) {
                prefetch_read(slot as *const Slot as *const i8);
            }
        }
    }

    /// Resolves the stack id of an allocation (T1-T4).
    #[inline]
    pub(crate) fn alloc_stack(&self, id: StackId) -> Result<AllocStack, Problem> {
        let index = self.map(id.0)?;
        let Some(slot) = self.defined_slot(index, id.0 as i64)? else {
            return Err(Problem::UndefinedStack { id: id.0 as i64, index });
        };
        if slot.flags & LONG_ENOUGH == 0 {
            return Err(Problem::ShortStack { index, len: self.list_len(slot.row as usize) });
        }
        let [t, s] = slot.head;
        Ok(AllocStack { row: StackRef(slot.row), type_id: TypeId(t), size: s as u32 })
    }

    /// Type and size of a row when read back for an object (the row must be
    /// defined with at least two elements; T17 otherwise).
    #[inline]
    pub(crate) fn object_stack(&self, row: StackRef) -> Result<(TypeId, u32), Problem> {
        let r = row.index();
        let f = self.info.get(r).map_or(0, |i| i.flags);
        if f & DEFINED == 0 {
            let index = self.index_of_row.get(r).copied().unwrap_or(0) as i64;
            return Err(Problem::UndefinedStack { id: -1, index });
        }
        if f & LONG_ENOUGH == 0 {
            return Err(Problem::ShortStack { index: self.index_of_row[r] as i64, len: self.list_len(r) });
        }
        let [t, s] = self.info[r].head;
        Ok((TypeId(t), s as u32))
    }

    /// The row counted by a `c` record (mapped; undefined indices count too).
    #[inline]
    pub(crate) fn call_row(&mut self, id: StackId) -> Result<StackRef, Problem> {
        let index = self.call_index(id)?;
        Ok(self.row_for_index(index))
    }

    /// Whether [`StackTable::call_row`] fails for `id` (it fails or not by
    /// the renumbering table alone, and changes nothing when it fails).
    pub(crate) fn call_check(&self, id: StackId) -> Result<(), Problem> {
        self.call_index(id).map(|_| ())
    }

    #[inline]
    fn call_index(&self, id: StackId) -> Result<u32, Problem> {
        let index = self.map(id.0)?;
        if index < 0 {
            return Err(Problem::NegativeStackId { id: id.0 as i64 });
        }
        Ok(index as u32)
    }

    /// An `n` record (section 2.3). `reference` is present when the record
    /// has one; `function_capacity` bounds the function ids a prefix copies.
    pub(crate) fn define_compressed(
        &mut self,
        id: StackId,
        flag: i32,
        alloc: Option<(TypeId, i32)>,
        reference: Option<StackId>,
        frames: impl Iterator<Item = FunctionId>,
        function_capacity: u64,
    ) -> Result<(), Problem> {
        let shared = flag / 4;
        let had = (flag & 2) as usize;
        let head = alloc.map(|(t, s)| [t.0, s]);
        let mut node = 0u32;
        if shared > 0 {
            if let Some(reference) = reference {
                let index = self.map(reference.0)?;
                let Some(r) = self.defined_row(index, reference.0 as i64)? else {
                    return Err(Problem::UndefinedReferenceStack { id: reference.0 as i64, index });
                };
                let ref_head = if self.info[r].flags & HAS_HEAD != 0 { 2 } else { 0 };
                let ref_len = self.list_len(r);
                let shared = (shared as i64).min(ref_len as i64 - had as i64);
                if shared > 0 {
                    let shared = shared as usize;
                    let ref_node = self.node[r];
                    if had == ref_head {
                        // The copied values are the first `shared` frames.
                        let anc = self.ancestor_at_depth(ref_node, shared as u32);
                        if self.max_frame[anc as usize] as i64 >= function_capacity as i64 {
                            let path = self.path(anc);
                            let bad = path.iter().find(|&&f| f as i64 >= function_capacity as i64).copied().unwrap_or(-1);
                            return Err(Problem::CopiedFunctionOutOfRange { function: bad as i64, limit: function_capacity });
                        }
                        node = anc;
                    } else {
                        // The reference's type and size are copied as
                        // function ids, or frames are copied from an offset:
                        // new nodes, within the log's allowance.
                        let copied = self.copied.saturating_add(shared as u64);
                        if self.copy_limit > 0 && copied > self.copy_limit {
                            return Err(Problem::OverMemoryRule {
                                what: "stack frames copied from reference stacks of the other kind",
                                count: copied,
                                limit: self.copy_limit,
                            });
                        }
                        self.copied = copied;
                        let mut list = Vec::with_capacity(ref_len);
                        if ref_head == 2 {
                            list.extend_from_slice(&self.info[r].head);
                        }
                        list.extend(self.path(ref_node));
                        for &f in &list[had..had + shared] {
                            if f < 0 || f as u64 >= function_capacity {
                                return Err(Problem::CopiedFunctionOutOfRange { function: f as i64, limit: function_capacity });
                            }
                        }
                        for &f in &list[had..had + shared] {
                            node = self.add_node(node, f)?;
                        }
                    }
                }
            }
        }
        for f in frames {
            node = self.add_node(node, f.0)?;
        }
        self.add(id, head, node, alloc.is_some())
    }

    /// An `s` record (frames only).
    pub(crate) fn define_plain(&mut self, id: StackId, frames: impl Iterator<Item = FunctionId>) -> Result<(), Problem> {
        let mut node = 0u32;
        for f in frames {
            node = self.add_node(node, f.0)?;
        }
        self.add(id, None, node, false)
    }

    fn create_mapping(&mut self) {
        self.mapping = Some(Mapping { len: self.capacity, initial_len: self.capacity, assigned: IdMap::new() });
    }

    /// Section 2.4: stores a stack under its id or a new index.
    fn add(&mut self, id: StackId, head: Option<[i32; 2]>, node: u32, is_alloc: bool) -> Result<(), Problem> {
        if id.0 < 0 {
            return Err(Problem::StackIdOutOfRange { id: id.0 as i64, limit: self.capacity });
        }
        let alloc_only = is_alloc && node == 0;
        let key = head.map(|h| (h[0], h[1]));
        if alloc_only {
            if let Some(&existing) = key.as_ref().and_then(|k| self.alloc_only.get(k)) {
                if self.mapping.is_none() {
                    self.create_mapping();
                }
                if let Some(m) = self.mapping.as_mut() {
                    m.grow_to(id.0 as u64);
                    m.assigned.insert(id.0 as u64, existing);
                }
                return Ok(());
            }
        }
        let mut index = id.0 as i64;
        if let Some(m) = self.mapping.as_mut() {
            index = self.max_index + 1;
            if index > u32::MAX as i64 - 1 {
                return Err(Problem::TooMany { what: "stack indices" });
            }
            m.grow_to(id.0 as u64);
            m.assigned.insert(id.0 as u64, index as u32);
        }
        if alloc_only {
            if let Some(k) = key {
                self.alloc_only.insert(k, index as u32);
            }
        }
        self.store(index as u32, head, node);
        Ok(())
    }

    fn store(&mut self, index: u32, head: Option<[i32; 2]>, node: u32) {
        while self.capacity <= index as u64 {
            self.capacity *= 2;
        }
        let row = self.row_for_index(index);
        self.set_row(row, head, node);
        self.max_index = self.max_index.max(index as i64);
    }

    /// Section 2.6: the stack index an `o` record uses for an object that is
    /// not live with the same type.
    pub(crate) fn type_size_index(&mut self, type_id: TypeId, size: i32) -> StackRef {
        if let Some(&i) = self.alloc_only.get(&(type_id.0, size)) {
            if i > 0 {
                if let Some(r) = self.row_of(i) {
                    return r;
                }
            }
        }
        if self.mapping.is_none() {
            self.create_mapping();
        }
        let index = (self.max_index + 1).min(u32::MAX as i64) as u32;
        self.alloc_only.insert((type_id.0, size), index);
        self.store(index, Some([type_id.0, size]), 0);
        self.row_for_index(index)
    }

    // ----- queries

    /// Number of rows (stack indices used, including undefined ones counted
    /// by histograms).
    pub fn len(&self) -> usize {
        self.index_of_row.len()
    }

    /// True when the table has no row (never: row 0 is the empty stack).
    pub fn is_empty(&self) -> bool {
        self.index_of_row.is_empty()
    }

    /// CLRProfiler's `stacktrace_table_length`: the largest stack index
    /// plus one.
    pub fn reader_table_length(&self) -> u64 {
        self.max_index as u64 + 1
    }

    /// True while no defined stack was redefined: objects keep the type and
    /// size they were placed with, so the simulation need not read them back.
    #[inline]
    pub fn stable(&self) -> bool {
        self.stable
    }

    /// Whether the renumbering table exists.
    pub fn renumbered(&self) -> bool {
        self.mapping.is_some()
    }

    /// The stack index of a row.
    pub fn stack_index(&self, row: StackRef) -> u32 {
        self.index_of_row[row.index()]
    }

    /// Whether a stack was defined at this row's index.
    pub fn is_defined(&self, row: StackRef) -> bool {
        self.info.get(row.index()).is_some_and(|i| i.flags & DEFINED != 0)
    }

    /// Whether the row was declared as an allocation stack (type and size
    /// first).
    pub fn is_allocation_stack(&self, row: StackRef) -> bool {
        self.info.get(row.index()).is_some_and(|i| i.flags & HAS_HEAD != 0)
    }

    /// The type and size an object allocated with this row has: the first two
    /// values of the stack (for a frames-only stack of two or more frames,
    /// its first two function ids, as CLRProfiler reads them).
    pub fn type_and_size(&self, row: StackRef) -> Option<(TypeId, i32)> {
        let r = row.index();
        let f = self.info.get(r)?.flags;
        (f & DEFINED != 0 && f & LONG_ENOUGH != 0).then(|| (TypeId(self.info[r].head[0]), self.info[r].head[1]))
    }

    /// The leaf node of a row's frames.
    pub fn leaf(&self, row: StackRef) -> FrameNode {
        FrameNode(self.node[row.index()])
    }

    /// A node's parent (the root is its own parent).
    pub fn parent(&self, node: FrameNode) -> FrameNode {
        FrameNode(self.parent[node.index()])
    }

    /// A node's function id (the root has none).
    pub fn function(&self, node: FrameNode) -> Option<FunctionId> {
        (node.0 != 0).then(|| FunctionId(self.frame[node.index()]))
    }

    /// The frames of a row, innermost first.
    pub fn frames(&self, row: StackRef) -> impl Iterator<Item = FunctionId> + '_ {
        let mut n = self.node[row.index()];
        std::iter::from_fn(move || {
            if n == 0 {
                return None;
            }
            let f = self.frame[n as usize];
            n = self.parent[n as usize];
            Some(FunctionId(f))
        })
    }

    /// The whole list of a row as CLRProfiler stores it: type and size for an
    /// allocation stack, then frames outermost first.
    pub fn list(&self, row: StackRef) -> Vec<i32> {
        let r = row.index();
        let mut v = Vec::new();
        if self.info[r].flags & HAS_HEAD != 0 {
            v.extend_from_slice(&self.info[r].head);
        }
        v.extend(self.path(self.node[r]));
        v
    }

    /// Nodes in the prefix tree.
    pub fn node_count(&self) -> usize {
        self.parent.len()
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.parent.capacity() * 16
            + self.jump.capacity() * 4
            + self.by_index.heap_bytes()
            + self.index_of_row.capacity() * 4
            + self.node.capacity() * 4
            + self.info.capacity() * std::mem::size_of::<RowInfo>()
            + self.alloc_only.capacity() * 12
            + self.mapping.as_ref().map_or(0, |m| m.assigned.heap_bytes())
    }

    pub(crate) fn shrink(&mut self) {
        self.parent.shrink_to_fit();
        self.frame.shrink_to_fit();
        self.depth.shrink_to_fit();
        self.max_frame.shrink_to_fit();
        // Only the builder looks up ancestors.
        self.jump = Vec::new();
        self.by_index.shrink();
        self.index_of_row.shrink_to_fit();
        self.node.shrink_to_fit();
        self.info.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(t: &mut StackTable, id: i32, flag: i32, alloc: Option<(i32, i32)>, r: Option<i32>, frames: &[i32]) {
        t.define_compressed(
            StackId(id),
            flag,
            alloc.map(|(a, b)| (TypeId(a), b)),
            r.map(StackId),
            frames.iter().map(|&f| FunctionId(f)),
            1000,
        )
        .unwrap();
    }

    #[test]
    fn sample_all_kinds_numbering() {
        // Section 2.8 of docs/src/reference-reader.md.
        let mut t = StackTable::new();
        n(&mut t, 1, 0, None, None, &[1]);
        n(&mut t, 2, 4, None, Some(1), &[2]);
        n(&mut t, 3, 1, Some((1, 28)), None, &[1, 2]);
        n(&mut t, 4, 11, Some((2, 64)), Some(3), &[]);
        n(&mut t, 5, 7, Some((3, 24)), Some(4), &[3]);
        n(&mut t, 6, 7, Some((4, 1036)), Some(5), &[2]);
        n(&mut t, 7, 1, Some((1, 28)), None, &[]);
        n(&mut t, 8, 1, Some((1, 28)), None, &[]);
        assert!(t.renumbered());
        n(&mut t, 9, 7, Some((4, 100000)), Some(6), &[2]);
        n(&mut t, 10, 7, Some((5, 20)), Some(9), &[2]);
        let list = |t: &StackTable, id: i32| {
            let idx = t.map(id).unwrap();
            t.list(t.row_of(idx as u32).unwrap())
        };
        assert_eq!(list(&t, 4), vec![2, 64, 1, 2]);
        assert_eq!(list(&t, 5), vec![3, 24, 1, 3]);
        assert_eq!(list(&t, 6), vec![4, 1036, 1, 2]);
        assert_eq!(t.map(8).unwrap(), 7);
        assert_eq!(t.map(9).unwrap(), 8);
        assert_eq!(list(&t, 9), vec![4, 100000, 1, 2]);
        assert_eq!(t.map(10).unwrap(), 9);
        assert_eq!(list(&t, 10), vec![5, 20, 1, 2]);
        let r = t.type_size_index(TypeId(3), 24);
        assert_eq!(t.stack_index(r), 10);
        assert_eq!(t.reader_table_length(), 11);
        let a = t.alloc_stack(StackId(10)).unwrap();
        assert_eq!((a.type_id, a.size), (TypeId(5), 20));
    }

    #[test]
    fn errors() {
        let mut t = StackTable::new();
        assert!(matches!(t.alloc_stack(StackId(7)), Err(Problem::UndefinedStack { .. })));
        assert!(matches!(t.alloc_stack(StackId(0)), Err(Problem::ShortStack { .. })));
        assert!(matches!(t.alloc_stack(StackId(5000)), Err(Problem::StackIdOutOfRange { .. })));
        let e = t.define_compressed(StackId(2), 4, None, Some(StackId(1)), std::iter::empty(), 1000);
        assert!(matches!(e, Err(Problem::UndefinedReferenceStack { .. })));
        n(&mut t, 1, 0, None, None, &[5000]);
        let e = t.define_compressed(StackId(2), 4, None, Some(StackId(1)), std::iter::empty(), 1000);
        assert!(matches!(e, Err(Problem::CopiedFunctionOutOfRange { function: 5000, .. })));
        // A frames-only stack of two frames serves as type and size.
        n(&mut t, 3, 0, None, None, &[4, 16]);
        let a = t.alloc_stack(StackId(3)).unwrap();
        assert_eq!((a.type_id, a.size), (TypeId(4), 16));
    }

    #[test]
    fn ancestors_by_jump_pointers_equal_parent_walks() {
        let mut t = StackTable::new();
        let mut nodes: Vec<u32> = vec![0];
        for i in 1..400usize {
            // Mostly one long chain, with branches off earlier nodes.
            let parent = if i % 7 == 3 { nodes[i / 2] } else { nodes[i - 1] };
            nodes.push(t.add_node(parent, i as i32).unwrap());
        }
        for &n in &nodes {
            for d in 0..=t.depth[n as usize] {
                let mut m = n;
                while t.depth[m as usize] > d {
                    m = t.parent[m as usize];
                }
                assert_eq!(t.ancestor_at_depth(n, d), m, "node {n} depth {d}");
            }
        }
    }

    #[test]
    fn copies_from_the_other_kind_stop_at_the_allowance() {
        let mut t = StackTable::new();
        t.allow_copies(10);
        n(&mut t, 1, 0, None, None, &[1, 2, 3, 4, 5, 6, 7, 8]);
        // Frames from offset 2 of a frames-only stack: copied (6 frames).
        n(&mut t, 2, 8 * 4 + 2, None, Some(1), &[]);
        assert_eq!(t.list(t.row_of(2).unwrap()), vec![3, 4, 5, 6, 7, 8]);
        let e = t.define_compressed(StackId(3), 8 * 4 + 2, None, Some(StackId(1)), std::iter::empty(), 1000);
        assert!(matches!(e, Err(Problem::OverMemoryRule { count: 12, limit: 10, .. })), "{e:?}");
        // Shared prefixes of the same kind cost nothing.
        for id in 4..100 {
            n(&mut t, id, 8 * 4, None, Some(1), &[9]);
        }
    }
}
