//! The sampled objects followed through GCs, by address: what
//! [`super::survival`] asks of them at each sample (the nearest object at
//! or below an address; one removed, one added) at the cost of a short
//! sorted run, not of a tree's descent.
//!
//! ```text
//!  index (BTreeMap)        pages (slots of runs, sorted by address)
//!  page 0x7f00_0012  -->   [0x7f00_0012_0010 | 0x7f00_0012_0040 | ...]
//!  page 0x7f00_0013  -->   [0x7f00_0013_0008 | ...]
//!  cache: the slots of the last pages used (most samples fall on one)
//! ```
//!
//! Entries are grouped by 4 KB page of their address; a page's run is
//! sorted and never empty (an empty page is dropped from the index and its
//! slot reused). A program allocates upwards in a few places at a time
//! (one allocation context per thread), so a sample's page is nearly
//! always one just used (the cache), its nearest object the run's last,
//! and its entry a push. A GC takes every entry in address order and
//! puts back the survivors ([`Followed::take_sorted`], [`Followed::rebuild`]).

use std::collections::BTreeMap;

/// One followed object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Entry {
    pub addr: u64,
    /// Its size, when the runtime gave it (0: unknown).
    pub size: u64,
    /// Its sample's number.
    pub sample: u32,
}

/// Address bits below a page's number.
const PAGE_BITS: u32 = 12;

/// Page slots remembered (a power of two).
const CACHED: usize = 8;

/// Followed objects by address (at most one per address).
#[derive(Default)]
pub(super) struct Followed {
    /// Slots: each page's entries, sorted by address; an empty slot is free.
    pages: Vec<Vec<Entry>>,
    /// Page number -> slot.
    index: BTreeMap<u64, u32>,
    /// Free slots.
    free: Vec<u32>,
    /// (page number, slot) of pages used lately, by page number modulo
    /// [`CACHED`]; `None` when none.
    cache: [Option<(u64, u32)>; CACHED],
    len: usize,
}

fn page(addr: u64) -> u64 {
    addr >> PAGE_BITS
}

impl Followed {
    /// Entries held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// The slot of page `p`, when it has entries.
    #[inline]
    fn slot(&mut self, p: u64) -> Option<u32> {
        let c = (p as usize) & (CACHED - 1);
        match self.cache[c] {
            Some((q, s)) if q == p => Some(s),
            _ => {
                let s = *self.index.get(&p)?;
                self.cache[c] = Some((p, s));
                Some(s)
            }
        }
    }

    /// The entry with the greatest address at or below `addr`.
    #[inline]
    pub fn at_or_below(&mut self, addr: u64) -> Option<Entry> {
        let p = page(addr);
        if let Some(s) = self.slot(p) {
            let run = &self.pages[s as usize];
            let k = match run.last() {
                Some(e) if e.addr <= addr => run.len(),
                _ => run.partition_point(|e| e.addr <= addr),
            };
            if k > 0 {
                return Some(run[k - 1]);
            }
        }
        // Below every entry of its page: the last of the page below.
        let (_, &s) = self.index.range(..p).next_back()?;
        self.pages[s as usize].last().copied()
    }

    /// Removes the entry at `addr`, if any.
    pub fn remove(&mut self, addr: u64) -> Option<Entry> {
        let p = page(addr);
        let s = self.slot(p)?;
        let run = &mut self.pages[s as usize];
        let k = run.binary_search_by_key(&addr, |e| e.addr).ok()?;
        let e = run.remove(k);
        self.len -= 1;
        if run.is_empty() {
            self.index.remove(&p);
            self.free.push(s);
            self.cache[(p as usize) & (CACHED - 1)] = None;
        }
        Some(e)
    }

    /// Adds `e`, in the place of an entry at the same address (returned).
    #[inline]
    pub fn insert(&mut self, e: Entry) -> Option<Entry> {
        let p = page(e.addr);
        let s = match self.slot(p) {
            Some(s) => s,
            None => {
                let s = match self.free.pop() {
                    Some(s) => s,
                    None => {
                        self.pages.push(Vec::new());
                        (self.pages.len() - 1) as u32
                    }
                };
                self.index.insert(p, s);
                self.cache[(p as usize) & (CACHED - 1)] = Some((p, s));
                s
            }
        };
        let run = &mut self.pages[s as usize];
        match run.last() {
            Some(last) if last.addr >= e.addr => match run.binary_search_by_key(&e.addr, |x| x.addr) {
                Ok(k) => return Some(std::mem::replace(&mut run[k], e)),
                Err(k) => run.insert(k, e),
            },
            _ => run.push(e),
        }
        self.len += 1;
        None
    }

    /// Every entry, in address order; the set is left empty.
    pub fn take_sorted(&mut self) -> Vec<Entry> {
        let mut all = Vec::with_capacity(self.len);
        for &s in self.index.values() {
            all.append(&mut self.pages[s as usize]);
        }
        self.index.clear();
        self.free.clear();
        self.free.extend((0..self.pages.len() as u32).rev());
        self.cache = [None; CACHED];
        self.len = 0;
        all
    }

    /// Puts back `sorted` (in address order, one entry per address) into
    /// an empty set.
    pub fn rebuild(&mut self, sorted: &[Entry]) {
        debug_assert_eq!(self.len, 0);
        for run in sorted.chunk_by(|a, b| page(a.addr) == page(b.addr)) {
            let s = match self.free.pop() {
                Some(s) => s,
                None => {
                    self.pages.push(Vec::new());
                    (self.pages.len() - 1) as u32
                }
            };
            self.pages[s as usize].extend_from_slice(run);
            self.index.insert(page(run[0].addr), s);
        }
        // Slots no page took keep their memory for the pages to come (at
        // most what the most entries held at once took).
        self.len = sorted.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn e(addr: u64, sample: u32) -> Entry {
        Entry { addr, size: 8, sample }
    }

    /// Random inserts, removals and lookups, clustered and spread, against
    /// a `BTreeMap`.
    #[test]
    fn agrees_with_a_btreemap() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut f = Followed::default();
        let mut oracle: BTreeMap<u64, Entry> = BTreeMap::new();
        for round in 0..40u32 {
            for i in 0..3_000u32 {
                let r = next();
                let addr = match r % 4 {
                    0 => r >> 40,                                      // spread
                    1 => 0x10_0000 + (r >> 8) % 0x4000,                // a few pages
                    2 => (u64::from(round) << 16) + u64::from(i) * 24, // upwards
                    _ => u64::MAX - (r >> 50),                         // the top
                };
                match (r >> 4) % 5 {
                    0 => assert_eq!(f.remove(addr), oracle.remove(&addr)),
                    1 | 2 => assert_eq!(f.insert(e(addr, i)), oracle.insert(addr, e(addr, i))),
                    _ => {}
                }
                let below = oracle.range(..=addr).next_back().map(|(_, &x)| x);
                assert_eq!(f.at_or_below(addr), below, "at {addr:#x}");
                assert_eq!(f.len(), oracle.len());
            }
            if round % 7 == 6 {
                let all = f.take_sorted();
                assert_eq!(all, oracle.values().copied().collect::<Vec<_>>());
                assert_eq!(f.at_or_below(u64::MAX), None);
                let kept: Vec<Entry> = all.into_iter().filter(|x| x.sample % 3 != 0).collect();
                oracle.retain(|_, x| x.sample % 3 != 0);
                f.rebuild(&kept);
            }
        }
    }
}
