//! The runtime's events the generator writes: their kinds (provider
//! `Microsoft-Windows-DotNETRuntime`, id, version, keywords, level,
//! opcode) and their payloads, field by field in the manifest's order
//! (`ClrEtwAll.man`; every field packed, little-endian, strings UTF-16
//! with a terminating 0, pointers of the trace's pointer size).

use super::writer::{utf16z, KindDef};

/// The runtime's provider.
pub const RUNTIME: &str = "Microsoft-Windows-DotNETRuntime";
/// The `ClrInstanceID` of the only runtime in the process.
const CLR_INSTANCE: u16 = 9;

const GC_KEYWORD: u64 = 0x1;
const LOADER_KEYWORD: u64 = 0x8;
const JIT_KEYWORD: u64 = 0x10;

const fn runtime(event_id: u32, version: u32, keywords: u64, level: u32, opcode: u8) -> KindDef {
    KindDef { provider: RUNTIME, event_id, name: "", keywords, version, level, opcode: Some(opcode) }
}

/// `GC/AllocationTick` version 4 (.NET 5 and later).
pub const ALLOCATION_TICK: KindDef = runtime(10, 4, GC_KEYWORD, 5, 11);
/// `GC/Start` version 2.
pub const GC_START: KindDef = runtime(1, 2, GC_KEYWORD, 4, 1);
/// `GC/Stop` version 1.
pub const GC_STOP: KindDef = runtime(2, 1, GC_KEYWORD, 4, 2);
/// `GC/HeapStats` version 1.
pub const GC_HEAP_STATS: KindDef = runtime(4, 1, GC_KEYWORD, 4, 133);
/// `Method/LoadVerbose` version 2.
pub const METHOD_LOAD_VERBOSE: KindDef = runtime(143, 2, LOADER_KEYWORD | JIT_KEYWORD, 5, 37);
/// `Loader/ModuleLoad` version 2.
pub const MODULE_LOAD: KindDef = runtime(152, 2, LOADER_KEYWORD, 4, 33);

/// A payload under construction.
pub struct Payload<'b> {
    b: &'b mut Vec<u8>,
    ptr: usize,
}

impl<'b> Payload<'b> {
    /// Clears `b` and starts a payload with `ptr`-byte pointers.
    pub fn new(b: &'b mut Vec<u8>, ptr: usize) -> Self {
        b.clear();
        Payload { b, ptr }
    }
    fn u16(&mut self, v: u16) -> &mut Self {
        self.b.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.b.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.b.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn ptr(&mut self, v: u64) -> &mut Self {
        self.b.extend_from_slice(&v.to_le_bytes()[..self.ptr]);
        self
    }
    fn str(&mut self, s: &str) -> &mut Self {
        utf16z(self.b, s);
        self
    }
    fn guid(&mut self, g: [u8; 16]) -> &mut Self {
        self.b.extend_from_slice(&g);
        self
    }
}

/// One `GC/AllocationTick`.
#[derive(Clone, Copy, Debug)]
pub struct AllocationTick<'a> {
    /// Bytes allocated since the thread's previous tick of this kind.
    pub amount: u64,
    /// The object is on the large object heap.
    pub large: bool,
    /// The method table of the allocated object's type.
    pub type_id: u64,
    /// Its type's name.
    pub type_name: &'a str,
    /// Its address.
    pub address: u64,
    /// Its size.
    pub size: u64,
}

impl AllocationTick<'_> {
    /// The payload: AllocationAmount (u32), AllocationKind, ClrInstanceID,
    /// AllocationAmount64, TypeID (pointer), TypeName, HeapIndex, Address
    /// (pointer), ObjectSize (V4).
    pub fn encode(&self, p: &mut Payload<'_>) {
        p.u32(self.amount.min(u64::from(u32::MAX)) as u32)
            .u32(u32::from(self.large))
            .u16(CLR_INSTANCE)
            .u64(self.amount)
            .ptr(self.type_id)
            .str(self.type_name)
            .u32(0)
            .ptr(self.address)
            .u64(self.size);
    }
}

/// `GC/Start`: Count, Depth, Reason (0 small allocation, 1 induced), Type
/// (0 blocking), ClrInstanceID, ClientSequenceNumber.
pub fn gc_start(p: &mut Payload<'_>, count: u32, depth: u32, induced: bool) {
    p.u32(count).u32(depth).u32(u32::from(induced)).u32(0).u16(CLR_INSTANCE).u64(0);
}

/// `GC/Stop`: Count, Depth, ClrInstanceID.
pub fn gc_stop(p: &mut Payload<'_>, count: u32, depth: u32) {
    p.u32(count).u32(depth).u16(CLR_INSTANCE);
}

/// What `GC/HeapStats` reports after a GC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeapStats {
    /// Bytes in generations 0, 1, 2 and the large object heap.
    pub size: [u64; 4],
    /// Bytes that survived from each.
    pub promoted: [u64; 4],
    /// Objects queued for finalization by the GC.
    pub finalization_promoted_count: u64,
    /// GC handles alive.
    pub handles: u32,
}

impl HeapStats {
    /// The payload: size and promoted bytes of generations 0 to 3,
    /// FinalizationPromotedSize and Count, PinnedObjectCount,
    /// SinkBlockCount, GCHandleCount, ClrInstanceID.
    pub fn encode(&self, p: &mut Payload<'_>) {
        for g in 0..4 {
            p.u64(self.size[g]).u64(self.promoted[g]);
        }
        p.u64(0).u64(self.finalization_promoted_count).u32(0).u32(0).u32(self.handles).u16(CLR_INSTANCE);
    }
}

/// One `Method/LoadVerbose`.
#[derive(Clone, Copy, Debug)]
pub struct MethodLoad<'a> {
    /// The method's id (its method descriptor).
    pub method_id: u64,
    /// Its module's id.
    pub module_id: u64,
    /// First byte of its code.
    pub start: u64,
    /// Bytes of code.
    pub size: u32,
    /// Its metadata token.
    pub token: u32,
    /// `Namespace.Class`.
    pub namespace: &'a str,
    /// The method's name.
    pub name: &'a str,
    /// Its signature.
    pub signature: &'a str,
}

impl MethodLoad<'_> {
    /// The payload: MethodID, ModuleID, MethodStartAddress, MethodSize,
    /// MethodToken, MethodFlags (jitted: 8), MethodNamespace, MethodName,
    /// MethodSignature, ClrInstanceID, ReJITID.
    pub fn encode(&self, p: &mut Payload<'_>) {
        p.u64(self.method_id)
            .u64(self.module_id)
            .u64(self.start)
            .u32(self.size)
            .u32(self.token)
            .u32(8)
            .str(self.namespace)
            .str(self.name)
            .str(self.signature)
            .u16(CLR_INSTANCE)
            .u64(0);
    }
}

/// `Loader/ModuleLoad`: ModuleID, AssemblyID, ModuleFlags, Reserved1,
/// ModuleILPath, ModuleNativePath, ClrInstanceID, then the PDB
/// identities (left empty).
pub fn module_load(p: &mut Payload<'_>, module_id: u64, assembly_id: u64, path: &str) {
    p.u64(module_id).u64(assembly_id).u32(0).u32(0).str(path).str("").u16(CLR_INSTANCE);
    p.guid([0; 16]).u32(0).str("").guid([0; 16]).u32(0).str("");
}
