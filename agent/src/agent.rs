//! The agent: settings, the log's buffers and file, the id tables, and the
//! rules that keep the log in one time order.
//!
//! # Buffers and order
//!
//! ```text
//!  thread A --! c z--> threadlog(A) --\      (binary records, no lock)
//!  thread B --! c z--> threadlog(B) ---+-- drain: defs, then records --> Sink --> writer thread
//!  any -- h j y -->    events       --/     merged by tick and formatted
//!  any -- t f m n -->   defs  -----------/   to text, `i` lines between;
//!                                             GC records go straight to
//!                                             the writer
//! ```
//!
//! A thread appends a 16-byte binary record per allocation or call to its
//! own [`crate::threadlog`] (no lock, no formatting); the drain formats
//! them ([`crate::lines`]). Drains run on the flush thread (woken when a
//! thread has written a megabyte of records, and on its timer), so most
//! formatting and copying leave the program's threads.
//!
//! A drain happens at every GC start (managed threads are suspended, so
//! everything allocated before the GC precedes its `b` line), at every GC
//! end, on the timer thread, at each exception throw and at shutdown.
//! Definitions are written before the segments of the same drain, and a
//! definition always enters `defs` before the line using it enters a
//! segment, so ids are defined before use. The drain holds the `defs` lock
//! while it takes the segment buffers, so no use can overtake its
//! definition (it reads where each thread's records end while it holds the
//! `defs` lock). Lock order: `out` -> `tables` -> `defs` -> `events`/`threads`;
//! no lock is held across a call into the runtime.

use crate::config::{Config, StackMode};
use crate::info::{GenerationRange, Info};
use crate::segments::Segments;
use crate::merge::ThreadSource;
use crate::threadlog::{Mark, Slot};
use crate::tables::{StackKey, Tables};
use crate::thread::{self, ThreadState};
use clrprof::format::records::{
    AssemblyLoad, Comment, FinalizerQueued, GcBoundary, GcCounts, GenerationRange as LogRange, HandleCreated,
    HandleDestroyed, Moved, Survived, Tick,
};
use crate::sink::{Destination, Sink};
use clrprof_stream::Streamer;
use clrprof::format::{write_record, Address, HandleId, List, Record, StackId, Style, ThreadId};
use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};

static AGENT: OnceLock<Agent> = OnceLock::new();

/// The agent, once `Initialize` has run.
#[inline]
pub fn get() -> Option<&'static Agent> {
    AGENT.get()
}

/// Every so many new chunks of a thread's records (a megabyte) the flush
/// thread is woken to drain.
const WAKE_EVERY: usize = 16;
/// A thread with this many chunks not yet drained (32 MiB) drains itself:
/// memory stays bounded when the flush thread cannot keep up.
const DRAIN_AT: usize = 512;

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The log file and what the drain remembers between drains.
pub struct Out {
    pub(crate) writer: Sink,
    /// The last `i` value written.
    last_tick: Option<u32>,
    /// Condemned generations of the GCs in progress.
    gc_stack: Vec<i32>,
    /// GC counts per generation, as `g` lines report them.
    pub(crate) gc_counts: [i32; 3],
    /// The heap dump asked for or being written (see `dump`).
    pub(crate) dump: Option<crate::dump::Dump>,
    /// The log was ended ([`Agent::end`]): nothing more is written.
    pub(crate) ended: bool,
}

impl Out {
    fn tick(&mut self, tick: u32) {
        if self.last_tick.is_none_or(|t| tick > t) {
            self.writer.record(&Record::Tick(Tick { ms: tick }));
            self.last_tick = Some(tick);
        }
    }

    /// A tick later than every tick written so far (a GC boundary gets
    /// its own tick, as CLRProfiler gives it).
    fn fresh_tick(&mut self, now: u32) -> u32 {
        let t = match self.last_tick {
            Some(last) if now <= last => last + 1,
            _ => now,
        };
        self.tick(t);
        t
    }

    fn record(&mut self, r: &Record<'_>) {
        self.writer.record(r);
    }

    /// Condemned generations of the GCs in progress.
    pub(crate) fn gc_depth(&self) -> usize {
        self.gc_stack.len()
    }
}

impl crate::merge::Output for Out {
    fn tick(&mut self, t: u32) {
        Out::tick(self, t)
    }
    fn raw(&mut self, bytes: &[u8]) {
        self.writer.raw(bytes);
    }
    fn lines(&mut self, f: &mut dyn FnMut(&mut Vec<u8>)) {
        f(self.writer.buffer());
        self.writer.maybe_hand_over();
    }
}

/// The agent's state.
pub struct Agent {
    /// The runtime's info interface.
    pub info: Info,
    /// Settings.
    pub config: Config,
    pub(crate) style: Style,
    start: libc::timespec,
    pub(crate) out: Mutex<Out>,
    pub(crate) defs: Mutex<Vec<u8>>,
    events: Mutex<Segments>,
    threads: Mutex<Vec<&'static ThreadState>>,
    pub(crate) tables: Mutex<Tables>,
    shutdown: AtomicBool,
    /// Wakes the flush thread before its timer (`true`: drain now).
    wake: (Mutex<bool>, Condvar),
    /// The log being written (`None` once `stop`ped, or for an agent
    /// attached only to take dumps).
    pub(crate) log: Mutex<Option<PathBuf>>,
    /// Allocation logging is on.
    pub(crate) allocations_on: AtomicBool,
    /// Call logging is on.
    pub(crate) calls_on: AtomicBool,
    /// A claimed heap dump is being written: `ObjectReferences` and
    /// `RootReferences2` write lines.
    pub(crate) dumping: AtomicBool,
    /// Heap dumps written into the log so far.
    pub(crate) dumps_in_log: AtomicU32,
    /// The event mask the agent runs with.
    pub(crate) event_mask: AtomicU32,
    /// Static fields of loaded classes, to name the roots of dumps.
    pub(crate) statics: crate::statics::Statics,
    /// The thread holding `out` (`pthread_self`), 0 for none: a signal
    /// that would end the log is put off until that thread lets go
    /// ([`crate::exit`]).
    out_owner: AtomicUsize,
}

/// The `out` lock, held: the holder is known to the exit path's signal
/// handler, which puts off a signal caught while it is held (a drain
/// interrupted halfway cannot be finished by another thread).
pub(crate) struct OutGuard<'a> {
    guard: std::mem::ManuallyDrop<MutexGuard<'a, Out>>,
    owner: &'a AtomicUsize,
}

impl std::ops::Deref for OutGuard<'_> {
    type Target = Out;
    fn deref(&self) -> &Out {
        &self.guard
    }
}

impl std::ops::DerefMut for OutGuard<'_> {
    fn deref_mut(&mut self) -> &mut Out {
        &mut self.guard
    }
}

impl Drop for OutGuard<'_> {
    fn drop(&mut self) {
        self.owner.store(0, Ordering::Release);
        // Safety: dropped once, here; not used afterwards.
        unsafe { std::mem::ManuallyDrop::drop(&mut self.guard) };
        crate::exit::after_out_released();
    }
}

/// What the fast path of a record found.
enum Fast {
    /// The thread is inside the agent already: no record.
    Busy,
    /// Recorded; `true` when a new chunk was started.
    Done(bool),
    /// The stack is new (or needs a snapshot): the thread is marked busy
    /// and takes the slow path.
    Miss,
}

/// The stack id of the thread's current stack with `(class, size)` (0, 0
/// for a call) if it is known, without calling into the runtime; notes it
/// as the thread's last stack.
#[inline(always)]
fn known_stack(l: &mut crate::thread::Local, mode: StackMode, (class, size): (usize, u64)) -> Option<i32> {
    let node = match mode {
        StackMode::Shadow => l.top_node(),
        StackMode::None => 0,
        StackMode::Snapshot => return None,
    };
    let key = (node, class, size);
    let id = match l.memo {
        Some((k, id)) if k == key => id,
        _ => l.stack_of(key)?,
    };
    l.last_stack = Some(id);
    l.memo = Some((key, id));
    Some(id)
}

fn clock() -> libc::timespec {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // Safety: clock_gettime writes into `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    ts
}

impl Agent {
    /// Creates the agent and its log file. Fails when the file cannot be
    /// created or the agent already exists.
    pub fn install(info: Info, mut config: Config) -> Result<&'static Agent, String> {
        // The agent's threads are all started from here (or from threads
        // started here): born blocking the exit signals, so that those
        // land on the program's threads (see `exit`).
        let _blocked = crate::exit::Blocked::now();
        let style = Style::BITS64;
        let dest = match (&config.stream, &config.output) {
            (Some(s), _) => Some(Destination::Stream(Box::new(Streamer::start(s.clone(), crate::identity::current())))),
            (None, Some(path)) => {
                let (file, used) = crate::logname::create(path, config.output_default, config.force)?;
                config.output = Some(used);
                Some(Destination::File(file))
            }
            (None, None) => None,
        };
        let writer = match dest {
            Some(dest) => {
                let mut writer = Sink::to(dest, style)?;
                // CLRProfiler's first line: function 0 stands for native code.
                writer.raw(b"f 0 NATIVE FUNCTION ( UNKNOWN ARGUMENTS ) 0 0\n");
                let header = format!(
                    "clrprof agent {} pid {} stacks {}{}{}",
                    env!("CARGO_PKG_VERSION"),
                    std::process::id(),
                    config.stack_name(),
                    if config.calls { " calls" } else { "" },
                    if config.attached { " attached (no allocations)" } else { "" }
                );
                writer.record(&Record::Comment(Comment { text: header.as_bytes() }));
                writer.flush_sync();
                writer
            }
            None => Sink::discard(style),
        };
        // Where the log is, for the control status (a streamed log is at
        // the collector).
        let log = match &config.stream {
            Some(s) => Some(std::path::PathBuf::from(format!("collector:{}", s.target))),
            None => config.output.as_ref().map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone())),
        };
        let agent = Agent {
            info,
            style,
            start: clock(),
            out: Mutex::new(Out { writer, last_tick: None, gc_stack: Vec::new(), gc_counts: [0; 3], dump: None, ended: false }),
            defs: Mutex::new(Vec::new()),
            events: Mutex::new(Segments::default()),
            threads: Mutex::new(Vec::new()),
            tables: Mutex::new(Tables::default()),
            shutdown: AtomicBool::new(false),
            wake: (Mutex::new(false), Condvar::new()),
            log: Mutex::new(log),
            allocations_on: AtomicBool::new(config.allocations),
            calls_on: AtomicBool::new(config.calls),
            dumping: AtomicBool::new(false),
            dumps_in_log: AtomicU32::new(0),
            event_mask: AtomicU32::new(0),
            statics: crate::statics::Statics::default(),
            out_owner: AtomicUsize::new(0),
            config,
        };
        AGENT.set(agent).map_err(|_| "the agent is already installed".to_string())?;
        let agent = AGENT.get().ok_or("agent missing")?;
        let period = std::time::Duration::from_millis(agent.config.flush_ms);
        std::thread::Builder::new()
            .name("clrprof-flush".into())
            .spawn(move || {
                while !agent.shutdown.load(Ordering::Acquire) {
                    {
                        let (m, cv) = &agent.wake;
                        let mut woken = lock(m);
                        if !*woken {
                            woken = cv.wait_timeout(woken, period).map_or_else(|e| e.into_inner().0, |r| r.0);
                        }
                        *woken = false;
                    }
                    crate::guard((), || agent.flush_async());
                }
            })
            .map_err(|e| format!("cannot start the flush thread: {e}"))?;
        if agent.config.control {
            if let Err(e) = crate::control_socket::start(agent) {
                eprintln!("clrprof agent: no control socket: {e}");
            }
        }
        if let Some(every) = agent.config.heap_dump_every {
            crate::dump::start_periodic(agent, every)?;
        }
        if let Err(e) = crate::exit::install(agent) {
            eprintln!("clrprof agent: {e}; the log may be cut if the process ends without Shutdown");
        }
        Ok(agent)
    }

    /// Takes the `out` lock, noting the holder for the exit path.
    pub(crate) fn lock_out(&self) -> OutGuard<'_> {
        let guard = lock(&self.out);
        self.out_owner.store(crate::exit::this_thread(), Ordering::Release);
        OutGuard { guard: std::mem::ManuallyDrop::new(guard), owner: &self.out_owner }
    }

    /// True when the calling thread holds the `out` lock (safe in a
    /// signal handler: one atomic load).
    pub(crate) fn holds_out(&self) -> bool {
        self.out_owner.load(Ordering::Acquire) == crate::exit::this_thread()
    }

    /// True after `shutdown`.
    pub fn is_shut_down(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    /// Milliseconds since the agent started (32-bit, wrapping like the
    /// format's ticks).
    #[inline]
    pub fn now_ms(&self) -> u32 {
        let t = clock();
        let ms = (t.tv_sec - self.start.tv_sec) * 1000 + (t.tv_nsec - self.start.tv_nsec) / 1_000_000;
        ms.max(0) as u32
    }

    pub(crate) fn register_thread(&self, ts: &'static ThreadState) {
        lock(&self.threads).push(ts);
    }

    // ---------------------------------------------------------------- stacks

    /// The stack id for the calling thread's current stack; for an
    /// allocation, with the allocated class and size.
    pub fn stack_id(&self, ts: &ThreadState, alloc: Option<(usize, u64)>) -> i32 {
        let (class, size) = alloc.unwrap_or((0, 0));
        let mut snapshot = Vec::new();
        let node = match self.config.stacks {
            StackMode::Shadow => ts.with_local(|l| l.top_node()),
            StackMode::None => 0,
            StackMode::Snapshot => {
                if alloc.is_some() {
                    self.snapshot(&mut snapshot);
                }
                ts.with_local(|l| l.path_node(&snapshot))
            }
        };
        let key = (node, class, size);
        let hit = ts.with_local(|l| {
            let id = match l.memo {
                Some((k, id)) if k == key => Some(id),
                _ => l.stack_of(key),
            };
            if let Some(i) = id {
                l.last_stack = id;
                l.memo = Some((key, i));
            }
            id
        });
        if let Some(id) = hit {
            return id;
        }
        let (frames, previous) = ts.with_local(|l| {
            let frames = match self.config.stacks {
                StackMode::Shadow => l.frames.as_slice().iter().map(|f| f.func).collect(),
                StackMode::Snapshot => std::mem::take(&mut snapshot),
                StackMode::None => Vec::new(),
            };
            (frames, l.last_stack)
        });
        let id = self.define_stack(&frames, alloc, previous);
        ts.with_local(|l| {
            l.stack_ids.insert(key, id);
            l.remember_stack(key, id);
            l.last_stack = Some(id);
            l.memo = Some((key, id));
        });
        id
    }

    fn snapshot(&self, frames: &mut Vec<usize>) {
        extern "system" fn collect(func: usize, _ip: usize, _f: usize, _n: u32, _c: *mut u8, data: *mut c_void) -> i32 {
            crate::guard(0, || {
                if func != 0 {
                    // Safety: `data` is the Vec passed below, alive during the walk.
                    unsafe { (*(data as *mut Vec<usize>)).push(func) };
                }
                0
            })
        }
        frames.clear();
        let _ = self.info.stack_snapshot(collect, frames as *mut Vec<usize> as *mut c_void);
        frames.reverse();
    }

    fn define_stack(&self, frames: &[usize], alloc: Option<(usize, u64)>, previous: Option<i32>) -> i32 {
        let ids: Vec<i32> = frames.iter().map(|&f| self.function_id(f)).collect();
        let alloc = alloc.map(|(class, size)| (self.type_id(class), size.min(i32::MAX as u64) as i32));
        let key = StackKey { frames: ids.into_boxed_slice(), alloc };
        let mut tables = lock(&self.tables);
        let mut defs = lock(&self.defs);
        tables.stack(&mut defs, self.style, key, previous)
    }

    /// A function was compiled or found precompiled: define it now (call
    /// logging names functions here, since the enter hook cannot).
    pub fn function_seen(&self, func: usize) {
        if self.config.calls {
            self.function_id(func);
        }
    }

    pub(crate) fn function_id(&self, func: usize) -> i32 {
        if let Some(id) = lock(&self.tables).function(func) {
            return id;
        }
        let name = crate::names::function_name(&self.info, func);
        let (address, size) = self.info.code_info(func);
        let mut tables = lock(&self.tables);
        let module = tables.module(name.module).unwrap_or(0);
        let mut defs = lock(&self.defs);
        tables.define_function(&mut defs, self.style, func, &name.name, &name.signature, address, size, module)
    }

    pub(crate) fn type_id(&self, class: usize) -> i32 {
        if let Some(id) = lock(&self.tables).type_id(class) {
            return id;
        }
        let (name, finalizable) = crate::names::type_name(&self.info, class);
        let mut tables = lock(&self.tables);
        let mut defs = lock(&self.defs);
        tables.define_type(&mut defs, self.style, class, &name, finalizable)
    }

    // ------------------------------------------------------------- records

    /// `!`: an allocation on the calling thread.
    pub fn allocated(&self, object: usize, class: usize) {
        if !self.allocations_on.load(Ordering::Relaxed) {
            return;
        }
        match self.config.floor {
            crate::config::Floor::Off => {}
            crate::config::Floor::Return => return,
            crate::config::Floor::Size => {
                std::hint::black_box(self.info.object_size(object));
                return;
            }
        }
        let Some(size) = self.info.object_size(object) else { return };
        let Some(ts) = thread::current() else { return };
        let tick = self.now_ms();
        // The common case in one visit to the thread's state: a known
        // stack, found without calling into the runtime.
        let mode = self.config.stacks;
        let fast = ts.with_local(|l| {
            if l.busy {
                return Fast::Busy;
            }
            match known_stack(l, mode, (class, size)) {
                Some(id) => Fast::Done(l.log.push(tick, Slot::alloc(object as u64, id))),
                None => {
                    l.busy = true;
                    Fast::Miss
                }
            }
        });
        match fast {
            Fast::Busy | Fast::Done(false) => {}
            Fast::Done(true) => self.chunk_started(ts),
            Fast::Miss => self.allocated_slow(ts, tick, object, class, size),
        }
    }

    /// An allocation at a new stack (or a snapshot): defines what it
    /// needs, then records it. The thread is marked busy.
    #[cold]
    #[inline(never)]
    fn allocated_slow(&self, ts: &ThreadState, tick: u32, object: usize, class: usize, size: u64) {
        let stack = self.stack_id(ts, Some((class, size)));
        let fresh = ts.with_local(|l| {
            l.busy = false;
            l.log.push(tick, Slot::alloc(object as u64, stack))
        });
        if fresh {
            self.chunk_started(ts);
        }
    }

    /// A thread started a new chunk of records: wake the flush thread
    /// every megabyte, drain here when far behind.
    #[cold]
    fn chunk_started(&self, ts: &ThreadState) {
        let n = ts.pending.fetch_add(1, Ordering::Relaxed) + 1;
        if n >= DRAIN_AT {
            self.flush_async();
        } else if n.is_multiple_of(WAKE_EVERY) {
            let (m, cv) = &self.wake;
            *lock(m) = true;
            cv.notify_one();
        }
    }

    /// `c`: a call (call logging), from the enter hook.
    pub fn called(&self, ts: &ThreadState) {
        let tick = self.now_ms();
        let mode = self.config.stacks;
        let fast = ts.with_local(|l| {
            if l.busy {
                return Fast::Busy;
            }
            match known_stack(l, mode, (0, 0)) {
                Some(id) => Fast::Done(l.log.push(tick, Slot::call(id))),
                None => {
                    l.busy = true;
                    Fast::Miss
                }
            }
        });
        match fast {
            Fast::Busy | Fast::Done(false) => {}
            Fast::Done(true) => self.chunk_started(ts),
            Fast::Miss => self.called_slow(ts, tick),
        }
    }

    /// A call at a new stack: as [`Agent::allocated_slow`].
    #[cold]
    #[inline(never)]
    fn called_slow(&self, ts: &ThreadState, tick: u32) {
        let stack = self.stack_id(ts, None);
        let fresh = ts.with_local(|l| {
            l.busy = false;
            l.log.push(tick, Slot::call(stack))
        });
        if fresh {
            self.chunk_started(ts);
        }
    }

    /// The calling thread's id and current call stack (0 when the thread
    /// is busy inside the agent).
    fn thread_and_stack(&self) -> (i32, i32) {
        let Some(ts) = thread::current() else {
            // Safety: gettid has no preconditions.
            return (unsafe { libc::syscall(libc::SYS_gettid) } as i32, 0);
        };
        if ts.with_local(|l| std::mem::replace(&mut l.busy, true)) {
            return (ts.os_tid, 0);
        }
        let stack = if self.config.stacks == StackMode::Snapshot { self.empty_stack(ts) } else { self.stack_id(ts, None) };
        ts.with_local(|l| l.busy = false);
        (ts.os_tid, stack)
    }

    fn empty_stack(&self, ts: &ThreadState) -> i32 {
        let previous = ts.with_local(|l| l.last_stack);
        self.define_stack(&[], None, previous)
    }

    /// `z`: a comment, in the calling thread's own time order (after what
    /// it allocated before, before what it allocates after).
    pub fn comment(&self, text: &str) {
        let bytes: Vec<u8> =
            text.chars().map(|c| if c == '\n' || c == '\r' { b' ' } else if (c as u32) < 0x100 { c as u32 as u8 } else { b'?' }).collect();
        let record = Record::Comment(Comment { text: &bytes });
        let tick = self.now_ms();
        match thread::current() {
            Some(ts) => {
                let mut line = Vec::new();
                write_record(&mut line, &record, self.style);
                if ts.with_local(|l| l.log.push(tick, Slot::text(line))) {
                    self.chunk_started(ts);
                }
            }
            None => self.event(&record),
        }
    }

    fn event(&self, r: &Record<'_>) {
        let tick = self.now_ms();
        let mut ev = lock(&self.events);
        write_record(ev.at(tick), r, self.style);
    }

    /// `h`: a GC handle was created.
    pub fn handle_created(&self, handle: usize, object: usize) {
        let (tid, stack) = self.thread_and_stack();
        self.event(&Record::HandleCreated(HandleCreated {
            thread: ThreadId(tid),
            handle: HandleId(handle as u64),
            initial: Address(object as u64),
            stack: StackId(stack),
        }));
    }

    /// `j`: a GC handle was destroyed.
    pub fn handle_destroyed(&self, handle: usize) {
        let (tid, stack) = self.thread_and_stack();
        self.event(&Record::HandleDestroyed(HandleDestroyed { thread: ThreadId(tid), handle: HandleId(handle as u64), stack: StackId(stack) }));
    }

    /// `m`: a module was loaded.
    pub fn module_loaded(&self, module: usize) {
        let Some((base, path)) = self.info.module_info(module) else { return };
        // The reader ignores a module's stack; naming frames here (the
        // loader's locks may be held) is not worth the risk: 0, the empty
        // stack.
        let stack = 0;
        let mut tables = lock(&self.tables);
        let mut defs = lock(&self.defs);
        tables.define_module(&mut defs, self.style, module, &path, base, stack);
    }

    /// `y`: an assembly was loaded.
    pub fn assembly_loaded(&self, assembly: usize) {
        let Some(name) = self.info.assembly_name(assembly) else { return };
        let name: Vec<u8> = name.chars().map(|c| if (c as u32) < 0x100 && c >= ' ' { c as u32 as u8 } else { b'?' }).collect();
        let tid = thread::current().map_or(0, |t| t.os_tid);
        self.event(&Record::Assembly(AssemblyLoad { thread: ThreadId(tid), assembly: assembly as u64, name: &name }));
    }

    // ------------------------------------------------------------------ GC

    fn ranges(&self) -> Vec<LogRange> {
        // The pinned object heap (generation 4, .NET 5+) is reported as
        // generation 2: CLRProfiler's reader knows generations 0-3 only,
        // and pinned objects are collected with generation 2.
        self.info
            .generation_bounds()
            .into_iter()
            .map(|r: GenerationRange| LogRange {
                start: Address(r.start as u64),
                length: r.length as u64,
                reserved: r.reserved as u64,
                generation: if r.generation >= 4 { 2 } else { r.generation as i32 },
            })
            .collect()
    }

    /// A GC starts: drain everything, then `i` and `b 1`.
    pub fn gc_started(&self, collected: &[bool], induced: bool) {
        let mut generation = 1usize;
        while generation < 3 && collected.get(generation).copied().unwrap_or(false) {
            generation += 1;
        }
        let condemned = generation as i32 - 1;
        let ranges = self.ranges();
        let now = self.now_ms();
        let mut out = self.lock_out();
        self.drain(&mut out);
        out.gc_stack.push(condemned);
        let tick = out.fresh_tick(now);
        let start = GcBoundary { is_start: true, induced, condemned, ranges: List::Items(&ranges) };
        out.record(&Record::GcBoundary(start));
        self.claim_dump(&mut out, condemned, tick, &start);
    }

    /// A GC ends: `i`, `b 0`, `g`, and the file is flushed.
    /// A GC that started before the agent saw it (attach) is ignored.
    pub fn gc_finished(&self) {
        let ranges = self.ranges();
        let now = self.now_ms();
        let mut out = self.lock_out();
        let depth = out.gc_stack.len();
        let Some(condemned) = out.gc_stack.pop() else { return };
        let tick = out.fresh_tick(now);
        let end = GcBoundary { is_start: false, induced: false, condemned, ranges: List::Items(&ranges) };
        out.record(&Record::GcBoundary(end));
        for g in 0..=(condemned.clamp(0, 2) as usize) {
            out.gc_counts[g] += 1;
        }
        let [gen0, gen1, gen2] = out.gc_counts;
        let counts = GcCounts { gen0, gen1, gen2 };
        out.record(&Record::GcCounts(counts));
        self.end_dump(&mut out, depth, tick, &end, &counts);
        self.drain(&mut out);
        out.writer.flush();
    }

    /// `u` lines.
    pub fn moved(&self, old: &[usize], new: &[usize], len: &[usize]) {
        let mut out = self.lock_out();
        if out.gc_stack.is_empty() {
            return;
        }
        for ((&o, &n), &l) in old.iter().zip(new).zip(len) {
            let mut done = 0usize;
            while done < l {
                let part = (l - done).min(u32::MAX as usize);
                out.record(&Record::Moved(Moved {
                    old: Address((o + done) as u64),
                    new: Address((n + done) as u64),
                    length: part as u32,
                }));
                done += part;
            }
        }
    }

    /// `v` lines.
    pub fn survived(&self, start: &[usize], len: &[usize]) {
        let mut out = self.lock_out();
        if out.gc_stack.is_empty() {
            return;
        }
        for (&s, &l) in start.iter().zip(len) {
            let mut done = 0usize;
            while done < l {
                let part = (l - done).min(u32::MAX as usize);
                out.record(&Record::Survived(Survived { start: Address((s + done) as u64), length: part as u32 }));
                done += part;
            }
        }
    }

    /// `l`: an object was queued for finalization.
    pub fn finalizer_queued(&self, flags: u32, object: usize) {
        let mut out = self.lock_out();
        if out.gc_stack.is_empty() {
            return;
        }
        out.record(&Record::Finalizer(FinalizerQueued { critical: flags & 1 != 0, address: Address(object as u64) }));
    }

    // --------------------------------------------------------------- drain

    /// Writes everything buffered to the file, and waits until it is
    /// written (the process may end right after: an exception, shutdown).
    pub fn flush(&self) {
        let mut out = self.lock_out();
        self.drain(&mut out);
        out.writer.flush_sync();
    }

    /// Hands everything buffered to the writer thread without waiting.
    pub fn flush_async(&self) {
        let mut out = self.lock_out();
        self.drain(&mut out);
        out.writer.flush();
    }

    /// Called at `Shutdown`: the log ends (see [`Agent::end`]).
    pub fn shutdown(&self) {
        self.end("Shutdown");
    }

    /// Ends the log, once, whichever exit path gets here first
    /// (`Shutdown`, `atexit`, a fatal signal: see [`crate::exit`]): a last
    /// drain, the end line `z clrprof agent: end of log (HOW)`, and the
    /// sink finished (streaming: the end frame, confirmed, or the spool).
    /// The timer stops; what threads still running record afterwards is
    /// dropped, so the log stays whole. A second caller waits until the
    /// first has finished (the `out` lock), then returns.
    pub fn end(&self, how: &str) {
        self.shutdown.store(true, Ordering::Release);
        let mut out = self.lock_out();
        if out.ended {
            return;
        }
        crate::control_socket::remove();
        self.drain(&mut out);
        if out.writer.has_file() {
            let text = format!("clrprof agent: end of log ({how})");
            out.record(&Record::Comment(Comment { text: text.as_bytes() }));
        }
        out.writer.finish();
        out.writer = Sink::discard(self.style);
        out.ended = true;
    }

    /// Flushes the log and stops writing it (what comes later is dropped).
    pub(crate) fn close_log(&self) {
        let mut out = self.lock_out();
        if out.ended {
            return;
        }
        self.drain(&mut out);
        out.writer.finish();
        out.writer = Sink::discard(self.style);
        out.ended = true;
        *lock(&self.log) = None;
    }

    /// Takes the definitions written since the last drain (they go into
    /// the log ahead of the lines that use them).
    pub(crate) fn take_defs(&self) -> Vec<u8> {
        std::mem::take(&mut *lock(&self.defs))
    }

    pub(crate) fn drain(&self, out: &mut Out) {
        let mut threads: Vec<(&'static ThreadState, Mark)> = Vec::new();
        let mut freed: Vec<&'static ThreadState> = Vec::new();
        let (defs, events) = {
            let mut defs = lock(&self.defs);
            let events = lock(&self.events).take();
            let mut registry = lock(&self.threads);
            registry.retain(|&ts| {
                // `dead` first: a dead thread wrote everything before it
                // was set, so the mark below covers all of it.
                let dead = ts.dead.load(Ordering::Acquire);
                // Safety: drains are serialized by the `out` lock (held:
                // `out` is borrowed from it).
                let mark = unsafe { ts.reader() }.mark();
                threads.push((ts, mark));
                if dead {
                    freed.push(ts);
                }
                !dead
            });
            (std::mem::take(&mut *defs), events)
        };
        out.writer.raw(&defs);
        {
            let mut sources: Vec<ThreadSource<'_>> = threads
                .iter()
                .map(|(ts, mark)| ThreadSource {
                    // Safety: as above; one reference per thread state,
                    // dropped at the end of this block.
                    reader: unsafe { ts.reader() },
                    mark: *mark,
                    prefixes: &ts.prefixes,
                    freed: 0,
                })
                .collect();
            crate::merge::merge(&mut *out, (&events.0, &events.1), &mut sources);
            for (source, (ts, _)) in sources.iter().zip(&threads) {
                if source.freed > 0 {
                    ts.pending.fetch_sub(source.freed, Ordering::Relaxed);
                }
            }
        }
        let (bytes, marks) = events;
        lock(&self.events).give_back(bytes, marks);
        for ts in freed {
            // Safety: a dead thread's state is no longer reachable from its
            // thread (its slot was cleared before `dead` was set) nor from
            // the registry (just removed), everything it wrote was read
            // above, and drains are serialized by the `out` lock.
            unsafe { drop(Box::from_raw(ts as *const ThreadState as *mut ThreadState)) };
        }
        // Give the definitions buffer's capacity back.
        let mut d = lock(&self.defs);
        if d.capacity() == 0 && defs.capacity() <= (1 << 20) {
            let mut defs = defs;
            defs.clear();
            *d = defs;
        }
    }
}
