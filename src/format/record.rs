//! The record enum and record kinds.

use super::records::*;

/// A record kind: the first character of a record, lower-cased.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
#[cfg_attr(feature = "model", derive(serde::Serialize, serde::Deserialize))]
pub enum Kind {
    /// `t` type definition.
    Type = 0,
    /// `f` function definition.
    Function,
    /// `m` module load.
    Module,
    /// `y` assembly load.
    Assembly,
    /// `n` stack definition.
    Stack,
    /// `s` older stack definition.
    StackOld,
    /// `!` allocation with thread.
    Alloc,
    /// `a` older allocation.
    AllocOld,
    /// `c` call.
    Call,
    /// `i` tick.
    Tick,
    /// `z` comment.
    Comment,
    /// `b` GC start or end.
    GcBoundary,
    /// `g` GC counts.
    GcCounts,
    /// `u` moved range.
    Moved,
    /// `v` surviving range.
    Survived,
    /// `l` finalizer queued.
    Finalizer,
    /// `h` handle created.
    HandleCreated,
    /// `j` handle destroyed.
    HandleDestroyed,
    /// `e` heap-dump root.
    Root,
    /// `r` heap-dump roots (older form).
    Roots,
    /// `o` heap-dump object.
    HeapObject,
    /// `d` assembly record that the published writer never emits.
    AssemblyD,
}

impl Kind {
    /// Every kind, in the order of [`Kind::index`].
    pub const ALL: [Kind; 22] = [
        Kind::Type,
        Kind::Function,
        Kind::Module,
        Kind::Assembly,
        Kind::Stack,
        Kind::StackOld,
        Kind::Alloc,
        Kind::AllocOld,
        Kind::Call,
        Kind::Tick,
        Kind::Comment,
        Kind::GcBoundary,
        Kind::GcCounts,
        Kind::Moved,
        Kind::Survived,
        Kind::Finalizer,
        Kind::HandleCreated,
        Kind::HandleDestroyed,
        Kind::Root,
        Kind::Roots,
        Kind::HeapObject,
        Kind::AssemblyD,
    ];

    /// Number of kinds.
    pub const COUNT: usize = 22;

    /// A dense index, `0..Kind::COUNT`.
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    /// The lower-case letter of this kind.
    pub fn letter(self) -> char {
        b"tfmyns!acizbguvlhjerod"[self as usize] as char
    }

    /// The kind a record's first byte names (either case), if any.
    #[inline]
    pub fn from_byte(b: u8) -> Option<Kind> {
        KIND_TABLE[b as usize]
    }

    /// One of the records that make up nearly every line of a large log
    /// (`!`, `c`, `i`, `u`, `v`, `o`): the reader tries its fast path first.
    #[inline]
    pub(crate) fn is_frequent(self) -> bool {
        matches!(self, Kind::Alloc | Kind::Call | Kind::Tick | Kind::Moved | Kind::Survived | Kind::HeapObject)
    }

    /// Whether CLRProfiler's reader drops this record when the file ends
    /// inside it (no line end after its last field).
    pub fn dropped_at_end_of_file(self) -> bool {
        !matches!(
            self,
            Kind::Moved
                | Kind::Survived
                | Kind::Finalizer
                | Kind::GcBoundary
                | Kind::Assembly
                | Kind::Root
                | Kind::Roots
                | Kind::GcCounts
                | Kind::AssemblyD
        )
    }
}

const KIND_TABLE: [Option<Kind>; 256] = {
    let mut t = [None; 256];
    let letters = b"tfmyns!acizbguvlhjerod";
    let mut k = 0;
    while k < letters.len() {
        let b = letters[k];
        t[b as usize] = Some(Kind::ALL[k]);
        if b.is_ascii_lowercase() {
            t[(b - 32) as usize] = Some(Kind::ALL[k]);
        }
        k += 1;
    }
    t
};

/// One typed record, borrowing names and lists from the log.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Record<'a> {
    /// `t`
    Type(TypeDef<'a>),
    /// `f`
    Function(FunctionDef<'a>),
    /// `m`
    Module(ModuleLoad<'a>),
    /// `y`
    Assembly(AssemblyLoad<'a>),
    /// `d` (ignored by CLRProfiler's reader)
    AssemblyD(AssemblyLoad<'a>),
    /// `n`
    Stack(StackDef<'a>),
    /// `s`
    StackOld(StackDefOld<'a>),
    /// `!` (with thread) or `a` (without)
    Alloc(Alloc),
    /// `c`
    Call(Call),
    /// `i`
    Tick(Tick),
    /// `z`
    Comment(Comment<'a>),
    /// `b`
    GcBoundary(GcBoundary<'a>),
    /// `g`
    GcCounts(GcCounts),
    /// `u`
    Moved(Moved),
    /// `v`
    Survived(Survived),
    /// `l`
    Finalizer(FinalizerQueued),
    /// `h`
    HandleCreated(HandleCreated),
    /// `j`
    HandleDestroyed(HandleDestroyed),
    /// `e`
    Root(Root),
    /// `r`
    Roots(Roots<'a>),
    /// `o`
    HeapObject(HeapObject<'a>),
}

impl Record<'_> {
    /// The kind of this record.
    pub fn kind(&self) -> Kind {
        match self {
            Record::Type(_) => Kind::Type,
            Record::Function(_) => Kind::Function,
            Record::Module(_) => Kind::Module,
            Record::Assembly(_) => Kind::Assembly,
            Record::AssemblyD(_) => Kind::AssemblyD,
            Record::Stack(_) => Kind::Stack,
            Record::StackOld(_) => Kind::StackOld,
            Record::Alloc(a) if a.thread.is_some() => Kind::Alloc,
            Record::Alloc(_) => Kind::AllocOld,
            Record::Call(_) => Kind::Call,
            Record::Tick(_) => Kind::Tick,
            Record::Comment(_) => Kind::Comment,
            Record::GcBoundary(_) => Kind::GcBoundary,
            Record::GcCounts(_) => Kind::GcCounts,
            Record::Moved(_) => Kind::Moved,
            Record::Survived(_) => Kind::Survived,
            Record::Finalizer(_) => Kind::Finalizer,
            Record::HandleCreated(_) => Kind::HandleCreated,
            Record::HandleDestroyed(_) => Kind::HandleDestroyed,
            Record::Root(_) => Kind::Root,
            Record::Roots(_) => Kind::Roots,
            Record::HeapObject(_) => Kind::HeapObject,
        }
    }
}

/// A record with its place in the log.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Parsed<'a> {
    /// The record.
    pub record: Record<'a>,
    /// Byte offset of its first character.
    pub offset: u64,
    /// True when the file ended right after the record's last field (no
    /// line end): CLRProfiler's reader then applies some records only in
    /// part (see `FORMAT.md`); records it drops are never delivered.
    pub at_end_of_file: bool,
}
