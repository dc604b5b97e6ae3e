//! Heap dumps: `e`/`r` roots and `o` objects (section 6.3 of
//! `docs/src/reference-reader.md`).
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
use crate::format::records::ROOT_WEAK;
use crate::format::{Address, TypeId};

/// A GC root of a dump.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
    /// For an object without a simulated match: its lineage, the position
    /// (among all dump objects of the table) of its first appearance. An
    /// object of an earlier dump followed through the GCs' `u`/`v` records
    /// to this one's address, with the same type and size, passes its
    /// lineage on, so the same lineage in two dumps is the same object.
    /// `None` for matched objects (and in tables saved without lineages).
    pub lineage: Option<u32>,
}

/// One dump.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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

/// The dumps and their objects, as columns. References are kept as
/// varints of their (zigzagged) distance to the referring object's address:
///
/// ```text
/// addresses [u64]   types [i32]   sizes [u32]   stacks [u32]   objects [u32 or none]
/// ref_start [u32] -> refs bytes: varint(zigzag(ref - address))...
/// ```
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct HeapDumpTable {
    dumps: Vec<HeapDump>,
    roots: Vec<DumpRoot>,
    addresses: Vec<u64>,
    types: Vec<i32>,
    sizes: Vec<u32>,
    stacks: Vec<u32>,
    objects: Vec<u32>,
    /// Lineages of the objects without a simulated match (`NO_OBJECT` for
    /// the others).
    #[serde(default)]
    lineages: Vec<u32>,
    ref_start: Vec<u32>,
    refs: Vec<u8>,
    events: EventTicks,
    root_names: Vec<(i32, i32)>,
    /// Static fields named as roots (clrprof's `d 0 0xID static
    /// Class.field` lines): (root id, `Class.field`), sorted by id.
    #[serde(default)]
    static_names: Vec<(u64, String)>,
}

const NO_OBJECT: u32 = u32::MAX;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(b: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let x = *b.get(*pos)?;
        *pos += 1;
        v |= ((x & 0x7F) as u64) << shift;
        shift += 7;
        if x & 0x80 == 0 || shift >= 64 {
            return Some(v);
        }
    }
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
        let (r, o) = (self.roots.len() as u32, self.addresses.len() as u32);
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

    /// Adds a root; a weak one (flag 2) is kept for the queries but, as
    /// CLRProfiler's reader skips it, creates no root type.
    pub(crate) fn add_root(&mut self, root: DumpRoot) {
        let name = (root.kind, root.flags & !ROOT_WEAK);
        if root.flags & ROOT_WEAK == 0 && !self.root_names.contains(&name) {
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
        self.addresses.push(o.address.0);
        self.types.push(o.type_id.0);
        self.sizes.push(o.size);
        self.stacks.push(o.stack.0);
        self.objects.push(o.object.map_or(NO_OBJECT, |x| x.0));
        self.lineages.push(o.lineage.unwrap_or(NO_OBJECT));
        self.ref_start.push(self.refs.len() as u32);
        for r in refs {
            let d = r.wrapping_sub(o.address.0) as i64;
            put_varint(&mut self.refs, ((d << 1) ^ (d >> 63)) as u64);
        }
        let n = self.addresses.len() as u32;
        self.current().objects.1 = n;
    }

    /// What the dump follower keeps of the object at `position`: (address,
    /// type id, size, lineage), `None` out of range or for an object with
    /// a simulated match (no lineage).
    pub(crate) fn followed(&self, position: u32) -> Option<(u64, i32, u32, u32)> {
        let k = position as usize;
        let lineage = *self.lineages.get(k)?;
        (lineage != NO_OBJECT).then(|| (self.addresses[k], self.types[k], self.sizes[k], lineage))
    }

    /// The position the next object added will have (a fresh lineage).
    pub(crate) fn next_position(&self) -> u32 {
        self.addresses.len() as u32
    }

    /// Names a static field's root id (a later name for the same id
    /// replaces the earlier one).
    pub(crate) fn name_static(&mut self, id: u64, name: String) {
        self.static_names.push((id, name));
    }

    /// The `Class.field` a root id stands for, when the log named it.
    pub fn static_name(&self, id: u64) -> Option<&str> {
        let k = self.static_names.partition_point(|(i, _)| *i <= id);
        k.checked_sub(1).and_then(|k| self.static_names.get(k)).filter(|(i, _)| *i == id).map(|(_, n)| n.as_str())
    }

    pub(crate) fn finish(&mut self) {
        // Sorted by id, the last name given to an id last (a stable sort).
        self.static_names.sort_by_key(|(id, _)| *id);
        self.static_names.shrink_to_fit();
        self.ref_start.push(self.refs.len() as u32);
        self.addresses.shrink_to_fit();
        self.types.shrink_to_fit();
        self.sizes.shrink_to_fit();
        self.stacks.shrink_to_fit();
        self.objects.shrink_to_fit();
        self.lineages.shrink_to_fit();
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

    /// The roots of a dump: every `e` root with a non-zero address (weak
    /// ones included: CLRProfiler's object graph leaves those out, and so
    /// do the graph queries) and, before any `e`, the `r` roots (kind `-1`).
    pub fn roots(&self, d: &HeapDump) -> &[DumpRoot] {
        &self.roots[d.roots.0 as usize..d.roots.1 as usize]
    }

    fn object_at(&self, i: usize) -> Option<DumpObject> {
        Some(DumpObject {
            address: Address(*self.addresses.get(i)?),
            type_id: TypeId(self.types[i]),
            size: self.sizes[i],
            stack: StackRef(self.stacks[i]),
            object: (self.objects[i] != NO_OBJECT).then(|| ObjectId(self.objects[i])),
            lineage: self.lineages.get(i).copied().filter(|&l| l != NO_OBJECT),
        })
    }

    /// Number of objects of a dump.
    pub fn object_count(&self, d: &HeapDump) -> usize {
        (d.objects.1 - d.objects.0) as usize
    }

    /// The `k`-th object of a dump.
    pub fn object(&self, d: &HeapDump, k: usize) -> Option<DumpObject> {
        if k >= self.object_count(d) {
            return None;
        }
        self.object_at(d.objects.0 as usize + k)
    }

    /// The objects of a dump, in log order.
    pub fn objects<'a>(&'a self, d: &HeapDump) -> impl Iterator<Item = DumpObject> + 'a {
        (d.objects.0 as usize..d.objects.1 as usize).filter_map(move |i| self.object_at(i))
    }

    /// The references of the `k`-th object of a dump.
    pub fn references(&self, d: &HeapDump, k: usize) -> Vec<u64> {
        self.reference_iter(d, k).collect()
    }

    /// The references of the `k`-th object of a dump, decoded as they are
    /// read (nothing allocated); empty when `k` is out of range.
    pub fn reference_iter<'a>(&'a self, d: &HeapDump, k: usize) -> impl Iterator<Item = u64> + 'a {
        let i = d.objects.0 as usize + k;
        let in_dump = k < self.object_count(d);
        let (pos, end, address) = match (self.ref_start.get(i), self.addresses.get(i)) {
            (Some(&a), Some(&address)) if in_dump => {
                (a as usize, self.ref_start.get(i + 1).map_or(self.refs.len(), |&b| b as usize), address)
            }
            _ => (0, 0, 0),
        };
        let mut pos = pos;
        std::iter::from_fn(move || {
            if pos >= end {
                return None;
            }
            let z = get_varint(&self.refs, &mut pos)?;
            let d = ((z >> 1) as i64) ^ -((z & 1) as i64);
            Some(address.wrapping_add(d as u64))
        })
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.addresses.capacity() * 8
            + (self.types.capacity()
                + self.sizes.capacity()
                + self.stacks.capacity()
                + self.objects.capacity()
                + self.lineages.capacity())
                * 4
            + self.roots.capacity() * std::mem::size_of::<DumpRoot>()
            + self.ref_start.capacity() * 4
            + self.refs.capacity()
            + self.dumps.iter().map(|d| d.matched.heap_bytes()).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_and_references_round_trip() {
        let mut t = HeapDumpTable::new();
        t.start(TickIndex(3));
        let objs = [
            (0x2_1300_0010_00u64, vec![0x2_1300_0010_40u64, 0x2_1300_0000_08, 0]),
            (0x2_1300_0010_40, vec![]),
            (0x10, vec![u64::MAX, 0x2_1300_0010_00]),
        ];
        for (k, (a, refs)) in objs.iter().enumerate() {
            let o = DumpObject {
                address: Address(*a),
                type_id: TypeId(k as i32),
                size: 24,
                stack: StackRef(k as u32),
                object: (k == 1).then_some(ObjectId(9)),
                lineage: (k != 1).then_some(k as u32),
            };
            t.add_object(o, refs.iter().copied());
        }
        t.finish();
        let d = &t.dumps()[0];
        assert_eq!(t.object_count(d), 3);
        for (k, (a, refs)) in objs.iter().enumerate() {
            assert_eq!(t.object(d, k).map(|o| o.address.0), Some(*a));
            assert_eq!(&t.references(d, k), refs);
        }
        assert_eq!(t.objects(d).filter(|o| o.object.is_some()).count(), 1);
        assert_eq!(d.matched.total(), 1);
    }
}
