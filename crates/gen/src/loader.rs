//! The profiler stage's definitions: modules (`m`, `y`), jitted functions
//! (`f`) and types (`t`), each written right before its first use, as
//! CLRProfiler's profiler does (a module at its first function, a function
//! when it is jitted, with the caller's stack; a type at its first
//! allocation). Module ids are numbered here, in order of first load;
//! function and type ids come from the simulation (`ids.rs`).

use super::error::GenError;
use super::options::PointerBits;
use super::program::Program;
use super::types::Finalizer;
use clrprof::format::records::AssemblyLoad;
use clrprof::format::{Address, FunctionId, LogWriter, ModuleId, Record, StackId, ThreadId, TypeId};
use std::io::Write;

/// What has been defined in the log so far.
pub struct Loader {
    module_ids: Vec<i32>,
    functions_defined: Vec<bool>,
    types_defined: Vec<bool>,
    next_module: i32,
    code_cursor: u64,
    assembly_cursor: u64,
}

impl Loader {
    /// Nothing defined yet.
    pub fn new(program: &Program, bits: PointerBits) -> Loader {
        let (code, assembly) = match bits {
            PointerBits::Bits32 => (0x0561_0000, 0x0057_1E40),
            PointerBits::Bits64 => (0x0000_7FFD_9A71_0000, 0x0000_0000_00D7_1E40),
        };
        Loader {
            module_ids: vec![-1; program.tree.modules.len()],
            functions_defined: vec![false; program.tree.functions.len()],
            types_defined: vec![false; program.types.len()],
            next_module: 0,
            code_cursor: code,
            assembly_cursor: assembly,
        }
    }

    /// Writes the `f 0 NATIVE FUNCTION` line every log starts with.
    pub fn native_function<W: Write>(&self, out: &mut LogWriter<W>) -> Result<(), GenError> {
        out.function_def(
            FunctionId(0),
            "NATIVE",
            "FUNCTION ( UNKNOWN ARGUMENTS )",
            Address(0),
            0,
            ModuleId(-1),
            StackId(-1),
        )?;
        Ok(())
    }

    /// Loads `module` on `thread` if needed (`m` and `y` lines).
    pub fn ensure_module<W: Write>(
        &mut self,
        module: usize,
        program: &Program,
        thread: ThreadId,
        stack: StackId,
        out: &mut LogWriter<W>,
    ) -> Result<ModuleId, GenError> {
        if self.module_ids[module] >= 0 {
            return Ok(ModuleId(self.module_ids[module]));
        }
        let id = ModuleId(self.next_module);
        self.next_module += 1;
        self.module_ids[module] = id.0;
        let m = &program.tree.modules[module];
        out.module_load(id, &m.path, Address(m.load_address), stack)?;
        let assembly = self.assembly_cursor;
        self.assembly_cursor += 0x1A8;
        out.record(&Record::Assembly(AssemblyLoad { thread, assembly, name: m.assembly.as_bytes() }))?;
        Ok(id)
    }

    /// Whether function `f` was jitted.
    #[inline]
    pub fn jitted(&self, f: usize) -> bool {
        self.functions_defined[f]
    }

    /// Jits function `f` (id `id`) called from `stack` on `thread`: loads
    /// its module and writes its `f` line.
    pub fn jit<W: Write>(
        &mut self,
        f: usize,
        id: FunctionId,
        program: &Program,
        thread: ThreadId,
        stack: StackId,
        out: &mut LogWriter<W>,
    ) -> Result<(), GenError> {
        let func = &program.tree.functions[f];
        let module = self.ensure_module(func.module, program, thread, stack, out)?;
        self.functions_defined[f] = true;
        let address = self.code_cursor;
        self.code_cursor += (func.code_size as u64 + 15) & !15;
        out.function_def(id, &func.name, &func.signature, Address(address), func.code_size, module, stack)?;
        Ok(())
    }

    /// Writes the `t` line of type `ty` (id `id`) at its first use.
    #[inline]
    pub fn define_type<W: Write>(&mut self, ty: usize, id: TypeId, program: &Program, out: &mut LogWriter<W>) -> Result<(), GenError> {
        if self.types_defined[ty] {
            return Ok(());
        }
        self.types_defined[ty] = true;
        let spec = program.types.spec(ty);
        out.type_def(id, spec.finalizer != Finalizer::None, &spec.name)?;
        Ok(())
    }
}
