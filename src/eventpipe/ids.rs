//! Typed ids, so that a stack id is never passed where a metadata id is
//! expected.

/// The key of a metadata record (an event kind) within one trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct MetadataId(pub u32);

/// The key of an interned stack within one trace (0 means no stack).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct StackId(pub u32);

/// An operating-system thread id as the trace gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ThreadId(pub u64);

/// A timestamp in the trace's clock ticks (QPC on Windows, nanoseconds-based
/// on Linux): see [`TraceHeader::qpc_frequency`](super::TraceHeader::qpc_frequency).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Timestamp(pub i64);
