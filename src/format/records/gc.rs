//! Garbage collections: `b` boundaries, `g` counts, `u` moves, `v`
//! survivals and `l` finalizer queueing.

use crate::format::fields::{FieldProblem, Fields};
use crate::format::ids::Address;
use crate::format::list::{next_number, List, ListItem};
use crate::format::text::{self, Style};

/// One generation's address range on a `b` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GenerationRange {
    /// First address of the range.
    pub start: Address,
    /// Bytes in use.
    pub length: u64,
    /// Bytes reserved.
    pub reserved: u64,
    /// The generation: 0, 1, 2, or 3 for the large object heap.
    pub generation: i32,
}

impl ListItem for GenerationRange {
    #[inline]
    fn decode(i: &[u8]) -> Option<(&[u8], Self)> {
        let (i, start) = next_number(i)?;
        let (i, length) = next_number(i)?;
        let (i, reserved) = next_number(i)?;
        let (i, generation) = next_number(i)?;
        Some((
            i,
            GenerationRange {
                start: Address(start.as_u64()),
                length: length.as_u64(),
                reserved: reserved.as_u64(),
                generation: generation.as_i32(),
            },
        ))
    }
}

/// `b isStart induced condemnedGen [rangeStart length reserved gen]...`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GcBoundary<'a> {
    /// True for a GC start, false for its end.
    pub is_start: bool,
    /// True for an induced GC (`GC.Collect`).
    pub induced: bool,
    /// The condemned generation.
    pub condemned: i32,
    /// The generation bounds at this moment (the ranges the reader accepts).
    pub ranges: List<'a, GenerationRange>,
}

impl<'a> GcBoundary<'a> {
    pub(crate) fn parse(f: &mut Fields<'a>) -> Self {
        let is_start = f.int("a GC start flag") != 0;
        let induced = f.int("an induced flag") != 0;
        let condemned = f.int("a condemned generation");
        let start = f.rest;
        let mut end = f.rest;
        while matches!(f.peek(), Some(b) if b >= b' ') {
            let before = f.rest.len();
            let first = f.opt_long("a generation range start");
            f.opt_long("a generation range length");
            f.opt_long("a generation range reserved length");
            let generation = f.opt_int("a generation number").as_i32();
            if f.rest.is_empty() || generation < 0 {
                if first.present && generation < 0 && f.issue.is_none() {
                    f.issue = Some(crate::format::fields::FieldIssue {
                        remaining: before,
                        problem: FieldProblem::Missing,
                        expected: "a complete generation range (start length reserved generation)",
                    });
                }
                break;
            }
            end = f.rest;
        }
        GcBoundary { is_start, induced, condemned, ranges: List::Raw(&start[..start.len() - end.len()]) }
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>, style: Style) {
        out.extend_from_slice(if self.is_start { b"b 1 " } else { b"b 0 " });
        out.extend_from_slice(if self.induced { b"1 " } else { b"0 " });
        text::dec_i64(out, self.condemned as i64);
        for r in self.ranges.iter() {
            out.push(b' ');
            text::hex_pointer(out, r.start.0, style);
            out.push(b' ');
            text::dec_u64(out, r.length);
            out.push(b' ');
            text::dec_u64(out, r.reserved);
            out.push(b' ');
            text::dec_i64(out, r.generation as i64);
        }
        out.push(b'\n');
    }
}

/// `g gen0Count gen1Count gen2Count`: cumulative GC counts (-1 when
/// missing; a `g` without numbers has a meaning of its own to the reader).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcCounts {
    /// Generation 0 collections so far.
    pub gen0: i32,
    /// Generation 1 collections so far.
    pub gen1: i32,
    /// Generation 2 collections so far.
    pub gen2: i32,
}

impl GcCounts {
    pub(crate) fn parse(f: &mut Fields<'_>) -> Self {
        let gen0 = f.opt_int("a gen 0 count").as_i32();
        let gen1 = f.opt_int("a gen 1 count").as_i32();
        let gen2 = f.opt_int("a gen 2 count").as_i32();
        GcCounts { gen0, gen1, gen2 }
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.push(b'g');
        for v in [self.gen0, self.gen1, self.gen2] {
            if v < 0 {
                break;
            }
            out.push(b' ');
            text::dec_i64(out, v as i64);
        }
        out.push(b'\n');
    }
}

/// `u oldStart newStart length`: live objects moved during a GC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moved {
    /// Where the range was.
    pub old: Address,
    /// Where it is now.
    pub new: Address,
    /// Bytes in the range.
    pub length: u32,
}

impl Moved {
    #[inline]
    pub(crate) fn parse(f: &mut Fields<'_>) -> Self {
        let old = Address(f.long("the old range start"));
        let new = Address(f.long("the new range start"));
        let length = f.int("a range length") as u32;
        Moved { old, new, length }
    }

    #[inline]
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"u ");
        text::hex_lower(out, self.old.0);
        out.push(b' ');
        text::hex_lower(out, self.new.0);
        out.push(b' ');
        text::dec_u64(out, self.length as u64);
        out.push(b'\n');
    }
}

/// `v start length`: live objects survived in place during a GC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Survived {
    /// First address of the range.
    pub start: Address,
    /// Bytes in the range.
    pub length: u32,
}

impl Survived {
    #[inline]
    pub(crate) fn parse(f: &mut Fields<'_>) -> Self {
        let start = Address(f.long("a range start"));
        let length = f.int("a range length") as u32;
        Survived { start, length }
    }

    #[inline]
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"v ");
        text::hex_lower(out, self.start.0);
        out.push(b' ');
        text::dec_u64(out, self.length as u64);
        out.push(b'\n');
    }
}

/// `l isCritical objectAddr`: an object was queued for finalization.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FinalizerQueued {
    /// A critical finalizer (`SafeHandle` and friends).
    pub critical: bool,
    /// The object.
    pub address: Address,
}

impl FinalizerQueued {
    pub(crate) fn parse(f: &mut Fields<'_>) -> Self {
        let critical = f.int("a critical flag") != 0;
        let address = Address(f.long("an object address"));
        FinalizerQueued { critical, address }
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>, style: Style) {
        out.extend_from_slice(if self.critical { b"l 1 " } else { b"l 0 " });
        text::hex_pointer(out, self.address.0, style);
        out.push(b'\n');
    }
}
