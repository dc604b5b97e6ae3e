//! What every table's rows are made from, computed once per export: each
//! stack row's type, size and frame path, and each thread's id.

use crate::ExportOptions;
use clrprof::model::{Model, StackRef, ThreadRef, TickIndex};
use clrprof::query::alloc_stacks::CanonicalPaths;

/// Shared, read-only inputs of the tables.
pub(crate) struct Context<'m> {
    pub model: &'m Model,
    pub options: &'m ExportOptions,
    /// Distinct frame paths (the `stacks` table).
    pub paths: CanonicalPaths,
    row_type: Vec<Option<(i32, i32)>>,
    row_path: Vec<u32>,
    thread_ids: Vec<Option<i32>>,
}

impl<'m> Context<'m> {
    pub(crate) fn new(model: &'m Model, options: &'m ExportOptions) -> Context<'m> {
        let stacks = model.stacks();
        let mut paths = CanonicalPaths::new(model);
        let mut scratch = Vec::new();
        let rows = stacks.len();
        let mut row_type = Vec::with_capacity(rows);
        let mut row_path = Vec::with_capacity(rows);
        for r in 0..rows {
            let row = StackRef(r as u32);
            row_type.push(stacks.type_and_size(row).map(|(t, s)| (t.0, s)));
            row_path.push(paths.of_row(model, row, &mut scratch));
        }
        let thread_ids = (0..model.threads().len()).map(|t| model.threads().id(ThreadRef(t as u32)).map(|i| i.0)).collect();
        Context { model, options, paths, row_type, row_path, thread_ids }
    }

    /// The type id and size of a stack row, if it has them.
    #[inline]
    pub(crate) fn row_type(&self, row: StackRef) -> Option<(i32, i32)> {
        self.row_type.get(row.index()).copied().flatten()
    }

    /// The frame path (`stacks.id`) of a stack row.
    #[inline]
    pub(crate) fn row_path(&self, row: StackRef) -> u32 {
        self.row_path.get(row.index()).copied().unwrap_or(0)
    }

    /// Type ids of every stack row that has one.
    pub(crate) fn row_types(&self) -> impl Iterator<Item = i32> + '_ {
        self.row_type.iter().filter_map(|t| t.map(|(t, _)| t))
    }

    /// A thread's id as the log wrote it (`None` for "no thread").
    #[inline]
    pub(crate) fn thread_id(&self, t: ThreadRef) -> Option<i32> {
        self.thread_ids.get(t.index()).copied().flatten()
    }

    /// A tick slot's time in milliseconds since the start of profiling.
    #[inline]
    pub(crate) fn ms(&self, t: TickIndex) -> f64 {
        self.model.time().seconds(t).unwrap_or(0.0) * 1000.0
    }
}
