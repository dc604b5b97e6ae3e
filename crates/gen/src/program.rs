//! The synthetic program (types, modules, functions) and its threads,
//! built from the options before anything runs and shared, read-only, by
//! the simulation and the profiler stage.

use super::calltree::CallTree;
use super::error::GenError;
use super::heap::MAX_TYPES;
use super::names::AREAS;
use super::options::GenOptions;
use super::rng::{Rng, Stream};
use super::types::TypeCatalog;
use clrprof::format::ThreadId;

/// What the profiled process runs.
pub struct Program {
    /// The types it allocates.
    pub types: TypeCatalog,
    /// Its modules and functions.
    pub tree: CallTree,
    /// Operating-system ids of its threads; thread 0 runs `Main`.
    pub threads: Vec<ThreadId>,
}

impl Program {
    /// Builds the program of `opts`; thread ids are drawn from `rng` (the
    /// process's random stream).
    pub fn new(opts: &GenOptions, rng: &mut Rng) -> Result<Program, GenError> {
        let mut names_rng = Rng::stream(opts.seed, Stream::Names);
        let mut tree_rng = Rng::stream(opts.seed, Stream::Tree);
        let areas = (opts.functions as usize / 60).clamp(3, AREAS.len());
        let types = TypeCatalog::new(&mut names_rng, opts.pointer_bits.bytes(), opts.app_types, areas, opts.finalizers);
        if types.len() > MAX_TYPES {
            return Err(GenError::Limit("type"));
        }
        let tree = CallTree::new(&mut tree_rng, &types, opts.functions, areas, opts.pointer_bits);
        let mut threads: Vec<ThreadId> = Vec::new();
        while threads.len() < opts.threads as usize {
            let id = ThreadId(1000 + rng.below(30_000) as i32);
            if !threads.contains(&id) {
                threads.push(id);
            }
        }
        Ok(Program { types, tree, threads })
    }
}
