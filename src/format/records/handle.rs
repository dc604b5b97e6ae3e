//! GC handles: `h` created, `j` destroyed.

use crate::format::fields::Fields;
use crate::format::ids::{Address, HandleId, StackId, ThreadId};
use crate::format::text::{self, Style};

/// `h threadId handleId initialObjectAddr stackId`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandleCreated {
    /// The creating thread.
    pub thread: ThreadId,
    /// The handle.
    pub handle: HandleId,
    /// The object it first referred to (0 for none).
    pub initial: Address,
    /// The stack at creation.
    pub stack: StackId,
}

impl HandleCreated {
    pub(crate) fn parse(f: &mut Fields<'_>) -> Self {
        let thread = ThreadId(f.int("a thread id"));
        let handle = HandleId(f.long("a handle id"));
        let initial = Address(f.long("an object address"));
        let stack = StackId(f.int("a stack id"));
        HandleCreated { thread, handle, initial, stack }
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>, style: Style) {
        out.extend_from_slice(b"h ");
        text::dec_i64(out, self.thread.0 as i64);
        out.push(b' ');
        text::hex_pointer(out, self.handle.0, style);
        out.push(b' ');
        text::hex_pointer(out, self.initial.0, style);
        out.push(b' ');
        text::dec_i64(out, self.stack.0 as i64);
        out.push(b'\n');
    }
}

/// `j threadId handleId stackId`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandleDestroyed {
    /// The destroying thread.
    pub thread: ThreadId,
    /// The handle.
    pub handle: HandleId,
    /// The stack at destruction.
    pub stack: StackId,
}

impl HandleDestroyed {
    pub(crate) fn parse(f: &mut Fields<'_>) -> Self {
        let thread = ThreadId(f.int("a thread id"));
        let handle = HandleId(f.long("a handle id"));
        let stack = StackId(f.int("a stack id"));
        HandleDestroyed { thread, handle, stack }
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>, style: Style) {
        out.extend_from_slice(b"j ");
        text::dec_i64(out, self.thread.0 as i64);
        out.push(b' ');
        text::hex_pointer(out, self.handle.0, style);
        out.push(b' ');
        text::dec_i64(out, self.stack.0 as i64);
        out.push(b'\n');
    }
}
