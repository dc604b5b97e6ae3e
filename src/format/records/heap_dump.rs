//! Heap dumps: `e` roots, `r` roots (older form), `o` objects.

use crate::format::fields::Fields;
use crate::format::ids::{Address, TypeId};
use crate::format::list::{next_number, List, ListItem};
use crate::format::text::{self, Style};

impl ListItem for Address {
    #[inline]
    fn decode(i: &[u8]) -> Option<(&[u8], Self)> {
        next_number(i).map(|(r, n)| (r, Address(n.as_u64())))
    }
}

/// The kind of a GC root (`e` lines).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RootKind {
    /// 0: other.
    Other,
    /// 1: a stack slot (the root id is then a function id).
    Stack,
    /// 2: the finalizer queue.
    Finalizer,
    /// 3: a GC handle.
    Handle,
}

impl RootKind {
    /// Maps the number written in the log (unknown values read as other).
    pub fn from_code(code: i32) -> RootKind {
        match code {
            1 => RootKind::Stack,
            2 => RootKind::Finalizer,
            3 => RootKind::Handle,
            _ => RootKind::Other,
        }
    }
}

/// Root flag bit: pinning.
pub const ROOT_PINNING: i32 = 1;
/// Root flag bit: weak reference.
pub const ROOT_WEAK: i32 = 2;
/// Root flag bit: interior pointer.
pub const ROOT_INTERIOR: i32 = 4;
/// Root flag bit: reference counted.
pub const ROOT_REFCOUNTED: i32 = 8;
/// Root flag bit (clrprof's own, not the profiling API's): the snapshot
/// holds the object without naming what holds it (an imported `.gcdump`'s
/// objects that none of its roots reaches); such a root has kind other.
pub const ROOT_UNNAMED: i32 = 0x100;

/// `e objectAddr rootKind rootFlags rootId`: one GC root of a heap dump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Root {
    /// The referenced object.
    pub address: Address,
    /// The kind code (see [`RootKind::from_code`]).
    pub kind: i32,
    /// Flag bits (`ROOT_*`).
    pub flags: i32,
    /// A handle or address, or for stack roots a function id.
    pub id: u64,
}

impl Root {
    pub(crate) fn parse(f: &mut Fields<'_>) -> Self {
        let address = Address(f.long("an object address"));
        let kind = f.int("a root kind");
        let flags = f.int("root flags");
        let id = f.long("a root id");
        Root { address, kind, flags, id }
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>, style: Style) {
        out.extend_from_slice(b"e ");
        text::hex_pointer(out, self.address.0, style);
        out.push(b' ');
        text::dec_i64(out, self.kind as i64);
        out.push(b' ');
        text::hex_plain(out, self.flags as u32 as u64);
        out.push(b' ');
        if self.kind == 1 {
            text::dec_u64(out, self.id);
        } else {
            text::hex_pointer(out, self.id, style);
        }
        out.push(b'\n');
    }
}

/// Addresses until a missing one (or -1).
fn address_list<'a>(f: &mut Fields<'a>) -> List<'a, Address> {
    let start = f.rest;
    let mut end = f.rest;
    loop {
        let n = f.opt_long("an object address");
        if n.as_u64() == u64::MAX {
            break;
        }
        end = f.rest;
    }
    List::Raw(&start[..start.len() - end.len()])
}

/// `r objectAddr...`: the roots of a heap dump (older form).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Roots<'a> {
    /// The root objects (0 entries are ignored by the reader).
    pub addresses: List<'a, Address>,
}

impl<'a> Roots<'a> {
    pub(crate) fn parse(f: &mut Fields<'a>) -> Self {
        Roots { addresses: address_list(f) }
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>, style: Style) {
        out.extend_from_slice(b"r ");
        for a in self.addresses.iter() {
            text::hex_pointer(out, a.0, style);
            out.push(b' ');
        }
        out.push(b'\n');
    }
}

/// `o objectAddr typeId size refAddr...`: an object in a heap dump.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeapObject<'a> {
    /// The object.
    pub address: Address,
    /// Its type.
    pub type_id: TypeId,
    /// Its size in bytes.
    pub size: u32,
    /// The objects it references.
    pub refs: List<'a, Address>,
}

impl<'a> HeapObject<'a> {
    pub(crate) fn parse(f: &mut Fields<'a>) -> Self {
        let address = Address(f.long("an object address"));
        let type_id = TypeId(f.int("a type id"));
        let size = f.int("an object size") as u32;
        HeapObject { address, type_id, size, refs: address_list(f) }
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"o ");
        text::hex_lower(out, self.address.0);
        out.push(b' ');
        text::dec_i64(out, self.type_id.0 as i64);
        out.push(b' ');
        text::dec_u64(out, self.size as u64);
        for a in self.refs.iter() {
            out.push(b' ');
            text::hex_lower(out, a.0);
        }
        out.push(b'\n');
    }
}
