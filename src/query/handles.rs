//! GC handles by the stack that created them: how many were created,
//! destroyed and are still alive at the end, and what type of object they
//! pointed at.
//!
//! A handle belongs to the stack of its `h` record (stack ids of `h` and
//! `j` records are stack indices as written: CLRProfiler does not renumber
//! them). A `j` record counts for the stack that created the handle it
//! removed; a `j` naming no live handle (CLRProfiler ignores it but counts
//! it) is counted in a group of its own with no stack. So the totals are
//! CLRProfiler's Summary figures: created = `h` records, destroyed = `j`
//! records, surviving = handles alive at the end.
//!
//! The object type: the handle's object address at creation is looked up
//! among the allocations: the last object allocated at that address at or
//! before the creation tick that was not dead before it. An object that had
//! moved there since its allocation is not found (the model keeps
//! allocation addresses only), and a null object has no type.
//!
//! A [`Filter`] keeps the events that happened in its window on its
//! threads: creations by the `h` record's tick and thread, destructions by
//! the `j` record's, survivors by their creation.
//!
//! ```
//! use clrprof::query::{handles_by_stack, Filter};
//! let log = b"f 1 Main void () 0x10 4 0 0\nt 1 0 T\nn 1 1 1 24 1\nn 2 0 1\ni 5\n! 7 0x1000 1\nh 7 0x50 0x1000 2\nh 7 0x58 0x0 2\nj 7 0x58 2\n";
//! let model = clrprof::model::load(log, &Default::default()).unwrap();
//! let r = handles_by_stack(&model, &Filter::all());
//! assert_eq!((r.created, r.destroyed, r.surviving), (2, 1, 1));
//! assert_eq!(r.groups[0].frames, vec!["Main".to_string()]);
//! assert_eq!(r.groups[0].object_types[0].name, "T");
//! ```

use super::filter::Filter;
use crate::format::FunctionId;
use crate::model::{HandleEvent, Model, ObjectId, TickIndex};
use serde::Serialize;
use std::collections::HashMap;

/// Handles of one creating stack.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HandleGroup {
    /// The stack id of the `h` records (`None`: `j` records that named no
    /// live handle).
    pub stack_id: Option<i32>,
    /// The stack's functions, leaf (innermost) first; empty when the stack
    /// is empty or undefined.
    pub frames: Vec<String>,
    /// Whether a stack with this id was defined.
    pub stack_defined: bool,
    /// Handles created.
    pub created: u64,
    /// Of these (or of the unknown ones), `j` records.
    pub destroyed: u64,
    /// Alive at the end.
    pub surviving: u64,
    /// Created handles whose object was null.
    pub null_objects: u64,
    /// Types of the objects the created handles pointed at, most first
    /// (handles whose object was not found are not counted).
    pub object_types: Vec<TypeTally>,
}

/// A type and how many handles pointed at an object of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TypeTally {
    /// The type name.
    #[serde(rename = "type")]
    pub name: String,
    /// Handles.
    pub count: u64,
}

/// Handles by creating stack, with the totals.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HandleReport {
    /// `h` records.
    pub created: u64,
    /// `j` records.
    pub destroyed: u64,
    /// Handles alive at the end.
    pub surviving: u64,
    /// Per creating stack, most handles created first (then most destroyed,
    /// then stack id).
    pub groups: Vec<HandleGroup>,
}

/// Groups the handles by creating stack (see the module documentation).
pub fn handles_by_stack(model: &Model, filter: &Filter) -> HandleReport {
    let h = model.handles();
    let keep = |e: &HandleEvent| filter.has_tick(e.tick) && filter.has_thread(e.thread);
    let mut groups: Vec<HandleGroup> = Vec::new();
    let mut by_stack: HashMap<Option<i32>, usize> = HashMap::new();
    let mut group_of = |key: Option<i32>, groups: &mut Vec<HandleGroup>| -> usize {
        *by_stack.entry(key).or_insert_with(|| {
            let (frames, defined) = key.map_or((Vec::new(), false), |id| stack_frames(model, id));
            groups.push(HandleGroup {
                stack_id: key,
                frames,
                stack_defined: defined,
                created: 0,
                destroyed: 0,
                surviving: 0,
                null_objects: 0,
                object_types: Vec::new(),
            });
            groups.len() - 1
        })
    };
    let kept: Vec<&HandleEvent> = h.created().iter().filter(|e| keep(e)).collect();
    let types = object_types(model, &kept);
    let mut tallies: Vec<HashMap<String, u64>> = Vec::new();
    let (mut created, mut destroyed, mut surviving) = (0u64, 0u64, 0u64);
    for (e, ty) in kept.iter().zip(types) {
        let g = group_of(Some(e.stack.0), &mut groups);
        groups[g].created += 1;
        created += 1;
        if e.object.0 == 0 {
            groups[g].null_objects += 1;
        }
        if let Some(ty) = ty {
            if tallies.len() <= g {
                tallies.resize_with(g + 1, HashMap::new);
            }
            *tallies[g].entry(ty).or_insert(0) += 1;
        }
    }
    for (k, e) in h.destroyed().iter().enumerate() {
        if !keep(e) {
            continue;
        }
        let key = h.creation_of_destroyed(k).map(|c| c.stack.0);
        let g = group_of(key, &mut groups);
        groups[g].destroyed += 1;
        destroyed += 1;
    }
    for e in h.surviving() {
        if keep(e) {
            let g = group_of(Some(e.stack.0), &mut groups);
            groups[g].surviving += 1;
            surviving += 1;
        }
    }
    for (g, t) in tallies.into_iter().enumerate() {
        let mut v: Vec<TypeTally> = t.into_iter().map(|(name, count)| TypeTally { name, count }).collect();
        v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
        groups[g].object_types = v;
    }
    groups.sort_by(|a, b| {
        b.created.cmp(&a.created).then(b.destroyed.cmp(&a.destroyed)).then(a.stack_id.cmp(&b.stack_id))
    });
    HandleReport { created, destroyed, surviving, groups }
}

/// The function names of stack index `id`, leaf first, and whether it is
/// defined.
fn stack_frames(model: &Model, id: i32) -> (Vec<String>, bool) {
    let stacks = model.stacks();
    let Some(row) = u32::try_from(id).ok().and_then(|i| stacks.row_of(i)) else { return (Vec::new(), false) };
    let frames = stacks.frames(row).map(|f| function_name(model, f)).collect();
    (frames, stacks.is_defined(row))
}

fn function_name(model: &Model, f: FunctionId) -> String {
    match model.functions().get(f) {
        Some(func) => model.names().get(func.name).to_string(),
        None => format!("???? function {}", f.0),
    }
}

/// For each handle, the type name of its object where it is known (see the
/// module documentation).
///
/// A handle usually points at an object allocated just before it, so the
/// last [`TAIL`] objects allocated up to its creation are searched first;
/// the handles not found there are looked up in one pass over all the
/// allocation addresses, with a bitmap in front of the search so that most
/// objects cost one bit test.
fn object_types(model: &Model, handles: &[&HandleEvent]) -> Vec<Option<String>> {
    const TAIL: u32 = 1024;
    let a = model.allocations();
    let mut found: Vec<Option<ObjectId>> = vec![None; handles.len()];
    // (address, objects allocated up to the creation, handle)
    let mut rest: Vec<(u64, u32, usize)> = Vec::new();
    for (k, e) in handles.iter().enumerate() {
        if e.object.0 == 0 {
            continue;
        }
        let end = a.allocated_between(TickIndex(0), e.tick).end;
        let start = ObjectId(end.0.saturating_sub(TAIL));
        let hit = (start.0..end.0).zip(a.addresses_in(start..end)).filter(|&(_, x)| x == e.object.0).last();
        match hit {
            Some((id, _)) => found[k] = Some(ObjectId(id)),
            None if start.0 > 0 => rest.push((e.object.0, start.0, k)),
            None => {}
        }
    }
    search_all(model, &mut rest, &mut found);
    found
        .into_iter()
        .zip(handles)
        .map(|(obj, e)| {
            let obj = obj?;
            // Dead before the handle was made: not its object.
            if model.death_tick(obj).is_some_and(|d| d < e.tick) {
                return None;
            }
            let (ty, _) = model.stacks().type_and_size(a.stack(obj))?;
            Some(model.type_name(ty).into_owned())
        })
        .collect()
}

/// For each `(address, end, handle)`, the last object below id `end`
/// allocated at the address, into `found[handle]`.
fn search_all(model: &Model, wanted: &mut [(u64, u32, usize)], found: &mut [Option<ObjectId>]) {
    const BITS: usize = 1 << 20;
    if wanted.is_empty() {
        return;
    }
    wanted.sort_unstable();
    let slot = |a: u64| ((a >> 3) ^ (a >> 23)) as usize & (BITS - 1);
    let mut bitmap = vec![0u64; BITS / 64];
    for &(a, _, _) in wanted.iter() {
        bitmap[slot(a) / 64] |= 1 << (slot(a) % 64);
    }
    let last = wanted.iter().map(|w| w.1).max().unwrap_or(0);
    let a = model.allocations();
    for (id, addr) in (0..last).zip(a.addresses_in(ObjectId(0)..ObjectId(last))) {
        let s = slot(addr);
        if bitmap[s / 64] & (1 << (s % 64)) == 0 {
            continue;
        }
        let from = wanted.partition_point(|w| w.0 < addr);
        for w in wanted[from..].iter().take_while(|w| w.0 == addr) {
            if id < w.1 {
                // Later objects at the same address replace earlier ones.
                found[w.2] = Some(ObjectId(id));
            }
        }
    }
}
