//! One file per record family: the typed records, their parsers and their
//! writers.

mod allocation;
mod definition;
mod gc;
mod handle;
mod heap_dump;
mod stack;
mod time;

pub use allocation::{Alloc, Call};
pub use definition::{AssemblyLoad, FunctionDef, ModuleLoad, TypeDef};
pub use gc::{FinalizerQueued, GcBoundary, GcCounts, GenerationRange, Moved, Survived};
pub use handle::{HandleCreated, HandleDestroyed};
pub use heap_dump::{HeapObject, Root, RootKind, Roots, ROOT_INTERIOR, ROOT_PINNING, ROOT_REFCOUNTED, ROOT_UNNAMED, ROOT_WEAK};
pub use stack::{StackDef, StackDefOld};
pub use time::{Comment, Tick};
