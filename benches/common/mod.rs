//! Synthetic logs for benchmarks, written with the project's writer.
//!
//! Parsing does not need heap consistency, so this is a fast mixture of
//! records in the proportions of a real log with call logging off:
//! mostly allocations, with stack definitions, ticks, GCs with `u`/`v`
//! ranges, handles and a few definitions.

use clrprof::format::records::*;
use clrprof::format::{Address, FunctionId, HandleId, List, LogWriter, Record, StackId, Style, ThreadId, TypeId};

/// A small deterministic PRNG (splitmix64).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A log of at least `target_bytes` bytes.
pub fn synthetic_log(target_bytes: usize) -> Vec<u8> {
    let mut w = LogWriter::new(Vec::with_capacity(target_bytes + (1 << 20)), Style::BITS64);
    let mut rng = Rng(42);
    let names = ["System.String", "System.Object []", "System.Byte []", "App.Order", "App.Line<int>"];
    for (i, n) in names.iter().enumerate() {
        w.type_def(TypeId(i as i32 + 1), i == 3, n).ok();
    }
    for f in 1..200 {
        w.function_def(
            FunctionId(f),
            &format!("App.Module{}::Method{}", f % 7, f),
            "void (int32 String)",
            Address(0x7ff0_0000_0000 + f as u64 * 64),
            64,
            clrprof::format::ModuleId(f % 3),
            StackId(0),
        )
        .ok();
    }
    let mut addr: u64 = 0x1_3600_0010_00;
    let mut stacks = 0i32;
    let mut tick = 0u32;
    let mut frames: Vec<FunctionId> = Vec::new();
    while w.bytes_written() < target_bytes as u64 {
        // a batch of allocations on a few stacks
        for _ in 0..2000 {
            if rng.below(20) == 0 {
                stacks += 1;
                frames.clear();
                for _ in 0..rng.below(6) {
                    frames.push(FunctionId(rng.below(199) as i32 + 1));
                }
                let t = TypeId(rng.below(5) as i32 + 1);
                let size = 24 + 8 * rng.below(40) as i32;
                let r = if stacks > 1 { Some((StackId(stacks - 1), rng.below(8) as u32, true)) } else { None };
                w.record(&Record::Stack(StackDef::new(StackId(stacks), Some((t, size)), r, &frames))).ok();
            }
            let stack = StackId(1 + rng.below(stacks.max(1) as u64) as i32);
            w.record(&Record::Alloc(Alloc { thread: Some(ThreadId(4448)), address: Address(addr), stack })).ok();
            addr += 24 + 8 * rng.below(40);
        }
        tick += 1;
        w.record(&Record::Tick(Tick { ms: tick })).ok();
        let ranges = [GenerationRange { start: Address(0x1_3600_0010_00), length: 1 << 20, reserved: 1 << 24, generation: 0 }];
        w.record(&Record::GcBoundary(GcBoundary { is_start: true, induced: false, condemned: 0, ranges: List::Items(&ranges) })).ok();
        for k in 0..200u64 {
            let old = Address(addr - 4096 * (k + 1));
            w.record(&Record::Moved(Moved { old, new: Address(old.0 - 0x100000), length: 96 })).ok();
            if k % 10 == 0 {
                w.record(&Record::Survived(Survived { start: old, length: 48 })).ok();
            }
        }
        w.record(&Record::GcBoundary(GcBoundary { is_start: false, induced: false, condemned: 0, ranges: List::Items(&ranges) })).ok();
        w.record(&Record::GcCounts(GcCounts { gen0: tick as i32, gen1: 0, gen2: 0 })).ok();
        w.record(&Record::HandleCreated(HandleCreated {
            thread: ThreadId(4448),
            handle: HandleId(0x1000 + tick as u64),
            initial: Address(addr),
            stack: StackId(1),
        }))
        .ok();
    }
    w.into_inner().unwrap_or_default()
}
