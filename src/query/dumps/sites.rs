//! Where the objects of a dump were allocated: each `o` record linked to
//! the allocation (`!`/`a` record) that made the object, and through it to
//! its allocation stack and allocating function.
//!
//! The link is made by the heap simulation while the log is read. The
//! simulation follows every object from its allocation through the GCs'
//! relocations (`u`), survivals (`v`) and deaths, so when an `o` record is
//! read it knows which live object, if any, starts at that address at that
//! moment. An `o` record naming a live simulated object of the same type
//! carries that object's [`ObjectId`]; the allocation table gives its stack
//! row (type, size, frames), thread and tick.
//!
//! Objects without such a match have no known allocation, and every query
//! here counts them apart ([`UnknownAllocations`]) instead of dropping them:
//! a log without allocation records (a process attached to after it
//! started, or with allocation logging off), objects allocated before the
//! log started or while allocation logging was off, and objects under 12
//! bytes (which CLRProfiler's heap simulation never tracks).
//!
//! [`Sites`] groups dump objects by a [`SiteBy`] key: the type of the `o`
//! record, the allocation stack's frames (distinct frame paths, whatever
//! the allocated type and size), or the allocating function (the innermost
//! frame). Objects whose allocation stack has no frames form the group
//! [`NO_STACK`](crate::query::by_code::NO_STACK); objects without a known
//! allocation form the group [`UNKNOWN_ALLOCATION`] (not for [`SiteBy::Type`]:
//! their type is known).

use super::table::DumpTypeRow;
use crate::format::{FunctionId, TypeId};
use crate::model::{DumpObject, FrameNode, HeapDump, Model, ObjectId, StackRef, ThreadRef, TickIndex};
use crate::query::alloc_stacks::{allocation_frames, function_names, node_function, CanonicalPaths};
use crate::query::by_code::NO_STACK;
use serde::Serialize;
use std::collections::HashMap;

/// The name of the group of dump objects without a known allocation.
pub const UNKNOWN_ALLOCATION: &str = "<unknown allocation>";

/// Objects smaller than this are never tracked by the heap simulation (as
/// in CLRProfiler's reader), so they never have a known allocation.
pub const UNTRACKED_BELOW: u32 = 12;

/// What dump objects are grouped by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SiteBy {
    /// The type of the `o` record.
    #[default]
    Type,
    /// The frames of the allocation stack (outermost to innermost), whatever
    /// the allocated type and size.
    Stack,
    /// The allocating function: the innermost frame of the allocation stack.
    Function,
}

impl std::str::FromStr for SiteBy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "type" => Ok(SiteBy::Type),
            "stack" => Ok(SiteBy::Stack),
            "function" => Ok(SiteBy::Function),
            _ => Err(format!("expected type, stack or function, found {s:?}")),
        }
    }
}

/// The allocation of a dump object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allocation {
    /// The allocated object (its row in the allocation table).
    pub object: ObjectId,
    /// Its allocation stack row (type, size and frames).
    pub stack: StackRef,
    /// The allocating thread.
    pub thread: ThreadRef,
    /// When it was allocated.
    pub tick: TickIndex,
}

/// The allocation of a dump object, if the heap simulation knew the object
/// (see the module documentation).
pub fn allocation_of(model: &Model, o: &DumpObject) -> Option<Allocation> {
    let id = o.object?;
    let a = model.allocations();
    (id.index() < a.len()).then(|| Allocation { object: id, stack: a.stack(id), thread: a.thread(id), tick: a.tick(id) })
}

/// The allocation stack row of a dump object, if the heap simulation knew
/// the object: [`allocation_of`] without the thread and tick (which take a
/// search each).
#[inline]
pub fn allocation_row(model: &Model, o: &DumpObject) -> Option<StackRef> {
    let id = o.object?;
    let a = model.allocations();
    (id.index() < a.len()).then(|| a.stack(id))
}

/// Why the objects of a dump without a known allocation have none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnknownReason {
    /// Every object of the dump has a known allocation.
    None,
    /// The log has no allocation records at all (a process attached to
    /// after it started, or allocation logging off).
    NoAllocationsInLog,
    /// The dump was taken before the log's first allocation record.
    DumpBeforeFirstAllocation,
    /// No allocation record of the log placed a live object of that type at
    /// that address: allocated before logging started or while allocation
    /// logging was off, or too small to be tracked.
    NotInSimulation,
}

/// The objects of one dump without a known allocation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UnknownAllocations {
    /// Objects.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Of those, objects under [`UNTRACKED_BELOW`] bytes.
    pub untracked_small: u64,
    /// Why they have none.
    pub reason: UnknownReason,
    /// Per type, by bytes (largest first), then by id.
    pub types: Vec<DumpTypeRow>,
}

impl UnknownAllocations {
    /// The objects of dump `d` without a known allocation.
    pub fn of(model: &Model, d: &HeapDump) -> UnknownAllocations {
        let mut tally = UnknownTally::default();
        for o in model.heap_dumps().objects(d) {
            tally.add(model, &o);
        }
        tally.finish(model, d)
    }
}

/// Counts the objects without a known allocation while a query walks a
/// dump for its own purpose (one pass instead of two).
#[derive(Default)]
pub(crate) struct UnknownTally {
    objects: u64,
    bytes: u64,
    small: u64,
    per_type: HashMap<i32, (u64, u64)>,
}

impl UnknownTally {
    /// Counts `o` if it has no known allocation.
    #[inline]
    pub(crate) fn add(&mut self, model: &Model, o: &DumpObject) {
        if allocation_row(model, o).is_some() {
            return;
        }
        self.objects += 1;
        self.bytes += o.size as u64;
        if o.size < UNTRACKED_BELOW {
            self.small += 1;
        }
        let s = self.per_type.entry(o.type_id.0).or_default();
        s.0 += 1;
        s.1 += o.size as u64;
    }

    /// The figures of dump `d`, every object of which was given to `add`.
    pub(crate) fn finish(self, model: &Model, d: &HeapDump) -> UnknownAllocations {
        let allocations = model.allocations();
        let reason = if self.objects == 0 {
            UnknownReason::None
        } else if allocations.is_empty() {
            UnknownReason::NoAllocationsInLog
        } else if allocations.tick(ObjectId(0)) > d.tick {
            UnknownReason::DumpBeforeFirstAllocation
        } else {
            UnknownReason::NotInSimulation
        };
        let mut types: Vec<DumpTypeRow> = self
            .per_type
            .into_iter()
            .map(|(id, (objects, bytes))| DumpTypeRow {
                type_id: id,
                name: model.type_name(TypeId(id)).into_owned(),
                objects,
                bytes,
            })
            .collect();
        types.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.type_id.cmp(&b.type_id)));
        UnknownAllocations { objects: self.objects, bytes: self.bytes, untracked_small: self.small, reason, types }
    }
}

/// One group of dump objects.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Site {
    /// False for the group of objects without a known allocation.
    pub known: bool,
    /// The type id (grouping by type).
    pub type_id: Option<i32>,
    /// The allocating function's id (grouping by function or stack; `None`
    /// for [`NO_STACK`] and [`UNKNOWN_ALLOCATION`]).
    pub function: Option<i32>,
    /// The type name, the allocating function's name, or one of the
    /// pseudo-names.
    pub name: String,
    /// Grouping by stack: the frames' function names, innermost first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub frames: Vec<String>,
}

/// A dense group number of a [`Sites`] map.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SiteId(pub u32);

impl SiteId {
    /// The id as an index.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Assigns dump objects to groups by a [`SiteBy`] key, numbering the groups
/// densely in order of first use; per stack row the answer is computed
/// once.
pub struct Sites<'m> {
    model: &'m Model,
    by: SiteBy,
    sites: Vec<Site>,
    of_row: Vec<u32>,
    by_key: HashMap<i64, u32>,
    unknown: Option<u32>,
    paths: CanonicalPaths,
    scratch: Vec<FrameNode>,
    functions: Vec<FunctionId>,
    /// Grouping by type: the group of each small non-negative type id.
    of_type: Vec<u32>,
}

/// Type ids below this are looked up in a dense table when grouping by
/// type (the writer numbers types from 1); others in the hash map.
const DENSE_TYPES: i32 = 1 << 20;

const UNSET: u32 = u32::MAX;
/// Keys of the pseudo-groups in `by_key` (real keys are type ids, function
/// ids or path numbers, all above these).
const KEY_NO_STACK: i64 = i64::MIN;

impl<'m> Sites<'m> {
    /// An empty map for a model.
    pub fn new(model: &'m Model, by: SiteBy) -> Sites<'m> {
        Sites {
            model,
            by,
            sites: Vec::new(),
            of_row: vec![UNSET; model.stacks().len()],
            by_key: HashMap::new(),
            unknown: None,
            paths: CanonicalPaths::new(model),
            scratch: Vec::new(),
            functions: Vec::new(),
            of_type: Vec::new(),
        }
    }

    /// The key of the map.
    pub fn by(&self) -> SiteBy {
        self.by
    }

    /// Number of groups so far.
    pub fn len(&self) -> usize {
        self.sites.len()
    }

    /// Whether no group was made yet.
    pub fn is_empty(&self) -> bool {
        self.sites.is_empty()
    }

    /// A group's description.
    pub fn site(&self, id: SiteId) -> Option<&Site> {
        self.sites.get(id.index())
    }

    /// The groups, by id.
    pub fn into_sites(self) -> Vec<Site> {
        self.sites
    }

    fn group(&mut self, key: i64, make: impl FnOnce(&mut Self) -> Site) -> u32 {
        if let Some(&g) = self.by_key.get(&key) {
            return g;
        }
        let site = make(self);
        let g = self.sites.len() as u32;
        self.sites.push(site);
        self.by_key.insert(key, g);
        g
    }

    fn no_stack(&mut self) -> u32 {
        self.group(KEY_NO_STACK, |_| Site {
            known: true,
            type_id: None,
            function: None,
            name: NO_STACK.to_string(),
            frames: Vec::new(),
        })
    }

    /// The group of a stack row (grouping by stack or function).
    fn row_group(&mut self, row: StackRef) -> u32 {
        if let Some(&g) = self.of_row.get(row.index()) {
            if g != UNSET {
                return g;
            }
        }
        let model = self.model;
        allocation_frames(model, row, &mut self.scratch);
        let g = match (self.by, self.scratch.first().copied()) {
            (_, None) => self.no_stack(),
            (SiteBy::Function, Some(leaf)) => {
                let f = node_function(model, leaf);
                self.group(f.0 as i64, |_| Site {
                    known: true,
                    type_id: None,
                    function: Some(f.0),
                    name: function_names(model, f).0,
                    frames: Vec::new(),
                })
            }
            (_, Some(_)) => {
                let mut scratch = std::mem::take(&mut self.scratch);
                let path = self.paths.of_row(model, row, &mut scratch);
                self.scratch = scratch;
                self.group(path as i64, |s| {
                    s.paths.functions(path, &mut s.functions);
                    let frames: Vec<String> = s.functions.iter().rev().map(|&f| function_names(model, f).0).collect();
                    let leaf = s.functions.last().copied().unwrap_or(FunctionId(-1));
                    Site {
                        known: true,
                        type_id: None,
                        function: Some(leaf.0),
                        name: frames.first().cloned().unwrap_or_default(),
                        frames,
                    }
                })
            }
        };
        if let Some(slot) = self.of_row.get_mut(row.index()) {
            *slot = g;
        }
        g
    }

    /// The group of a dump object.
    pub fn site_of(&mut self, o: &DumpObject) -> SiteId {
        let model = self.model;
        if self.by == SiteBy::Type {
            let t = o.type_id.0;
            let dense = (0..DENSE_TYPES).contains(&t).then_some(t as usize);
            if let Some(&g) = dense.and_then(|k| self.of_type.get(k)) {
                if g != UNSET {
                    return SiteId(g);
                }
            }
            let g = self.group(t as i64, |_| Site {
                known: true,
                type_id: Some(t),
                function: None,
                name: model.type_name(TypeId(t)).into_owned(),
                frames: Vec::new(),
            });
            if let Some(k) = dense {
                if self.of_type.len() <= k {
                    self.of_type.resize(k + 1, UNSET);
                }
                self.of_type[k] = g;
            }
            return SiteId(g);
        }
        match allocation_row(model, o) {
            Some(row) => SiteId(self.row_group(row)),
            None => {
                if let Some(g) = self.unknown {
                    return SiteId(g);
                }
                let g = self.sites.len() as u32;
                self.sites.push(Site {
                    known: false,
                    type_id: None,
                    function: None,
                    name: UNKNOWN_ALLOCATION.to_string(),
                    frames: Vec::new(),
                });
                self.unknown = Some(g);
                SiteId(g)
            }
        }
    }
}
