//! Heap dumps: an induced GC during which every live object is written
//! from `ObjectReferences` as an `o` line and every root from
//! `RootReferences2` as an `e` line, inside the GC's own `b`/`u`/`v`/`g`
//! lines, as CLRProfiler's profiler writes them.
//!
//! ```text
//! caller (control socket, P/Invoke, timer, collector)
//!   └─ request ─► dump thread (the agent's own, never runs managed code)
//!                   ├─ Out.dump = Some(Dump { target, .. })   (asked for)
//!                   ├─ ICorProfilerInfo::ForceGC ─► GC start: the first full GC claims it
//!                   │                                 RootReferences2 ─► e lines
//!                   │                                 ObjectReferences ─► o lines (t first)
//!                   │                               GC end: the dump is finished
//!                   └─ reply DumpInfo (after the file is written)
//! ```
//!
//! The target is the agent's log, or a file of its own (`output`), which
//! then gets the definitions it uses (`t`, `f`, `m`), a tick, the GC's
//! `b 1`, the roots and objects, `b 0` and `g`: it loads alone. Outside a
//! claimed dump `ObjectReferences` answers `E_FAIL`, which stops the
//! runtime's walk for that GC (its cost is why dumps are on demand).

use crate::agent::{lock, Agent, Out};
use crate::sink::Sink;
use crate::tables::StackKey;
use crate::thread::FxMap;
use clrprof::format::records::{AssemblyLoad, Comment, GcBoundary, GcCounts, HeapObject, Root, Tick};
use clrprof::format::{Address, List, Record, ThreadId, TypeId};
use clrprof_control::protocol::DumpInfo;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// `COR_PRF_GC_ROOT_STACK`.
const ROOT_STACK: u32 = 1;

/// Where a dump goes.
pub(crate) enum Target {
    /// The agent's log.
    Log,
    /// A file of its own.
    File(Box<FileTarget>),
}

/// A dump file: its writer and the definitions it holds so far.
pub(crate) struct FileTarget {
    sink: Sink,
    path: PathBuf,
    last_tick: Option<u32>,
    types: HashSet<i32>,
    functions: HashSet<i32>,
    modules: HashSet<i32>,
}

/// A dump asked for, then being written.
pub(crate) struct Dump {
    target: Target,
    /// The GC writing it: the depth of the agent's GC stack at its start.
    claimed: Option<usize>,
    finished: bool,
    objects: u64,
    /// Roots with an object (`e` lines with a nonzero address).
    roots: u64,
    bytes: u64,
    /// The named static roots were written (before the runtime's roots).
    statics_written: bool,
    /// ClassID -> type id, so that the walk asks the tables once per class.
    classes: FxMap<usize, i32>,
    /// The (type id, size) pairs whose allocation-only stack this dump made
    /// sure of (see [`Agent::type_size_stack`]).
    sized: FxMap<(i32, i32), ()>,
    refs: Vec<Address>,
}

impl Dump {
    fn new(target: Target) -> Dump {
        Dump {
            target,
            claimed: None,
            finished: false,
            statics_written: false,
            objects: 0,
            roots: 0,
            bytes: 0,
            classes: FxMap::default(),
            sized: FxMap::default(),
            refs: Vec::new(),
        }
    }
}

/// Writes `r` to the dump's target: the log (`writer`) or its file.
fn emit(writer: &mut Sink, target: &mut Target, r: &Record<'_>) {
    match target {
        Target::Log => writer.record(r),
        Target::File(f) => f.sink.record(r),
    }
}

impl Agent {
    /// At a GC start: the first full GC after a dump was asked for writes it.
    pub(crate) fn claim_dump(&self, out: &mut Out, condemned: i32, tick: u32, start: &GcBoundary<'_>) {
        let depth = out.gc_depth();
        let Some(d) = out.dump.as_mut() else { return };
        if d.claimed.is_some() || d.finished || condemned < 2 {
            return;
        }
        d.claimed = Some(depth);
        if let Target::File(f) = &mut d.target {
            f.tick(tick);
            f.sink.record(&Record::GcBoundary(*start));
        }
        self.dumping.store(true, Ordering::Release);
    }

    /// At a GC end: the dump it wrote is finished.
    pub(crate) fn end_dump(&self, out: &mut Out, depth: usize, tick: u32, end: &GcBoundary<'_>, counts: &GcCounts) {
        let Some(d) = out.dump.as_mut() else { return };
        if d.claimed != Some(depth) || d.finished {
            return;
        }
        d.finished = true;
        self.dumping.store(false, Ordering::Release);
        if let Target::File(f) = &mut d.target {
            f.tick(tick);
            f.sink.record(&Record::GcBoundary(*end));
            f.sink.record(&Record::GcCounts(*counts));
        }
    }

    /// Writes the definitions the dump's next line needs: everything
    /// pending into the log, or the named ids into a dump file.
    fn define_for_dump(&self, out: &mut Out, types: &[i32], functions: &[i32]) {
        let Some(d) = out.dump.as_mut() else { return };
        match &mut d.target {
            Target::Log => {
                let defs = self.take_defs();
                out.writer.raw(&defs);
            }
            Target::File(f) => {
                if types.iter().all(|t| f.types.contains(t)) && functions.iter().all(|x| f.functions.contains(x)) {
                    return;
                }
                let tables = lock(&self.tables);
                for &t in types {
                    if f.types.insert(t) {
                        if let Some(line) = tables.type_line(t) {
                            f.sink.raw(line);
                        }
                    }
                }
                for &func in functions {
                    if f.functions.insert(func) {
                        if let Some((line, module)) = tables.function_line(func) {
                            if module > 0 && f.modules.insert(module) {
                                if let Some(m) = tables.module_line(module) {
                                    f.sink.raw(m);
                                }
                            }
                            f.sink.raw(line);
                        }
                    }
                }
            }
        }
    }

    /// Defines the allocation-only stack (`n ID 1 TYPE SIZE`, no frames) of
    /// an object's type and size, unless the log has it.
    ///
    /// A reader that meets an `o` line for an object it does not hold live
    /// with that type (objects allocated while allocation logging was off,
    /// or before an attach, or .NET 8's frozen objects, which lie outside
    /// every generation range the `b` lines give and so die in the reader
    /// at the next GC) takes the allocation-only stack of the object's type
    /// and size, and when the log has none, makes one. Making one starts
    /// CLRProfiler's renumbering of stack ids: every stack defined later is
    /// stored under another index, and `!` and `n` ids are mapped to it, but
    /// the ids of `h` and `j` lines are not (CLRProfiler's reader, which
    /// ours reproduces). A handle made after such a dump was then counted
    /// under whatever stack had its id's index. With the stack defined here
    /// first, the reader finds it and never renumbers.
    fn type_size_stack(&self, ty: i32, size: i32) {
        let mut tables = lock(&self.tables);
        let mut defs = lock(&self.defs);
        tables.stack(&mut defs, self.style, StackKey { frames: Box::new([]), alloc: Some((ty, size)) }, None);
    }

    /// `RootReferences2`: `e` lines (stack roots name their function).
    pub fn root_references(&self, refs: &[usize], kinds: &[u32], flags: &[u32], ids: &[usize]) {
        if !self.dumping.load(Ordering::Acquire) {
            return;
        }
        let n = refs.len().min(kinds.len()).min(flags.len()).min(ids.len());
        // Name the functions before taking the lock (calls into the runtime).
        let funcs: Vec<Option<i32>> =
            (0..n).map(|i| (kinds[i] == ROOT_STACK && ids[i] != 0).then(|| self.function_id(ids[i]))).collect();
        let used: Vec<i32> = funcs.iter().flatten().copied().collect();
        let first = self.lock_out().dump.as_ref().is_some_and(|d| !d.statics_written);
        // Read before the lock: calls into the runtime.
        let statics = if first { self.statics.roots(&self.info) } else { Vec::new() };
        let mut out = self.lock_out();
        self.define_for_dump(&mut out, &[], &used);
        let Out { writer, dump, .. } = &mut *out;
        let Some(d) = dump.as_mut().filter(|d| d.claimed.is_some() && !d.finished) else { return };
        if !d.statics_written {
            d.statics_written = true;
            // The names first (`d` lines, which CLRProfiler skips), then
            // the roots, so that every `e` line of the dump follows another.
            for s in &statics {
                let name = format!("static {}", s.name);
                let line = AssemblyLoad { thread: ThreadId(0), assembly: s.slot, name: name.as_bytes() };
                emit(writer, &mut d.target, &Record::AssemblyD(line));
            }
            for s in &statics {
                let root = Root { address: Address(s.object), kind: 0, flags: 0, id: s.slot };
                emit(writer, &mut d.target, &Record::Root(root));
                d.roots += 1;
            }
        }
        for i in 0..n {
            let id = match funcs[i] {
                Some(f) => f as u64,
                None => ids[i] as u64,
            };
            // A stack root whose function is unknown keeps the kind; its id
            // is then written as a (hex) address, as CLRProfiler does.
            let root = Root { address: Address(refs[i] as u64), kind: kinds[i] as i32, flags: flags[i] as i32, id };
            emit(writer, &mut d.target, &Record::Root(root));
            // Counted as the log's readers count roots: a null reference is
            // written but names no object (CLRProfiler drops it).
            d.roots += u64::from(refs[i] != 0);
        }
    }

    /// `ObjectReferences`: an `o` line. False outside a dump (the runtime
    /// then stops walking the heap for this GC).
    pub fn object_references(&self, object: usize, class: usize, refs: &[usize]) -> bool {
        if !self.dumping.load(Ordering::Acquire) {
            return false;
        }
        let size = self.info.object_size(object).unwrap_or(0);
        let mut out = self.lock_out();
        let cached = out.dump.as_ref().and_then(|d| d.classes.get(&class).copied());
        let ty = match cached {
            Some(t) => t,
            None => {
                drop(out);
                let t = self.type_id(class);
                out = self.lock_out();
                if let Some(d) = out.dump.as_mut() {
                    d.classes.insert(class, t);
                }
                self.define_for_dump(&mut out, &[t], &[]);
                t
            }
        };
        let size32 = size.min(u32::MAX as u64) as u32;
        if let Ok(size) = i32::try_from(size32) {
            let fresh = out.dump.as_mut().is_some_and(|d| matches!(d.target, Target::Log) && d.sized.insert((ty, size), ()).is_none());
            if fresh {
                self.type_size_stack(ty, size);
                self.define_for_dump(&mut out, &[], &[]);
            }
        }
        let Out { writer, dump, .. } = &mut *out;
        let Some(d) = dump.as_mut().filter(|d| d.claimed.is_some() && !d.finished) else { return false };
        d.refs.clear();
        d.refs.extend(refs.iter().map(|&r| Address(r as u64)));
        let refs = std::mem::take(&mut d.refs);
        let o = HeapObject { address: Address(object as u64), type_id: TypeId(ty), size: size32, refs: List::Items(&refs) };
        emit(writer, &mut d.target, &Record::HeapObject(o));
        d.refs = refs;
        d.objects += 1;
        d.bytes += size;
        true
    }
}

impl FileTarget {
    fn create(path: &Path, style: clrprof::format::Style) -> Result<FileTarget, String> {
        // Exclusively and never through a link: the path may be a default
        // name another user guessed, or a file of someone's (`clrprof
        // heap-dump --force` removes what is there first).
        let file = clrprof_files::create_new(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => {
                format!("{} exists; a heap dump never replaces a file (clrprof heap-dump --force does)", path.display())
            }
            _ => format!("cannot create {}: {e}", path.display()),
        })?;
        let mut sink = Sink::new(file, style)?;
        sink.raw(b"f 0 NATIVE FUNCTION ( UNKNOWN ARGUMENTS ) 0 0\n");
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        Ok(FileTarget { sink, path, last_tick: None, types: HashSet::new(), functions: HashSet::new(), modules: HashSet::new() })
    }

    fn tick(&mut self, tick: u32) {
        let t = match self.last_tick {
            Some(last) if tick <= last => last + 1,
            _ => tick,
        };
        self.sink.record(&Record::Tick(Tick { ms: t }));
        self.last_tick = Some(t);
    }
}

/// A request to the dump thread.
struct Job {
    label: Option<String>,
    output: Option<PathBuf>,
    reply: SyncSender<Result<DumpInfo, String>>,
}

static JOBS: OnceLock<SyncSender<Job>> = OnceLock::new();

/// Takes a heap dump (see the module docs) and waits for it. Safe to call
/// from any thread, managed ones included (the GC is forced from the
/// agent's own dump thread).
pub fn heap_dump(agent: &'static Agent, label: Option<&str>, output: Option<&Path>) -> Result<DumpInfo, String> {
    let jobs = match JOBS.get() {
        Some(j) => j,
        None => {
            let (tx, rx) = sync_channel::<Job>(16);
            std::thread::Builder::new()
                .name("clrprof-dump".into())
                .spawn(move || worker(agent, rx))
                .map_err(|e| format!("cannot start the dump thread: {e}"))?;
            // Another caller may have won the race: its thread serves both.
            let _ = JOBS.set(tx);
            JOBS.get().ok_or("no dump thread")?
        }
    };
    let (reply, answer) = sync_channel(1);
    jobs.send(Job { label: label.map(str::to_string), output: output.map(Path::to_path_buf), reply })
        .map_err(|_| "the dump thread has stopped".to_string())?;
    answer.recv().map_err(|_| "the dump thread has stopped".to_string())?
}

fn worker(agent: &'static Agent, rx: Receiver<Job>) {
    while let Ok(job) = rx.recv() {
        let result = crate::guard(Err("the dump failed (internal error)".into()), || run(agent, job.label.as_deref(), job.output.as_deref()));
        let _ = job.reply.send(result);
    }
}

fn run(agent: &'static Agent, label: Option<&str>, output: Option<&Path>) -> Result<DumpInfo, String> {
    let started = Instant::now();
    if agent.is_shut_down() {
        return Err("the process is shutting down".into());
    }
    let target = match output {
        Some(path) => {
            let mut f = FileTarget::create(path, agent.style)?;
            let header = format!("clrprof heap dump of pid {} by agent {}", std::process::id(), env!("CARGO_PKG_VERSION"));
            f.tick(agent.now_ms());
            f.sink.record(&Record::Comment(Comment { text: header.as_bytes() }));
            if let Some(l) = label {
                let text: Vec<u8> = l.bytes().map(|b| if b == b'\n' || b == b'\r' { b' ' } else { b }).collect();
                f.sink.record(&Record::Comment(Comment { text: &text }));
            }
            Target::File(Box::new(f))
        }
        None => {
            if lock(&agent.log).is_none() {
                return Err("this agent has no log to write the dump into; name a file for it (heap-dump -o FILE)".into());
            }
            if let Some(l) = label {
                agent.comment(l);
            }
            Target::Log
        }
    };
    // The static fields of the classes loaded since the last dump, to
    // name them as roots (outside the GC: metadata reads).
    agent.statics.prepare(&agent.info);
    {
        let mut out = agent.lock_out();
        if out.dump.is_some() {
            return Err("a heap dump is already in progress".into());
        }
        out.dump = Some(Dump::new(target));
    }
    let hr = agent.info.force_gc();
    let dump = agent.lock_out().dump.take();
    agent.dumping.store(false, Ordering::Release);
    let Some(dump) = dump else { return Err("the dump vanished".into()) };
    if hr < 0 {
        return Err(format!("ICorProfilerInfo::ForceGC failed (HRESULT 0x{:08X})", hr as u32));
    }
    if !dump.finished {
        return Err("the forced GC did not report its heap (no full GC was seen)".into());
    }
    let (log, index) = match dump.target {
        Target::File(mut f) => {
            f.sink.flush_sync();
            (f.path, 0)
        }
        Target::Log => {
            agent.flush();
            let log = lock(&agent.log).clone().unwrap_or_default();
            (log, agent.dumps_in_log.fetch_add(1, Ordering::AcqRel))
        }
    };
    Ok(DumpInfo {
        index,
        log,
        objects: dump.objects,
        roots: dump.roots,
        bytes: dump.bytes,
        millis: started.elapsed().as_millis() as u64,
    })
}

/// Starts the thread of `CLRPROF_HEAP_DUMP_EVERY`: a dump into the log
/// every `every`, labelled `periodic heap dump N` where N is the dump's
/// number in the log as `clrprof dumps` and `clrprof dump LOG N` count
/// (from 0, dumps of other origins included). N is read when the dump is
/// asked for: a dump asked for by other means in that instant can come
/// first and take the number.
pub(crate) fn start_periodic(agent: &'static Agent, every: Duration) -> Result<(), String> {
    std::thread::Builder::new()
        .name("clrprof-periodic".into())
        .spawn(move || {
            loop {
                std::thread::sleep(every);
                if agent.is_shut_down() || lock(&agent.log).is_none() {
                    return;
                }
                let n = agent.dumps_in_log.load(Ordering::Acquire);
                let label = format!("periodic heap dump {n}");
                if let Err(e) = heap_dump(agent, Some(&label), None) {
                    eprintln!("clrprof agent: {label}: {e}");
                }
            }
        })
        .map(|_| ())
        .map_err(|e| format!("cannot start the periodic dump thread: {e}"))
}
