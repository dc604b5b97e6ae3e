//! Per-thread state: the shadow stack and caches (touched only by the
//! owning thread) and the thread's binary records (written by the thread,
//! read by drains: [`crate::threadlog`]).

use crate::lines::Prefixes;
use crate::threadlog::{self, Reader, Writer};
use std::cell::UnsafeCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A small multiplicative hasher for integer keys (FxHash's scheme).
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64)
    }
    #[inline]
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64)
    }
    #[inline]
    fn write_i32(&mut self, v: i32) {
        self.write_u64(v as u32 as u64)
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A `HashMap` with [`FxHasher`].
pub type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// "Not computed yet" for a frame's call-path node.
pub const NO_NODE: u32 = u32::MAX;

/// One shadow-stack frame (16 bytes; the hook stubs write it).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Frame {
    /// The runtime's FunctionID.
    pub func: usize,
    /// This thread's id for the call path ending here, or [`NO_NODE`].
    pub node: u32,
}

/// The shadow stack: a vector whose layout the enter/leave stubs know
/// (`ptr` at 0, `len` at 8, `cap` at 16), so that they push and pop
/// without calling Rust (see [`crate::hooks`]).
#[repr(C)]
pub struct Shadow {
    ptr: *mut Frame,
    len: usize,
    cap: usize,
}

impl Default for Shadow {
    fn default() -> Shadow {
        let mut v = std::mem::ManuallyDrop::new(Vec::<Frame>::with_capacity(256));
        Shadow { ptr: v.as_mut_ptr(), len: 0, cap: v.capacity() }
    }
}

impl Drop for Shadow {
    fn drop(&mut self) {
        // Safety: ptr/len/cap always describe a Vec's allocation.
        drop(unsafe { Vec::from_raw_parts(self.ptr, self.len, self.cap) });
    }
}

impl Shadow {
    /// Pushes a frame, growing the vector when full.
    #[inline]
    pub fn push(&mut self, frame: Frame) {
        if self.len == self.cap {
            self.grow();
        }
        // Safety: len < cap after growing.
        unsafe { self.ptr.add(self.len).write(frame) };
        self.len += 1;
    }

    #[cold]
    fn grow(&mut self) {
        // Safety: ptr/len/cap describe a Vec's allocation; it is rebuilt
        // and given back without being dropped.
        let mut v = std::mem::ManuallyDrop::new(unsafe { Vec::from_raw_parts(self.ptr, self.len, self.cap) });
        v.reserve(self.cap.max(16));
        self.ptr = v.as_mut_ptr();
        self.cap = v.capacity();
    }

    /// Pops the innermost frame.
    #[inline]
    pub fn pop(&mut self) -> Option<Frame> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        // Safety: index < old len: an initialized frame.
        Some(unsafe { self.ptr.add(self.len).read() })
    }

    /// The frames, outermost first.
    #[inline]
    pub fn as_slice(&self) -> &[Frame] {
        // Safety: the first `len` frames are initialized.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The frames, mutable.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [Frame] {
        // Safety: as above.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// Frames on the stack.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True with no frame.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The innermost frame.
    #[inline]
    pub fn last(&self) -> Option<&Frame> {
        self.as_slice().last()
    }
}

/// What only the owning thread touches. `frames` comes first: the hook
/// stubs find it at offset 0 of the thread's state.
#[repr(C)]
pub struct Local {
    /// The shadow stack, outermost frame first.
    pub frames: Shadow,
    /// The thread's binary records (the writing end).
    pub log: Writer,
    /// Call-path trie: (parent node, FunctionID) -> node. Node 0 is the
    /// empty path.
    pub nodes: FxMap<(u32, usize), u32>,
    /// (node, ClassID, size) -> stack id (ClassID 0 for call stacks).
    pub stack_ids: FxMap<(u32, usize, u64), i32>,
    /// The stack this thread used last: the reference for `n` prefix
    /// compression, as in CLRProfiler.
    pub last_stack: Option<i32>,
    /// The last `stack_ids` entry looked up or added: consecutive
    /// allocations of one type at one place (a loop) skip the hash lookup.
    /// Entries never change once added, so it cannot go stale.
    pub memo: Option<((u32, usize, u64), i32)>,
    /// Per trie node: the child last interned under it, `(FunctionID,
    /// node)`. A recursion pushes the same function under the same path
    /// again and again: this answers it without probing `nodes`.
    pub last_child: Vec<(usize, u32)>,
    /// Per trie node: the last allocation stack there, `(ClassID, size,
    /// stack id)`, answering without probing `stack_ids` when a place
    /// allocates the same type and size as last time. Entries of both
    /// caches are copies of map entries, which never change.
    pub last_alloc: Vec<(usize, u64, i32)>,
    /// Functions being unwound by an exception (innermost last).
    pub unwinding: Vec<usize>,
    /// The search for a catcher of the exception thrown last: the shadow
    /// stack index of the frame it reached, and whether it found one
    /// (see `hooks::search_*`).
    pub search: Option<(usize, bool)>,
    /// Set while the agent works on this thread (no re-entry).
    pub busy: bool,
}

impl Local {
    fn new(log: Writer) -> Local {
        Local {
            frames: Shadow::default(),
            log,
            nodes: FxMap::default(),
            stack_ids: FxMap::default(),
            last_stack: None,
            memo: None,
            last_child: Vec::new(),
            last_alloc: Vec::new(),
            unwinding: Vec::new(),
            search: None,
            busy: false,
        }
    }
}

impl Local {
    /// The node of the whole shadow stack, computing the nodes of frames
    /// pushed since the last time (the others are cached in the frames).
    #[inline]
    pub fn top_node(&mut self) -> u32 {
        let n = self.frames.len();
        let mut i = n;
        while i > 0 && self.frames.as_slice()[i - 1].node == NO_NODE {
            i -= 1;
        }
        let mut node = if i == 0 { 0 } else { self.frames.as_slice()[i - 1].node };
        for j in i..n {
            let func = self.frames.as_slice()[j].func;
            node = self.intern(node, func);
            self.frames.as_mut_slice()[j].node = node;
        }
        node
    }

    /// The node for `parent` extended by `func`.
    #[inline]
    pub fn intern(&mut self, parent: u32, func: usize) -> u32 {
        let slot = parent as usize;
        if let Some(&(f, child)) = self.last_child.get(slot) {
            if f == func && f != 0 {
                return child;
            }
        }
        self.intern_slow(parent, func)
    }

    #[cold]
    #[inline(never)]
    fn intern_slow(&mut self, parent: u32, func: usize) -> u32 {
        let slot = parent as usize;
        let next = self.nodes.len() as u32 + 1;
        let child = *self.nodes.entry((parent, func)).or_insert(next);
        if self.last_child.len() <= slot {
            self.last_child.resize(slot + 1, (0, 0));
        }
        self.last_child[slot] = (func, child);
        child
    }

    /// The stack id last defined for `(node, class, size)`, from the
    /// per-node cache or the map.
    #[inline]
    pub fn stack_of(&mut self, key: (u32, usize, u64)) -> Option<i32> {
        let slot = key.0 as usize;
        if let Some(&(class, size, id)) = self.last_alloc.get(slot) {
            if class == key.1 && size == key.2 && id != 0 {
                return Some(id);
            }
        }
        self.stack_of_slow(key)
    }

    #[cold]
    #[inline(never)]
    fn stack_of_slow(&mut self, key: (u32, usize, u64)) -> Option<i32> {
        let id = self.stack_ids.get(&key).copied()?;
        self.remember_stack(key, id);
        Some(id)
    }

    /// Notes `id` as the last stack of `key`'s node.
    #[inline]
    pub fn remember_stack(&mut self, key: (u32, usize, u64), id: i32) {
        let slot = key.0 as usize;
        if self.last_alloc.len() <= slot {
            self.last_alloc.resize(slot + 1, (0, 0, 0));
        }
        self.last_alloc[slot] = (key.1, key.2, id);
    }

    /// The node of a whole frame list (outermost first), for snapshots.
    pub fn path_node(&mut self, funcs: &[usize]) -> u32 {
        funcs.iter().fold(0, |node, &f| self.intern(node, f))
    }
}

/// A thread's state. `local` comes first (its shadow stack at offset 0):
/// the hook stubs reach the shadow stack from the thread-local pointer.
#[repr(C)]
pub struct ThreadState {
    local: UnsafeCell<Local>,
    /// The operating-system thread id (what `!` lines carry).
    pub os_tid: i32,
    /// The start of this thread's `!` and `c` lines.
    pub prefixes: Prefixes,
    /// The reading end of the thread's records (drains only).
    reader: UnsafeCell<Reader>,
    /// Chunks of records started and not yet freed by a drain.
    pub pending: AtomicUsize,
    /// Set by the thread's exit; a drain then frees the state.
    pub dead: AtomicBool,
}

// The hook stubs' view of the layout (hooks.rs).
const _: () = {
    assert!(std::mem::offset_of!(ThreadState, local) == 0);
    assert!(std::mem::offset_of!(Local, frames) == 0);
    assert!(std::mem::offset_of!(Shadow, ptr) == 0);
    assert!(std::mem::offset_of!(Shadow, len) == 8);
    assert!(std::mem::offset_of!(Shadow, cap) == 16);
    assert!(std::mem::size_of::<Frame>() == 16);
    assert!(std::mem::offset_of!(Frame, func) == 0);
    assert!(std::mem::offset_of!(Frame, node) == 8);
};

// Safety: `local` is only touched by the owning thread (see `with_local`),
// `reader` only by drains, which the agent's `out` lock serializes; the
// rest is atomic or immutable.
unsafe impl Sync for ThreadState {}
// Safety: as above.
unsafe impl Send for ThreadState {}

impl ThreadState {
    fn new() -> ThreadState {
        // Safety: gettid has no preconditions.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
        let (writer, reader) = threadlog::new();
        ThreadState {
            local: UnsafeCell::new(Local::new(writer)),
            os_tid: tid,
            prefixes: Prefixes::new(tid),
            reader: UnsafeCell::new(reader),
            pending: AtomicUsize::new(0),
            dead: AtomicBool::new(false),
        }
    }

    /// Runs `f` on the owner-only part.
    ///
    /// Must be called only on the owning thread, and `f` must not call into
    /// the runtime or call `with_local` again (no aliasing `&mut`).
    #[inline]
    pub fn with_local<R>(&self, f: impl FnOnce(&mut Local) -> R) -> R {
        // Safety: only the owning thread reaches its own state through
        // `current()`, and callers never nest `with_local`.
        unsafe { f(&mut *self.local.get()) }
    }

    /// The reading end of the thread's records.
    ///
    /// # Safety
    /// Only a drain, holding the agent's `out` lock, and not while another
    /// reference from this function is alive.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn reader(&self) -> &mut Reader {
        // Safety: the caller's contract.
        unsafe { &mut *self.reader.get() }
    }
}

impl Drop for ThreadState {
    fn drop(&mut self) {
        // Safety: a state is dropped once its thread has ended (or never
        // wrote): no writer uses the chunks.
        unsafe { self.reader.get_mut().free_all() };
    }
}

/// The calling thread's state pointer, in a thread-local slot of the
/// initial-exec model: one `fs`-relative load, no `__tls_get_addr` call.
/// The hook stubs read the same slot.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod slot {
    use super::ThreadState;

    core::arch::global_asm!(
        ".pushsection .tbss,\"awT\",@nobits",
        ".p2align 3",
        ".globl clrprof_agent_current_thread",
        ".hidden clrprof_agent_current_thread",
        ".type clrprof_agent_current_thread, @object",
        ".size clrprof_agent_current_thread, 8",
        "clrprof_agent_current_thread:",
        ".zero 8",
        ".popsection",
    );

    /// The slot's value.
    #[inline(always)]
    pub fn get() -> *const ThreadState {
        let p: *const ThreadState;
        // Safety: reads this thread's slot (8 bytes of static TLS).
        unsafe {
            core::arch::asm!(
                "mov {p}, qword ptr [rip + clrprof_agent_current_thread@GOTTPOFF]",
                "mov {p}, qword ptr fs:[{p}]",
                p = out(reg) p,
                options(nostack, preserves_flags, readonly),
            )
        };
        p
    }

    /// Sets the slot.
    #[inline]
    pub fn set(p: *const ThreadState) {
        // Safety: writes this thread's slot.
        unsafe {
            core::arch::asm!(
                "mov {t}, qword ptr [rip + clrprof_agent_current_thread@GOTTPOFF]",
                "mov qword ptr fs:[{t}], {p}",
                t = out(reg) _,
                p = in(reg) p,
                options(nostack, preserves_flags),
            )
        };
    }
}

/// Elsewhere: an ordinary thread-local.
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
mod slot {
    use super::ThreadState;
    use std::cell::Cell;

    thread_local! {
        static CURRENT: Cell<*const ThreadState> = const { Cell::new(std::ptr::null()) };
    }

    /// The slot's value.
    #[inline]
    pub fn get() -> *const ThreadState {
        CURRENT.try_with(|c| c.get()).unwrap_or(std::ptr::null())
    }

    /// Sets the slot.
    #[inline]
    pub fn set(p: *const ThreadState) {
        let _ = CURRENT.try_with(|c| c.set(p));
    }
}

struct ExitGuard;

impl Drop for ExitGuard {
    fn drop(&mut self) {
        let ts = slot::get();
        slot::set(std::ptr::null());
        if !ts.is_null() {
            // Safety: the state stays allocated until a drain sees `dead`.
            unsafe { (*ts).dead.store(true, Ordering::Release) };
        }
    }
}

thread_local! {
    static EXIT: ExitGuard = const { ExitGuard };
}

/// The calling thread's state, created and registered on first use.
#[inline]
pub fn current() -> Option<&'static ThreadState> {
    let p = slot::get();
    if !p.is_null() {
        // Safety: registered states live until their thread exits.
        return Some(unsafe { &*p });
    }
    create()
}

#[cold]
fn create() -> Option<&'static ThreadState> {
    let agent = crate::agent::get()?;
    // Register the exit guard first. A thread already exiting (its
    // thread-locals being destroyed) cannot: its state is never marked
    // dead, so drains keep reading it and never free it.
    let _ = EXIT.try_with(|_| ());
    let ts: &'static ThreadState = Box::leak(Box::new(ThreadState::new()));
    slot::set(ts);
    agent.register_thread(ts);
    Some(ts)
}
