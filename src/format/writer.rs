//! Records to bytes, formatted as CLRProfiler's profiler writes them.
//!
//! Definitions, GC boundaries, finalizer and handle records write addresses
//! as `0x` + upper-case hex zero-padded to pointer width; the hot records
//! (`!`, `a`, `o`, `u`, `v`) write `0x` + lower-case hex without padding.

use super::ids::{Address, FunctionId, ModuleId, StackId, TypeId};
use super::record::{Kind, Record};
use super::records::{FunctionDef, ModuleLoad, TypeDef};
use super::text::{self, Style};
use std::io::{self, Write};

/// Appends one record, with its line end, to `out`.
pub fn write_record(out: &mut Vec<u8>, record: &Record<'_>, style: Style) {
    match record {
        Record::Type(r) => r.write(out),
        Record::Function(r) => r.write(out, style),
        Record::Module(r) => r.write(out, style),
        Record::Assembly(r) => r.write(b'y', out, style),
        Record::AssemblyD(r) => r.write(b'd', out, style),
        Record::Stack(r) => r.write(out),
        Record::StackOld(r) => r.write(out),
        Record::Alloc(r) => r.write(out),
        Record::Call(r) => r.write(out),
        Record::Tick(r) => r.write(out),
        Record::Comment(r) => r.write(out),
        Record::GcBoundary(r) => r.write(out, style),
        Record::GcCounts(r) => r.write(out),
        Record::Moved(r) => r.write(out),
        Record::Survived(r) => r.write(out),
        Record::Finalizer(r) => r.write(out, style),
        Record::HandleCreated(r) => r.write(out, style),
        Record::HandleDestroyed(r) => r.write(out, style),
        Record::Root(r) => r.write(out, style),
        Record::Roots(r) => r.write(out, style),
        Record::HeapObject(r) => r.write(out),
    }
}

/// A buffered log writer.
///
/// ```
/// use clrprof::format::{LogWriter, Record, records::Tick, Style};
/// let mut w = LogWriter::new(Vec::new(), Style::BITS64);
/// w.record(&Record::Tick(Tick { ms: 5 })).unwrap();
/// w.type_def(clrprof::format::TypeId(1), false, "System.String").unwrap();
/// assert_eq!(w.into_inner().unwrap(), b"i 5\nt 1 0 System.String\n");
/// ```
pub struct LogWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
    style: Style,
    written: u64,
    counts: [u64; Kind::COUNT],
}

const FLUSH_AT: usize = 1 << 16;

impl<W: Write> LogWriter<W> {
    /// A writer for a process with the given pointer width.
    pub fn new(out: W, style: Style) -> Self {
        LogWriter { out, buf: Vec::with_capacity(FLUSH_AT + 4096), style, written: 0, counts: [0; Kind::COUNT] }
    }

    /// The address style.
    pub fn style(&self) -> Style {
        self.style
    }

    /// Records written so far per kind (indexed by [`Kind::index`]; bytes
    /// written with [`LogWriter::raw`] are not counted).
    pub fn record_counts(&self) -> [u64; Kind::COUNT] {
        self.counts
    }

    /// Bytes written so far (buffered ones included).
    pub fn bytes_written(&self) -> u64 {
        self.written + self.buf.len() as u64
    }

    #[inline]
    fn maybe_flush(&mut self) -> io::Result<()> {
        if self.buf.len() >= FLUSH_AT {
            self.out.write_all(&self.buf)?;
            self.written += self.buf.len() as u64;
            self.buf.clear();
        }
        Ok(())
    }

    /// Writes one record.
    #[inline]
    pub fn record(&mut self, record: &Record<'_>) -> io::Result<()> {
        self.counts[record.kind().index()] += 1;
        write_record(&mut self.buf, record, self.style);
        self.maybe_flush()
    }

    /// Writes bytes that are already formatted lines.
    pub fn raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.buf.extend_from_slice(bytes);
        self.maybe_flush()
    }

    /// Writes a `t` line, escaping the name as the profiler does.
    pub fn type_def(&mut self, id: TypeId, finalizable: bool, name: &str) -> io::Result<()> {
        let name = text::escape_name(name, None);
        self.record(&Record::Type(TypeDef { id, finalizable: Some(finalizable), name: &name }))
    }

    /// Writes an `f` line, escaping name and signature as the profiler does
    /// (a space inside the name is written `\ `).
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
        let name = text::escape_name(name, Some(' '));
        let signature = text::escape_name(signature, None);
        self.record(&Record::Function(FunctionDef {
            id,
            name: &name,
            signature: &signature,
            address,
            size,
            module,
            stack,
        }))
    }

    /// Writes an `m` line.
    pub fn module_load(&mut self, id: ModuleId, path: &str, address: Address, stack: StackId) -> io::Result<()> {
        let path: Vec<u8> = path.chars().map(|c| if (c as u32) < 0x100 { c as u32 as u8 } else { b'?' }).collect();
        self.record(&Record::Module(ModuleLoad { id, path: &path, address: Some(address), stack }))
    }

    /// Writes a `z` line (control characters become spaces).
    pub fn comment(&mut self, text: &str) -> io::Result<()> {
        self.counts[Kind::Comment.index()] += 1;
        self.buf.extend_from_slice(b"z ");
        self.buf.extend(text.chars().map(|c| match c as u32 {
            0..=0x0d => b' ',
            v if v < 0x100 => v as u8,
            _ => b'?',
        }));
        self.buf.push(b'\n');
        self.maybe_flush()
    }

    /// Writes out the buffer and flushes the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.write_all(&self.buf)?;
        self.written += self.buf.len() as u64;
        self.buf.clear();
        self.out.flush()
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.flush()?;
        Ok(self.out)
    }
}
