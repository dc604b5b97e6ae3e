//! Allocations (`!`, `a`) and calls (`c`).

use crate::format::fields::Fields;
use crate::format::ids::{Address, StackId, ThreadId};
use crate::format::text;

/// `! threadId objectAddr stackId`, or the older `a objectAddr stackId`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Alloc {
    /// The allocating thread (`None` for the older `a` form).
    pub thread: Option<ThreadId>,
    /// The new object's address.
    pub address: Address,
    /// The allocation stack (type and size are part of it).
    pub stack: StackId,
}

impl Alloc {
    #[inline]
    pub(crate) fn parse_with_thread(f: &mut Fields<'_>) -> Self {
        let thread = Some(ThreadId(f.int("a thread id")));
        let address = Address(f.long("an object address"));
        let stack = StackId(f.int("an allocation stack id"));
        Alloc { thread, address, stack }
    }

    #[inline]
    pub(crate) fn parse_without_thread(f: &mut Fields<'_>) -> Self {
        let address = Address(f.long("an object address"));
        let stack = StackId(f.int("an allocation stack id"));
        Alloc { thread: None, address, stack }
    }

    #[inline]
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        let mut line = text::Line::new();
        line.dec(self.stack.0 as i64).text(b" ").hex(self.address.0);
        match self.thread {
            Some(t) => line.text(b" ").dec(t.0 as i64).text(b"! "),
            None => line.text(b"a "),
        };
        line.finish(out);
    }
}

/// `c threadId stackId`: the stack at a call (call logging).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call {
    /// The calling thread.
    pub thread: ThreadId,
    /// The stack at the call, innermost frame last.
    pub stack: StackId,
}

impl Call {
    #[inline]
    pub(crate) fn parse(f: &mut Fields<'_>) -> Self {
        let thread = ThreadId(f.int("a thread id"));
        let stack = StackId(f.int("a stack id"));
        Call { thread, stack }
    }

    #[inline]
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        text::Line::new().dec(self.stack.0 as i64).text(b" ").dec(self.thread.0 as i64).text(b"c ").finish(out);
    }
}
