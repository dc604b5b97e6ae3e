//! An independent replay of a generated log, for the generator's tests.
//!
//! It shares no code with the generator: it reads the log with the format
//! layer's reader and rebuilds what happened with plain maps (a `BTreeMap`
//! heap keyed by address), checking on the way that the log is
//! heap-consistent in the sense CLRProfiler's reader needs:
//!
//! - every stack is defined once, before use, and allocation stacks are
//!   distinct (type, size, frames);
//! - a new object never overlaps a live object;
//! - at a GC start every object lies inside the range of its generation;
//! - `u` and `v` ranges are tiled exactly by live objects of condemned
//!   generations, and a moved object never lands on a survivor;
//! - an `l` line names the start of a live object;
//! - after a GC's end every object lies inside the end line's ranges;
//! - a heap dump lists exactly the objects alive after its GC, with
//!   references to listed objects only.
//!
//! Figures CLRProfiler derives from its tick indices (induced GCs, heap
//! sizes, heap dumps) are recounted with a small model of its time slots:
//! a tick read as signed 32-bit, unwrapped when more than 2^31 ms before
//! the newest slot, ignored when earlier, a new slot when at least 1 ms
//! later; a comment takes a slot; a GC start or dump counts when its slot
//! is later than the previous one's.

#![allow(dead_code)]

use clrprof::format::records::GenerationRange;
use clrprof::format::{read_all, Record};
use std::collections::{BTreeMap, HashMap, HashSet};

/// A live object in the replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Live {
    pub type_id: i32,
    pub size: u64,
}

/// Per-type counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub objects: u64,
    pub bytes: u64,
}

impl Tally {
    fn add(&mut self, bytes: u64) {
        self.objects += 1;
        self.bytes += bytes;
    }
}

/// Everything the replay counted.
#[derive(Debug, Default)]
pub struct Recount {
    pub allocated: HashMap<i32, Tally>,
    pub allocated_total: Tally,
    pub relocated: HashMap<i32, Tally>,
    pub relocated_total: Tally,
    pub reclaimed: HashMap<i32, Tally>,
    pub reclaimed_by_gen: [Tally; 4],
    pub finalized: u64,
    pub critical_finalized: u64,
    pub gcs_by_condemned: [u64; 3],
    pub induced: u64,
    /// Induced GCs whose start CLRProfiler counts.
    pub induced_counted: u64,
    pub g_lines: Vec<[i32; 3]>,
    pub handles_created: u64,
    pub handles_destroyed: u64,
    pub handles_surviving: u64,
    pub comments: u64,
    pub heap_dumps: u64,
    /// Heap dumps CLRProfiler counts.
    pub heap_dumps_counted: u64,
    pub dump_objects: u64,
    pub final_heap: HashMap<i32, Tally>,
    pub final_heap_total: Tally,
    /// Mean range length per generation over the counted GCs that
    /// condemned it (CLRProfiler's Summary heap sizes), or the last end
    /// line's sizes.
    pub heap_bytes: [u64; 4],
    /// CLRProfiler counted at least one GC (else its heap sizes, induced
    /// and finalized counts are "Unknown").
    pub heap_bytes_known: bool,
    pub ticks: Vec<u32>,
    pub type_names: HashMap<i32, String>,
    pub stacks: usize,
    pub max_address: u64,
}

/// A stack: the allocated type and size (allocation stacks), and frames.
type Stack = (Option<(i32, i32)>, Vec<i32>);

fn range_of(ranges: &[GenerationRange], addr: u64, size: u64) -> Option<i32> {
    ranges
        .iter()
        .find(|r| addr >= r.start.0 && addr + size <= r.start.0 + r.length && r.length > 0)
        .map(|r| r.generation)
}

fn sizes(ranges: &[GenerationRange]) -> [u64; 4] {
    let mut s = [0u64; 4];
    for r in ranges {
        s[r.generation as usize] += r.length;
    }
    s
}

/// The objects exactly tiling `[start, start + len)`, or a panic.
fn tiles(heap: &BTreeMap<u64, Live>, start: u64, len: u64, what: &str) -> Vec<(u64, Live)> {
    let mut out = Vec::new();
    let mut at = start;
    for (&a, &o) in heap.range(start..start + len) {
        assert_eq!(a, at, "{what} [{start:#x}, +{len}): gap or overlap at {at:#x}");
        out.push((a, o));
        at = a + o.size;
    }
    assert_eq!(at, start + len, "{what} [{start:#x}, +{len}) is not covered by live objects");
    out
}

/// Replays a log; panics at the first inconsistency.
pub fn replay(log: &[u8]) -> Recount {
    let (records, warnings) = read_all(log);
    assert_eq!(warnings.total(), 0, "the reader warned: {:?}", warnings.warnings().first());
    let mut rc = Recount::default();
    let mut types: HashMap<i32, (String, bool)> = HashMap::new();
    let mut stacks: HashMap<i32, Stack> = HashMap::new();
    let mut distinct: HashSet<Stack> = HashSet::new();
    let mut functions: HashSet<i32> = HashSet::new();
    let mut heap: BTreeMap<u64, Live> = BTreeMap::new();
    let mut handles: HashMap<u64, ()> = HashMap::new();
    // The GC in progress.
    let mut start_ranges: Vec<GenerationRange> = Vec::new();
    let mut condemned = -1i32;
    let mut in_gc = false;
    let mut survivors: HashSet<u64> = HashSet::new();
    let mut dump: Option<HashMap<u64, Live>> = None;
    let mut dump_refs: Vec<u64> = Vec::new();
    let mut dump_roots: Vec<u64> = Vec::new();
    let mut cumulative = [0u64; 4];
    let mut counted = [0u64; 4];
    let mut last_sizes = [0u64; 4];
    let mut start_sizes = [0u64; 4];
    let mut last_start_tick: Option<i64> = None;
    // CLRProfiler's time slots.
    let mut slot_time: i64 = 0;
    let mut slots: u64 = 1;
    let mut last_counted_start: Option<u64> = None;
    let mut last_counted_dump: Option<u64> = None;
    let mut counted_gc = false;

    for p in &records {
        match p.record {
            Record::Type(t) => {
                let fin = t.finalizable.unwrap_or(false);
                assert!(types.insert(t.id.0, (t.decoded_name(), fin)).is_none(), "type {} defined twice", t.id);
                rc.type_names.insert(t.id.0, t.decoded_name());
            }
            Record::Function(f) => {
                assert!(functions.insert(f.id.0), "function {} defined twice", f.id);
                if f.id.0 != 0 {
                    assert!(f.stack.0 == 0 || stacks.contains_key(&f.stack.0), "f {}: undefined stack {}", f.id, f.stack);
                }
            }
            Record::Stack(n) => {
                assert!(!stacks.contains_key(&n.id.0), "stack {} defined twice", n.id);
                let mut frames = Vec::new();
                let shared = n.shared_frames();
                if shared > 0 {
                    let r = n.reference.expect("a reference stack when flag >= 4");
                    let (ralloc, rframes) = stacks.get(&r.0).unwrap_or_else(|| panic!("n {}: undefined reference {}", n.id, r));
                    assert_eq!(n.reference_is_alloc(), ralloc.is_some(), "n {}: flag bit 2 disagrees with stack {}", n.id, r);
                    assert!(shared as usize <= rframes.len());
                    frames.extend_from_slice(&rframes[..shared as usize]);
                }
                for f in n.frames.iter() {
                    assert!(functions.contains(&f.0), "n {}: undefined function {}", n.id, f);
                    frames.push(f.0);
                }
                if let Some((t, _)) = n.alloc {
                    assert!(types.contains_key(&t.0), "n {}: undefined type {}", n.id, t);
                }
                let key = (n.alloc.map(|(t, s)| (t.0, s)), frames);
                assert!(distinct.insert(key.clone()), "stack {} duplicates an earlier one", n.id);
                stacks.insert(n.id.0, key);
            }
            Record::Alloc(a) => {
                assert!(a.thread.is_some());
                let (alloc, _) = stacks.get(&a.stack.0).unwrap_or_else(|| panic!("! with undefined stack {}", a.stack));
                let (type_id, size) = alloc.expect("an allocation stack");
                let size = size as u64;
                assert!(size >= 12, "objects of {size} bytes are invisible to CLRProfiler");
                let addr = a.address.0;
                rc.max_address = rc.max_address.max(addr + size);
                if let Some((&b, o)) = heap.range(..addr).next_back() {
                    assert!(b + o.size <= addr, "object at {addr:#x} overlaps the live object at {b:#x}");
                }
                if let Some((&b, _)) = heap.range(addr..).next() {
                    assert!(b >= addr + size, "object at {addr:#x} (+{size}) overlaps the live object at {b:#x}");
                }
                heap.insert(addr, Live { type_id, size });
                rc.allocated.entry(type_id).or_default().add(size);
                rc.allocated_total.add(size);
            }
            Record::Call(c) => {
                assert!(stacks.contains_key(&c.stack.0), "c with undefined stack {}", c.stack);
            }
            Record::Tick(t) => {
                rc.ticks.push(t.ms);
                let mut time = t.ms as i32 as i64;
                while time + (1i64 << 31) < slot_time {
                    time += 1i64 << 32;
                }
                if time > slot_time {
                    slot_time = time;
                    slots += 1;
                }
            }
            Record::Comment(_) => {
                rc.comments += 1;
                slots += 1;
            }
            Record::GcBoundary(b) => {
                let ranges: Vec<GenerationRange> = b.ranges.iter().collect();
                let tick = *rc.ticks.last().expect("a tick before a GC") as i64;
                if b.is_start {
                    assert!(!in_gc, "a GC starts inside a GC");
                    assert!(b.condemned >= 0 && b.condemned <= 2);
                    if let Some(prev) = last_start_tick {
                        assert_ne!(prev, tick, "two GC starts at one tick");
                    }
                    last_start_tick = Some(tick);
                    in_gc = true;
                    condemned = b.condemned;
                    let index = slots - 1;
                    counted_gc = last_counted_start.map_or(true, |l| index > l);
                    if counted_gc {
                        last_counted_start = Some(index);
                    }
                    if b.induced {
                        rc.induced += 1;
                        if counted_gc {
                            rc.induced_counted += 1;
                        }
                    }
                    for (&a, o) in &heap {
                        assert!(
                            range_of(&ranges, a, o.size).is_some(),
                            "object at {a:#x} (+{}) lies outside every range at GC start {:?}",
                            o.size,
                            ranges
                        );
                    }
                    start_sizes = sizes(&ranges);
                    start_ranges = ranges;
                    survivors.clear();
                } else {
                    assert!(in_gc, "a GC end without start");
                    assert_eq!(b.condemned, condemned);
                    // Everything condemned and not reported is dead.
                    let gen_of = |a: u64, s: u64| range_of(&start_ranges, a, s).unwrap_or(-1);
                    let dead: Vec<(u64, Live, i32)> = heap
                        .iter()
                        .filter(|(a, _)| !survivors.contains(a))
                        .map(|(&a, &o)| (a, o, gen_of(a, o.size)))
                        .filter(|&(_, _, g)| g <= condemned || (condemned == 2 && g == 3))
                        .collect();
                    for (a, o, g) in dead {
                        heap.remove(&a);
                        rc.reclaimed.entry(o.type_id).or_default().add(o.size);
                        rc.reclaimed_by_gen[g as usize].add(o.size);
                    }
                    for (&a, o) in &heap {
                        assert!(
                            range_of(&ranges, a, o.size).is_some(),
                            "object at {a:#x} (+{}) lies outside every range at GC end {:?}",
                            o.size,
                            ranges
                        );
                    }
                    if let Some(d) = dump.take() {
                        let live: HashMap<u64, Live> = heap.iter().map(|(&a, &o)| (a, o)).collect();
                        assert_eq!(d.len(), live.len(), "the heap dump does not list every live object");
                        assert_eq!(d, live, "the heap dump differs from the live set");
                        for r in dump_refs.drain(..) {
                            assert!(live.contains_key(&r), "a heap-dump reference to {r:#x} names no live object");
                        }
                        for r in dump_roots.drain(..) {
                            assert!(live.contains_key(&r), "a heap-dump root {r:#x} names no live object");
                        }
                        rc.dump_objects += d.len() as u64;
                    }
                    let limit = if condemned == 2 { 3 } else { condemned as usize };
                    if counted_gc {
                        for g in 0..=limit {
                            cumulative[g] += start_sizes[g];
                            counted[g] += 1;
                        }
                    }
                    rc.gcs_by_condemned[condemned as usize] += 1;
                    last_sizes = sizes(&ranges);
                    in_gc = false;
                }
            }
            Record::GcCounts(g) => rc.g_lines.push([g.gen0, g.gen1, g.gen2]),
            Record::Moved(u) => {
                assert!(in_gc, "u outside a GC");
                let (old, new, len) = (u.old.0, u.new.0, u.length as u64);
                let moved = tiles(&heap, old, len, "u source");
                for &(a, o) in &moved {
                    let g = range_of(&start_ranges, a, o.size).unwrap_or(-1);
                    assert!(g <= condemned || (condemned == 2 && g == 3), "u moves an object of generation {g}");
                    heap.remove(&a);
                    survivors.remove(&a);
                }
                for &(a, o) in &moved {
                    let to = new + (a - old);
                    // Whatever lies at the destination must be garbage.
                    let hit: Vec<u64> = heap
                        .range(..to + o.size)
                        .rev()
                        .take_while(|(&b, p)| b + p.size > to)
                        .map(|(&b, _)| b)
                        .collect();
                    for b in hit {
                        assert!(!survivors.contains(&b), "u moves an object onto the survivor at {b:#x}");
                        let p = heap.remove(&b).unwrap_or(o);
                        let g = range_of(&start_ranges, b, p.size).unwrap_or(-1);
                        assert!(g <= condemned || (condemned == 2 && g == 3), "u overwrites an object of generation {g}");
                        rc.reclaimed.entry(p.type_id).or_default().add(p.size);
                        rc.reclaimed_by_gen[g.max(0) as usize].add(p.size);
                    }
                    heap.insert(to, o);
                    survivors.insert(to);
                    if to != a {
                        rc.relocated.entry(o.type_id).or_default().add(o.size);
                        rc.relocated_total.add(o.size);
                    }
                }
            }
            Record::Survived(v) => {
                assert!(in_gc, "v outside a GC");
                for (a, o) in tiles(&heap, v.start.0, v.length as u64, "v range") {
                    let g = range_of(&start_ranges, a, o.size).unwrap_or(-1);
                    assert!(g <= condemned || (condemned == 2 && g == 3), "v reports an object of generation {g}");
                    survivors.insert(a);
                }
            }
            Record::Finalizer(l) => {
                assert!(in_gc, "l outside a GC");
                assert!(heap.contains_key(&l.address.0), "l {:#x} names no live object", l.address.0);
                let ty = heap[&l.address.0].type_id;
                assert!(types[&ty].1, "l for an object of a type without a finalizer");
                rc.finalized += 1;
                if l.critical {
                    rc.critical_finalized += 1;
                }
            }
            Record::HandleCreated(h) => {
                assert!(stacks.contains_key(&h.stack.0), "h with undefined stack");
                assert!(h.initial.0 == 0 || heap.contains_key(&h.initial.0), "h points at no live object");
                assert!(handles.insert(h.handle.0, ()).is_none(), "h reuses a live handle id");
                rc.handles_created += 1;
            }
            Record::HandleDestroyed(j) => {
                assert!(handles.remove(&j.handle.0).is_some(), "j for an unknown handle");
                rc.handles_destroyed += 1;
            }
            Record::Root(e) => {
                assert!(in_gc, "e outside a GC");
                if dump.is_none() {
                    dump = Some(HashMap::new());
                    rc.heap_dumps += 1;
                    let index = slots - 1;
                    if last_counted_dump.map_or(true, |l| index > l) {
                        last_counted_dump = Some(index);
                        rc.heap_dumps_counted += 1;
                    }
                }
                dump_roots.push(e.address.0);
            }
            Record::Roots(r) => {
                assert!(dump.is_some(), "r before any e");
                dump_roots.extend(r.addresses.iter().map(|a| a.0));
            }
            Record::HeapObject(o) => {
                let d = dump.as_mut().expect("o lines inside a dump");
                let live = heap.get(&o.address.0).copied().unwrap_or_else(|| panic!("o {:#x} names no live object", o.address.0));
                assert_eq!((live.type_id, live.size), (o.type_id.0, o.size as u64), "o disagrees with the live object");
                assert!(d.insert(o.address.0, live).is_none(), "o lists an object twice");
                dump_refs.extend(o.refs.iter().map(|a| a.0));
            }
            Record::Module(_) | Record::Assembly(_) => {}
            other => panic!("the generator wrote an unexpected record {other:?}"),
        }
    }
    assert!(!in_gc, "the log ends inside a GC");
    rc.handles_surviving = handles.len() as u64;
    for o in heap.values() {
        rc.final_heap.entry(o.type_id).or_default().add(o.size);
        rc.final_heap_total.add(o.size);
    }
    assert!(slots < 1_048_575, "the slot model ignores resolution changes");
    rc.heap_bytes_known = counted[0] > 0;
    for g in 0..4 {
        rc.heap_bytes[g] = cumulative[g].checked_div(counted[g]).unwrap_or(last_sizes[g]);
    }
    rc.stacks = stacks.len();
    rc
}
