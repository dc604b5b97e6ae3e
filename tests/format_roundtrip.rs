//! Property test: random typed records -> writer -> parser -> the same records.

use clrprof::format::records::*;
use clrprof::format::{RecordStream, StreamOptions, 
    escape_name, read_all, write_record, Address, FunctionId, HandleId, List, ModuleId, Record, StackId, Style,
    ThreadId, TypeId,
};
use proptest::prelude::*;

/// A record with owned names and lists, turned into a borrowed [`Record`]
/// for writing.
#[derive(Clone, Debug)]
enum Owned {
    Type(i32, Option<bool>, Vec<u8>),
    Function(i32, Vec<u8>, Vec<u8>, u64, u32, i32, i32),
    Module(i32, Vec<u8>, u64, i32),
    Assembly(bool, i32, u64, Vec<u8>),
    Stack(i32, Option<(i32, i32)>, Option<(i32, u32, bool)>, Vec<FunctionId>),
    StackOld(i32, Vec<FunctionId>),
    Alloc(Option<i32>, u64, i32),
    Call(i32, i32),
    Tick(u32),
    Comment(Vec<u8>),
    Gc(bool, bool, i32, Vec<GenerationRange>),
    Counts(i32, i32, i32),
    Moved(u64, u64, u32),
    Survived(u64, u32),
    Finalizer(bool, u64),
    HandleCreated(i32, u64, u64, i32),
    HandleDestroyed(i32, u64, i32),
    Root(u64, i32, i32, u64),
    Roots(Vec<Address>),
    Object(u64, i32, u32, Vec<Address>),
}

impl Owned {
    fn record(&self) -> Record<'_> {
        match self {
            Owned::Type(id, fin, name) => Record::Type(TypeDef { id: TypeId(*id), finalizable: *fin, name }),
            Owned::Function(id, name, sig, addr, size, module, stack) => Record::Function(FunctionDef {
                id: FunctionId(*id),
                name,
                signature: sig,
                address: Address(*addr),
                size: *size,
                module: ModuleId(*module),
                stack: StackId(*stack),
            }),
            Owned::Module(id, path, addr, stack) => Record::Module(ModuleLoad {
                id: ModuleId(*id),
                path,
                address: Some(Address(*addr)),
                stack: StackId(*stack),
            }),
            Owned::Assembly(d, thread, asm, name) => {
                let a = AssemblyLoad { thread: ThreadId(*thread), assembly: *asm, name };
                if *d {
                    Record::AssemblyD(a)
                } else {
                    Record::Assembly(a)
                }
            }
            Owned::Stack(id, alloc, reference, frames) => Record::Stack(StackDef::new(
                StackId(*id),
                alloc.map(|(t, s)| (TypeId(t), s)),
                reference.map(|(r, shared, a)| (StackId(r), shared, a)),
                frames,
            )),
            Owned::StackOld(id, frames) => Record::StackOld(StackDefOld { id: StackId(*id), frames: List::Items(frames) }),
            Owned::Alloc(thread, addr, stack) => Record::Alloc(Alloc {
                thread: thread.map(ThreadId),
                address: Address(*addr),
                stack: StackId(*stack),
            }),
            Owned::Call(t, s) => Record::Call(Call { thread: ThreadId(*t), stack: StackId(*s) }),
            Owned::Tick(ms) => Record::Tick(Tick { ms: *ms }),
            Owned::Comment(text) => Record::Comment(Comment { text }),
            Owned::Gc(s, i, c, ranges) => Record::GcBoundary(GcBoundary {
                is_start: *s,
                induced: *i,
                condemned: *c,
                ranges: List::Items(ranges),
            }),
            Owned::Counts(a, b, c) => Record::GcCounts(GcCounts { gen0: *a, gen1: *b, gen2: *c }),
            Owned::Moved(o, n, l) => Record::Moved(Moved { old: Address(*o), new: Address(*n), length: *l }),
            Owned::Survived(s, l) => Record::Survived(Survived { start: Address(*s), length: *l }),
            Owned::Finalizer(c, a) => Record::Finalizer(FinalizerQueued { critical: *c, address: Address(*a) }),
            Owned::HandleCreated(t, h, o, s) => Record::HandleCreated(HandleCreated {
                thread: ThreadId(*t),
                handle: HandleId(*h),
                initial: Address(*o),
                stack: StackId(*s),
            }),
            Owned::HandleDestroyed(t, h, s) => {
                Record::HandleDestroyed(HandleDestroyed { thread: ThreadId(*t), handle: HandleId(*h), stack: StackId(*s) })
            }
            Owned::Root(a, k, f, id) => Record::Root(Root { address: Address(*a), kind: *k, flags: *f, id: *id }),
            Owned::Roots(a) => Record::Roots(Roots { addresses: List::Items(a) }),
            Owned::Object(a, t, s, refs) => Record::HeapObject(HeapObject {
                address: Address(*a),
                type_id: TypeId(*t),
                size: *s,
                refs: List::Items(refs),
            }),
        }
    }
}

/// Identifier-like text with balanced generic brackets and some non-ASCII.
fn ident() -> impl Strategy<Value = String> {
    let part = "[A-Za-z_][A-Za-z0-9_.:`]{0,12}";
    (part, proptest::option::of((part, "[A-Za-z0-9_, \u{e9}\u{4e2d}]{0,10}")), "[\u{e9}\u{fc}\u{4e2d}\u{1F600}]?").prop_map(
        |(a, generic, extra)| match generic {
            Some((g, inner)) => format!("{a}{extra}<{g}<{inner}>>"),
            None => format!("{a}{extra}"),
        },
    )
}

/// Latin-1 text with no control bytes, not starting with a blank.
fn text() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(0x21u8..=0xff, 1..20).prop_flat_map(|head| {
        proptest::collection::vec(prop_oneof![Just(b' '), 0x21u8..=0xff], 0..20).prop_map(move |tail| {
            let mut v = head.clone();
            v.extend(tail);
            v
        })
    })
}

fn frames() -> impl Strategy<Value = Vec<FunctionId>> {
    proptest::collection::vec((0..100_000i32).prop_map(FunctionId), 0..12)
}

fn addresses() -> impl Strategy<Value = Vec<Address>> {
    proptest::collection::vec((0..u64::MAX).prop_map(Address), 0..8)
}

fn owned() -> impl Strategy<Value = Owned> {
    prop_oneof![
        (any::<i32>(), any::<bool>(), ident(), "[ ]{0,2}").prop_map(|(id, fin, name, trail)| {
            Owned::Type(id, Some(fin), escape_name(&format!("{name}{trail}"), None))
        }),
        (any::<i32>(), ident()).prop_map(|(id, name)| Owned::Type(id, None, escape_name(&name, None))),
        (any::<i32>(), ident(), ident(), any::<u64>(), any::<u32>(), -1..50i32, -1..5000i32).prop_map(
            |(id, name, ret, addr, size, m, s)| {
                let sig = format!("{ret} ({})", "int32");
                Owned::Function(id, escape_name(&name, Some(' ')), escape_name(&sig, None), addr, size, m, s)
            }
        ),
        (any::<i32>(), "[A-Za-z]:(\\\\[A-Za-z0-9 ._]{1,10}){1,4}", any::<u64>(), -1..100i32).prop_map(
            |(id, path, addr, stack)| Owned::Module(id, path.into_bytes(), addr, stack)
        ),
        (any::<bool>(), any::<i32>(), any::<u64>(), text()).prop_map(|(d, t, a, n)| Owned::Assembly(d, t, a, n)),
        (
            any::<i32>(),
            proptest::option::of((any::<i32>(), any::<i32>())),
            proptest::option::of((0..1_000_000i32, 0..40u32, any::<bool>())),
            frames()
        )
            .prop_map(|(id, alloc, r, f)| Owned::Stack(id, alloc, r, f)),
        (any::<i32>(), frames()).prop_map(|(id, f)| Owned::StackOld(id, f)),
        (proptest::option::of(any::<i32>()), any::<u64>(), any::<i32>()).prop_map(|(t, a, s)| Owned::Alloc(t, a, s)),
        (any::<i32>(), any::<i32>()).prop_map(|(t, s)| Owned::Call(t, s)),
        any::<u32>().prop_map(Owned::Tick),
        text().prop_map(Owned::Comment),
        (
            any::<bool>(),
            any::<bool>(),
            any::<i32>(),
            proptest::collection::vec(
                (any::<u64>(), any::<u64>(), any::<u64>(), 0..4i32).prop_map(|(s, l, r, g)| GenerationRange {
                    start: Address(s),
                    length: l,
                    reserved: r,
                    generation: g,
                }),
                0..5
            )
        )
            .prop_map(|(s, i, c, r)| Owned::Gc(s, i, c, r)),
        (0..i32::MAX, 0..i32::MAX, 0..i32::MAX).prop_map(|(a, b, c)| Owned::Counts(a, b, c)),
        (any::<u64>(), any::<u64>(), any::<u32>()).prop_map(|(o, n, l)| Owned::Moved(o, n, l)),
        (any::<u64>(), any::<u32>()).prop_map(|(s, l)| Owned::Survived(s, l)),
        (any::<bool>(), any::<u64>()).prop_map(|(c, a)| Owned::Finalizer(c, a)),
        (any::<i32>(), any::<u64>(), any::<u64>(), any::<i32>()).prop_map(|(t, h, o, s)| Owned::HandleCreated(t, h, o, s)),
        (any::<i32>(), any::<u64>(), any::<i32>()).prop_map(|(t, h, s)| Owned::HandleDestroyed(t, h, s)),
        (any::<u64>(), 0..4i32, 0..16i32, any::<u64>()).prop_map(|(a, k, f, id)| Owned::Root(a, k, f, id)),
        addresses().prop_map(Owned::Roots),
        (any::<u64>(), any::<i32>(), any::<u32>(), addresses()).prop_map(|(a, t, s, r)| Owned::Object(a, t, s, r)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn write_then_parse_gives_the_same_records(
        records in proptest::collection::vec(owned(), 0..40),
        bits32 in any::<bool>(),
    ) {
        let style = if bits32 { Style::BITS32 } else { Style::BITS64 };
        let mut bytes = Vec::new();
        for r in &records {
            write_record(&mut bytes, &r.record(), style);
        }
        let (parsed, warnings) = read_all(&bytes);
        prop_assert_eq!(warnings.total(), 0, "warnings: {:?}\n{}", warnings.warnings(), String::from_utf8_lossy(&bytes));
        prop_assert_eq!(parsed.len(), records.len());
        for (p, r) in parsed.iter().zip(&records) {
            prop_assert_eq!(p.record, r.record(), "\n{}", String::from_utf8_lossy(&bytes));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// The streaming reader, at any block size and however the input
    /// trickles in, gives the records, offsets and warnings of one pass
    /// over the whole log (written logs never read past a line end, so a
    /// one-byte margin is enough to exercise every boundary).
    #[test]
    fn stream_equals_one_pass(
        records in proptest::collection::vec(owned(), 0..40),
        block in 1usize..200,
        trickle in 1usize..50,
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = Vec::new();
        for r in &records {
            write_record(&mut bytes, &r.record(), Style::BITS64);
        }
        // Also a prefix cut anywhere: truncated logs stream like they read.
        for data in [&bytes[..], &bytes[..cut.index(bytes.len() + 1)]] {
            let (want, mut want_d) = read_all(data);
            want_d.sort();
            let mut got = Vec::new();
            let mut stream = RecordStream::with_options(Trickle(data, trickle), StreamOptions::with_block_and_margin(block, 1));
            stream.for_each(|p| got.push((p.offset, p.at_end_of_file, format!("{:?}", p.record)))).unwrap();
            let want: Vec<_> = want.iter().map(|p| (p.offset, p.at_end_of_file, format!("{:?}", p.record))).collect();
            prop_assert_eq!(got, want);
            prop_assert_eq!(stream.diagnostics(), &want_d);
        }
    }
}

/// A reader that hands out at most `n` bytes per call.
struct Trickle<'a>(&'a [u8], usize);
impl std::io::Read for Trickle<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.1.min(out.len()).min(self.0.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[test]
fn native_function_line_reads_as_clrprofiler_reads_it() {
    let (recs, w) = read_all(b"f 0 NATIVE FUNCTION ( UNKNOWN ARGUMENTS ) 0 0\n");
    assert_eq!(w.total(), 0);
    let Record::Function(f) = recs[0].record else { panic!("not a function") };
    assert_eq!(f.name, b"NATIVE");
    assert_eq!(f.signature, b"FUNCTION ( UNKNOWN ARGUMENTS )");
    assert_eq!((f.address.0, f.size, f.module.0, f.stack.0), (0, 0, -1, -1));
}
