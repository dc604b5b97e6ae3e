//! Root kinds and flags, named as the profiling API names them
//! (`COR_PRF_GC_ROOT_KIND`: other 0, stack 1, finalizer 2, handle 3;
//! `COR_PRF_GC_ROOT_FLAGS`: pinning 1, weak 2, interior 4, refcounted 8)
//! and as CLRProfiler's object graph shows a root ("Stack", "Handle,
//! pinning", ...).

use crate::format::records::{ROOT_INTERIOR, ROOT_PINNING, ROOT_REFCOUNTED, ROOT_UNNAMED, ROOT_WEAK};
use crate::format::FunctionId;
use crate::model::{DumpRoot, Model};
use serde::Serialize;

/// What kind of root holds an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RootKind {
    /// Kind 1: a local variable or argument in a stack frame (the root id
    /// is the frame's function id).
    Stack,
    /// Kind 2: the finalization queue (objects waiting for their finalizer).
    Finalizer,
    /// Kind 3: a GC handle (the root id is the handle).
    Handle,
    /// Kind 0: anything else (statics, the runtime's own references).
    Other,
    /// A kind code outside 0..=3.
    Unknown,
    /// A root from an `r` record (the older form, which gives no kind).
    Unspecified,
}

impl RootKind {
    /// The kind of a root of the model.
    pub fn of(root: &DumpRoot) -> RootKind {
        match root.kind {
            -1 => RootKind::Unspecified,
            0 => RootKind::Other,
            1 => RootKind::Stack,
            2 => RootKind::Finalizer,
            3 => RootKind::Handle,
            _ => RootKind::Unknown,
        }
    }

    /// Its name as CLRProfiler shows it.
    pub fn name(self) -> &'static str {
        match self {
            RootKind::Stack => "Stack",
            RootKind::Finalizer => "Finalizer",
            RootKind::Handle => "Handle",
            RootKind::Other => "Other",
            RootKind::Unknown => "Unknown kind",
            RootKind::Unspecified => "Root",
        }
    }
}

const FLAG_NAMES: [(i32, &str); 4] =
    [(ROOT_PINNING, "pinning"), (ROOT_WEAK, "weak"), (ROOT_INTERIOR, "interior"), (ROOT_REFCOUNTED, "refcounted")];

/// A root's display name: its kind, then its flags (`Handle, pinning`);
/// `Unnamed` for what holds an object a snapshot does not name.
pub fn root_name(root: &DumpRoot) -> String {
    if root.flags & ROOT_UNNAMED != 0 {
        return "Unnamed".to_string();
    }
    let mut s = RootKind::of(root).name().to_string();
    for (bit, name) in FLAG_NAMES {
        if root.flags & bit != 0 {
            s.push_str(", ");
            s.push_str(name);
        }
    }
    s
}

/// Roots counted by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RootCounts {
    /// Stack roots.
    pub stack: u64,
    /// Finalization-queue roots.
    pub finalizer: u64,
    /// Handle roots.
    pub handle: u64,
    /// Other roots.
    pub other: u64,
    /// Roots with a kind code outside 0..=3.
    pub unknown: u64,
    /// Roots from `r` records (no kind).
    pub unspecified: u64,
}

impl RootCounts {
    /// Counts one root.
    pub fn add(&mut self, root: &DumpRoot) {
        match RootKind::of(root) {
            RootKind::Stack => self.stack += 1,
            RootKind::Finalizer => self.finalizer += 1,
            RootKind::Handle => self.handle += 1,
            RootKind::Other => self.other += 1,
            RootKind::Unknown => self.unknown += 1,
            RootKind::Unspecified => self.unspecified += 1,
        }
    }

    /// All roots counted.
    pub fn total(&self) -> u64 {
        self.stack + self.finalizer + self.handle + self.other + self.unknown + self.unspecified
    }
}

/// Roots counted by flag (a root may have several).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RootFlagCounts {
    /// Pinning roots.
    pub pinning: u64,
    /// Weak roots (they do not keep their object alive; the graph
    /// queries leave them out, as CLRProfiler does).
    pub weak: u64,
    /// Interior pointers.
    pub interior: u64,
    /// Reference-counted handles.
    pub refcounted: u64,
    /// Unnamed roots: objects a snapshot holds without naming what holds
    /// them (counted among the "other" kind).
    pub unnamed: u64,
}

impl RootFlagCounts {
    /// Counts one root's flags.
    pub fn add(&mut self, root: &DumpRoot) {
        self.pinning += u64::from(root.flags & ROOT_PINNING != 0);
        self.weak += u64::from(root.flags & ROOT_WEAK != 0);
        self.interior += u64::from(root.flags & ROOT_INTERIOR != 0);
        self.refcounted += u64::from(root.flags & ROOT_REFCOUNTED != 0);
        self.unnamed += u64::from(root.flags & ROOT_UNNAMED != 0);
    }
}

/// A root as the queries report it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RootRef {
    /// Its kind.
    pub kind: RootKind,
    /// Its name with flags (`Handle, pinning`).
    pub name: String,
    /// The flag bits.
    pub flags: i32,
    /// The root id (function id for a stack root, handle for a handle).
    pub id: u64,
    /// The referenced object's address.
    pub address: u64,
    /// For a stack root, the name of the frame's function (when defined).
    pub function: Option<String>,
    /// For a static variable's root, its name when the dump gives it:
    /// `Class.field` in the agent's logs (clrprof's `d ... static` lines),
    /// the field alone in a trace (`GC/BulkRootStaticVar` gives the type
    /// of the object held, not the class declaring the field).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub static_field: Option<String>,
}

impl RootRef {
    /// How a path names its root, in brackets: `[static Orders.All]` (a
    /// static the log names with its class), `[static field All]` (a
    /// trace's static: the field alone), `[Stack: Main(...)]`,
    /// `[Handle, pinning]`.
    pub fn label(&self) -> String {
        match (&self.static_field, &self.function) {
            (Some(f), _) if f.contains('.') => format!("[static {f}]"),
            (Some(f), _) => format!("[static field {f}]"),
            (None, Some(f)) => format!("[{}: {f}]", self.name),
            (None, None) => format!("[{}]", self.name),
        }
    }

    /// Describes a root of a model's dump.
    pub fn of(model: &Model, root: &DumpRoot) -> RootRef {
        let kind = RootKind::of(root);
        let function = match (kind, i32::try_from(root.id)) {
            (RootKind::Stack, Ok(id)) => model.functions().get(FunctionId(id)).map(|f| model.names().get(f.name).to_string()),
            _ => None,
        };
        let static_field = match kind {
            RootKind::Other => model
                .heap_dumps()
                .static_name(root.id)
                .or_else(|| model.imported().and_then(|f| f.static_field(root.id)))
                .map(str::to_string),
            _ => None,
        };
        RootRef { kind, name: root_name(root), flags: root.flags, id: root.id, address: root.address.0, function, static_field }
    }
}
