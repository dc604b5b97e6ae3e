//! Heap dumps: `e`/`r` roots and `o` objects (section 6.3 of
//! `docs/reference-reader.md`).
//!
//! A dump starts at an `e` or `r` record not immediately preceded by
//! another one; it counts as a heap dump only if its tick index is later
//! than the previous counted dump's. Objects (`o` records) that name a live
//! simulated object of the same type are counted per stack row for that
//! dump. `o` records before any dump belong to an initial object graph
//! (CLRProfiler's main window creates one before reading), kept here as
//! dump entry with `started == false`.

use super::gc::EventTicks;
use super::histogram::StackCounts;
use super::ids::{ObjectId, StackRef, TickIndex};
use crate::format::{Address, TypeId};

/// A GC root of a dump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DumpRoot {
    /// The referenced object.
    pub address: Address,
    /// The root kind code (`e` records; `-1` for `r` records).
    pub kind: i32,
    /// The root flags (`e` records).
    pub flags: i32,
    /// The root id (`e` records).
    pub id: u64,
}

/// One object of a dump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DumpObject {
    /// Its address.
    pub address: Address,
    /// Its type as the record says.
    pub type_id: TypeId,
    /// Its size as the record says.
    pub size: u32,
    /// The stack row: the live object's allocation stack when it matched,
    /// else the type-and-size row CLRProfiler creates for it.
    pub stack: StackRef,
    /// The simulated object it matched (same address and type).
    pub object: Option<ObjectId>,
}

/// One dump.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeapDump {
    /// Its tick index.
    pub tick: TickIndex,
    /// Started by an `e`/`r` record (false for the initial graph).
    pub started: bool,
    /// Counted as a heap dump (its tick is later than the previous one's).
    pub counted: bool,
    /// Matched objects per stack row.
    pub matched: StackCounts,
    roots: (u32, u32),
    objects: (u32, u32),
}

/// The dumps and their objects, as columns.
#[derive(Clone, Debug, Default)]
pub struct HeapDumpTable {
    dumps: Vec<HeapDump>,
    roots: Vec<DumpRoot>,
    objects: Vec<DumpObject>,
    ref_start: Vec<u32>,
    refs: Vec<u64>,
    events: EventTicks,
    root_names: Vec<(i32, i32)>,
}

impl HeapDumpTable {
    pub(crate) fn new() -> Self {
        let mut t = HeapDumpTable::default();
        t.dumps.push(HeapDump {
            tick: TickIndex(0),
            started: false,
            counted: false,
            matched: StackCounts::default(),
            roots: (0, 0),
            objects: (0, 0),
        });
        t
    }

    /// A dump starts.
    pub(crate) fn start(&mut self, tick: TickIndex) {
        let counted = self.events.add(tick.0);
        let (r, o) = (self.roots.len() as u32, self.objects.len() as u32);
        self.dumps.push(HeapDump {
            tick,
            started: true,
            counted,
            matched: StackCounts::default(),
            roots: (r, r),
            objects: (o, o),
        });
        self.root_names.clear();
    }

    /// Whether any dump was started.
    pub(crate) fn any_started(&self) -> bool {
        self.dumps.len() > 1
    }

    /// Whether the current object graph has a negative type id (`-1` is its
    /// unknown type; root kinds take `-2`, `-3`, ...).
    pub(crate) fn knows_negative_type(&self, type_id: i32) -> bool {
        type_id == -1 || (type_id < -1 && ((-(type_id as i64)) - 1) as usize <= self.root_names.len())
    }

    fn current(&mut self) -> &mut HeapDump {
        let n = self.dumps.len();
        &mut self.dumps[n - 1]
    }

    pub(crate) fn add_root(&mut self, root: DumpRoot) {
        let name = (root.kind, root.flags & !2);
        if !self.root_names.contains(&name) {
            self.root_names.push(name);
        }
        self.roots.push(root);
        let n = self.roots.len() as u32;
        self.current().roots.1 = n;
    }

    pub(crate) fn add_object(&mut self, o: DumpObject, refs: impl Iterator<Item = u64>) {
        if o.object.is_some() {
            self.current().matched.add(o.stack);
        }
        self.objects.push(o);
        self.ref_start.push(self.refs.len() as u32);
        self.refs.extend(refs);
        let n = self.objects.len() as u32;
        self.current().objects.1 = n;
    }

    pub(crate) fn finish(&mut self) {
        self.ref_start.push(self.refs.len() as u32);
        self.objects.shrink_to_fit();
        self.refs.shrink_to_fit();
        self.ref_start.shrink_to_fit();
        self.roots.shrink_to_fit();
        for d in &mut self.dumps {
            d.matched.shrink();
        }
    }

    /// Dumps started by `e`/`r` records, in log order.
    pub fn dumps(&self) -> &[HeapDump] {
        &self.dumps[1..]
    }

    /// The initial object graph (`o` records before any dump).
    pub fn initial(&self) -> &HeapDump {
        &self.dumps[0]
    }

    /// Counted heap dumps (the Summary figure).
    pub fn counted(&self) -> usize {
        self.events.len()
    }

    /// The roots of a dump.
    pub fn roots(&self, d: &HeapDump) -> &[DumpRoot] {
        &self.roots[d.roots.0 as usize..d.roots.1 as usize]
    }

    /// The objects of a dump.
    pub fn objects(&self, d: &HeapDump) -> &[DumpObject] {
        &self.objects[d.objects.0 as usize..d.objects.1 as usize]
    }

    /// The references of the `i`-th object of the table (an index into the
    /// concatenation of every dump's objects: `d.objects` start + k).
    pub fn references(&self, d: &HeapDump, k: usize) -> &[u64] {
        let i = d.objects.0 as usize + k;
        match (self.ref_start.get(i), self.ref_start.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.refs[a as usize..b as usize],
            (Some(&a), None) => &self.refs[a as usize..],
            _ => &[],
        }
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.objects.capacity() * std::mem::size_of::<DumpObject>()
            + self.roots.capacity() * std::mem::size_of::<DumpRoot>()
            + self.ref_start.capacity() * 4
            + self.refs.capacity() * 8
            + self.dumps.iter().map(|d| d.matched.heap_bytes()).sum::<usize>()
    }
}
