//! Ids as they are written in a log.
//!
//! These newtypes keep a stack id from being passed where a type id is
//! expected. They hold the value exactly as CLRProfiler's reader reads it
//! (32-bit ids may be -1 when the field is missing; addresses are 64-bit).

macro_rules! log_id {
    ($(#[$doc:meta])* $name:ident($inner:ty)) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        #[cfg_attr(feature = "model", derive(serde::Serialize, serde::Deserialize), serde(transparent))]
        pub struct $name(pub $inner);

        impl $name {
            /// The raw value as written in the log.
            #[inline]
            pub fn get(self) -> $inner {
                self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

log_id!(
    /// A type id (`t` lines; 0 is "Free Space").
    TypeId(i32)
);
log_id!(
    /// A function id (`f` lines; 0 is `NATIVE FUNCTION`).
    FunctionId(i32)
);
log_id!(
    /// A module id (`m` lines).
    ModuleId(i32)
);
log_id!(
    /// A stack id (`n`/`s` lines; 0 is the empty stack).
    StackId(i32)
);
log_id!(
    /// An operating-system thread id.
    ThreadId(i32)
);
log_id!(
    /// A heap address (object id).
    Address(u64)
);
log_id!(
    /// A GC handle id.
    HandleId(u64)
);
