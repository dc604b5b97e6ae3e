//! Per-thread state: the shadow stack and caches (touched only by the
//! owning thread) and the buffer of formatted lines (shared with drains).

use crate::segments::Segments;
use std::cell::{Cell, UnsafeCell};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

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

/// One shadow-stack frame.
#[derive(Clone, Copy, Debug)]
pub struct Frame {
    /// The runtime's FunctionID.
    pub func: usize,
    /// This thread's id for the call path ending here, or [`NO_NODE`].
    pub node: u32,
}

/// What only the owning thread touches.
#[derive(Default)]
pub struct Local {
    /// The shadow stack, outermost frame first.
    pub frames: Vec<Frame>,
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
    /// Set while the agent works on this thread (no re-entry).
    pub busy: bool,
}

impl Local {
    /// The node of the whole shadow stack, computing the nodes of frames
    /// pushed since the last time (the others are cached in the frames).
    #[inline]
    pub fn top_node(&mut self) -> u32 {
        let mut i = self.frames.len();
        while i > 0 && self.frames[i - 1].node == NO_NODE {
            i -= 1;
        }
        let mut node = if i == 0 { 0 } else { self.frames[i - 1].node };
        for j in i..self.frames.len() {
            node = self.intern(node, self.frames[j].func);
            self.frames[j].node = node;
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

/// A thread's state.
pub struct ThreadState {
    /// The operating-system thread id (what `!` lines carry).
    pub os_tid: i32,
    /// Formatted lines waiting for a drain.
    pub buf: Mutex<Segments>,
    /// Set by the thread's exit; a drain then frees the state.
    pub dead: AtomicBool,
    local: UnsafeCell<Local>,
}

// Safety: `local` is only touched by the owning thread (see `local`); the
// rest is synchronized.
unsafe impl Sync for ThreadState {}
// Safety: as above.
unsafe impl Send for ThreadState {}

impl ThreadState {
    fn new() -> ThreadState {
        // Safety: gettid has no preconditions.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
        ThreadState { os_tid: tid, buf: Mutex::new(Segments::default()), dead: AtomicBool::new(false), local: UnsafeCell::new(Local::default()) }
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

    /// Locks the line buffer.
    #[inline]
    pub fn lock_buf(&self) -> std::sync::MutexGuard<'_, Segments> {
        self.buf.lock().unwrap_or_else(|e| e.into_inner())
    }
}

struct ExitGuard;

impl Drop for ExitGuard {
    fn drop(&mut self) {
        let ts = CURRENT.with(|c| c.replace(std::ptr::null()));
        if !ts.is_null() {
            // Safety: the state stays allocated until a drain sees `dead`.
            unsafe { (*ts).dead.store(true, Ordering::Release) };
        }
    }
}

thread_local! {
    static CURRENT: Cell<*const ThreadState> = const { Cell::new(std::ptr::null()) };
    static EXIT: ExitGuard = const { ExitGuard };
}

/// The calling thread's state, created and registered on first use.
#[inline]
pub fn current() -> Option<&'static ThreadState> {
    let p = CURRENT.try_with(|c| c.get()).ok()?;
    if !p.is_null() {
        // Safety: registered states live until their thread exits.
        return Some(unsafe { &*p });
    }
    create()
}

#[cold]
fn create() -> Option<&'static ThreadState> {
    let agent = crate::agent::get()?;
    let ts: &'static ThreadState = Box::leak(Box::new(ThreadState::new()));
    // Register the exit guard first; a thread already exiting keeps its
    // (leaked, never freed) state unregistered for freeing.
    let guarded = EXIT.try_with(|_| ()).is_ok();
    if !guarded {
        ts.dead.store(false, Ordering::Relaxed);
    }
    CURRENT.try_with(|c| c.set(ts)).ok()?;
    agent.register_thread(ts);
    Some(ts)
}
