//! Heap-dump objects linked to their allocations: every dump object's
//! allocation (object, stack, frames) against a naive oracle that replays
//! the log text line by line (allocations, `u`/`v` moves, deaths at GC
//! ends) without the model's code; retained sizes per allocating function
//! and stack against brute-force reachability and against the totals; "new
//! since dump A" per function against a plain set difference; objects with
//! no known allocation counted apart, on hand-written logs whose answers
//! are known by construction and on generated logs.

mod common;

use clrprof_gen::{generate, GenOptions, PointerBits, Preset};
use clrprof::model::{load, FrameNode, Model};
use clrprof::query::alloc_stacks::{allocation_frames, node_function};
use clrprof::query::dumps::{
    allocation_of, allocation_row, diff, diff_by, list, retained, retained_by, DumpGraph, DumpIndex, SiteBy, UnknownReason,
    UNKNOWN_ALLOCATION,
};
use clrprof::query::by_code::NO_STACK;
use std::collections::{BTreeMap, HashMap, HashSet};

// ---- the oracle -------------------------------------------------------------

fn num(s: &str) -> i64 {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).expect("hex number") as i64,
        None => s.parse().expect("decimal number"),
    }
}

/// A stack definition: type and size (allocation stacks), frames outermost
/// first, and the whole list as the format defines it (type and size
/// first for an allocation stack).
#[derive(Clone, Debug, Default)]
struct OStack {
    head: Option<(i64, i64)>,
    frames: Vec<i64>,
    list: Vec<i64>,
}

#[derive(Clone, Copy, Debug)]
struct OObj {
    seq: u32,
    stack: i64,
    size: u64,
    type_id: i64,
}

/// One `o` line as the oracle sees it: its allocation (sequence number of
/// the `!`/`a` line, log stack id), or none.
#[derive(Clone, Debug)]
struct OItem {
    address: u64,
    type_id: i64,
    size: u64,
    refs: Vec<u64>,
    alloc: Option<(u32, i64)>,
    /// Without an allocation: the object's identity from dump to dump (see
    /// [`Ghosts`]).
    lineage: u32,
}

/// The dump objects without an allocation, followed from one dump to the
/// next in the simplest way: a map from address to (lineage, type, size);
/// a `u` moves the ones in its source range (each at most once per GC), a
/// `u`/`v` marks them survivors, and when a GC is over (at its dump, or at
/// its end line) the ones of a condemned generation that did not survive
/// are dropped (not when the start line had no ranges).
#[derive(Default)]
struct Ghosts {
    map: BTreeMap<u64, (u32, i64, u64)>,
    next: Vec<(u64, (u32, i64, u64))>,
    survived: HashSet<u32>,
    gc_open: bool,
    fresh: u32,
}

impl Ghosts {
    fn close_dump(&mut self, was_dump: bool) {
        if was_dump {
            self.map = self.next.drain(..).collect();
        }
    }

    fn gc_over(&mut self, condemned: i64, ranges: &[(u64, u64, i64)]) {
        if self.gc_open && !ranges.is_empty() {
            let generation = |a: u64| ranges.iter().find(|r| r.0 <= a && a < r.1).map_or(0, |r| r.2);
            let survived = &self.survived;
            self.map.retain(|&a, g| {
                let gen = generation(a);
                let hit = if gen >= 3 { condemned >= 2 } else { gen <= condemned };
                !hit || survived.contains(&g.0)
            });
        }
        self.gc_open = false;
    }

    fn moved(&mut self, old: u64, new: u64, len: u64) {
        let moving: Vec<(u64, (u32, i64, u64))> =
            self.map.range(old..old + len).filter(|(_, g)| !self.survived.contains(&g.0)).map(|(&a, &g)| (a, g)).collect();
        for (a, _) in &moving {
            self.map.remove(a);
        }
        for (a, g) in moving {
            self.map.insert(new + (a - old), g);
            self.survived.insert(g.0);
        }
    }
}

#[derive(Default)]
struct ODump {
    roots: Vec<(u64, bool)>,
    objects: Vec<OItem>,
}

#[derive(Default)]
struct Oracle {
    stacks: HashMap<i64, OStack>,
    dumps: Vec<ODump>,
}

/// Replays a well-formed log: objects live at their start address from
/// their allocation; `u` moves every object starting in the source range
/// (erasing what lies at the destination); `v` marks survivors; at a GC
/// end, every object of a condemned generation (the start line's ranges
/// say which generation an address is in; an address in none is
/// generation 0; the large object heap, generation 3, goes with gen-2 GCs)
/// that no `u`/`v` of the GC covered is dead. Objects under 12 bytes are
/// not tracked, as in CLRProfiler.
fn replay(log: &[u8]) -> Oracle {
    let text = std::str::from_utf8(log).expect("ASCII log");
    let mut o = Oracle::default();
    let mut heap: BTreeMap<u64, OObj> = BTreeMap::new();
    let mut seq = 0u32;
    let mut in_dump = false;
    let mut e_seen = false;
    let mut condemned = 0i64;
    let mut ranges: Vec<(u64, u64, i64)> = Vec::new();
    let mut survivors: HashSet<u32> = HashSet::new();
    let mut ghosts = Ghosts::default();
    let erase = |heap: &mut BTreeMap<u64, OObj>, lo: u64, hi: u64| {
        let doomed: Vec<u64> = heap.range(..hi).rev().take_while(|(&a, x)| a + x.size > lo).map(|(&a, _)| a).collect();
        for a in doomed {
            heap.remove(&a);
        }
        let inside: Vec<u64> = heap.range(lo..hi).map(|(&a, _)| a).collect();
        for a in inside {
            heap.remove(&a);
        }
    };
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let Some(&kind) = f.first() else { continue };
        let was_dump = in_dump;
        in_dump = matches!(kind, "e" | "r" | "o");
        if was_dump && !in_dump {
            ghosts.close_dump(true);
        }
        match kind {
            "n" => {
                // n id flag [type size] [ref] functions...: bit 0, type and
                // size follow; bit 1, the reference is an allocation stack
                // (its type and size are not frames); flag / 4 frames are
                // copied from the reference.
                let id = num(f[1]);
                let flag = num(f[2]);
                let mut k = 3;
                let mut list = Vec::new();
                if flag & 1 != 0 {
                    list.extend([num(f[3]), num(f[4])]);
                    k += 2;
                }
                if flag >= 4 {
                    let r = &o.stacks[&num(f[k])];
                    let skip = if flag & 2 != 0 { 2 } else { 0 };
                    list.extend_from_slice(&r.list[skip..skip + (flag / 4) as usize]);
                    k += 1;
                }
                list.extend(f[k..].iter().map(|x| num(x)));
                let (head, frames) =
                    if flag & 1 != 0 { (Some((list[0], list[1])), list[2..].to_vec()) } else { (None, list.clone()) };
                o.stacks.insert(id, OStack { head, frames, list });
            }
            "!" | "a" => {
                let (addr, stack) = if kind == "!" { (num(f[2]), num(f[3])) } else { (num(f[1]), num(f[2])) };
                let (type_id, size) = o.stacks[&stack].head.expect("an allocation stack");
                let addr = addr as u64;
                let size = size as u64;
                erase(&mut heap, addr, addr + size.max(1));
                if size >= 12 {
                    heap.insert(addr, OObj { seq, stack, size, type_id });
                }
                seq += 1;
            }
            "b" if num(f[1]) == 1 => {
                condemned = num(f[3]);
                ranges = f[4..].chunks(4).map(|c| (num(c[0]) as u64, num(c[0]) as u64 + num(c[1]) as u64, num(c[3]))).collect();
                survivors.clear();
                ghosts.survived.clear();
                ghosts.gc_open = true;
            }
            "u" => {
                let (old, new, len) = (num(f[1]) as u64, num(f[2]) as u64, num(f[3]) as u64);
                ghosts.moved(old, new, len);
                let moving: Vec<(u64, OObj)> = heap.range(old..old + len).map(|(&a, &x)| (a, x)).collect();
                for (a, _) in &moving {
                    heap.remove(a);
                }
                for (a, x) in moving {
                    let to = new + (a - old);
                    erase(&mut heap, to, to + x.size);
                    heap.insert(to, x);
                    survivors.insert(x.seq);
                }
            }
            "v" => {
                let (lo, len) = (num(f[1]) as u64, num(f[2]) as u64);
                let kept: Vec<u32> = ghosts.map.range(lo..lo + len).map(|(_, g)| g.0).collect();
                ghosts.survived.extend(kept);
                for x in heap.range(lo..lo + len).map(|(_, x)| x) {
                    survivors.insert(x.seq);
                }
            }
            "g" => ghosts.gc_over(condemned, &ranges),
            "b" => {
                ghosts.gc_over(condemned, &ranges);
                let generation = |a: u64| ranges.iter().find(|r| r.0 <= a && a < r.1).map_or(0, |r| r.2);
                let dead: Vec<u64> = heap
                    .iter()
                    .filter(|(&a, x)| {
                        let g = generation(a);
                        let condemned = if g == 3 { condemned >= 2 } else { g <= condemned };
                        condemned && !survivors.contains(&x.seq)
                    })
                    .map(|(&a, _)| a)
                    .collect();
                for a in dead {
                    heap.remove(&a);
                }
            }
            "e" | "r" | "o" => {
                // A dump starts at an e or r line not preceded by another
                // dump line; o lines belong to the latest dump; once an e
                // line was seen, r lines are ignored.
                if kind != "o" && !was_dump {
                    o.dumps.push(ODump::default());
                    ghosts.gc_over(condemned, &ranges);
                }
                e_seen |= kind == "e";
                let Some(d) = o.dumps.last_mut() else { continue };
                match kind {
                    "e" => d.roots.push((num(f[1]) as u64, num(f[3]) & 2 != 0)),
                    "r" if !e_seen => d.roots.extend(f[1..].iter().map(|x| (num(x) as u64, false))),
                    "r" => {}
                    _ => {
                        let addr = num(f[1]) as u64;
                        let (type_id, size) = (num(f[2]), num(f[3]) as u64);
                        let alloc = heap.get(&addr).filter(|x| x.type_id == type_id).map(|x| (x.seq, x.stack));
                        let refs = f[4..].iter().map(|x| num(x) as u64).collect();
                        let mut lineage = u32::MAX;
                        if alloc.is_none() {
                            lineage = match ghosts.map.get(&addr) {
                                Some(g) if (g.1, g.2) == (type_id, size) => g.0,
                                _ => {
                                    ghosts.fresh += 1;
                                    ghosts.fresh
                                }
                            };
                            ghosts.next.push((addr, (lineage, type_id, size)));
                        }
                        d.objects.push(OItem { address: addr, type_id, size, refs, alloc, lineage });
                    }
                }
            }
            _ => {}
        }
    }
    o
}

impl Oracle {
    /// The allocating function of an `o` line (`None`: no frames), or the
    /// unknown marker.
    fn function(&self, item: &OItem) -> Result<Option<i64>, ()> {
        let (_, stack) = item.alloc.ok_or(())?;
        Ok(self.stacks[&stack].frames.last().copied())
    }
}

/// The model's frames of an allocation row, outermost first.
fn model_frames(model: &Model, row: clrprof::model::StackRef) -> Vec<i64> {
    let mut nodes: Vec<FrameNode> = Vec::new();
    allocation_frames(model, row, &mut nodes);
    nodes.iter().rev().map(|&n| node_function(model, n).0 as i64).collect()
}

/// A group key the tests compare: the function id, or a pseudo-name.
fn key_of(function: Option<i32>, name: &str) -> String {
    match function {
        Some(f) if name != NO_STACK && name != UNKNOWN_ALLOCATION => format!("f{f}"),
        _ => name.to_string(),
    }
}

fn oracle_key(o: &Oracle, item: &OItem) -> String {
    match o.function(item) {
        Err(()) => UNKNOWN_ALLOCATION.to_string(),
        Ok(None) => NO_STACK.to_string(),
        Ok(Some(f)) => format!("f{f}"),
    }
}

// ---- checks -----------------------------------------------------------------

/// Every dump object has the oracle's allocation (same object, same type,
/// size and frames) or, like the oracle, none; returns (known, unknown).
fn check_links(model: &Model, oracle: &Oracle, what: &str) -> (u64, u64) {
    let t = model.heap_dumps();
    assert_eq!(t.dumps().len(), oracle.dumps.len(), "{what}: dumps");
    let (mut known, mut unknown) = (0, 0);
    for (k, (d, od)) in t.dumps().iter().zip(&oracle.dumps).enumerate() {
        assert_eq!(t.object_count(d), od.objects.len(), "{what}, dump {k}: objects");
        for (o, item) in t.objects(d).zip(&od.objects) {
            let at = format!("{what}, dump {k}, object {:#x}", o.address.0);
            assert_eq!(o.address.0, item.address, "{at}");
            match (allocation_of(model, &o), item.alloc) {
                (Some(a), Some((seq, stack))) => {
                    known += 1;
                    assert_eq!(a.object.0, seq, "{at}: the allocation");
                    assert_eq!(allocation_row(model, &o), Some(a.stack), "{at}: the dump's row is the allocation's");
                    let (ty, size) = model.stacks().type_and_size(a.stack).expect("an allocation stack");
                    assert_eq!((ty.0 as i64, size as i64), oracle.stacks[&stack].head.unwrap(), "{at}: type and size");
                    assert_eq!(model_frames(model, a.stack), oracle.stacks[&stack].frames, "{at}: frames");
                }
                (None, None) => unknown += 1,
                (got, want) => panic!("{at}: model {got:?}, oracle {want:?}"),
            }
        }
        let u = clrprof::query::dumps::UnknownAllocations::of(model, d);
        let want = od.objects.iter().filter(|i| i.alloc.is_none()).count() as u64;
        assert_eq!(u.objects, want, "{what}, dump {k}: unknown objects");
        assert_eq!(
            u.bytes,
            od.objects.iter().filter(|i| i.alloc.is_none()).map(|i| i.size).sum::<u64>(),
            "{what}, dump {k}: unknown bytes"
        );
        assert_eq!(u.types.iter().map(|t| t.objects).sum::<u64>(), u.objects, "{what}, dump {k}");
        assert_eq!(u.reason == UnknownReason::None, want == 0, "{what}, dump {k}: reason");
    }
    (known, unknown)
}

/// Brute force: per object, the objects reachable from the roots, and for
/// each object the set it dominates (unreachable once it is removed).
struct Brute {
    reachable: Vec<bool>,
    dominated: Vec<Vec<usize>>,
}

fn brute(d: &ODump) -> Brute {
    let n = d.objects.len();
    let index: HashMap<u64, usize> = d.objects.iter().enumerate().map(|(k, o)| (o.address, k)).collect();
    let succ: Vec<Vec<usize>> =
        d.objects.iter().map(|o| o.refs.iter().filter_map(|r| index.get(r).copied()).collect()).collect();
    let roots: Vec<usize> = d.roots.iter().filter(|r| !r.1).filter_map(|r| index.get(&r.0).copied()).collect();
    let reach = |removed: Option<usize>| -> Vec<bool> {
        let mut seen = vec![false; n];
        let mut todo: Vec<usize> = roots.iter().copied().filter(|&r| Some(r) != removed).collect();
        while let Some(v) = todo.pop() {
            if seen[v] {
                continue;
            }
            seen[v] = true;
            todo.extend(succ[v].iter().copied().filter(|&w| Some(w) != removed && !seen[w]));
        }
        seen
    };
    let reachable = reach(None);
    let dominated = (0..n)
        .map(|v| {
            if !reachable[v] {
                return Vec::new();
            }
            let without = reach(Some(v));
            (0..n).filter(|&w| reachable[w] && !without[w]).collect()
        })
        .collect();
    Brute { reachable, dominated }
}

/// Retained bytes per allocating function against brute force and the
/// totals: per group, the union of what its instances dominate; the
/// top-level figures partition the reachable bytes.
fn check_retained(model: &Model, oracle: &Oracle, what: &str) {
    for (k, od) in oracle.dumps.iter().enumerate() {
        let index = DumpIndex(k as u32);
        let at = format!("{what}, dump {k}");
        let b = brute(od);
        let total = retained(model, index, 0).expect("the dump");
        let by_type = retained(model, index, usize::MAX).expect("the dump");
        for by in [SiteBy::Function, SiteBy::Stack, SiteBy::Type] {
            let r = retained_by(model, index, by).expect("the dump");
            assert_eq!(r.objects, od.objects.len() as u64, "{at}");
            assert_eq!(r.reachable_bytes, total.reachable_bytes, "{at}: reachable bytes");
            assert_eq!(r.sites.iter().map(|s| s.objects).sum::<u64>(), r.objects, "{at}, {by:?}: objects add up");
            assert_eq!(r.sites.iter().map(|s| s.bytes).sum::<u64>(), r.bytes, "{at}, {by:?}: bytes add up");
            assert_eq!(
                r.sites.iter().map(|s| s.top_level).sum::<u64>(),
                total.root_retained,
                "{at}, {by:?}: top-level retained adds up to what the roots retain"
            );
            assert_eq!(r.unknown.objects, od.objects.iter().filter(|i| i.alloc.is_none()).count() as u64, "{at}");
            if by == SiteBy::Type {
                let want: BTreeMap<i32, (u64, u64)> =
                    by_type.types.iter().map(|t| (t.type_id, (t.objects, t.retained))).collect();
                let got: BTreeMap<i32, (u64, u64)> = r
                    .sites
                    .iter()
                    .filter(|s| s.reachable_objects > 0)
                    .map(|s| (s.site.type_id.unwrap(), (s.reachable_objects, s.retained)))
                    .collect();
                assert_eq!(got, want, "{at}: by type equals `retained`");
                continue;
            }
            if by == SiteBy::Stack {
                continue;
            }
            // Per function, from the oracle's groups and brute force.
            let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
            for (v, item) in od.objects.iter().enumerate() {
                groups.entry(oracle_key(oracle, item)).or_default().push(v);
            }
            let got: BTreeMap<String, (u64, u64, u64, u64)> = r
                .sites
                .iter()
                .map(|s| (key_of(s.site.function, &s.site.name), (s.objects, s.bytes, s.retained, s.top_level)))
                .collect();
            let mut want: BTreeMap<String, (u64, u64, u64, u64)> = BTreeMap::new();
            let dominated_by_other = |w: usize| -> bool {
                // Whether some other object dominates w (then w is not top-level).
                (0..od.objects.len()).any(|v| v != w && b.dominated[v].contains(&w))
            };
            for (key, members) in &groups {
                let mut union: HashSet<usize> = HashSet::new();
                for &v in members {
                    union.extend(b.dominated[v].iter().copied());
                }
                let top: u64 = members
                    .iter()
                    .filter(|&&v| b.reachable[v] && !dominated_by_other(v))
                    .map(|&v| b.dominated[v].iter().map(|&w| od.objects[w].size).sum::<u64>())
                    .sum();
                want.insert(
                    key.clone(),
                    (
                        members.len() as u64,
                        members.iter().map(|&v| od.objects[v].size).sum(),
                        union.iter().map(|&w| od.objects[w].size).sum(),
                        top,
                    ),
                );
            }
            assert_eq!(got, want, "{at}: per function (objects, bytes, retained, top level)");
        }
    }
}

/// New since dump A per function: a plain set difference on the oracle's
/// identities (the allocation's sequence number, else the lineage the
/// oracle follows through the moves).
fn check_new_since(model: &Model, oracle: &Oracle, what: &str) {
    let n = oracle.dumps.len();
    for a in 0..n {
        for b in a..n {
            let at = format!("{what}, dumps {a} -> {b}");
            let id = |i: &OItem| match i.alloc {
                Some((seq, _)) => (seq as i64, 0u64, 0i64),
                None => (-1, i.lineage as u64, i.type_id),
            };
            let in_a: HashSet<(i64, u64, i64)> = oracle.dumps[a].objects.iter().map(id).collect();
            let in_b: HashSet<(i64, u64, i64)> = oracle.dumps[b].objects.iter().map(id).collect();
            let mut want: BTreeMap<String, (u64, u64, u64, u64)> = BTreeMap::new();
            for i in &oracle.dumps[b].objects {
                let e = want.entry(oracle_key(oracle, i)).or_default();
                if !in_a.contains(&id(i)) {
                    e.0 += 1;
                    e.1 += i.size;
                }
            }
            for i in &oracle.dumps[a].objects {
                let e = want.entry(oracle_key(oracle, i)).or_default();
                if !in_b.contains(&id(i)) {
                    e.2 += 1;
                    e.3 += i.size;
                }
            }
            let r = diff_by(model, DumpIndex(a as u32), DumpIndex(b as u32), SiteBy::Function).expect("both dumps");
            let got: BTreeMap<String, (u64, u64, u64, u64)> = r
                .sites
                .iter()
                .map(|s| (key_of(s.site.function, &s.site.name), (s.new_objects, s.new_bytes, s.gone_objects, s.gone_bytes)))
                .collect();
            assert_eq!(got, want, "{at}: per function (new, new bytes, gone, gone bytes)");
            let plain = diff(model, DumpIndex(a as u32), DumpIndex(b as u32)).expect("both dumps");
            assert_eq!((r.new_objects, r.new_bytes, r.gone_objects, r.kept_objects), (plain.new_objects, plain.new_bytes, plain.gone_objects, plain.kept_objects), "{at}");
            for by in [SiteBy::Stack, SiteBy::Type] {
                let s = diff_by(model, DumpIndex(a as u32), DumpIndex(b as u32), by).expect("both dumps");
                assert_eq!(s.sites.iter().map(|x| x.new_objects).sum::<u64>(), r.new_objects, "{at}, {by:?}");
                assert_eq!(s.sites.iter().map(|x| x.gone_bytes).sum::<u64>(), r.gone_bytes, "{at}, {by:?}");
                assert_eq!(s.sites.iter().map(|x| x.objects_b).sum::<u64>(), oracle.dumps[b].objects.len() as u64);
            }
        }
    }
}

fn check_all(log: &[u8], what: &str) -> (Model, Oracle, (u64, u64)) {
    let model = load(log, &Default::default()).expect("load");
    let oracle = replay(log);
    let counts = check_links(&model, &oracle, what);
    check_retained(&model, &oracle, what);
    check_new_since(&model, &oracle, what);
    (model, oracle, counts)
}

// ---- hand-written logs --------------------------------------------------------

/// `corpus/dump-sites.log`: three dumps. Dump 0 comes before any allocation: its two `Old` objects
/// were allocated before the log started. Then a `Cache` (by `Main ->
/// Fill`) and four `Marker`s (three by `Main -> Fill -> Make`, one by `Main
/// -> Make`); a full GC moves two markers, keeps the rest in place, kills
/// one marker, and moves an old object: dump 1. Three more markers (one at
/// the dead marker's address), a GC that kills a marker and moves two:
/// dump 2.
const HAND: &str = include_str!("../corpus/dump-sites.log");

fn by_function(r: &clrprof::query::dumps::RetainedBySite) -> BTreeMap<String, (u64, u64, u64, u64)> {
    r.sites
        .iter()
        .map(|s| (s.site.name.clone(), (s.objects, s.bytes, s.retained, s.top_level)))
        .collect()
}

#[test]
fn hand_written_dumps_link_to_their_allocations() {
    let (model, _, (known, unknown)) = check_all(HAND.as_bytes(), "hand");
    // By construction: 4 and 6 known objects in dumps 1 and 2; the old
    // objects (2 per dump) never are.
    assert_eq!((known, unknown), (10, 6));
    let t = model.heap_dumps();
    let reasons: Vec<UnknownReason> =
        t.dumps().iter().map(|d| clrprof::query::dumps::UnknownAllocations::of(&model, d).reason).collect();
    assert_eq!(
        reasons,
        [UnknownReason::DumpBeforeFirstAllocation, UnknownReason::NotInSimulation, UnknownReason::NotInSimulation]
    );

    // Dump 1: the cache (24 bytes, by Fill) holds three markers; the old
    // object at 0x1000 holds the other.
    let r = retained_by(&model, DumpIndex(1), SiteBy::Function).unwrap();
    let want: BTreeMap<String, (u64, u64, u64, u64)> = [
        ("Fill".to_string(), (1, 24, 24 + 3 * 32, 24 + 3 * 32)),
        ("Make".to_string(), (3, 96, 96, 0)),
        (UNKNOWN_ALLOCATION.to_string(), (2, 80, 80, 80)),
    ]
    .into_iter()
    .collect();
    assert_eq!(by_function(&r), want);
    assert_eq!((r.unknown.objects, r.unknown.bytes), (2, 80));
    assert_eq!(r.reachable_bytes, 200);

    let r = retained_by(&model, DumpIndex(1), SiteBy::Stack).unwrap();
    let stacks: BTreeMap<Vec<String>, u64> = r.sites.iter().map(|s| (s.site.frames.clone(), s.objects)).collect();
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let want: BTreeMap<Vec<String>, u64> = [
        (names(&["Fill", "Main"]), 1),
        (names(&["Make", "Fill", "Main"]), 2),
        (names(&["Make", "Main"]), 1),
        (Vec::new(), 2),
    ]
    .into_iter()
    .collect();
    assert_eq!(stacks, want);

    // Dump 1 -> 2: three new markers by Make (one at a dead marker's old
    // address), one gone; the old objects are kept.
    let d = diff_by(&model, DumpIndex(1), DumpIndex(2), SiteBy::Function).unwrap();
    let got: BTreeMap<String, (u64, u64, u64, u64, u64)> = d
        .sites
        .iter()
        .map(|s| (s.site.name.clone(), (s.objects_a, s.objects_b, s.new_objects, s.new_bytes, s.gone_objects)))
        .collect();
    let want: BTreeMap<String, (u64, u64, u64, u64, u64)> = [
        ("Fill".to_string(), (1, 1, 0, 0, 0)),
        ("Make".to_string(), (3, 5, 3, 96, 1)),
        (UNKNOWN_ALLOCATION.to_string(), (2, 2, 0, 0, 0)),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, want);
    assert_eq!(d.sites[0].site.name, "Make", "largest new bytes first");
    assert_eq!((d.unknown_a.objects, d.unknown_b.objects), (2, 2));
    // Dump 0 -> 1: everything allocated is new; the two old objects (no
    // allocation in the log) are kept, the one the GC moved from 0x1040 to
    // 0x1100 followed through its `u` record.
    let d = diff_by(&model, DumpIndex(0), DumpIndex(1), SiteBy::Function).unwrap();
    assert_eq!((d.new_objects, d.gone_objects, d.kept_objects), (4, 0, 2));
    assert!(d.matching.relocation_followed);
}

#[test]
fn a_log_without_allocations_has_only_unknown_objects() {
    let bare: String = HAND.lines().filter(|l| !l.starts_with('!')).map(|l| format!("{l}\n")).collect();
    let (model, _, (known, unknown)) = check_all(bare.as_bytes(), "without allocations");
    assert_eq!((known, unknown), (0, 16));
    for k in 0..3 {
        let r = retained_by(&model, DumpIndex(k), SiteBy::Function).unwrap();
        assert_eq!(r.unknown.reason, UnknownReason::NoAllocationsInLog);
        assert_eq!(r.unknown.objects, r.objects);
        assert_eq!(r.sites.len(), 1);
        assert_eq!(r.sites[0].site.name, UNKNOWN_ALLOCATION);
        assert!(!r.sites[0].site.known);
        assert_eq!(r.sites[0].top_level, r.reachable_bytes);
    }
}

// ---- generated logs -----------------------------------------------------------

#[test]
fn generated_dumps_link_to_their_allocations() {
    let base = GenOptions { objects: 30_000, gcs: 6, heap_dumps: 3, ..Preset::Tiny.options() };
    for (k, opts) in [
        base.clone(),
        GenOptions { pointer_bits: PointerBits::Bits32, seed: 9, handles_per_million: 20_000.0, ..base.clone() },
        GenOptions { seed: 11, threads: 6, ..base },
    ]
    .iter()
    .enumerate()
    {
        let (log, _) = generate(opts, Vec::new()).expect("generate");
        let what = format!("generated {k}");
        let (model, oracle, (known, unknown)) = check_all(&log, &what);
        eprintln!("{what}: {known} dump objects linked to their allocations");
        assert!(known > 1000, "{what}: {known} objects linked");
        // The generator allocates every object in the log: all are known.
        assert_eq!(unknown, 0, "{what}");
        assert_eq!(oracle.dumps.len(), list(&model).len());
        let g = DumpGraph::build(&model, DumpIndex(0)).unwrap();
        assert_eq!(g.objects(), oracle.dumps[0].objects.len());
    }
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch build.rs after installing)")]
fn reference_dumps_link_to_their_allocations() {
    for name in ["gen-tiny", "gen-small"] {
        let Some(dir) = common::reference_dir() else { return };
        let log = std::fs::read(dir.join(format!("{name}.log"))).expect("read log");
        let model = load(&log, &Default::default()).expect("load");
        let oracle = replay(&log);
        let (known, unknown) = check_links(&model, &oracle, name);
        assert!(known > 0 && unknown == 0, "{name}: {known} known, {unknown} unknown");
        check_new_since(&model, &oracle, name);
    }
}
