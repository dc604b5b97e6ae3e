//! Definitions: `t` types, `f` functions, `m` modules, `y`/`d` assemblies.

use crate::format::fields::Fields;
use crate::format::ids::{Address, FunctionId, ModuleId, StackId, ThreadId, TypeId};
use crate::format::scan::{self, NameRule};
use crate::format::text::{self, Style};

/// `t typeId finalizable name`: a type name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypeDef<'a> {
    /// The type id.
    pub id: TypeId,
    /// The finalizable flag (`None` in older logs that omit it).
    pub finalizable: Option<bool>,
    /// The name as written (escapes not yet decoded; see [`scan::decode_name`]).
    pub name: &'a [u8],
}

impl<'a> TypeDef<'a> {
    pub(crate) fn parse(f: &mut Fields<'a>) -> Self {
        let id = TypeId(f.int("a type id"));
        f.blanks();
        let finalizable = match f.peek() {
            Some(b) if b.is_ascii_digit() => Some(f.opt_int("a finalizable flag").as_i32() != 0),
            _ => None,
        };
        f.blanks();
        let name = f.name(NameRule::TYPE_NAME, "a type name");
        TypeDef { id, finalizable, name }
    }

    /// The decoded type name.
    pub fn decoded_name(&self) -> String {
        scan::decode_name(self.name)
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"t ");
        text::dec_i64(out, self.id.0 as i64);
        if let Some(fin) = self.finalizable {
            out.extend_from_slice(if fin { b" 1 " } else { b" 0 " });
        } else {
            out.push(b' ');
        }
        out.extend_from_slice(self.name);
        out.push(b'\n');
    }
}

/// `f funcId name signature addr size moduleId stackId`: a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FunctionDef<'a> {
    /// The function id.
    pub id: FunctionId,
    /// The name as written (ends at the first space outside `<...>`).
    pub name: &'a [u8],
    /// The signature as written (runs to the first `)`).
    pub signature: &'a [u8],
    /// Address of the code.
    pub address: Address,
    /// Size of the code in bytes.
    pub size: u32,
    /// The module (-1 when missing).
    pub module: ModuleId,
    /// The stack at the first call (-1 when missing).
    pub stack: StackId,
}

impl<'a> FunctionDef<'a> {
    pub(crate) fn parse(f: &mut Fields<'a>) -> Self {
        let id = FunctionId(f.int("a function id"));
        f.blanks();
        let name = f.name(NameRule::FUNCTION_NAME, "a function name");
        f.blanks();
        let signature = f.name(NameRule::SIGNATURE, "a function signature");
        let address = Address(f.long("a code address"));
        let size = f.int("a code size") as u32;
        let module = ModuleId(f.opt_int("a module id").as_i32());
        let stack = StackId(f.opt_int("a stack id").as_i32());
        FunctionDef { id, name, signature, address, size, module, stack }
    }

    /// The decoded function name.
    pub fn decoded_name(&self) -> String {
        scan::decode_name(self.name)
    }

    /// The decoded signature.
    pub fn decoded_signature(&self) -> String {
        scan::decode_name(self.signature)
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>, style: Style) {
        out.extend_from_slice(b"f ");
        text::dec_i64(out, self.id.0 as i64);
        out.push(b' ');
        out.extend_from_slice(self.name);
        out.push(b' ');
        out.extend_from_slice(self.signature);
        out.push(b' ');
        text::hex_pointer(out, self.address.0, style);
        out.push(b' ');
        text::dec_u64(out, self.size as u64);
        if self.module.0 != -1 || self.stack.0 != -1 {
            out.push(b' ');
            text::dec_i64(out, self.module.0 as i64);
            out.push(b' ');
            text::dec_i64(out, self.stack.0 as i64);
        }
        out.push(b'\n');
    }
}

/// `m moduleId path addr stackId`: a module was loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModuleLoad<'a> {
    /// The module id.
    pub id: ModuleId,
    /// The full path (may contain spaces), Latin-1.
    pub path: &'a [u8],
    /// The load address, when the line has one (found by the last ` 0x`).
    pub address: Option<Address>,
    /// The stack at load time (-1 when missing; CLRProfiler ignores it).
    pub stack: StackId,
}

impl<'a> ModuleLoad<'a> {
    pub(crate) fn parse(f: &mut Fields<'a>) -> Self {
        let id = ModuleId(f.int("a module id"));
        // The reader takes the rest of the line as it is (a tab ends it) and
        // finds the address by the last " 0x" after its first byte.
        let line = f.text();
        let split = memchr::memmem::rfind(line, b" 0x").filter(|&p| p > 0);
        let (path, address, stack) = match split {
            Some(p) => {
                let (rest, addr) = scan::number(&line[p + 1..]);
                let (_, stack) = scan::number(rest);
                (&line[..p], Some(Address(addr.as_u64())), StackId(stack.as_i32()))
            }
            None => (line, None, StackId(-1)),
        };
        let trimmed = path.iter().position(|&b| b != b' ').unwrap_or(path.len());
        ModuleLoad { id, path: &path[trimmed..], address, stack }
    }

    /// The file name: the text after the last backslash (CLRProfiler's
    /// "basic name").
    pub fn short_name(&self) -> &'a [u8] {
        match memchr::memrchr(b'\\', self.path) {
            Some(p) => &self.path[p + 1..],
            None => self.path,
        }
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>, style: Style) {
        out.extend_from_slice(b"m ");
        text::dec_i64(out, self.id.0 as i64);
        out.push(b' ');
        out.extend_from_slice(self.path);
        if let Some(addr) = self.address {
            out.push(b' ');
            text::hex_pointer(out, addr.0, style);
            out.push(b' ');
            text::dec_i64(out, self.stack.0 as i64);
        }
        out.push(b'\n');
    }
}

/// `y threadId assemblyId name` (and the never-written `d`): an assembly
/// was loaded on a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AssemblyLoad<'a> {
    /// The loading thread.
    pub thread: ThreadId,
    /// The runtime's assembly id.
    pub assembly: u64,
    /// The assembly name, Latin-1.
    pub name: &'a [u8],
}

impl<'a> AssemblyLoad<'a> {
    pub(crate) fn parse(f: &mut Fields<'a>) -> Self {
        let thread = ThreadId(f.int("a thread id"));
        let assembly = f.long("an assembly id");
        f.blanks();
        let name = f.text();
        AssemblyLoad { thread, assembly, name }
    }

    pub(crate) fn write(&self, kind: u8, out: &mut Vec<u8>, style: Style) {
        out.push(kind);
        out.push(b' ');
        text::dec_i64(out, self.thread.0 as i64);
        out.push(b' ');
        text::hex_pointer(out, self.assembly, style);
        out.push(b' ');
        out.extend_from_slice(self.name);
        out.push(b'\n');
    }
}
