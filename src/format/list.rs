//! Variable-length lists inside records (stack frames, generation ranges,
//! referenced addresses), kept as the raw bytes they were parsed from and
//! decoded on demand, or as a caller's slice when writing.

use super::scan;

/// A list of items, either as parsed bytes or as values to write.
///
/// A parsed list holds exactly the bytes of the items the reader accepted,
/// so iterating it never has to re-apply the stopping rule.
#[derive(Clone, Copy, Debug)]
pub enum List<'a, T> {
    /// The bytes of the accepted items in the log.
    Raw(&'a [u8]),
    /// Items given by a caller (for writing).
    Items(&'a [T]),
}

/// An item that can be decoded from a run of numbers.
pub trait ListItem: Copy {
    /// Decodes one item; `None` when the input is exhausted.
    fn decode(i: &[u8]) -> Option<(&[u8], Self)>;
}

impl<'a, T: ListItem> List<'a, T> {
    /// Iterates the items.
    pub fn iter(&self) -> ListIter<'a, T> {
        match *self {
            List::Raw(raw) => ListIter::Raw(raw),
            List::Items(items) => ListIter::Items(items.iter()),
        }
    }

    /// Counts the items (decodes a raw list).
    pub fn len(&self) -> usize {
        match self {
            List::Raw(_) => self.iter().count(),
            List::Items(items) => items.len(),
        }
    }

    /// True when the list holds no item.
    pub fn is_empty(&self) -> bool {
        match self {
            List::Raw(raw) => scan::skip_blanks(raw).is_empty(),
            List::Items(items) => items.is_empty(),
        }
    }
}

impl<T: ListItem + PartialEq> PartialEq for List<'_, T> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

/// Iterator over a [`List`].
pub enum ListIter<'a, T> {
    /// Decoding raw bytes.
    Raw(&'a [u8]),
    /// Walking a slice.
    Items(std::slice::Iter<'a, T>),
}

impl<T: ListItem> Iterator for ListIter<'_, T> {
    type Item = T;
    #[inline]
    fn next(&mut self) -> Option<T> {
        match self {
            ListIter::Raw(raw) => {
                let (rest, item) = T::decode(raw)?;
                *raw = rest;
                Some(item)
            }
            ListIter::Items(it) => it.next().copied(),
        }
    }
}

/// Decodes the next number of a raw list, `None` when no number is left.
#[inline]
pub(crate) fn next_number(i: &[u8]) -> Option<(&[u8], scan::Number)> {
    let (rest, n) = scan::number(i);
    if n.present {
        Some((rest, n))
    } else {
        None
    }
}
