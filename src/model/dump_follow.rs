//! Heap-dump objects followed from one dump to the next when the heap
//! simulation does not know them.
//!
//! An `o` record that names a live simulated object carries that object's
//! identity, which the simulation keeps through moves. Objects allocated
//! before the log started (an attached recording, a log cut mid-run) have
//! no simulated object, and CLRProfiler's reader does not add dump objects
//! to its live-object table (so neither may the simulation: its figures
//! would change). This follower keeps, beside the simulation, the addresses
//! of the latest dump's objects that had no simulated match, moves them
//! with the GCs' `u` records, drops those a GC killed, and at the next dump
//! an object without a simulated match found at a followed address (with
//! the same type and size) continues that object's lineage.
//!
//! The rules are the simulation's, applied to these objects only:
//!
//! - a `u` moves every followed object that starts in its source range, by
//!   the range's displacement; `u` and `v` mark the objects they cover as
//!   survivors of the GC; the moves of one GC are simultaneous (a
//!   destination that lies in another `u`'s source is not moved again);
//! - at the end of a GC (or at the dump it holds, whose objects are written
//!   after the GC's moves and before its end line), a followed object not
//!   covered by the GC's `u`/`v` records is dead if its generation was
//!   condemned: the generation of an address is that of the GC start line's
//!   range holding it (gen 0 when none does; the large object heap, gen 3,
//!   goes with gen-2 GCs). A start line without ranges kills nothing.
//!
//! The followed objects are kept as columns sorted by their address before
//! the current GC; a `u` finds its objects by binary search, so a GC costs
//! `O(u log n)` plus one sort when something moved.

use super::heap_dump::HeapDumpTable;

/// An `o` object's lineage: the position (in the dump table) of its first
/// appearance as an object without a simulated match.
pub(crate) type Lineage = u32;

#[derive(Clone, Debug, Default)]
pub(crate) struct DumpFollower {
    /// Addresses before the current GC, ascending.
    addresses: Vec<u64>,
    /// Addresses after the current GC's moves so far.
    moved_to: Vec<u64>,
    /// Covered by a `u`/`v` of the current GC.
    survived: Vec<bool>,
    /// `(type id, size)` of each object.
    shapes: Vec<(i32, u32)>,
    lineages: Vec<Lineage>,
    /// A GC started and its deaths are not applied yet.
    in_gc: bool,
    /// Its condemned generation and start-line ranges `(start, end, gen)`.
    condemned: i32,
    ranges: Vec<(u64, u64, i32)>,
    /// Something moved in the current GC.
    dirty: bool,
    /// The current dump's objects without a simulated match, which replace
    /// the followed set once the dump is over: their positions in the dump
    /// table (4 bytes an object, read back from the table when needed).
    next: Vec<u32>,
    dump_open: bool,
    /// A dump closed and its objects in `next` are not the followed
    /// columns yet: they become them when first needed (a dump that no GC
    /// or later dump follows, as in a single snapshot, costs no sort).
    pending: bool,
}

impl DumpFollower {
    /// A GC starts, with its condemned generation and its start line's
    /// ranges `(start, length, generation)`.
    pub(crate) fn gc_started(&mut self, table: &HeapDumpTable, condemned: i32, ranges: impl Iterator<Item = (u64, u64, i32)>) {
        self.close_dump();
        self.materialize(table);
        self.settle(false);
        self.in_gc = true;
        self.condemned = condemned;
        self.ranges.clear();
        self.ranges.extend(ranges.map(|(s, l, g)| (s, s.saturating_add(l), g)));
        self.survived.iter_mut().for_each(|s| *s = false);
    }

    /// A `u` (`old != new`) or `v` (`old == new`) record.
    pub(crate) fn moved(&mut self, table: &HeapDumpTable, old: u64, new: u64, length: u32) {
        self.close_dump();
        self.materialize(table);
        if self.addresses.is_empty() {
            return;
        }
        let end = old.saturating_add(length as u64);
        let lo = self.addresses.partition_point(|&a| a < old);
        let hi = lo + self.addresses[lo..].partition_point(|&a| a < end);
        for i in lo..hi {
            self.moved_to[i] = new.wrapping_add(self.addresses[i] - old);
            self.survived[i] = true;
        }
        self.dirty |= old != new && hi > lo;
    }

    /// A GC ends (`b 0`, or a `g` line).
    pub(crate) fn gc_ended(&mut self, table: &HeapDumpTable) {
        self.close_dump();
        if self.pending && !self.in_gc {
            // A dump closed inside this GC, whose deaths were applied at
            // the dump's start: nothing is left to apply, and the dump's
            // objects wait until a later GC or dump needs them.
            return;
        }
        self.materialize(table);
        self.settle(true);
    }

    /// A dump starts: the current GC's moves and deaths are applied.
    pub(crate) fn dump_started(&mut self, table: &HeapDumpTable) {
        self.close_dump();
        self.materialize(table);
        self.settle(true);
        self.dump_open = true;
    }

    /// The lineage of a dump object without a simulated match at
    /// `address`: that of the followed object there with the same type and
    /// size, else `fresh`.
    pub(crate) fn object(&mut self, table: &HeapDumpTable, address: u64, type_id: i32, size: u32, fresh: Lineage) -> Lineage {
        self.materialize(table);
        let k = self.addresses.partition_point(|&a| a < address);
        let lineage = match self.addresses.get(k) {
            Some(&a) if a == address && self.shapes[k] == (type_id, size) => self.lineages[k],
            _ => fresh,
        };
        if self.dump_open {
            // The object is added to the table at `fresh` right after.
            self.next.push(fresh);
        }
        lineage
    }

    /// Applies the pending moves (and, with `deaths`, the deaths) of the
    /// current GC and sorts the columns by address again.
    fn settle(&mut self, deaths: bool) {
        if deaths && self.in_gc && !self.ranges.is_empty() {
            let generation = |a: u64| {
                let k = self.ranges.iter().position(|r| r.0 <= a && a < r.1);
                k.map_or(0, |k| self.ranges[k].2)
            };
            let condemned = self.condemned;
            let dead: Vec<bool> = (0..self.addresses.len())
                .map(|i| {
                    let g = generation(self.addresses[i]);
                    let hit = if g >= 3 { condemned >= 2 } else { g <= condemned };
                    hit && !self.survived[i]
                })
                .collect();
            if dead.iter().any(|&d| d) {
                let mut k = 0;
                self.retain(|_| {
                    k += 1;
                    !dead[k - 1]
                });
            }
        }
        if deaths {
            self.in_gc = false;
        }
        if self.dirty {
            let mut rows: Vec<(u64, (i32, u32), Lineage, bool)> =
                (0..self.moved_to.len()).map(|i| (self.moved_to[i], self.shapes[i], self.lineages[i], self.survived[i])).collect();
            rows.sort_unstable_by_key(|r| r.0);
            self.addresses = rows.iter().map(|r| r.0).collect();
            self.moved_to = self.addresses.clone();
            self.shapes = rows.iter().map(|r| r.1).collect();
            self.lineages = rows.iter().map(|r| r.2).collect();
            self.survived = rows.iter().map(|r| r.3).collect();
            self.dirty = false;
        }
    }

    fn retain(&mut self, mut keep: impl FnMut(usize) -> bool) {
        let mut w = 0;
        for i in 0..self.addresses.len() {
            if keep(i) {
                self.addresses[w] = self.addresses[i];
                self.moved_to[w] = self.moved_to[i];
                self.survived[w] = self.survived[i];
                self.shapes[w] = self.shapes[i];
                self.lineages[w] = self.lineages[i];
                w += 1;
            }
        }
        self.addresses.truncate(w);
        self.moved_to.truncate(w);
        self.survived.truncate(w);
        self.shapes.truncate(w);
        self.lineages.truncate(w);
    }

    /// The dump is over: its objects without a simulated match are the
    /// ones followed from now on (see [`Self::materialize`]).
    fn close_dump(&mut self) {
        if self.dump_open {
            self.dump_open = false;
            self.pending = true;
        }
    }

    /// The closed dump's objects become the followed columns, sorted by
    /// address.
    fn materialize(&mut self, table: &HeapDumpTable) {
        if !self.pending {
            return;
        }
        self.pending = false;
        let mut positions = std::mem::take(&mut self.next);
        let mut next: Vec<(u64, i32, u32, Lineage)> = positions.iter().filter_map(|&k| table.followed(k)).collect();
        next.sort_unstable_by_key(|r| r.0);
        next.dedup_by_key(|r| r.0);
        self.addresses = next.iter().map(|r| r.0).collect();
        self.moved_to = self.addresses.clone();
        self.survived = vec![false; next.len()];
        self.shapes = next.iter().map(|r| (r.1, r.2)).collect();
        self.lineages = next.iter().map(|r| r.3).collect();
        self.dirty = false;
        drop(next);
        positions.clear();
        self.next = positions;
    }
}

#[cfg(test)]
mod tests {
    use crate::model::load;
    use crate::query::dumps::{diff, DumpIndex};

    /// Dump 0: four `Order`s (24 bytes) and a `Cache`, allocated before the
    /// log started. Then a gen-0 GC (gen 0 from 0x1000, gen 2 from 0x8000)
    /// moves the first two orders to gen 2 and kills the third (nothing
    /// covers it) and keeps the fourth in place; the cache at 0x8000 is in
    /// gen 2, untouched. A gen-2 GC
    /// then slides the fourth order (0x1048) onto the dead one's address
    /// (0x1030), and dump 1 is taken (its objects come after the moves,
    /// before the GC's end line, as the agent writes them).
    const LOG: &str = "t 1 0 Order\nt 2 0 Cache\ni 1\n\
b 1 1 2 0x1000 0x60 0x10000 0 0x8000 0x30 0x10000 2\n\
e 0x8000 0 0x0 0\no 0x8000 2 48 0x1000 0x1018 0x1030 0x1048\n\
o 0x1000 1 24\no 0x1018 1 24\no 0x1030 1 24\no 0x1048 1 24\n\
i 2\nb 0 1 2 0x1000 0x60 0x10000 0 0x8000 0x30 0x10000 2\n\
i 3\nb 1 0 0 0x1000 0x60 0x10000 0 0x8000 0x30 0x10000 2\n\
u 0x1000 0x8030 0x30\nv 0x1048 0x18\nb 0 0 0 0x1048 0x18 0x10000 0 0x8000 0x60 0x10000 2\n\
i 4\nb 1 1 2 0x1000 0x18 0x10000 0 0x8000 0x60 0x10000 2\n\
u 0x1048 0x1030 0x18\nv 0x8000 0x60\n\
e 0x8000 0 0x0 0\no 0x8000 2 48 0x8030 0x8048 0x1030\n\
o 0x8030 1 24\no 0x8048 1 24\no 0x1030 1 24\n\
i 5\nb 0 1 2 0x1030 0x18 0x10000 0 0x8000 0x60 0x10000 2\n";

    #[test]
    fn objects_without_allocations_are_followed_through_moves_and_deaths() {
        let model = load(LOG.as_bytes(), &Default::default()).expect("load");
        let t = model.heap_dumps();
        let lineages: Vec<Vec<u32>> = t.dumps().iter().map(|d| t.objects(d).map(|o| o.lineage.expect("a lineage")).collect()).collect();
        // Dump 0's objects are positions 0..5; the order at 0x1030 in dump
        // 1 is the one that was at 0x1048 (position 4), not the dead one.
        assert_eq!(lineages, [vec![0, 1, 2, 3, 4], vec![0, 1, 2, 4]]);
        let r = diff(&model, DumpIndex(0), DumpIndex(1)).unwrap();
        assert_eq!((r.new_objects, r.kept_objects, r.gone_objects, r.gone_bytes), (0, 4, 1, 24));
        assert!(r.matching.relocation_followed);
    }

    #[test]
    fn a_cache_that_only_grows_loses_nothing() {
        // Dump 1 -> 2 of the same log shape: everything survives a gen-2
        // GC that compacts (every object moves), and one order is
        // allocated in between (with its allocation in the log).
        let log = "t 1 0 Order\nt 2 0 Cache\nn 1 1 1 24\ni 1\n\
b 1 1 2 0x1000 0x48 0x10000 0\ne 0x1000 0 0x0 0\no 0x1000 2 24 0x1018 0x1030\no 0x1018 1 24\no 0x1030 1 24\n\
i 2\nb 0 1 2 0x1000 0x48 0x10000 0\ni 3\n! 1 0x1048 1\n\
i 4\nb 1 1 2 0x1000 0x60 0x10000 0\nu 0x1000 0x9000 0x60\n\
e 0x9000 0 0x0 0\no 0x9000 2 24 0x9018 0x9030 0x9048\no 0x9018 1 24\no 0x9030 1 24\no 0x9048 1 24\n\
i 5\nb 0 1 2 0x9000 0x60 0x10000 2\n";
        let model = load(log.as_bytes(), &Default::default()).expect("load");
        let r = diff(&model, DumpIndex(0), DumpIndex(1)).unwrap();
        assert_eq!((r.new_objects, r.kept_objects, r.gone_objects), (1, 3, 0));
        assert_eq!(r.matching.by_address, 0);
    }
}
