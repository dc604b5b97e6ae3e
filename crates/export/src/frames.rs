//! Names of frames as every export shows them: a function's name,
//! signature and module (CLRProfiler's `???? function N` for functions the
//! log never defined), and the frames of an allocation stack row.

use clrprof::format::FunctionId;
use clrprof::model::{FrameNode, Model, StackRef};
use clrprof::query::alloc_stacks::{allocation_frames, function_names, node_function};
use clrprof::query::by_code::NO_STACK;
use std::collections::HashMap;

/// A function as an export names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FunctionName {
    /// `Namespace.Type::Method`.
    pub name: String,
    /// Its signature.
    pub signature: String,
    /// Its module's file name, when known.
    pub module: Option<String>,
    /// Its module's full path, when known.
    pub module_path: Option<String>,
}

/// The name of a function (see the module documentation).
pub(crate) fn function_name(model: &Model, f: FunctionId) -> FunctionName {
    let (name, signature, module) = function_names(model, f);
    let module_path = model
        .functions()
        .get(f)
        .and_then(|d| model.modules().module(d.module))
        .map(|m| model.names().get(m.path).to_string());
    FunctionName { name, signature, module, module_path }
}

/// The pseudo-function of allocations whose stack has no frames, as
/// `clrprof functions` names it.
pub(crate) fn no_stack() -> FunctionName {
    FunctionName { name: NO_STACK.to_string(), signature: String::new(), module: None, module_path: None }
}

/// Dense numbers for the functions an export meets, in order of first use.
#[derive(Debug, Default)]
pub(crate) struct FunctionIndex {
    index: HashMap<i32, u32>,
    /// Number -> the function (`None` for the `<no stack>` pseudo-function).
    pub functions: Vec<Option<FunctionId>>,
}

impl FunctionIndex {
    /// The number of a function.
    pub(crate) fn of(&mut self, f: Option<FunctionId>) -> u32 {
        let key = f.map_or(i32::MIN, |f| f.0);
        let next = self.functions.len() as u32;
        let k = *self.index.entry(key).or_insert(next);
        if k == next {
            self.functions.push(f);
        }
        k
    }

    /// The name of every numbered function, in number order.
    pub(crate) fn names(&self, model: &Model) -> Vec<FunctionName> {
        self.functions.iter().map(|f| f.map_or_else(no_stack, |f| function_name(model, f))).collect()
    }
}

/// The functions of an allocation stack row, innermost first, as
/// CLRProfiler's views read them (`scratch` is a caller-owned buffer).
pub(crate) fn row_functions(model: &Model, row: StackRef, scratch: &mut Vec<FrameNode>, out: &mut Vec<FunctionId>) {
    allocation_frames(model, row, scratch);
    out.clear();
    out.extend(scratch.iter().map(|&n| node_function(model, n)));
}
