//! The log being made: records handed to a [`RecordSink`] (the model's
//! builder, or text), with the type, function and stack definitions each
//! given once, before their first use.
//!
//! Stacks are shared, never copied per record: each distinct list of
//! frames is given once, as a call stack (`n S 0 f...`), and each
//! allocation stack (a type and size on those frames) refers to it
//! (`n A 1+4k T SIZE S`, the `k` frames of `S` shared), so an allocation
//! stack costs a record of five numbers whatever the depth. A trace that
//! reuses one deep stack with many sizes costs the stack once, not once
//! per size.

use super::methods::MethodMap;
use crate::eventpipe::Stack;
use crate::format::records::{Alloc, Comment, FunctionDef, ModuleLoad, StackDef, Tick, TypeDef};
use crate::format::{escape_name, Address, FunctionId, ModuleId, Record, RecordSink, StackId, ThreadId, TypeId};
use crate::hash::BlockHashState;
use std::collections::HashMap;

/// A map with the cheap seeded hash (one lookup or two per sample).
type Map<K, V> = HashMap<K, V, BlockHashState>;

/// The records' sink and the definition tables.
pub(super) struct LogText<'s> {
    sink: &'s mut dyn RecordSink,
    /// Runtime type handle -> log type id.
    types: Map<u64, i32>,
    /// Method index (in the [`MethodMap`]) or unresolved address -> log
    /// function id.
    functions: Map<FrameKey, i32>,
    /// Function ids (outermost first) -> the log id of the call stack
    /// that lists them, and how many there are.
    frame_lists: Map<Box<[i32]>, (i32, u32)>,
    /// A trace's stack (its bytes' place in the trace) -> the same, so
    /// that a stack used again is not resolved frame by frame again (the
    /// latest [`MAX_PLACES`] places).
    trace_stacks: Map<(usize, usize), (i32, u32)>,
    /// The trace's bytes, as addresses: a stack borrowed from them is
    /// known by its place (one that is not is resolved each time).
    trace: std::ops::Range<usize>,
    /// (type id, size, call stack id) -> log allocation stack id.
    stacks: Map<(i32, i32, i32), i32>,
    /// Log stack ids given so far.
    stack_ids: i32,
    /// Method name and signature -> log function id: a method compiled
    /// more than once (tiered compilation: quick code first, optimized code
    /// later) is one function.
    by_name: HashMap<(String, String), i32>,
    /// Module id -> log module id.
    modules: Map<u64, i32>,
    last_ms: Option<u32>,
    /// Scratch for a stack's function ids.
    frames: Vec<i32>,
    /// Scratch for a record's frames.
    frame_ids: Vec<FunctionId>,
    pub unresolved_frames: u64,
    /// Stacks deeper than [`MAX_FRAMES`], cut to their outermost frames.
    pub cut_stacks: u64,
}

/// The most frames a stack keeps (its outermost ones): the deepest stack
/// the model takes (2^20 frames; a .NET thread overflows its stack long
/// before), well within what an `n` line's flag can share (4 x frames + 1,
/// a 32-bit number).
const MAX_FRAMES: usize = 1 << 20;

/// Stack places remembered at most (about 2 MB of table): the stacks of
/// the latest stack blocks, so that memory does not grow with the trace.
const MAX_PLACES: usize = 1 << 16;

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum FrameKey {
    Method(usize),
    Address(u64),
}

impl<'s> LogText<'s> {
    pub fn new(trace: &[u8], sink: &'s mut dyn RecordSink) -> LogText<'s> {
        let start = trace.as_ptr() as usize;
        LogText {
            trace: start..start + trace.len(),
            sink,
            types: Map::default(),
            functions: Map::default(),
            by_name: HashMap::new(),
            frame_lists: Map::default(),
            trace_stacks: Map::default(),
            stacks: Map::default(),
            stack_ids: 0,
            modules: Map::default(),
            last_ms: None,
            frames: Vec::new(),
            frame_ids: Vec::new(),
            unresolved_frames: 0,
            cut_stacks: 0,
        }
    }

    /// Hands a record to the sink.
    pub fn record(&mut self, record: &Record<'_>) {
        self.sink.record(record);
    }

    /// An `i` record when time has moved on to `ms` (never backwards: events
    /// of different threads may reach the file slightly out of order).
    pub fn tick(&mut self, ms: f64) {
        let ms = if ms.is_finite() && ms > 0.0 { ms.min(f64::from(u32::MAX >> 1)) as u32 } else { 0 };
        if self.last_ms.is_some_and(|last| ms <= last) {
            return;
        }
        self.last_ms = Some(ms);
        self.sink.record(&Record::Tick(Tick { ms }));
    }

    /// A `z` comment (one line).
    pub fn comment(&mut self, text: &str) {
        let text: Vec<u8> = text.chars().map(|c| if c.is_control() || (c as u32) > 0xFF { b'?' } else { c as u32 as u8 }).collect();
        self.sink.record(&Record::Comment(Comment { text: &text }));
    }

    /// Whether a runtime type handle has its type id.
    pub fn knows_type(&self, handle: u64) -> bool {
        self.types.contains_key(&handle)
    }

    /// The log's type id for a runtime type handle, written as a `t` line
    /// the first time (`name` is called then).
    pub fn type_id(&mut self, handle: u64, name: impl FnOnce() -> String) -> i32 {
        if let Some(&id) = self.types.get(&handle) {
            return id;
        }
        let id = self.types.len() as i32 + 1;
        self.types.insert(handle, id);
        let name = name();
        let name = if name.is_empty() { format!("Type 0x{handle:x}") } else { name };
        let escaped = escape_name(&name.replace(['\n', '\r'], " "), None);
        self.sink.record(&Record::Type(TypeDef { id: TypeId(id), finalizable: Some(false), name: &escaped }));
        id
    }

    /// The allocation stack for `stack` (innermost frame first, as
    /// EventPipe gives it) with the allocated type and size: an `n` line
    /// referring to the call stack of its frames (written once, the first
    /// time those frames are seen), written the first time.
    pub fn alloc_stack(&mut self, type_id: i32, size: i32, stack: &Stack<'_>, methods: &MethodMap) -> i32 {
        let (frames_id, depth) = self.call_stack(stack, methods);
        let next = self.stack_ids + 1;
        let id = *self.stacks.entry((type_id, size, frames_id)).or_insert(next);
        if id == next {
            self.stack_ids = next;
            // Flag: an allocation stack (1) sharing all `depth` frames of
            // the call stack (4 x depth; bit 2 clear: the reference has no
            // type and size).
            let flag = if depth > 0 { 1 + 4 * depth as i32 } else { 1 };
            let stack = StackDef {
                id: StackId(id),
                flag,
                alloc: Some((TypeId(type_id), size)),
                reference: (depth > 0).then_some(StackId(frames_id)),
                frames: crate::format::List::Items(&[]),
            };
            self.sink.record(&Record::Stack(stack));
        }
        id
    }

    /// The call stack of a trace's stack: its log id and depth (0 frames:
    /// no stack, id 0), written as an `n` line the first time its list of
    /// functions is seen.
    fn call_stack(&mut self, stack: &Stack<'_>, methods: &MethodMap) -> (i32, u32) {
        let bytes = stack.as_bytes();
        let start = bytes.as_ptr() as usize;
        let place = (self.trace.contains(&start) && start + bytes.len() <= self.trace.end).then_some((start, bytes.len()));
        if let Some(known) = place.and_then(|p| self.trace_stacks.get(&p)) {
            return *known;
        }
        let mut ids = std::mem::take(&mut self.frames);
        ids.clear();
        for ip in stack.frames() {
            ids.push(self.function(ip, methods));
        }
        // CLRProfiler's stacks run from the outermost frame. A deeper
        // stack than the model takes keeps its outermost frames only.
        ids.reverse();
        if ids.len() > MAX_FRAMES {
            ids.truncate(MAX_FRAMES);
            self.cut_stacks += 1;
        }
        let known = match self.frame_lists.get(ids.as_slice()) {
            Some(&known) => known,
            None if ids.is_empty() => (0, 0),
            None => {
                self.stack_ids += 1;
                let known = (self.stack_ids, ids.len() as u32);
                self.frame_ids.clear();
                self.frame_ids.extend(ids.iter().map(|&f| FunctionId(f)));
                let stack = StackDef {
                    id: StackId(known.0),
                    flag: 0,
                    alloc: None,
                    reference: None,
                    frames: crate::format::List::Items(&self.frame_ids),
                };
                self.sink.record(&Record::Stack(stack));
                self.frame_lists.insert(ids.as_slice().into(), known);
                known
            }
        };
        if let Some(p) = place {
            // Places are those of the trace's stack blocks: a long trace
            // has ever more of them. The places of the latest blocks are
            // the ones its events use again.
            if self.trace_stacks.len() >= MAX_PLACES {
                self.trace_stacks.clear();
            }
            self.trace_stacks.insert(p, known);
        }
        self.frames = ids;
        known
    }

    /// The function id of a frame, its `f` (and `m`) lines written the
    /// first time.
    fn function(&mut self, ip: u64, methods: &MethodMap) -> i32 {
        let found = methods.find(ip);
        let key = match found {
            Some(k) => FrameKey::Method(k),
            None => FrameKey::Address(ip),
        };
        if let Some(&id) = self.functions.get(&key) {
            return id;
        }
        if let Some(k) = found {
            let m = methods.get(k);
            if let Some(&id) = self.by_name.get(&(m.name.clone(), m.signature.clone())) {
                self.functions.insert(key, id);
                return id;
            }
        }
        // Function 0 is CLRProfiler's NATIVE FUNCTION.
        let id = self.by_name.len() as i32 + self.unresolved_frames as i32 + 1;
        self.functions.insert(key, id);
        if let Some(k) = found {
            let m = methods.get(k);
            self.by_name.insert((m.name.clone(), m.signature.clone()), id);
        }
        let (name, signature, start, size, module) = match found {
            Some(k) => {
                let m = methods.get(k);
                (m.name.clone(), m.signature.clone(), m.start, m.size, self.module(m.module, methods))
            }
            None => {
                self.unresolved_frames += 1;
                (format!("?!0x{ip:x}"), "()".to_string(), ip, 0, -1)
            }
        };
        let name = if name.is_empty() { "?".to_string() } else { name };
        let (name, signature) = (escape_name(&name, Some(' ')), escape_name(&signature, None));
        self.sink.record(&Record::Function(FunctionDef {
            id: FunctionId(id),
            name: &name,
            signature: &signature,
            address: Address(start),
            size,
            module: ModuleId(module),
            stack: StackId(-1),
        }));
        id
    }

    /// The log's module id for a runtime module id (`m` line the first
    /// time); -1 when the trace does not name it.
    fn module(&mut self, module: u64, methods: &MethodMap) -> i32 {
        if let Some(&id) = self.modules.get(&module) {
            return id;
        }
        let Some(path) = methods.modules.get(&module) else { return -1 };
        let id = self.modules.len() as i32 + 1;
        self.modules.insert(module, id);
        // The reader takes the text after the last backslash as the short
        // name: Linux paths are given with backslashes. (A log's reader
        // skips blanks before the path.)
        let path: Vec<u8> = path
            .chars()
            .map(|c| {
                if c == '/' {
                    '\\'
                } else if c.is_control() {
                    ' '
                } else {
                    c
                }
            })
            .map(|c| if (c as u32) > 0xFF { b'?' } else { c as u32 as u8 })
            .skip_while(|&b| b == b' ')
            .collect();
        self.sink.record(&Record::Module(ModuleLoad { id: ModuleId(id), path: &path, address: Some(Address(module)), stack: StackId(0) }));
        id
    }

    /// A `!` allocation.
    pub fn alloc(&mut self, thread: u64, address: u64, stack: i32) {
        let thread = Some(ThreadId(thread as u32 as i32));
        self.sink.record(&Record::Alloc(Alloc { thread, address: Address(address), stack: StackId(stack) }));
    }
}
