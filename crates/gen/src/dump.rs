//! Heap dumps: the roots (`e`, and the older `r` form) and every live
//! object with its references (`o`), written during a GC after the
//! survivors have moved, so every address is a live object's new address.
//!
//! The generator does not model references while the program runs; it
//! makes them up at dump time so that the graph is plausible and complete:
//! walking objects from oldest to youngest, each object is referenced by an
//! older object whose type can hold references (usually a recent one), so
//! every object is reachable from a root; a few extra references cross the
//! heap. Roots are what the CLR reports: thread stacks (the frame's function
//! id), handles (pinned, weak), the finalization queue (objects queued in
//! this GC), and statics ("other") for the oldest objects and for objects
//! with no possible parent.

use super::emit::Emitter;
use super::error::GenError;
use super::handles::{HandleKind, Handles};
use super::heap::{Heap, Obj};
use super::ids::Ids;
use super::rng::{Geometric, Rng};
use super::threads::ThreadState;
use super::truth::{DumpTruth, DumpTypeTruth, RootCounts};
use super::types::TypeCatalog;
use clrprof::format::records::{Root, ROOT_PINNING, ROOT_WEAK};
use clrprof::format::{Address, FunctionId, TypeId};

const KIND_OTHER: i32 = 0;
const KIND_STACK: i32 = 1;
const KIND_FINALIZER: i32 = 2;
const KIND_HANDLE: i32 = 3;

/// Objects referenced as statics at the bottom of the heap.
const STATIC_ROOTS: usize = 8;
/// Stack roots per thread.
const STACK_ROOTS: usize = 3;

/// What a dump needs from the running process.
pub struct DumpInputs<'a> {
    /// The heap after the survivors moved.
    pub heap: &'a Heap,
    /// Types (which can hold references).
    pub types: &'a TypeCatalog,
    /// Type ids.
    pub ids: &'a Ids,
    /// Live handles.
    pub handles: &'a Handles,
    /// Threads (their current frames give stack roots).
    pub threads: &'a [ThreadState],
    /// Objects queued for finalization in this GC (sequence numbers).
    pub freachable: &'a [u32],
}

/// Writes one heap dump and returns what it contained.
pub fn write(inputs: &DumpInputs<'_>, rng: &mut Rng, out: &mut Emitter) -> Result<DumpTruth, GenError> {
    let h = inputs.heap;
    // Address order: generation 2, 1 (generation 0 is empty after a GC),
    // then large objects.
    let objs: Vec<&Obj> = h.gen2.iter().chain(h.gen1.iter()).chain(h.gen0.iter()).chain(h.loh.iter()).collect();
    let n = objs.len();
    let mut by_seq: Vec<u32> = (0..n as u32).collect();
    by_seq.sort_unstable_by_key(|&i| objs[i as usize].seq);
    let find = |seq: u32| -> Option<usize> {
        by_seq.binary_search_by_key(&seq, |&i| objs[i as usize].seq).ok().map(|k| by_seq[k] as usize)
    };
    let holds_refs = |i: usize| inputs.types.spec(objs[i].ty()).holds_refs();

    let mut roots: Vec<Root> = Vec::new();
    let mut counts = RootCounts::default();
    let mut rooted = vec![false; n];
    // Thread stacks: a few of the youngest objects, held by a frame.
    for t in inputs.threads {
        if t.frames.is_empty() || n == 0 {
            continue;
        }
        for _ in 0..STACK_ROOTS {
            let k = n - 1 - (rng.below(64.min(n as u64)) as usize);
            let i = by_seq[k] as usize;
            let f: FunctionId = t.frames[rng.index(t.frames.len())].id;
            roots.push(Root { address: Address(objs[i].addr), kind: KIND_STACK, flags: 0, id: f.0 as u64 });
            rooted[i] = true;
            counts.stack += 1;
        }
    }
    // Handles.
    for hd in inputs.handles.live() {
        let Some(i) = hd.target.and_then(find) else { continue };
        let flags = match hd.kind {
            HandleKind::Strong => 0,
            HandleKind::Weak => ROOT_WEAK,
            HandleKind::Pinned => ROOT_PINNING,
        };
        roots.push(Root { address: Address(objs[i].addr), kind: KIND_HANDLE, flags, id: hd.id.0 });
        if hd.kind != HandleKind::Weak {
            rooted[i] = true;
        }
        counts.handle += 1;
    }
    // The finalization queue.
    for &seq in inputs.freachable {
        if let Some(i) = find(seq) {
            roots.push(Root { address: Address(objs[i].addr), kind: KIND_FINALIZER, flags: 0, id: 0 });
            rooted[i] = true;
            counts.finalizer += 1;
        }
    }
    // Statics: the oldest objects.
    for &i in by_seq.iter().take(STATIC_ROOTS) {
        let i = i as usize;
        roots.push(Root { address: Address(objs[i].addr), kind: KIND_OTHER, flags: 0, id: 0 });
        rooted[i] = true;
        counts.other += 1;
    }

    // References: a parent for every object not yet rooted, then a few
    // cross references.
    let recent = Geometric::with_mean(40.0);
    let mut parents: Vec<u32> = Vec::new();
    let mut edges: Vec<(u32, u32)> = Vec::with_capacity(n + n / 4);
    for &i in &by_seq {
        let i = i as usize;
        if !rooted[i] {
            if parents.is_empty() {
                roots.push(Root { address: Address(objs[i].addr), kind: KIND_OTHER, flags: 0, id: 0 });
                counts.other += 1;
            } else {
                let len = parents.len();
                let back = if rng.chance(0.7) {
                    (rng.geometric(recent) as usize).min(len - 1)
                } else {
                    rng.index(len)
                };
                edges.push((parents[len - 1 - back], i as u32));
            }
        }
        if holds_refs(i) {
            parents.push(i as u32);
        }
    }
    for &p in &parents {
        if rng.chance(0.2) {
            edges.push((p, rng.index(n) as u32));
        }
    }
    // Adjacency by source (counting sort keeps it O(n)).
    let mut start = vec![0u32; n + 1];
    for &(p, _) in &edges {
        start[p as usize + 1] += 1;
    }
    for k in 0..n {
        start[k + 1] += start[k];
    }
    let mut fill = start.clone();
    let mut targets = vec![Address(0); edges.len()];
    for &(p, c) in &edges {
        targets[fill[p as usize] as usize] = Address(objs[c as usize].addr);
        fill[p as usize] += 1;
    }

    for r in &roots {
        out.root(*r)?;
    }
    let strong: Vec<Address> = roots.iter().filter(|r| r.flags & ROOT_WEAK == 0).map(|r| r.address).collect();
    out.roots(&strong)?;
    let mut bytes = 0u64;
    let mut per_type: Vec<DumpTypeTruth> = Vec::new();
    for (i, o) in objs.iter().enumerate() {
        let type_id = inputs.ids.known_type(o.ty()).unwrap_or(TypeId(0));
        let refs = &targets[start[i] as usize..start[i + 1] as usize];
        out.heap_object(Address(o.addr), type_id, o.size, refs)?;
        bytes += o.size as u64;
        let slot = match per_type.binary_search_by_key(&type_id.0, |t| t.id) {
            Ok(k) => k,
            Err(k) => {
                per_type.insert(k, DumpTypeTruth { id: type_id.0, objects: 0, bytes: 0 });
                k
            }
        };
        per_type[slot].objects += 1;
        per_type[slot].bytes += o.size as u64;
    }
    Ok(DumpTruth {
        gc_index: 0,
        tick: 0,
        counted_by_clrprofiler: false,
        objects: n as u64,
        bytes,
        e_lines: roots.len() as u64,
        references: edges.len() as u64,
        root_kinds: counts,
        types: per_type,
    })
}
