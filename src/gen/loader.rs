//! What the runtime has loaded so far: modules (`m`, `y`), jitted functions
//! (`f`) and allocated types (`t`), each numbered in order of first use and
//! defined in the log right before its first use, as CLRProfiler's profiler
//! does (a module at its first function, a function when it is jitted with
//! the caller's stack, a type at its first allocation).

use super::calltree::CallTree;
use super::emit::Emitter;
use super::error::GenError;
use super::options::PointerBits;
use super::types::{Finalizer, TypeCatalog};
use crate::format::records::AssemblyLoad;
use crate::format::{Address, FunctionId, ModuleId, StackId, ThreadId, TypeId};

/// Ids of loaded things; 0 (or -1 for modules) while not loaded.
pub struct Loader {
    function_ids: Vec<i32>,
    module_ids: Vec<i32>,
    type_ids: Vec<i32>,
    next_function: i32,
    next_module: i32,
    next_type: i32,
    code_cursor: u64,
    assembly_cursor: u64,
}

impl Loader {
    /// Nothing loaded yet, for a program and type catalog.
    pub fn new(tree: &CallTree, types: &TypeCatalog, bits: PointerBits) -> Loader {
        let (code, assembly) = match bits {
            PointerBits::Bits32 => (0x0561_0000, 0x0057_1E40),
            PointerBits::Bits64 => (0x0000_7FFD_9A71_0000, 0x0000_0000_00D7_1E40),
        };
        Loader {
            function_ids: vec![0; tree.functions.len()],
            module_ids: vec![-1; tree.modules.len()],
            type_ids: vec![0; types.len()],
            next_function: 1,
            next_module: 0,
            next_type: 1,
            code_cursor: code,
            assembly_cursor: assembly,
        }
    }

    /// Writes the `f 0 NATIVE FUNCTION` line every log starts with.
    pub fn native_function(&self, out: &mut Emitter) -> Result<(), GenError> {
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

    /// The id of a jitted function, if it was jitted.
    #[inline]
    pub fn function(&self, f: usize) -> Option<FunctionId> {
        match self.function_ids[f] {
            0 => None,
            id => Some(FunctionId(id)),
        }
    }

    /// Loads `module` on `thread` if needed (`m` and `y` lines).
    pub fn ensure_module(
        &mut self,
        module: usize,
        tree: &CallTree,
        thread: ThreadId,
        stack: StackId,
        out: &mut Emitter,
    ) -> Result<ModuleId, GenError> {
        if self.module_ids[module] >= 0 {
            return Ok(ModuleId(self.module_ids[module]));
        }
        let id = ModuleId(self.next_module);
        self.next_module += 1;
        self.module_ids[module] = id.0;
        let m = &tree.modules[module];
        out.module_load(id, &m.path, Address(m.load_address), stack)?;
        let assembly = self.assembly_cursor;
        self.assembly_cursor += 0x1A8;
        out.assembly(&AssemblyLoad { thread, assembly, name: m.assembly.as_bytes() })?;
        Ok(id)
    }

    /// Jits function `f` called from `stack` on `thread`: loads its module
    /// and writes its `f` line.
    pub fn jit(
        &mut self,
        f: usize,
        tree: &CallTree,
        thread: ThreadId,
        stack: StackId,
        out: &mut Emitter,
    ) -> Result<FunctionId, GenError> {
        if let Some(id) = self.function(f) {
            return Ok(id);
        }
        let func = &tree.functions[f];
        let module = self.ensure_module(func.module, tree, thread, stack, out)?;
        let id = FunctionId(self.next_function);
        self.next_function = self.next_function.checked_add(1).ok_or(GenError::Limit("function"))?;
        self.function_ids[f] = id.0;
        let address = self.code_cursor;
        self.code_cursor += (func.code_size as u64 + 15) & !15;
        out.function_def(id, &func.name, &func.signature, Address(address), func.code_size, module, stack)?;
        Ok(id)
    }

    /// The id of type `ty`, writing its `t` line at first use.
    #[inline]
    pub fn type_id(&mut self, ty: usize, types: &TypeCatalog, out: &mut Emitter) -> Result<TypeId, GenError> {
        let id = self.type_ids[ty];
        if id != 0 {
            return Ok(TypeId(id));
        }
        let id = TypeId(self.next_type);
        self.next_type += 1;
        self.type_ids[ty] = id.0;
        let spec = types.spec(ty);
        out.type_def(id, spec.finalizer != Finalizer::None, &spec.name)?;
        Ok(id)
    }

    /// The id of a type that was allocated (None if never).
    pub fn known_type(&self, ty: usize) -> Option<TypeId> {
        match self.type_ids[ty] {
            0 => None,
            id => Some(TypeId(id)),
        }
    }

    /// Functions jitted.
    pub fn functions_jitted(&self) -> u64 {
        (self.next_function - 1) as u64
    }

    /// Modules loaded.
    pub fn modules_loaded(&self) -> u64 {
        self.next_module as u64
    }

    /// Types defined.
    pub fn types_defined(&self) -> u64 {
        (self.next_type - 1) as u64
    }
}
