//! The position of an address in a heap dump's column of object
//! addresses, without a sorted copy of the column when it can be helped.
//!
//! A heap walk lists each region of the heap in address order, the
//! regions in any order (.NET 8's regions, the segments before them), so
//! the column is a few hundred ascending runs over disjoint ranges:
//!
//! ```text
//! addresses  [r2: 0x7f10.. ascending][r0: 0x7e00.. ascending][r1: 0x7e40.. ascending] ...
//! runs       (first, last, start, end) per run, sorted by first: a small table that stays in the cache
//! find(a)    the run whose [first, last] holds a, then a search within it, galloping from a hint
//! ```
//!
//! The hint is the referring object's position: the objects an object
//! references mostly lie near it, so the search takes a few steps in the
//! cache where a binary search over millions of addresses misses it at
//! most of its ~24 steps. Columns whose runs overlap (or that have more
//! runs than a walk makes) get a sorted copy of (address, position)
//! pairs instead, 16 bytes an object, and a plain binary search; an
//! address listed twice then finds its later object.

/// One ascending run of the column.
#[derive(Debug, Clone, Copy)]
struct Run {
    first: u64,
    last: u64,
    start: u32,
    end: u32,
}

/// See the module's documentation.
#[derive(Debug)]
pub(crate) struct AddressIndex {
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    /// Disjoint ascending runs, sorted by their first address.
    Runs(Vec<Run>),
    /// (address, position), sorted, one per address (the later position).
    Sorted(Vec<(u64, u32)>),
}

impl AddressIndex {
    /// The index of `addresses` (at most `u32::MAX` of them).
    pub(crate) fn new(addresses: &[u64]) -> AddressIndex {
        // A walk has a run per region or so: far fewer than this.
        let most_runs = 64 + addresses.len() / 1024;
        let mut runs: Vec<Run> = Vec::new();
        let mut start = 0usize;
        for i in 1..=addresses.len() {
            if i == addresses.len() || addresses[i] <= addresses[i - 1] {
                runs.push(Run { first: addresses[start], last: addresses[i - 1], start: start as u32, end: i as u32 });
                start = i;
                if runs.len() > most_runs {
                    return Self::sorted(addresses);
                }
            }
        }
        // A run may pass over a region that a later run lists (regions
        // A and C in one run, B after them): each run is cut where another
        // begins or ends, and the pieces must then be disjoint.
        let mut cuts: Vec<u64> = runs.iter().flat_map(|r| [r.first, r.last.saturating_add(1)]).collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut pieces: Vec<Run> = Vec::with_capacity(runs.len());
        for r in &runs {
            let slice = &addresses[r.start as usize..r.end as usize];
            let mut from = 0usize;
            let inner = cuts.partition_point(|&c| c <= r.first);
            for &c in cuts[inner..].iter().take_while(|&&c| c <= r.last) {
                let to = slice.partition_point(|&a| a < c);
                if to > from {
                    pieces.push(Self::piece(slice, r.start, from, to));
                }
                from = to;
            }
            if slice.len() > from {
                pieces.push(Self::piece(slice, r.start, from, slice.len()));
            }
            if pieces.len() > 4 * most_runs {
                return Self::sorted(addresses);
            }
        }
        pieces.sort_unstable_by_key(|r| r.first);
        if pieces.windows(2).any(|w| w[0].last >= w[1].first) {
            return Self::sorted(addresses);
        }
        AddressIndex { kind: Kind::Runs(pieces) }
    }

    /// Positions `from..to` of a run that starts at position `start`.
    fn piece(slice: &[u64], start: u32, from: usize, to: usize) -> Run {
        Run { first: slice[from], last: slice[to - 1], start: start + from as u32, end: start + to as u32 }
    }

    fn sorted(addresses: &[u64]) -> AddressIndex {
        let mut pairs: Vec<(u64, u32)> = addresses.iter().enumerate().map(|(i, &a)| (a, i as u32)).collect();
        pairs.sort_unstable();
        // An address listed twice: the later position.
        pairs.reverse();
        pairs.dedup_by_key(|p| p.0);
        pairs.reverse();
        AddressIndex { kind: Kind::Sorted(pairs) }
    }

    /// The position of `address` in `addresses` (the column the index was
    /// made of), searched from near position `hint`.
    #[inline]
    pub(crate) fn find(&self, addresses: &[u64], address: u64, hint: usize) -> Option<u32> {
        match &self.kind {
            Kind::Runs(runs) => {
                let k = runs.partition_point(|r| r.first <= address).checked_sub(1)?;
                let r = runs[k];
                if address > r.last {
                    return None;
                }
                let (start, end) = (r.start as usize, r.end as usize);
                let run = addresses.get(start..end)?;
                let from = if (start..end).contains(&hint) { hint - start } else { run.len() / 2 };
                gallop(run, address, from).map(|p| (start + p) as u32)
            }
            Kind::Sorted(pairs) => pairs.binary_search_by_key(&address, |p| p.0).ok().map(|k| pairs[k].1),
        }
    }
}

/// Finds references' objects through an [`AddressIndex`], guessing each
/// from the one before: the `k`th reference of an object lies at the
/// distance (in positions) the `k`th reference of the previous object
/// found its object at. In a walk, objects of a kind follow each other
/// and reference alike (each node of a list its next node and its
/// payload, at the same distances), so the guess is mostly right and
/// takes one comparison; else the index searches from the referrer. An
/// address can be at only one position of disjoint runs, so a right
/// guess is the answer; with a sorted copy (duplicates possible) the
/// index is always asked.
pub(crate) struct ReferenceFinder<'a> {
    index: &'a AddressIndex,
    addresses: &'a [u64],
    /// By reference number (the last shared by the rest): the last
    /// distance found.
    distances: [isize; 8],
}

impl<'a> ReferenceFinder<'a> {
    /// A finder over `addresses`, the column `index` was made of.
    pub(crate) fn new(index: &'a AddressIndex, addresses: &'a [u64]) -> ReferenceFinder<'a> {
        ReferenceFinder { index, addresses, distances: [0; 8] }
    }

    /// The position of `address`, the `k`th reference of the object at
    /// `referrer` (what [`AddressIndex::find`] gives).
    #[inline]
    pub(crate) fn find(&mut self, address: u64, referrer: usize, k: usize) -> Option<u32> {
        let slot = &mut self.distances[k.min(7)];
        let guess = referrer.wrapping_add_signed(*slot);
        let found = match self.index.kind {
            Kind::Runs(_) if self.addresses.get(guess) == Some(&address) => Some(guess as u32),
            _ => self.index.find(self.addresses, address, referrer),
        };
        if let Some(p) = found {
            *slot = (p as isize).wrapping_sub(referrer as isize);
        }
        found
    }
}

/// The position of `x` in the ascending `sorted`, searched outwards from
/// `hint` in doubling steps, then by halves within the last step.
#[inline]
pub(crate) fn gallop(sorted: &[u64], x: u64, hint: usize) -> Option<usize> {
    let n = sorted.len();
    let hint = hint.min(n.checked_sub(1)?);
    let at = sorted[hint];
    let (lo, hi) = if x > at {
        // x lies in [lo, hi).
        let (mut lo, mut step) = (hint, 1usize);
        loop {
            let next = lo.saturating_add(step);
            if next >= n {
                break (lo + 1, n);
            }
            if sorted[next] >= x {
                break (lo + 1, next + 1);
            }
            lo = next;
            step *= 2;
        }
    } else if x < at {
        // x lies in [lo, hi).
        let (mut hi, mut step) = (hint, 1usize);
        loop {
            match hi.checked_sub(step) {
                None => break (0, hi),
                Some(lo) if sorted[lo] <= x => break (lo, hi),
                Some(lo) => {
                    hi = lo;
                    step *= 2;
                }
            }
        }
    } else {
        return Some(hint);
    };
    let run = sorted.get(lo..hi)?;
    run.binary_search(&x).ok().map(|k| lo + k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The galloping search finds what a plain search finds, from any
        /// starting point.
        #[test]
        fn gallop_finds_what_a_plain_search_finds(
            mut sorted in proptest::collection::vec(0u64..400, 0..80),
            x in 0u64..420,
            hint in 0usize..100,
        ) {
            sorted.sort_unstable();
            sorted.dedup();
            let want = sorted.iter().position(|&a| a == x);
            prop_assert_eq!(gallop(&sorted, x, hint), want);
        }

        /// The index finds each address's object (the later one of an
        /// address listed twice) and nothing elsewhere, whatever the
        /// column: ascending runs over disjoint ranges (regions in any
        /// order), or anything.
        #[test]
        fn the_index_finds_every_object(
            regions in proptest::collection::vec(proptest::collection::vec(0u64..50, 0..20), 0..8),
            shuffled in proptest::collection::vec(1u64..300, 0..60),
            walk_like in any::<bool>(),
        ) {
            let addresses: Vec<u64> = if walk_like {
                // Region k covers [1000 k, 1000 k + 50), the even ones
                // listed first (one ascending run passing over the odd
                // ones), then the odd ones in reverse order.
                let mut out = Vec::new();
                let mut order: Vec<(usize, Vec<u64>)> = regions.into_iter().enumerate().collect();
                order.sort_by_key(|(k, _)| (k % 2, if k % 2 == 0 { *k as i64 } else { -(*k as i64) }));
                for (k, mut r) in order {
                    r.sort_unstable();
                    r.dedup();
                    out.extend(r.iter().map(|a| 1000 * k as u64 + a));
                }
                out
            } else {
                shuffled
            };
            let index = AddressIndex::new(&addresses);
            let top = addresses.iter().max().map_or(10, |m| m + 10);
            for a in 0..top {
                let want = addresses.iter().rposition(|&x| x == a).map(|k| k as u32);
                for hint in [0, addresses.len() / 3, addresses.len()] {
                    prop_assert_eq!(index.find(&addresses, a, hint), want, "address {}", a);
                }
            }
        }
    }

    proptest! {
        /// Guessed from the reference before or searched, each reference
        /// finds what the index finds.
        #[test]
        fn the_finder_finds_what_the_index_finds(
            regions in proptest::collection::vec(proptest::collection::vec(0u64..60, 0..30), 1..6),
            duplicates in any::<bool>(),
            refs in proptest::collection::vec((0usize..200, proptest::collection::vec(0u64..6100, 0..4)), 0..80),
        ) {
            // Regions in reverse order, each ascending; or with duplicates
            // (the sorted copy).
            let mut addresses = Vec::new();
            for (k, r) in regions.iter().enumerate().rev() {
                let mut r = r.clone();
                r.sort_unstable();
                r.dedup();
                addresses.extend(r.iter().map(|a| 1000 * k as u64 + 8 * a));
            }
            if duplicates {
                addresses.extend(addresses.clone());
            }
            let index = AddressIndex::new(&addresses);
            let mut finder = ReferenceFinder::new(&index, &addresses);
            let n = addresses.len().max(1);
            for (referrer, targets) in &refs {
                let referrer = referrer % n;
                for (k, &a) in targets.iter().enumerate() {
                    // Half the references name an object near the
                    // referrer, at a distance the next one repeats.
                    let a = if a % 2 == 0 { addresses.get((referrer + (a as usize % 7)) % n).copied().unwrap_or(a) } else { a };
                    prop_assert_eq!(finder.find(a, referrer, k), index.find(&addresses, a, referrer), "address {}", a);
                }
            }
        }
    }

    #[test]
    fn a_walk_of_regions_takes_no_sorted_copy() {
        let addresses: Vec<u64> = (0..100).map(|i| 0x9000 + 8 * i).chain((0..100).map(|i| 0x1000 + 8 * i)).collect();
        let index = AddressIndex::new(&addresses);
        assert!(matches!(index.kind, Kind::Runs(ref r) if r.len() == 2));
        assert_eq!(index.find(&addresses, 0x1008, 150), Some(101));
        assert_eq!(index.find(&addresses, 0x9000, 150), Some(0));
        assert_eq!(index.find(&addresses, 0x1004, 150), None);
        // Interleaved runs: the sorted copy.
        assert!(matches!(AddressIndex::new(&[1, 3, 5, 2, 4, 6]).kind, Kind::Sorted(_)));
        // A run passing over a region listed later: cut into disjoint pieces.
        let addresses: Vec<u64> = vec![0x10, 0x18, 0x50, 0x58, 0x30, 0x38];
        let index = AddressIndex::new(&addresses);
        assert!(matches!(index.kind, Kind::Runs(ref r) if r.len() == 3));
        for (k, &a) in addresses.iter().enumerate() {
            assert_eq!(index.find(&addresses, a, 0), Some(k as u32));
        }
    }
}
