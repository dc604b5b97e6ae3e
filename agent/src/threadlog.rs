//! A thread's records in binary: appended by the thread without a lock or
//! an atomic read-modify-write, read and formatted to text by the drain.
//!
//! ```text
//!  owner thread (Writer)                         drain (Reader, under the `out` lock)
//!   put slot, publish `committed` (Release)  -->  snapshot: follow `next`, read `committed` (Acquire)
//!
//!  Chunk ---next--> Chunk ---next--> Chunk (the writer's current one; next = null)
//!  +-----------+----------+------------------------------------------+
//!  | committed | next     | slots: [Slot; SLOTS], 16 bytes each      |
//!  +-----------+----------+------------------------------------------+
//!  Slot: word u64 | value u32 | kind u32
//!    TICK   value = tick (ms); starts the records of a later tick
//!    ALLOC  word = object address, value = stack id   (`! tid 0xADDR STACK`)
//!    CALL   value = stack id                          (`c tid STACK`)
//!    TEXT   word = a leaked `Box<Vec<u8>>` of whole formatted lines
//! ```
//!
//! One thread writes (the owner), one reads at a time (drains are
//! serialized by the agent's `out` lock): a single-producer,
//! single-consumer queue of fixed-size chunks. The writer fills its
//! current chunk and publishes how many slots are valid with a release
//! store; a full chunk gets a successor, published through `next` after
//! the chunk's last `committed` store, and the writer never touches it
//! again, so the reader may take back a chunk it has read to the end once
//! `next` is set: it keeps up to 16 for the writer to reuse (a lock per
//! chunk, 4096 records), and frees the rest. A drain first takes a [`Mark`] (where the writer has published
//! up to) while it holds the definitions lock, then reads up to the mark
//! only: every record it formats has its definitions in that drain.
//!
//! The thread id is not stored: a thread's log holds that thread's records
//! only, and the reader formats them with the thread's id.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Slots per chunk (64 KiB chunks).
pub const SLOTS: usize = 4096;

/// What a slot holds (see the module diagram).
pub mod kind {
    /// A later tick: the records after it have it.
    pub const TICK: u32 = 1;
    /// An allocation: address and stack id.
    pub const ALLOC: u32 = 2;
    /// A call: stack id.
    pub const CALL: u32 = 3;
    /// Preformatted lines (a comment).
    pub const TEXT: u32 = 4;
}

/// One binary record.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// Address (ALLOC) or text pointer (TEXT).
    pub word: u64,
    /// Stack id (ALLOC, CALL) or tick (TICK).
    pub value: u32,
    /// One of [`kind`].
    pub kind: u32,
}

impl Slot {
    /// An allocation record.
    #[inline]
    pub fn alloc(address: u64, stack: i32) -> Slot {
        Slot { word: address, value: stack as u32, kind: kind::ALLOC }
    }

    /// A call record.
    #[inline]
    pub fn call(stack: i32) -> Slot {
        Slot { word: 0, value: stack as u32, kind: kind::CALL }
    }

    /// Whole formatted lines; the reader takes them over.
    pub fn text(lines: Vec<u8>) -> Slot {
        Slot { word: Box::into_raw(Box::new(lines)) as u64, value: 0, kind: kind::TEXT }
    }
}

struct Chunk {
    /// Slots `[0, committed)` are written.
    committed: AtomicUsize,
    /// The next chunk, once this one is full.
    next: AtomicPtr<Chunk>,
    slots: [UnsafeCell<MaybeUninit<Slot>>; SLOTS],
}

fn new_chunk() -> *mut Chunk {
    let mut b = Box::<Chunk>::new_uninit();
    let p = b.as_mut_ptr();
    // Safety: `p` points to an allocated, uninitialized Chunk; the two
    // header fields are written, the slots may stay uninitialized
    // (MaybeUninit in UnsafeCell).
    unsafe {
        std::ptr::addr_of_mut!((*p).committed).write(AtomicUsize::new(0));
        std::ptr::addr_of_mut!((*p).next).write(AtomicPtr::new(null_mut()));
        Box::into_raw(b.assume_init())
    }
}

/// Frees a chunk, and the text of its TEXT slots in `[from, to)` (the
/// ones never read).
///
/// # Safety
/// `c` came from `new_chunk`, nobody else uses it, slots `[from, to)` are
/// written.
unsafe fn free_chunk(c: *mut Chunk, from: usize, to: usize) {
    for i in from..to {
        // Safety: written slots (caller's contract).
        let s = unsafe { (*(*c).slots[i].get()).assume_init() };
        if s.kind == kind::TEXT {
            // Safety: TEXT slots own a leaked Box<Vec<u8>>, never taken.
            drop(unsafe { Box::from_raw(s.word as *mut Vec<u8>) });
        }
    }
    // Safety: allocated by `new_chunk` as a Box.
    drop(unsafe { Box::from_raw(c) });
}

/// Read chunks kept for the writer to reuse (fresh memory would cost a
/// page fault per page and its zeroing in the kernel).
const SPARES: usize = 16;

/// What both ends share: chunks read to the end, for reuse. The lock is
/// taken once per chunk (4096 records) on each side.
#[derive(Default)]
struct Spares(Mutex<Vec<SendChunk>>);

struct SendChunk(*mut Chunk);

// Safety: a spare chunk belongs to nobody until popped.
unsafe impl Send for SendChunk {}

impl Spares {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<SendChunk>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A chunk read to the end: kept, or freed when enough are kept.
    fn give(&self, c: *mut Chunk) {
        let mut spares = self.lock();
        if spares.len() < SPARES {
            spares.push(SendChunk(c));
        } else {
            drop(spares);
            // Safety: read to the end, unused by the writer.
            unsafe { free_chunk(c, 0, 0) };
        }
    }

    /// An empty chunk, reused or new.
    fn take(&self) -> *mut Chunk {
        match self.lock().pop() {
            Some(SendChunk(c)) => {
                // Safety: a spare chunk is owned by whoever pops it.
                unsafe {
                    (*c).committed.store(0, Ordering::Relaxed);
                    (*c).next.store(null_mut(), Ordering::Relaxed);
                }
                c
            }
            None => new_chunk(),
        }
    }
}

impl Drop for Spares {
    fn drop(&mut self) {
        for SendChunk(c) in self.0.get_mut().unwrap_or_else(|e| e.into_inner()).drain(..) {
            // Safety: spare chunks are owned by the list.
            unsafe { free_chunk(c, 0, 0) };
        }
    }
}

/// A new, empty log: its writer and its reader share the first chunk.
pub fn new() -> (Writer, Reader) {
    let c = new_chunk();
    let spares = Arc::new(Spares::default());
    (Writer { chunk: c, len: 0, tick: None, spares: Arc::clone(&spares) }, Reader { chunk: c, pos: 0, tick: 0, spares })
}

/// The owner thread's end.
pub struct Writer {
    chunk: *mut Chunk,
    len: usize,
    tick: Option<u32>,
    spares: Arc<Spares>,
}

impl Writer {
    /// Appends `slot` at `tick` (after a TICK slot when the tick went up)
    /// and publishes it. True when a new chunk was started (the caller
    /// counts outstanding chunks).
    #[inline]
    pub fn push(&mut self, tick: u32, slot: Slot) -> bool {
        let mut fresh = false;
        if self.tick.is_none_or(|t| tick > t) {
            fresh |= self.put(Slot { word: 0, value: tick, kind: kind::TICK });
            self.tick = Some(tick);
        }
        fresh |= self.put(slot);
        // Safety: `chunk` is the writer's current chunk, alive until the
        // reader has read past it, which needs `next` set.
        unsafe { (*self.chunk).committed.store(self.len, Ordering::Release) };
        fresh
    }

    #[inline]
    fn put(&mut self, slot: Slot) -> bool {
        let mut fresh = false;
        if self.len == SLOTS {
            self.next_chunk();
            fresh = true;
        }
        // Safety: `len < SLOTS`; slots at or past `committed` are touched
        // by the writer only.
        unsafe { (*(*self.chunk).slots[self.len].get()).write(slot) };
        self.len += 1;
        fresh
    }

    #[cold]
    fn next_chunk(&mut self) {
        let new = self.spares.take();
        // Safety: the current chunk is alive (see `push`); after `next` is
        // stored the writer never touches it again.
        unsafe {
            (*self.chunk).committed.store(self.len, Ordering::Release);
            (*self.chunk).next.store(new, Ordering::Release);
        }
        self.chunk = new;
        self.len = 0;
    }
}

/// Where the writer had published up to when a drain began.
#[derive(Clone, Copy, Debug)]
pub struct Mark {
    chunk: *mut Chunk,
    end: usize,
}

/// The drains' end.
pub struct Reader {
    chunk: *mut Chunk,
    pos: usize,
    /// The tick of the records being read.
    tick: u32,
    spares: Arc<Spares>,
}

impl Reader {
    /// Where the writer has published up to now.
    pub fn mark(&self) -> Mark {
        let mut c = self.chunk;
        loop {
            // Safety: chunks from the reader's on are alive (only the
            // reader frees them).
            let next = unsafe { (*c).next.load(Ordering::Acquire) };
            if next.is_null() {
                break;
            }
            c = next;
        }
        // Safety: as above.
        Mark { chunk: c, end: unsafe { (*c).committed.load(Ordering::Acquire) } }
    }

    /// True when nothing before `mark` is left to read (TICK slots do not
    /// count).
    pub fn is_empty(&mut self, mark: &Mark, freed: &mut usize) -> bool {
        self.head(mark, freed).is_none()
    }

    fn end(&self, mark: &Mark) -> usize {
        if self.chunk == mark.chunk {
            mark.end
        } else {
            SLOTS
        }
    }

    /// Moves to the next chunk while the current one is read to its end
    /// and is not the mark's, freeing it.
    fn advance(&mut self, mark: &Mark, freed: &mut usize) {
        while self.pos >= self.end(mark) && self.chunk != mark.chunk {
            // Safety: the chunk is before the mark's, so `next` is set and
            // the writer is done with it; it was read to the end.
            let next = unsafe { (*self.chunk).next.load(Ordering::Acquire) };
            self.spares.give(self.chunk);
            self.chunk = next;
            self.pos = 0;
            *freed += 1;
        }
    }

    /// The tick of the next record before `mark`, if any (reading past
    /// TICK slots).
    pub fn head(&mut self, mark: &Mark, freed: &mut usize) -> Option<u32> {
        loop {
            self.advance(mark, freed);
            if self.pos >= self.end(mark) {
                return None;
            }
            // Safety: slots before the mark are published.
            let s = unsafe { (*(*self.chunk).slots[self.pos].get()).assume_init() };
            if s.kind != kind::TICK {
                return Some(self.tick);
            }
            self.tick = s.value;
            self.pos += 1;
        }
    }

    /// Hands the records of the current tick (up to the next TICK slot or
    /// `mark`) to `f`, a chunk's worth at a time.
    pub fn run(&mut self, mark: &Mark, freed: &mut usize, mut f: impl FnMut(&[Slot])) {
        loop {
            self.advance(mark, freed);
            let end = self.end(mark);
            if self.pos >= end {
                return;
            }
            // Safety: slots `[pos, end)` are published and initialized;
            // Slot is plain data, MaybeUninit/UnsafeCell are transparent.
            let slots: &[Slot] = unsafe {
                std::slice::from_raw_parts((*self.chunk).slots[self.pos].get() as *const Slot, end - self.pos)
            };
            let n = slots.iter().position(|s| s.kind == kind::TICK).unwrap_or(slots.len());
            if n > 0 {
                f(&slots[..n]);
            }
            self.pos += n;
            if n < slots.len() {
                return;
            }
        }
    }

    /// Frees every chunk. Only when the writer is gone (its thread ended,
    /// everything read) or with the writer dropped unused.
    ///
    /// # Safety
    /// No writer uses the chunks any more.
    pub unsafe fn free_all(&mut self) {
        let mut c = self.chunk;
        let mut from = self.pos;
        while !c.is_null() {
            // Safety: the caller's contract; chunks are alive until here.
            unsafe {
                let next = (*c).next.load(Ordering::Acquire);
                let to = (*c).committed.load(Ordering::Acquire);
                free_chunk(c, from, to);
                c = next;
            }
            from = 0;
        }
        self.chunk = null_mut();
        self.pos = 0;
    }
}

/// Takes the lines out of a TEXT slot (each TEXT slot is read once).
///
/// # Safety
/// `s` is a TEXT slot read from a log, and this is its only read.
pub unsafe fn take_text(s: &Slot) -> Box<Vec<u8>> {
    // Safety: the caller's contract.
    unsafe { Box::from_raw(s.word as *mut Vec<u8>) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(r: &mut Reader, freed: &mut usize) -> Vec<(u32, Slot)> {
        let mark = r.mark();
        let mut got = Vec::new();
        while let Some(t) = r.head(&mark, freed) {
            r.run(&mark, freed, |slots| {
                for s in slots {
                    got.push((t, *s));
                }
            });
        }
        got
    }

    #[test]
    fn single_thread_in_order_across_chunks() {
        let (mut w, mut r) = new();
        let mut want = Vec::new();
        let mut got = Vec::new();
        let mut freed = 0;
        let mut chunks = 0;
        for i in 0..(3 * SLOTS as u64 + 17) {
            let tick = (i / 1000) as u32;
            let s = Slot::alloc(i * 8, i as i32);
            chunks += usize::from(w.push(tick, s));
            want.push((tick, s));
            if i % 5000 == 4999 {
                got.extend(drain(&mut r, &mut freed));
            }
        }
        got.extend(drain(&mut r, &mut freed));
        assert_eq!(got, want);
        assert_eq!(freed, chunks);
        // Safety: the writer is not used any more.
        unsafe { r.free_all() };
    }

    #[test]
    fn concurrent_writer_and_reader() {
        let (w, mut r) = new();
        struct SendW(Writer);
        // Safety: the test moves the writer to one thread only.
        unsafe impl Send for SendW {}
        let w = SendW(w);
        let n = 200_000u64;
        let t = std::thread::spawn(move || {
            let mut w = w;
            for i in 0..n {
                w.0.push((i / 3000) as u32, Slot::alloc(i, (i % 1000) as i32));
            }
        });
        let mut got = Vec::new();
        let mut freed = 0;
        while got.len() < n as usize {
            got.extend(drain(&mut r, &mut freed));
        }
        t.join().unwrap();
        got.extend(drain(&mut r, &mut freed));
        assert_eq!(got.len(), n as usize);
        for (i, (tick, s)) in got.iter().enumerate() {
            assert_eq!((*tick, s.word, s.value), ((i as u64 / 3000) as u32, i as u64, (i % 1000) as u32));
        }
        // Safety: the writer thread has ended.
        unsafe { r.free_all() };
    }
}
