//! `ICorProfilerInfo` (versions 1 to 5) and `IMetaDataImport`: the methods
//! the agent calls, by vtable slot (slots counted from `corprof.idl` and
//! `cor.h`, IUnknown's three included).
//!
//! Every method is a thin call; none holds a lock of the agent's.

use crate::com::{self, method, Guid, HRESULT, S_OK};
use std::ffi::c_void;

/// `ICorProfilerInfo`.
pub const IID_ICORPROFILERINFO: Guid =
    Guid::new(0x28B5557D, 0x3F3F, 0x48b4, [0x90, 0xB2, 0x5F, 0x9E, 0xEA, 0x2F, 0x6C, 0x48]);
/// `ICorProfilerInfo3`.
pub const IID_ICORPROFILERINFO3: Guid =
    Guid::new(0xB555ED4F, 0x452A, 0x4E54, [0x8B, 0x39, 0xB5, 0x36, 0x0B, 0xAD, 0x32, 0xA0]);
/// `ICorProfilerInfo4`.
pub const IID_ICORPROFILERINFO4: Guid =
    Guid::new(0x0d8fdcaa, 0x6257, 0x47bf, [0xb1, 0xbf, 0x94, 0xda, 0xc8, 0x84, 0x66, 0xee]);
/// `ICorProfilerInfo5`.
pub const IID_ICORPROFILERINFO5: Guid =
    Guid::new(0x07602928, 0xCE38, 0x4B83, [0x81, 0xE7, 0x74, 0xAD, 0xAF, 0x78, 0x12, 0x14]);
/// `IMetaDataImport`.
pub const IID_IMETADATAIMPORT: Guid =
    Guid::new(0x7DAC8207, 0xD3AE, 0x4c75, [0x9B, 0x67, 0x92, 0x80, 0x1A, 0x49, 0x7D, 0x44]);

/// Event mask bits (`COR_PRF_MONITOR`).
pub mod mask {
    /// Class loads.
    pub const CLASS_LOADS: u32 = 0x2;
    /// Module loads.
    pub const MODULE_LOADS: u32 = 0x4;
    /// Assembly loads.
    pub const ASSEMBLY_LOADS: u32 = 0x8;
    /// JIT compilation callbacks.
    pub const JIT_COMPILATION: u32 = 0x20;
    /// Precompiled-code search callbacks.
    pub const CACHE_SEARCHES: u32 = 0x0002_0000;
    /// Exceptions (unwind callbacks pop the shadow stack).
    pub const EXCEPTIONS: u32 = 0x40;
    /// GC callbacks.
    pub const GC: u32 = 0x80;
    /// ObjectAllocated.
    pub const OBJECT_ALLOCATED: u32 = 0x100;
    /// Thread callbacks.
    pub const THREADS: u32 = 0x200;
    /// Enter/leave hooks.
    pub const ENTERLEAVE: u32 = 0x1000;
    /// Allocation callbacks may ever be wanted.
    pub const ENABLE_OBJECT_ALLOCATED: u32 = 0x0080_0000;
    /// Frame info for the WithInfo hooks.
    pub const ENABLE_FRAME_INFO: u32 = 0x0800_0000;
    /// DoStackSnapshot.
    pub const ENABLE_STACK_SNAPSHOT: u32 = 0x1000_0000;
    /// No inlining.
    pub const DISABLE_INLINING: u32 = 0x0020_0000;
    /// High mask (`COR_PRF_HIGH_MONITOR`): every method compiled once,
    /// fully optimized (no tier-0 code).
    pub const HIGH_DISABLE_TIERED_COMPILATION: u32 = 0x8;
}

/// One `COR_PRF_GC_GENERATION_RANGE`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct GenerationRange {
    /// 0, 1, 2, 3 (large object heap), 4 (pinned object heap).
    pub generation: u32,
    /// First address.
    pub start: usize,
    /// Bytes in use.
    pub length: usize,
    /// Bytes reserved.
    pub reserved: usize,
}

/// The stack snapshot callback type.
pub type StackSnapshotCallback =
    extern "system" fn(func: usize, ip: usize, frame: usize, ctx_size: u32, ctx: *mut u8, data: *mut c_void) -> HRESULT;

/// A held `ICorProfilerInfo4` or later.
#[derive(Clone, Copy)]
pub struct Info {
    ptr: *mut c_void,
    /// True when `ICorProfilerInfo4` (GetObjectSize2) answered.
    v4: bool,
    /// True when `ICorProfilerInfo5` (SetEventMask2) answered.
    v5: bool,
}

// Safety: ICorProfilerInfo is free-threaded.
unsafe impl Send for Info {}
// Safety: ICorProfilerInfo is free-threaded.
unsafe impl Sync for Info {}

type Fn1<A> = extern "system" fn(*mut c_void, A) -> HRESULT;
type Fn2<A, B> = extern "system" fn(*mut c_void, A, B) -> HRESULT;
type Fn3<A, B, C> = extern "system" fn(*mut c_void, A, B, C) -> HRESULT;
type Fn4<A, B, C, D> = extern "system" fn(*mut c_void, A, B, C, D) -> HRESULT;

impl Info {
    /// Queries the runtime's info object for the highest version the agent
    /// uses (at least `ICorProfilerInfo3`).
    ///
    /// # Safety
    /// `unknown` must be the `IUnknown` the runtime passed to `Initialize`.
    pub unsafe fn from_unknown(unknown: *mut c_void) -> Option<Info> {
        // Safety: forwarded from the caller.
        unsafe {
            let v5 = com::query_interface(unknown, &IID_ICORPROFILERINFO5);
            if !v5.is_null() {
                return Some(Info { ptr: v5, v4: true, v5: true });
            }
            let v4 = com::query_interface(unknown, &IID_ICORPROFILERINFO4);
            if !v4.is_null() {
                return Some(Info { ptr: v4, v4: true, v5: false });
            }
            let v3 = com::query_interface(unknown, &IID_ICORPROFILERINFO3);
            if !v3.is_null() {
                return Some(Info { ptr: v3, v4: false, v5: false });
            }
        }
        None
    }

    /// `SetEventMask` (slot 16), or `SetEventMask2` (slot 82) with a high mask.
    pub fn set_event_mask(&self, low: u32, high: u32) -> HRESULT {
        // Safety: slots from corprof.idl; self.ptr is a live ICorProfilerInfo3+.
        unsafe {
            if self.v5 {
                let f: Fn2<u32, u32> = method(self.ptr, 82);
                f(self.ptr, low, high)
            } else {
                let f: Fn1<u32> = method(self.ptr, 16);
                f(self.ptr, low)
            }
        }
    }

    /// `ForceGC` (slot 28): a full blocking GC, now. Must be called from a
    /// thread that has never run managed code, outside any callback.
    pub fn force_gc(&self) -> HRESULT {
        // Safety: slot from corprof.idl; takes no arguments.
        unsafe {
            let f: extern "system" fn(*mut c_void) -> HRESULT = method(self.ptr, 28);
            f(self.ptr)
        }
    }

    /// `SetEnterLeaveFunctionHooks3` (slot 61).
    pub fn set_enter_leave_hooks3(&self, enter: usize, leave: usize, tailcall: usize) -> HRESULT {
        // Safety: slot from corprof.idl.
        unsafe {
            let f: Fn3<usize, usize, usize> = method(self.ptr, 61);
            f(self.ptr, enter, leave, tailcall)
        }
    }

    /// Object size: `GetObjectSize2` (slot 80) or `GetObjectSize` (slot 10).
    #[inline]
    pub fn object_size(&self, object: usize) -> Option<u64> {
        // The runtime answers the unpadded size of strings and arrays
        // (`System.String` of 3 characters: 28); the object takes that
        // rounded up to the pointer size on the heap, which is what the
        // program's own `GC.GetTotalAllocatedBytes` counts.
        const ALIGN: u64 = std::mem::size_of::<usize>() as u64;
        // Safety: slots from corprof.idl.
        let raw = unsafe {
            if self.v4 {
                let mut size: usize = 0;
                let f: Fn2<usize, *mut usize> = method(self.ptr, 80);
                (f(self.ptr, object, &mut size) == S_OK).then_some(size as u64)
            } else {
                let mut size: u32 = 0;
                let f: Fn2<usize, *mut u32> = method(self.ptr, 10);
                (f(self.ptr, object, &mut size) == S_OK).then_some(size as u64)
            }
        };
        raw.map(|s| s.div_ceil(ALIGN) * ALIGN)
    }

    /// `IsArrayClass` (slot 11): `Some((element type, element class, rank))`
    /// for an array class, `None` otherwise (or on failure).
    pub fn is_array_class(&self, class: usize) -> Option<(u32, usize, u32)> {
        let (mut et, mut base, mut rank) = (0u32, 0usize, 0u32);
        // Safety: slot from corprof.idl.
        let hr = unsafe {
            let f: Fn4<usize, *mut u32, *mut usize, *mut u32> = method(self.ptr, 11);
            f(self.ptr, class, &mut et, &mut base, &mut rank)
        };
        (hr == S_OK).then_some((et, base, rank))
    }

    /// `GetClassIDInfo2` (slot 41): module, typedef token, parent class and
    /// type arguments.
    pub fn class_info(&self, class: usize) -> Option<(usize, u32, usize, Vec<usize>)> {
        let (mut module, mut token, mut parent, mut count) = (0usize, 0u32, 0usize, 0u32);
        type F = extern "system" fn(*mut c_void, usize, *mut usize, *mut u32, *mut usize, u32, *mut u32, *mut usize) -> HRESULT;
        // Safety: slot from corprof.idl; buffers sized as passed.
        unsafe {
            let f: F = method(self.ptr, 41);
            if !com::succeeded(f(self.ptr, class, &mut module, &mut token, &mut parent, 0, &mut count, std::ptr::null_mut())) {
                return None;
            }
            let mut args = vec![0usize; count as usize];
            if count > 0 {
                let mut got = 0u32;
                if !com::succeeded(f(self.ptr, class, &mut module, &mut token, &mut parent, count, &mut got, args.as_mut_ptr())) {
                    args.clear();
                } else {
                    args.truncate(got as usize);
                }
            }
            Some((module, token, parent, args))
        }
    }

    /// `GetStaticFieldInfo` (slot 53): the field's `COR_PRF_STATIC_TYPE`
    /// bits (1 app domain, 2 thread, 4 context, 8 RVA; 0 not a static).
    pub fn static_field_kind(&self, class: usize, field: u32) -> Option<u32> {
        let mut kind = 0u32;
        // Safety: slot from corprof.idl.
        let hr = unsafe {
            let f: Fn3<usize, u32, *mut u32> = method(self.ptr, 53);
            f(self.ptr, class, field, &mut kind)
        };
        com::succeeded(hr).then_some(kind)
    }

    /// `GetAppDomainStaticAddress` (slot 50): where an app-domain static
    /// lives (`None` before the class is initialized). Callable during a
    /// GC (it does not trigger one).
    pub fn app_domain_static_address(&self, class: usize, field: u32, domain: usize) -> Option<usize> {
        let mut address: usize = 0;
        // Safety: slot from corprof.idl.
        let hr = unsafe {
            let f: Fn4<usize, u32, usize, *mut usize> = method(self.ptr, 50);
            f(self.ptr, class, field, domain, &mut address)
        };
        (hr == S_OK && address != 0).then_some(address)
    }

    /// `GetAppDomainsContainingModule` (slot 69): the first app domain
    /// holding the module (CoreCLR has one).
    pub fn module_app_domain(&self, module: usize) -> Option<usize> {
        let mut ids = [0usize; 4];
        let mut count = 0u32;
        // Safety: slot from corprof.idl; the buffer holds 4 ids.
        let hr = unsafe {
            let f: Fn4<usize, u32, *mut u32, *mut usize> = method(self.ptr, 69);
            f(self.ptr, module, ids.len() as u32, &mut count, ids.as_mut_ptr())
        };
        (com::succeeded(hr) && count > 0).then_some(ids[0]).filter(|&d| d != 0)
    }

    /// `GetFunctionInfo2` (slot 38) without frame info: class, module,
    /// token and method type arguments.
    pub fn function_info(&self, func: usize) -> Option<(usize, usize, u32, Vec<usize>)> {
        let (mut class, mut module, mut token, mut count) = (0usize, 0usize, 0u32, 0u32);
        type F = extern "system" fn(*mut c_void, usize, usize, *mut usize, *mut usize, *mut u32, u32, *mut u32, *mut usize) -> HRESULT;
        // Safety: slot from corprof.idl; buffers sized as passed.
        unsafe {
            let f: F = method(self.ptr, 38);
            if !com::succeeded(f(self.ptr, func, 0, &mut class, &mut module, &mut token, 0, &mut count, std::ptr::null_mut())) {
                return None;
            }
            let mut args = vec![0usize; count as usize];
            if count > 0 {
                let mut got = 0u32;
                if com::succeeded(f(self.ptr, func, 0, &mut class, &mut module, &mut token, count, &mut got, args.as_mut_ptr())) {
                    args.truncate(got as usize);
                } else {
                    args.clear();
                }
            }
            Some((class, module, token, args))
        }
    }

    /// `GetCodeInfo` (slot 5): start and size of the function's code.
    pub fn code_info(&self, func: usize) -> (usize, u32) {
        let (mut start, mut size) = (0usize, 0u32);
        // Safety: slot from corprof.idl.
        let hr = unsafe {
            let f: Fn3<usize, *mut usize, *mut u32> = method(self.ptr, 5);
            f(self.ptr, func, &mut start, &mut size)
        };
        if com::succeeded(hr) {
            (start, size)
        } else {
            (0, 0)
        }
    }

    /// `GetModuleInfo` (slot 20): base address and name (a file path).
    pub fn module_info(&self, module: usize) -> Option<(usize, String)> {
        let mut base = 0usize;
        let mut name = [0u16; 1024];
        let mut len = 0u32;
        let mut assembly = 0usize;
        type F = extern "system" fn(*mut c_void, usize, *mut usize, u32, *mut u32, *mut u16, *mut usize) -> HRESULT;
        // Safety: slot from corprof.idl; the buffer holds 1024 units.
        let hr = unsafe {
            let f: F = method(self.ptr, 20);
            f(self.ptr, module, &mut base, name.len() as u32, &mut len, name.as_mut_ptr(), &mut assembly)
        };
        com::succeeded(hr).then(|| (base, wide(&name, len)))
    }

    /// `GetAssemblyInfo` (slot 26): the assembly's name.
    pub fn assembly_name(&self, assembly: usize) -> Option<String> {
        let mut name = [0u16; 1024];
        let mut len = 0u32;
        let (mut domain, mut module) = (0usize, 0usize);
        type F = extern "system" fn(*mut c_void, usize, u32, *mut u32, *mut u16, *mut usize, *mut usize) -> HRESULT;
        // Safety: slot from corprof.idl; the buffer holds 1024 units.
        let hr = unsafe {
            let f: F = method(self.ptr, 26);
            f(self.ptr, assembly, name.len() as u32, &mut len, name.as_mut_ptr(), &mut domain, &mut module)
        };
        com::succeeded(hr).then(|| wide(&name, len))
    }

    /// `GetModuleMetaData` (slot 21) for reading.
    pub fn module_metadata(&self, module: usize) -> Option<MetaData> {
        let mut out: *mut c_void = std::ptr::null_mut();
        // Safety: slot from corprof.idl.
        let hr = unsafe {
            let f: Fn4<usize, u32, *const Guid, *mut *mut c_void> = method(self.ptr, 21);
            f(self.ptr, module, 0, &IID_IMETADATAIMPORT, &mut out)
        };
        (hr == S_OK && !out.is_null()).then_some(MetaData { ptr: out })
    }

    /// `GetTokenAndMetaDataFromFunction` (slot 19).
    pub fn function_metadata(&self, func: usize) -> Option<(MetaData, u32)> {
        let mut out: *mut c_void = std::ptr::null_mut();
        let mut token = 0u32;
        // Safety: slot from corprof.idl.
        let hr = unsafe {
            let f: Fn4<usize, *const Guid, *mut *mut c_void, *mut u32> = method(self.ptr, 19);
            f(self.ptr, func, &IID_IMETADATAIMPORT, &mut out, &mut token)
        };
        (com::succeeded(hr) && !out.is_null()).then_some((MetaData { ptr: out }, token))
    }

    /// `GetGenerationBounds` (slot 54).
    pub fn generation_bounds(&self) -> Vec<GenerationRange> {
        let mut cap = 64usize;
        loop {
            let mut ranges = vec![GenerationRange::default(); cap];
            let mut count = 0u32;
            // Safety: slot from corprof.idl; the buffer holds `cap` ranges.
            let hr = unsafe {
                let f: Fn3<u32, *mut u32, *mut GenerationRange> = method(self.ptr, 54);
                f(self.ptr, cap as u32, &mut count, ranges.as_mut_ptr())
            };
            if hr != S_OK {
                return Vec::new();
            }
            if (count as usize) <= cap {
                ranges.truncate(count as usize);
                return ranges;
            }
            cap = count as usize;
        }
    }

    /// `DoStackSnapshot` (slot 36) on the current thread.
    pub fn stack_snapshot(&self, callback: StackSnapshotCallback, data: *mut c_void) -> HRESULT {
        type F = extern "system" fn(*mut c_void, usize, StackSnapshotCallback, u32, *mut c_void, *mut u8, u32) -> HRESULT;
        // Safety: slot from corprof.idl; `data` is passed through to `callback`.
        unsafe {
            let f: F = method(self.ptr, 36);
            f(self.ptr, 0, callback, 0, data, std::ptr::null_mut(), 0)
        }
    }
}

/// Converts a runtime-filled wide string (length may count the NUL).
pub fn wide(buf: &[u16], len: u32) -> String {
    let n = (len as usize).min(buf.len());
    let s = &buf[..n];
    let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
    String::from_utf16_lossy(&s[..end])
}

/// A held `IMetaDataImport`, released on drop.
pub struct MetaData {
    ptr: *mut c_void,
}

/// `mdTypeDefNil`.
pub const MD_TYPEDEF_NIL: u32 = 0x0200_0000;

impl Drop for MetaData {
    fn drop(&mut self) {
        // Safety: we own one reference.
        unsafe { com::release(self.ptr) }
    }
}

impl MetaData {
    /// `GetTypeDefProps` (slot 12): name, flags and base type token.
    pub fn type_def_props(&self, token: u32) -> Option<(String, u32, u32)> {
        let mut name = [0u16; 1024];
        let (mut len, mut flags, mut extends) = (0u32, 0u32, 0u32);
        type F = extern "system" fn(*mut c_void, u32, *mut u16, u32, *mut u32, *mut u32, *mut u32) -> HRESULT;
        // Safety: slot from cor.h; the buffer holds 1024 units.
        let hr = unsafe {
            let f: F = method(self.ptr, 12);
            f(self.ptr, token, name.as_mut_ptr(), name.len() as u32, &mut len, &mut flags, &mut extends)
        };
        com::succeeded(hr).then(|| (wide(&name, len), flags, extends))
    }

    /// `GetTypeRefProps` (slot 14): the referenced type's name.
    pub fn type_ref_name(&self, token: u32) -> Option<String> {
        let mut name = [0u16; 1024];
        let (mut scope, mut len) = (0u32, 0u32);
        type F = extern "system" fn(*mut c_void, u32, *mut u32, *mut u16, u32, *mut u32) -> HRESULT;
        // Safety: slot from cor.h; the buffer holds 1024 units.
        let hr = unsafe {
            let f: F = method(self.ptr, 14);
            f(self.ptr, token, &mut scope, name.as_mut_ptr(), name.len() as u32, &mut len)
        };
        com::succeeded(hr).then(|| wide(&name, len))
    }

    /// `GetNestedClassProps` (slot 62): the enclosing class.
    pub fn enclosing_class(&self, token: u32) -> Option<u32> {
        let mut outer = 0u32;
        // Safety: slot from cor.h.
        let hr = unsafe {
            let f: Fn2<u32, *mut u32> = method(self.ptr, 62);
            f(self.ptr, token, &mut outer)
        };
        com::succeeded(hr).then_some(outer)
    }

    /// `GetMethodProps` (slot 30): class token, name, attributes, signature.
    pub fn method_props(&self, token: u32) -> Option<(u32, String, u32, Vec<u8>)> {
        let mut name = [0u16; 1024];
        let (mut class, mut len, mut attr, mut sig_len, mut rva, mut impl_flags) = (0u32, 0u32, 0u32, 0u32, 0u32, 0u32);
        let mut sig: *const u8 = std::ptr::null();
        type F = extern "system" fn(
            *mut c_void, u32, *mut u32, *mut u16, u32, *mut u32, *mut u32, *mut *const u8, *mut u32, *mut u32, *mut u32,
        ) -> HRESULT;
        // Safety: slot from cor.h; the buffer holds 1024 units; the
        // signature blob lives as long as the metadata and is copied here.
        unsafe {
            let f: F = method(self.ptr, 30);
            let hr = f(
                self.ptr, token, &mut class, name.as_mut_ptr(), name.len() as u32, &mut len, &mut attr, &mut sig, &mut sig_len,
                &mut rva, &mut impl_flags,
            );
            if !com::succeeded(hr) {
                return None;
            }
            let blob = if sig.is_null() { Vec::new() } else { std::slice::from_raw_parts(sig, sig_len as usize).to_vec() };
            Some((class, wide(&name, len), attr, blob))
        }
    }

    /// `EnumMethodsWithName` (slot 19) + `CloseEnum` (slot 3).
    pub fn methods_named(&self, class: u32, name: &str) -> Vec<u32> {
        let wname: Vec<u16> = name.encode_utf16().chain(std::iter::once(0)).collect();
        let mut handle: usize = 0;
        let mut tokens = [0u32; 32];
        let mut count = 0u32;
        type F = extern "system" fn(*mut c_void, *mut usize, u32, *const u16, *mut u32, u32, *mut u32) -> HRESULT;
        // Safety: slots from cor.h; buffers sized as passed; the enum is closed.
        unsafe {
            let f: F = method(self.ptr, 19);
            let hr = f(self.ptr, &mut handle, class, wname.as_ptr(), tokens.as_mut_ptr(), tokens.len() as u32, &mut count);
            self.close_enum(handle);
            if !com::succeeded(hr) {
                return Vec::new();
            }
        }
        tokens[..(count as usize).min(tokens.len())].to_vec()
    }

    /// `EnumParams` (slot 22): how many parameter rows a method has.
    pub fn param_count(&self, method_token: u32) -> Option<u32> {
        let mut handle: usize = 0;
        let mut params = [0u32; 32];
        let mut count = 0u32;
        type F = extern "system" fn(*mut c_void, *mut usize, u32, *mut u32, u32, *mut u32) -> HRESULT;
        // Safety: slots from cor.h; buffers sized as passed; the enum is closed.
        unsafe {
            let f: F = method(self.ptr, 22);
            let hr = f(self.ptr, &mut handle, method_token, params.as_mut_ptr(), params.len() as u32, &mut count);
            self.close_enum(handle);
            com::succeeded(hr).then_some(count)
        }
    }

    /// `EnumTypeDefs` (slot 6): every type defined in the module.
    pub fn type_defs(&self) -> Vec<u32> {
        let mut handle: usize = 0;
        let mut out = Vec::new();
        let mut tokens = [0u32; 256];
        type F = extern "system" fn(*mut c_void, *mut usize, *mut u32, u32, *mut u32) -> HRESULT;
        // Safety: slots from cor.h; buffers sized as passed; the enum is closed.
        unsafe {
            let f: F = method(self.ptr, 6);
            loop {
                let mut count = 0u32;
                let hr = f(self.ptr, &mut handle, tokens.as_mut_ptr(), tokens.len() as u32, &mut count);
                let n = (count as usize).min(tokens.len());
                out.extend_from_slice(&tokens[..n]);
                if hr != S_OK || n == 0 {
                    break;
                }
            }
            self.close_enum(handle);
        }
        out
    }

    /// `EnumFields` (slot 20): the fields a type defines.
    pub fn fields(&self, class: u32) -> Vec<u32> {
        let mut handle: usize = 0;
        let mut out = Vec::new();
        let mut tokens = [0u32; 128];
        type F = extern "system" fn(*mut c_void, *mut usize, u32, *mut u32, u32, *mut u32) -> HRESULT;
        // Safety: slots from cor.h; buffers sized as passed; the enum is closed.
        unsafe {
            let f: F = method(self.ptr, 20);
            loop {
                let mut count = 0u32;
                let hr = f(self.ptr, &mut handle, class, tokens.as_mut_ptr(), tokens.len() as u32, &mut count);
                let n = (count as usize).min(tokens.len());
                out.extend_from_slice(&tokens[..n]);
                if hr != S_OK || n == 0 {
                    break;
                }
            }
            self.close_enum(handle);
        }
        out
    }

    /// `GetFieldProps` (slot 57): name, attributes and signature.
    pub fn field_props(&self, token: u32) -> Option<(String, u32, Vec<u8>)> {
        let mut name = [0u16; 1024];
        let (mut class, mut len, mut attr, mut sig_len, mut ctype, mut value_len) = (0u32, 0u32, 0u32, 0u32, 0u32, 0u32);
        let mut sig: *const u8 = std::ptr::null();
        let mut value: *const c_void = std::ptr::null();
        type F = extern "system" fn(
            *mut c_void, u32, *mut u32, *mut u16, u32, *mut u32, *mut u32, *mut *const u8, *mut u32, *mut u32,
            *mut *const c_void, *mut u32,
        ) -> HRESULT;
        // Safety: slot from cor.h; the buffer holds 1024 units; the
        // signature blob lives as long as the metadata and is copied here.
        unsafe {
            let f: F = method(self.ptr, 57);
            let hr = f(
                self.ptr, token, &mut class, name.as_mut_ptr(), name.len() as u32, &mut len, &mut attr, &mut sig, &mut sig_len,
                &mut ctype, &mut value, &mut value_len,
            );
            if !com::succeeded(hr) {
                return None;
            }
            let blob = if sig.is_null() { Vec::new() } else { std::slice::from_raw_parts(sig, sig_len as usize).to_vec() };
            Some((wide(&name, len), attr, blob))
        }
    }

    fn close_enum(&self, handle: usize) {
        if handle == 0 {
            return;
        }
        // Safety: slot 3 is CloseEnum (returns void).
        unsafe {
            let f: extern "system" fn(*mut c_void, usize) = method(self.ptr, 3);
            f(self.ptr, handle);
        }
    }
}
