//! Stack definitions: `n` (prefix-compressed) and the older `s`.

use crate::format::fields::Fields;
use crate::format::ids::{FunctionId, StackId, TypeId};
use crate::format::list::{next_number, List, ListItem};
use crate::format::text;

impl ListItem for FunctionId {
    #[inline]
    fn decode(i: &[u8]) -> Option<(&[u8], Self)> {
        next_number(i).map(|(r, n)| (r, FunctionId(n.as_i32())))
    }
}

/// `n stackId flag [typeId size] [refStackId] funcId...`.
///
/// `flag` bit 0: an allocation stack (type and size follow); bit 1: the
/// reference stack is an allocation stack; `flag / 4`: frames shared with
/// the reference stack, whose id follows when `flag >= 4`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StackDef<'a> {
    /// The new stack's id.
    pub id: StackId,
    /// The flag field as written.
    pub flag: i32,
    /// Allocated type and size, for an allocation stack.
    pub alloc: Option<(TypeId, i32)>,
    /// The reference stack (present when `flag / 4 > 0`).
    pub reference: Option<StackId>,
    /// The frames listed after the shared prefix, outermost first.
    pub frames: List<'a, FunctionId>,
}

impl<'a> StackDef<'a> {
    /// Builds a stack definition, computing the flag.
    pub fn new(
        id: StackId,
        alloc: Option<(TypeId, i32)>,
        reference: Option<(StackId, u32, bool)>,
        frames: &'a [FunctionId],
    ) -> Self {
        let mut flag = alloc.is_some() as i32;
        let mut reference_id = None;
        if let Some((r, shared, ref_alloc)) = reference {
            flag |= ((shared as i32) * 4) | ((ref_alloc as i32) * 2);
            if shared > 0 {
                reference_id = Some(r);
            }
        }
        StackDef { id, flag, alloc, reference: reference_id, frames: List::Items(frames) }
    }

    /// Frames shared with the reference stack (`flag / 4`).
    pub fn shared_frames(&self) -> i32 {
        self.flag / 4
    }

    /// Whether the reference stack carries a type and size (`flag & 2`).
    pub fn reference_is_alloc(&self) -> bool {
        self.flag & 2 != 0
    }

    pub(crate) fn parse(f: &mut Fields<'a>) -> Self {
        let id = StackId(f.int("a stack id"));
        let flag = f.int("a stack flag");
        let alloc = if flag & 1 == 1 {
            let t = TypeId(f.int("an allocated type id"));
            let s = f.int("an allocated size");
            Some((t, s))
        } else {
            None
        };
        let reference = if flag / 4 > 0 && !f.rest.is_empty() {
            Some(StackId(f.int("a reference stack id")))
        } else {
            None
        };
        let frames = frame_list(f);
        StackDef { id, flag, alloc, reference, frames }
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"n ");
        text::dec_i64(out, self.id.0 as i64);
        out.push(b' ');
        text::dec_i64(out, self.flag as i64);
        if let Some((t, s)) = self.alloc {
            out.push(b' ');
            text::dec_i64(out, t.0 as i64);
            out.push(b' ');
            text::dec_i64(out, s as i64);
        }
        if let Some(r) = self.reference {
            out.push(b' ');
            text::dec_i64(out, r.0 as i64);
        }
        write_frames(out, &self.frames);
        out.push(b'\n');
    }
}

/// `s stackId funcId...`: the older uncompressed stack definition.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StackDefOld<'a> {
    /// The stack id.
    pub id: StackId,
    /// The frames, outermost first.
    pub frames: List<'a, FunctionId>,
}

impl<'a> StackDefOld<'a> {
    pub(crate) fn parse(f: &mut Fields<'a>) -> Self {
        let id = StackId(f.int("a stack id"));
        let frames = frame_list(f);
        StackDefOld { id, frames }
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"s ");
        text::dec_i64(out, self.id.0 as i64);
        write_frames(out, &self.frames);
        out.push(b'\n');
    }
}

/// Frame ids until a negative or missing one (which is consumed).
fn frame_list<'a>(f: &mut Fields<'a>) -> List<'a, FunctionId> {
    let start = f.rest;
    let mut end = f.rest;
    loop {
        let n = f.opt_int("a function id");
        if n.as_i32() < 0 {
            break;
        }
        end = f.rest;
    }
    List::Raw(&start[..start.len() - end.len()])
}

fn write_frames(out: &mut Vec<u8>, frames: &List<'_, FunctionId>) {
    for fr in frames.iter() {
        out.push(b' ');
        text::dec_i64(out, fr.0 as i64);
    }
}
