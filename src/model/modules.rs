//! Modules (`m` records) and assemblies (`y` records).

use super::ids::{NameId, ThreadRef, TickIndex};
use crate::format::{Address, ModuleId};

/// A loaded module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Module {
    /// The module id.
    pub id: ModuleId,
    /// Its full path.
    pub path: NameId,
    /// The file name (text after the last backslash).
    pub short_name: NameId,
    /// The load address, when the record had one.
    pub address: Option<Address>,
}

/// An assembly loaded on a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AssemblyLoad {
    /// The loading thread.
    pub thread: ThreadRef,
    /// The runtime's assembly id.
    pub assembly: u64,
    /// The assembly name.
    pub name: NameId,
    /// When it was loaded.
    pub tick: TickIndex,
}

/// Modules in load order and assemblies in load order.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct ModuleTable {
    modules: Vec<Module>,
    assemblies: Vec<AssemblyLoad>,
}

impl ModuleTable {
    pub(crate) fn add_module(&mut self, m: Module) {
        self.modules.push(m);
    }

    pub(crate) fn add_assembly(&mut self, a: AssemblyLoad) {
        self.assemblies.push(a);
    }

    /// The modules, in load order (a module id loaded twice appears twice).
    pub fn modules(&self) -> &[Module] {
        &self.modules
    }

    /// The module with this id (the latest load).
    pub fn module(&self, id: ModuleId) -> Option<&Module> {
        self.modules.iter().rev().find(|m| m.id == id)
    }

    /// Assembly loads, in log order.
    pub fn assemblies(&self) -> &[AssemblyLoad] {
        &self.assemblies
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.modules.capacity() * std::mem::size_of::<Module>()
            + self.assemblies.capacity() * std::mem::size_of::<AssemblyLoad>()
    }

    pub(crate) fn shrink(&mut self) {
        self.modules.shrink_to_fit();
        self.assemblies.shrink_to_fit();
    }
}
