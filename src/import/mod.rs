//! Other profilers' files turned into CLRProfiler records, so that the
//! model and every query open them.
//!
//! A `.nettrace` (EventPipe) trace becomes the records a CLRProfiler-style
//! profiler would have written for the same events ([`nettrace::import`]),
//! given straight to a [`crate::format::RecordSink`] (the model's builder;
//! no log text is written and parsed again): its sampled allocations as `!` records with their stacks, its GCs as
//! `b`/`u`/`v`/`g` records, its heap snapshots as `e`/`o` heap dumps. What
//! a trace cannot give exactly (every allocation) is carried beside the
//! log as [`Sampling`]: the objects and bytes each sampled allocation
//! stands for, so that the model's figures are estimates, and say so.
//!
//! # API structure
//!
//! - [`nettrace::import`]: trace bytes to records in a sink, and an
//!   [`Import`] (the [`Sampling`], the [`TraceFacts`] and the reader's
//!   warnings); [`nettrace::to_log`] the same with the records as log
//!   text (an [`Imported`]).
//! - [`Sampling`] and [`SamplingMethod`]: how allocations were sampled and
//!   the weight of each sampled allocation.

pub mod nettrace;
mod sampling;

pub use sampling::{SampledFate, Sampling, SamplingMethod, TraceFacts};

/// What an import gives beside its records.
#[derive(Debug)]
pub struct Import {
    /// How allocations were sampled, when the file sampled them; `None`
    /// when every allocation in the records is one the program made.
    pub sampling: Option<Sampling>,
    /// What the file said about itself and what it could not say.
    pub facts: TraceFacts,
}

/// A file turned into CLRProfiler log text.
#[derive(Debug)]
pub struct Imported {
    /// The log text (CLRProfiler's format, `FORMAT.md`).
    pub log: Vec<u8>,
    /// How allocations were sampled, when the file sampled them; `None`
    /// when every allocation in the log is one the program made.
    pub sampling: Option<Sampling>,
    /// What the file said about itself and what it could not say.
    pub facts: TraceFacts,
}
