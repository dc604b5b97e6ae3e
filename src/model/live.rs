//! The live objects of the heap simulation, ordered by address.
//!
//! CLRProfiler keeps 16 bits for every 4-byte word of address space and
//! marks an object (of 12 bytes or more) by three header words at its
//! address. This store keeps only the objects: one entry per marked word,
//! keyed by the word index (`address >> 2`), holding what the three header
//! words encode (stack row and allocation tick) plus the object's id. The
//! entries live in pages of sorted arrays:
//!
//! ```text
//! firsts: [0x400, 0x8200, ...]            first key of each page
//! pages:  [ keys [0x400, 0x406, 0x40f, ...]   (up to 1024, sorted)
//!           vals [hdr,   hdr,   hdr,   ...] ]
//!         [ keys [0x8200, ...] ... ]
//! ```
//!
//! Allocations mostly arrive in increasing address order within a region,
//! so an insert is usually a push at the end of the page last used (found
//! without a search through a hint); a page that fills up is split. No
//! allocation per object and no hashing. Range removals drain whole pages.
//!
//! The header-word details that matter on inconsistent logs (a clear that
//! hits the second or third word of a header, a header written over another
//! one's words) are applied by [`super::heap`], which knows how the words
//! encode an entry.

use std::cell::Cell;

/// Entries per page.
const PAGE: usize = 1024;

/// What the simulated heap holds for one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// The stack row, or `RAW | stack index` when damage left a stack index
    /// without a row (section 3.1 of `docs/reference-reader.md`).
    pub row: u32,
    /// The allocation tick index.
    pub tick: u32,
    /// The object's id.
    pub obj: u32,
}

/// Flag of [`Header::row`]: the value is a raw stack index.
pub(crate) const RAW: u32 = 1 << 31;

#[derive(Clone, Debug, Default)]
struct Page {
    keys: Vec<u64>,
    vals: Vec<Header>,
}

impl Page {
    fn with(key: u64, val: Header) -> Page {
        let mut keys = Vec::with_capacity(PAGE);
        let mut vals = Vec::with_capacity(PAGE);
        keys.push(key);
        vals.push(val);
        Page { keys, vals }
    }
}

/// The address-ordered store of live objects (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct LiveObjects {
    pages: Vec<Page>,
    firsts: Vec<u64>,
    len: usize,
    hint: Cell<usize>,
}

impl LiveObjects {
    /// Number of objects.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The page that holds (or would hold) `key`: the last page whose first
    /// key is at most `key`, or page 0. The store must not be empty.
    #[inline]
    fn page_for(&self, key: u64) -> usize {
        let h = self.hint.get();
        let n = self.firsts.len();
        if h < n && self.firsts[h] <= key && (h + 1 == n || key < self.firsts[h + 1]) {
            return h;
        }
        let p = self.firsts.partition_point(|&f| f <= key).saturating_sub(1);
        self.hint.set(p);
        p
    }

    /// The entry at `key`.
    #[inline]
    pub(crate) fn get(&self, key: u64) -> Option<Header> {
        if self.pages.is_empty() {
            return None;
        }
        let p = &self.pages[self.page_for(key)];
        let i = p.keys.partition_point(|&k| k < key);
        (i < p.keys.len() && p.keys[i] == key).then(|| p.vals[i])
    }

    /// Replaces the header of the entry at `key` (which must exist).
    pub(crate) fn set(&mut self, key: u64, h: Header) {
        if self.pages.is_empty() {
            return;
        }
        let pi = self.page_for(key);
        let p = &mut self.pages[pi];
        let i = p.keys.partition_point(|&k| k < key);
        if i < p.keys.len() && p.keys[i] == key {
            p.vals[i] = h;
        }
    }

    /// The entry with the greatest key at most `key`.
    #[inline]
    pub(crate) fn find_le(&self, key: u64) -> Option<(u64, Header)> {
        if self.pages.is_empty() {
            return None;
        }
        let pi = self.page_for(key);
        let p = &self.pages[pi];
        let i = p.keys.partition_point(|&k| k <= key);
        if i == 0 {
            return None; // only for page 0: every key is above
        }
        Some((p.keys[i - 1], p.vals[i - 1]))
    }

    /// The entry with the least key in `[lo, hi]` (both inclusive).
    #[inline]
    pub(crate) fn find_in(&self, lo: u64, hi: u64) -> Option<(u64, Header)> {
        if self.pages.is_empty() || lo > hi {
            return None;
        }
        let pi = self.page_for(lo);
        let p = &self.pages[pi];
        let i = p.keys.partition_point(|&k| k < lo);
        let (k, v) = if i < p.keys.len() {
            (p.keys[i], p.vals[i])
        } else {
            let q = self.pages.get(pi + 1)?;
            (q.keys[0], q.vals[0])
        };
        (k <= hi).then_some((k, v))
    }

    /// Inserts or replaces the entry at `key`; returns the replaced header.
    #[inline]
    pub(crate) fn insert(&mut self, key: u64, val: Header) -> Option<Header> {
        if self.pages.is_empty() {
            self.pages.push(Page::with(key, val));
            self.firsts.push(key);
            self.len = 1;
            return None;
        }
        let pi = self.page_for(key);
        let p = &mut self.pages[pi];
        let n = p.keys.len();
        // Fast path: beyond the page's last key.
        let i = if p.keys[n - 1] < key { n } else { p.keys.partition_point(|&k| k < key) };
        if i < n && p.keys[i] == key {
            return Some(std::mem::replace(&mut p.vals[i], val));
        }
        self.len += 1;
        if n < PAGE {
            p.keys.insert(i, key);
            p.vals.insert(i, val);
            if i == 0 {
                self.firsts[pi] = key;
            }
            return None;
        }
        if i == n {
            // A full page appended to: start the next page.
            self.pages.insert(pi + 1, Page::with(key, val));
            self.firsts.insert(pi + 1, key);
            self.hint.set(pi + 1);
            return None;
        }
        // Split in halves, then insert into the half that holds `i`.
        let mid = PAGE / 2;
        let mut right = Page { keys: Vec::with_capacity(PAGE), vals: Vec::with_capacity(PAGE) };
        right.keys.extend_from_slice(&p.keys[mid..]);
        right.vals.extend_from_slice(&p.vals[mid..]);
        p.keys.truncate(mid);
        p.vals.truncate(mid);
        if i <= mid {
            p.keys.insert(i, key);
            p.vals.insert(i, val);
            if i == 0 {
                self.firsts[pi] = key;
            }
        } else {
            right.keys.insert(i - mid, key);
            right.vals.insert(i - mid, val);
        }
        let rf = right.keys[0];
        self.pages.insert(pi + 1, right);
        self.firsts.insert(pi + 1, rf);
        None
    }

    /// Removes the entry at `key`.
    #[inline]
    pub(crate) fn remove(&mut self, key: u64) -> Option<Header> {
        if self.pages.is_empty() {
            return None;
        }
        let pi = self.page_for(key);
        let p = &mut self.pages[pi];
        let i = p.keys.partition_point(|&k| k < key);
        if i >= p.keys.len() || p.keys[i] != key {
            return None;
        }
        p.keys.remove(i);
        let v = p.vals.remove(i);
        self.len -= 1;
        if p.keys.is_empty() {
            self.pages.remove(pi);
            self.firsts.remove(pi);
            self.hint.set(0);
        } else if i == 0 {
            self.firsts[pi] = p.keys[0];
        }
        Some(v)
    }

    /// Removes every entry with a key in `[lo, hi)`, calling `f` for each in
    /// key order.
    pub(crate) fn remove_range(&mut self, lo: u64, hi: u64, mut f: impl FnMut(u64, Header)) {
        if self.pages.is_empty() || lo >= hi {
            return;
        }
        let first = self.page_for(lo);
        let mut pi = first;
        let mut empty_from = usize::MAX;
        let mut empty_to = 0;
        while pi < self.pages.len() && self.firsts[pi] < hi {
            let p = &mut self.pages[pi];
            let n = p.keys.len();
            let a = p.keys.partition_point(|&k| k < lo);
            let b = p.keys.partition_point(|&k| k < hi);
            if a < b {
                for j in a..b {
                    f(p.keys[j], p.vals[j]);
                }
                p.keys.drain(a..b);
                p.vals.drain(a..b);
                self.len -= b - a;
                if p.keys.is_empty() {
                    empty_from = empty_from.min(pi);
                    empty_to = pi + 1;
                } else if a == 0 {
                    self.firsts[pi] = p.keys[0];
                }
            }
            if b < n {
                break; // this page holds keys at or above `hi`
            }
            pi += 1;
        }
        if empty_from < empty_to {
            self.pages.drain(empty_from..empty_to);
            self.firsts.drain(empty_from..empty_to);
            self.hint.set(0);
        }
    }

    /// Repacks the pages when they are less than half full on average.
    pub(crate) fn compact(&mut self) {
        if self.pages.len() < 4 || self.len * 2 > self.pages.len() * PAGE {
            return;
        }
        let old = std::mem::take(&mut self.pages);
        self.firsts.clear();
        let mut cur = Page { keys: Vec::with_capacity(PAGE), vals: Vec::with_capacity(PAGE) };
        for p in old {
            for (k, v) in p.keys.into_iter().zip(p.vals) {
                if cur.keys.len() == PAGE {
                    self.firsts.push(cur.keys[0]);
                    self.pages.push(std::mem::replace(
                        &mut cur,
                        Page { keys: Vec::with_capacity(PAGE), vals: Vec::with_capacity(PAGE) },
                    ));
                }
                cur.keys.push(k);
                cur.vals.push(v);
            }
        }
        if !cur.keys.is_empty() {
            self.firsts.push(cur.keys[0]);
            self.pages.push(cur);
        }
        self.hint.set(0);
    }

    /// Every entry in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, Header)> + '_ {
        self.pages.iter().flat_map(|p| p.keys.iter().copied().zip(p.vals.iter().copied()))
    }

    /// Bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.pages.iter().map(|p| p.keys.capacity() * 8 + p.vals.capacity() * 12).sum::<usize>()
            + self.pages.capacity() * std::mem::size_of::<Page>()
            + self.firsts.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn h(x: u32) -> Header {
        Header { row: x, tick: x, obj: x }
    }

    #[test]
    fn against_btreemap() {
        // A deterministic pseudo-random mix of operations.
        let mut s = LiveObjects::default();
        let mut m: BTreeMap<u64, Header> = BTreeMap::new();
        let mut x: u64 = 12345;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut seq = 0u64;
        for step in 0..200_000u32 {
            let r = next();
            let key = match r % 4 {
                0 | 1 => {
                    seq += 1 + r % 3;
                    seq
                }
                _ => (r >> 8) % 20_000,
            };
            match (r >> 40) % 10 {
                0..=5 => assert_eq!(s.insert(key, h(step)), m.insert(key, h(step))),
                6 => assert_eq!(s.remove(key), m.remove(&key)),
                7 => {
                    let hi = key + (r >> 20) % 3000;
                    let mut got = Vec::new();
                    s.remove_range(key, hi, |k, v| got.push((k, v)));
                    let want: Vec<_> = m.range(key..hi).map(|(&k, &v)| (k, v)).collect();
                    for (k, _) in &want {
                        m.remove(k);
                    }
                    assert_eq!(got, want);
                }
                8 => {
                    assert_eq!(s.find_le(key), m.range(..=key).next_back().map(|(&k, &v)| (k, v)));
                    let hi = key + (r >> 20) % 50;
                    assert_eq!(s.find_in(key, hi), m.range(key..=hi).next().map(|(&k, &v)| (k, v)));
                }
                _ => {
                    assert_eq!(s.get(key), m.get(&key).copied());
                    if step % 1000 == 0 {
                        s.compact();
                    }
                }
            }
            assert_eq!(s.len(), m.len());
        }
        assert!(s.iter().eq(m.iter().map(|(&k, &v)| (k, v))));
    }
}
