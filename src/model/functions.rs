//! The function table (`f` records): name, signature, code address and
//! size, module, and the stack at the first call.

use super::idmap::IdMap;
use super::ids::NameId;
use super::types::INITIAL_CAPACITY;
use crate::format::{Address, FunctionId, ModuleId, StackId};

/// One function as its `f` record described it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Function {
    /// The function id.
    pub id: FunctionId,
    /// Its name (`Namespace.Class::Method`).
    pub name: NameId,
    /// Its signature.
    pub signature: NameId,
    /// Address of its code.
    pub address: Address,
    /// Size of its code in bytes.
    pub size: u32,
    /// The module it belongs to (-1 when the record has none).
    pub module: ModuleId,
    /// The stack at its first call, as written (-1 when missing).
    pub first_stack: StackId,
}

/// Functions by id, as columns.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct FunctionTable {
    rows: IdMap,
    ids: Vec<FunctionId>,
    names: Vec<NameId>,
    signatures: Vec<NameId>,
    addresses: Vec<u64>,
    sizes: Vec<u32>,
    modules: Vec<ModuleId>,
    stacks: Vec<StackId>,
    capacity: u64,
    list_entries: u64,
}

impl FunctionTable {
    pub(crate) fn new() -> Self {
        FunctionTable {
            rows: IdMap::new(),
            ids: Vec::new(),
            names: Vec::new(),
            signatures: Vec::new(),
            addresses: Vec::new(),
            sizes: Vec::new(),
            modules: Vec::new(),
            stacks: Vec::new(),
            capacity: INITIAL_CAPACITY,
            list_entries: 0,
        }
    }

    /// Adds or redefines a function (id >= 0; the caller checks).
    pub(crate) fn define(&mut self, f: Function) {
        while self.capacity <= f.id.0 as u64 {
            self.capacity = (self.capacity * 2).max(f.id.0 as u64 + 1);
        }
        if f.first_stack.0 >= 0 {
            self.list_entries += 1;
        }
        let key = f.id.0 as u64;
        match self.rows.get(key) {
            Some(r) => {
                let r = r as usize;
                self.names[r] = f.name;
                self.signatures[r] = f.signature;
                self.addresses[r] = f.address.0;
                self.sizes[r] = f.size;
                self.modules[r] = f.module;
                self.stacks[r] = f.first_stack;
            }
            None => {
                self.rows.insert(key, self.ids.len() as u32);
                self.ids.push(f.id);
                self.names.push(f.name);
                self.signatures.push(f.signature);
                self.addresses.push(f.address.0);
                self.sizes.push(f.size);
                self.modules.push(f.module);
                self.stacks.push(f.first_stack);
            }
        }
    }

    /// The capacity of CLRProfiler's function-name array: an `n` record may
    /// copy function ids below it.
    pub(crate) fn capacity(&self) -> u64 {
        self.capacity
    }

    /// A function by id.
    pub fn get(&self, id: FunctionId) -> Option<Function> {
        if id.0 < 0 {
            return None;
        }
        let r = self.rows.get(id.0 as u64)? as usize;
        Some(Function {
            id,
            name: self.names[r],
            signature: self.signatures[r],
            address: Address(self.addresses[r]),
            size: self.sizes[r],
            module: self.modules[r],
            first_stack: self.stacks[r],
        })
    }

    /// Number of functions defined.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True when no function is defined.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// `f` records with a stack id >= 0 (CLRProfiler's function list).
    pub fn list_entries(&self) -> u64 {
        self.list_entries
    }

    /// The functions in order of first definition.
    pub fn iter(&self) -> impl Iterator<Item = Function> + '_ {
        self.ids.iter().filter_map(|&id| self.get(id))
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.rows.heap_bytes() + self.ids.capacity() * (4 + 4 + 4 + 8 + 4 + 4 + 4)
    }

    pub(crate) fn shrink(&mut self) {
        self.rows.shrink();
        self.ids.shrink_to_fit();
        self.names.shrink_to_fit();
        self.signatures.shrink_to_fit();
        self.addresses.shrink_to_fit();
        self.sizes.shrink_to_fit();
        self.modules.shrink_to_fit();
        self.stacks.shrink_to_fit();
    }
}
