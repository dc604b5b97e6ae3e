//! The format layer's [`LogWriter`], counting the lines it writes by kind.

use crate::format::{Address, FunctionId, Kind, LogWriter, ModuleId, Record, StackId, TypeId};
use std::io::{self, Write};

/// A [`LogWriter`] with line counts.
pub struct Lines<W: Write> {
    w: LogWriter<W>,
    counts: [u64; Kind::COUNT],
}

impl<W: Write> Lines<W> {
    /// Wraps a writer.
    pub fn new(w: LogWriter<W>) -> Self {
        Lines { w, counts: [0; Kind::COUNT] }
    }

    /// Writes one record.
    #[inline]
    pub fn record(&mut self, r: &Record<'_>) -> io::Result<()> {
        self.counts[r.kind().index()] += 1;
        self.w.record(r)
    }

    /// Writes a `t` line.
    pub fn type_def(&mut self, id: TypeId, finalizable: bool, name: &str) -> io::Result<()> {
        self.counts[Kind::Type.index()] += 1;
        self.w.type_def(id, finalizable, name)
    }

    /// Writes an `f` line.
    #[allow(clippy::too_many_arguments)]
    pub fn function_def(
        &mut self,
        id: FunctionId,
        name: &str,
        signature: &str,
        address: Address,
        size: u32,
        module: ModuleId,
        stack: StackId,
    ) -> io::Result<()> {
        self.counts[Kind::Function.index()] += 1;
        self.w.function_def(id, name, signature, address, size, module, stack)
    }

    /// Writes an `m` line.
    pub fn module_load(&mut self, id: ModuleId, path: &str, address: Address, stack: StackId) -> io::Result<()> {
        self.counts[Kind::Module.index()] += 1;
        self.w.module_load(id, path, address, stack)
    }

    /// Writes a `z` line.
    pub fn comment(&mut self, text: &str) -> io::Result<()> {
        self.counts[Kind::Comment.index()] += 1;
        self.w.comment(text)
    }

    /// Lines written per kind.
    pub fn counts(&self) -> [u64; Kind::COUNT] {
        self.counts
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.w.bytes_written()
    }

    /// Flushes and returns the underlying writer.
    pub fn finish(self) -> io::Result<W> {
        self.w.into_inner()
    }
}
