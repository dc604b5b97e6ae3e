//! The id tables: functions, types, modules and stacks, each mapping the
//! runtime's ids (or a stack's content) to the small ids the log uses.
//! Definitions (`t f m n` lines) are formatted here, into the definitions
//! buffer, always before any line that uses them.

use crate::thread::FxMap;
use clrprof::format::records::{FunctionDef, ModuleLoad, StackDef, TypeDef};
use clrprof::format::{
    escape_name, write_record, Address, FunctionId, ModuleId, Record, StackId, Style, TypeId,
};

/// One stack: frames (log function ids, outermost first) and, for an
/// allocation stack, the type and size.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct StackKey {
    /// Function ids.
    pub frames: Box<[i32]>,
    /// `(type id, size)` for an allocation stack.
    pub alloc: Option<(i32, i32)>,
}

/// All id tables.
#[derive(Default)]
pub struct Tables {
    functions: FxMap<usize, i32>,
    types: FxMap<usize, i32>,
    modules: FxMap<usize, i32>,
    stacks: FxMap<StackKey, i32>,
    stack_list: Vec<StackKey>,
    /// The `t` line of each type id (index id - 1), for dump files that
    /// must define what they use.
    type_lines: Vec<Box<[u8]>>,
    /// The `f` line and module id of each function id (index id - 1).
    function_lines: Vec<(Box<[u8]>, i32)>,
    /// The `m` line of each module id (index id - 1).
    module_lines: Vec<Box<[u8]>>,
}

/// Appends `r` to `defs` and returns the bytes written.
fn define(defs: &mut Vec<u8>, r: &Record<'_>, style: Style) -> Box<[u8]> {
    let at = defs.len();
    write_record(defs, r, style);
    defs[at..].into()
}

fn line(lines: &[Box<[u8]>], id: i32) -> Option<&[u8]> {
    lines.get(usize::try_from(id).ok()?.checked_sub(1)?).map(|l| &l[..])
}

impl Tables {
    /// A function's log id, if defined.
    pub fn function(&self, func: usize) -> Option<i32> {
        self.functions.get(&func).copied()
    }

    /// A type's log id, if defined.
    pub fn type_id(&self, class: usize) -> Option<i32> {
        self.types.get(&class).copied()
    }

    /// A module's log id, if defined.
    pub fn module(&self, module: usize) -> Option<i32> {
        self.modules.get(&module).copied()
    }

    /// Defines a function (`f` line) unless already defined.
    #[allow(clippy::too_many_arguments)]
    pub fn define_function(
        &mut self,
        defs: &mut Vec<u8>,
        style: Style,
        func: usize,
        name: &str,
        signature: &str,
        address: usize,
        size: u32,
        module: i32,
    ) -> i32 {
        if let Some(id) = self.function(func) {
            return id;
        }
        let id = self.functions.len() as i32 + 1;
        self.functions.insert(func, id);
        let name = escape_name(name, Some(' '));
        let signature = escape_name(signature, None);
        let line = define(
            defs,
            &Record::Function(FunctionDef {
                id: FunctionId(id),
                name: &name,
                signature: &signature,
                address: Address(address as u64),
                size,
                module: ModuleId(module),
                stack: StackId(-1),
            }),
            style,
        );
        self.function_lines.push((line, module));
        id
    }

    /// Defines a type (`t` line) unless already defined.
    pub fn define_type(&mut self, defs: &mut Vec<u8>, style: Style, class: usize, name: &str, finalizable: bool) -> i32 {
        if let Some(id) = self.type_id(class) {
            return id;
        }
        let id = self.types.len() as i32 + 1;
        self.types.insert(class, id);
        let name = escape_name(name, None);
        let line = define(defs, &Record::Type(TypeDef { id: TypeId(id), finalizable: Some(finalizable), name: &name }), style);
        self.type_lines.push(line);
        id
    }

    /// Defines a module (`m` line) unless already defined.
    pub fn define_module(&mut self, defs: &mut Vec<u8>, style: Style, module: usize, path: &str, base: usize, stack: i32) -> i32 {
        if let Some(id) = self.module(module) {
            return id;
        }
        let id = self.modules.len() as i32 + 1;
        self.modules.insert(module, id);
        let path: Vec<u8> = path.chars().map(|c| if (c as u32) < 0x100 && c >= ' ' { c as u32 as u8 } else { b'?' }).collect();
        let line = define(
            defs,
            &Record::Module(ModuleLoad { id: ModuleId(id), path: &path, address: Some(Address(base as u64)), stack: StackId(stack) }),
            style,
        );
        self.module_lines.push(line);
        id
    }

    /// The `t` line of a type id.
    pub fn type_line(&self, id: i32) -> Option<&[u8]> {
        line(&self.type_lines, id)
    }

    /// The `f` line of a function id and its module id.
    pub fn function_line(&self, id: i32) -> Option<(&[u8], i32)> {
        let (l, m) = self.function_lines.get(usize::try_from(id).ok()?.checked_sub(1)?)?;
        Some((&l[..], *m))
    }

    /// The `m` line of a module id.
    pub fn module_line(&self, id: i32) -> Option<&[u8]> {
        line(&self.module_lines, id)
    }

    /// The id of a stack, defining it (`n` line, prefix-compressed against
    /// `previous`, the thread's last stack) when new.
    pub fn stack(&mut self, defs: &mut Vec<u8>, style: Style, key: StackKey, previous: Option<i32>) -> i32 {
        if let Some(&id) = self.stacks.get(&key) {
            return id;
        }
        let id = self.stack_list.len() as i32 + 1;
        let frames: Vec<FunctionId> = key.frames.iter().map(|&f| FunctionId(f)).collect();
        let reference = previous.and_then(|p| self.stack_list.get((p - 1) as usize)).map(|prev| {
            let shared = prev.frames.iter().zip(key.frames.iter()).take_while(|(a, b)| a == b).count();
            (StackId(previous.unwrap_or(0)), shared as u32, prev.alloc.is_some())
        });
        let shared = reference.map_or(0, |r| r.1 as usize);
        let def = StackDef::new(
            StackId(id),
            key.alloc.map(|(t, s)| (TypeId(t), s)),
            reference,
            &frames[shared..],
        );
        write_record(defs, &Record::Stack(def), style);
        self.stacks.insert(key.clone(), id);
        self.stack_list.push(key);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_are_prefix_compressed_per_previous() {
        let mut t = Tables::default();
        let mut defs = Vec::new();
        let s = Style::BITS64;
        let a = t.stack(&mut defs, s, StackKey { frames: vec![1, 2, 3].into(), alloc: Some((7, 24)) }, None);
        let b = t.stack(&mut defs, s, StackKey { frames: vec![1, 2, 4].into(), alloc: None }, Some(a));
        let again = t.stack(&mut defs, s, StackKey { frames: vec![1, 2, 3].into(), alloc: Some((7, 24)) }, Some(b));
        assert_eq!((a, b, again), (1, 2, 1));
        assert_eq!(String::from_utf8(defs).unwrap(), "n 1 1 7 24 1 2 3\nn 2 10 1 4\n");
        let (records, diags) = clrprof::format::read_all(b"t 7 0 X\nf 1 a b() 0x0 0\nf 2 a b() 0x0 0\nf 3 a b() 0x0 0\nf 4 a b() 0x0 0\nn 1 1 7 24 1 2 3\nn 2 10 1 4\n");
        assert_eq!(diags.total(), 0);
        assert_eq!(records.len(), 7);
    }
}
