//! The pieces of `clrprof check` (see `cmd_check.rs`).

pub mod figures;
pub mod junit;
pub mod report;
pub mod rule;
pub mod verdict;
