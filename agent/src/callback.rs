//! The profiler object: one static COM object answering
//! `ICorProfilerCallback` through `ICorProfilerCallback11`, with a vtable
//! of 98 slots (IUnknown's 3, then the methods of each version in
//! `corprof.idl` order). Callbacks the agent does not use share one
//! function returning S_OK: under the x86-64 and AArch64 C conventions a
//! function may ignore arguments its caller passes.

use crate::com::{self, Guid, E_FAIL, E_NOINTERFACE, HRESULT, S_OK};
use crate::config::{Config, StackMode};
use crate::info::{mask, Info};
use std::ffi::c_void;

const CALLBACK_IIDS: [Guid; 11] = [
    Guid::new(0x176FBED1, 0xA55C, 0x4796, [0x98, 0xCA, 0xA9, 0xDA, 0x0E, 0xF8, 0x83, 0xE7]),
    Guid::new(0x8A8CC829, 0xCCF2, 0x49fe, [0xBB, 0xAE, 0x0F, 0x02, 0x22, 0x28, 0x07, 0x1A]),
    Guid::new(0x4FD2ED52, 0x7731, 0x4b8d, [0x94, 0x69, 0x03, 0xD2, 0xCC, 0x30, 0x86, 0xC5]),
    Guid::new(0x7B63B2E3, 0x107D, 0x4d48, [0xB2, 0xF6, 0xF6, 0x1E, 0x22, 0x94, 0x70, 0xD2]),
    Guid::new(0x8DFBA405, 0x8C9F, 0x45F8, [0xBF, 0xFA, 0x83, 0xB1, 0x4C, 0xEF, 0x78, 0xB5]),
    Guid::new(0xFC13DF4B, 0x4448, 0x4F4F, [0x95, 0x0C, 0xBA, 0x8D, 0x19, 0xD0, 0x0C, 0x36]),
    Guid::new(0xF76A2DBA, 0x1D52, 0x4539, [0x86, 0x6C, 0x2A, 0xA5, 0x18, 0xF9, 0xEF, 0xC3]),
    Guid::new(0x5BED9B15, 0xC079, 0x4D47, [0xBF, 0xE2, 0x21, 0x5A, 0x14, 0x0C, 0x07, 0xE0]),
    Guid::new(0x27583EC3, 0xC8F5, 0x482F, [0x80, 0x52, 0x19, 0x4B, 0x8C, 0xE4, 0x70, 0x5A]),
    Guid::new(0xCEC5B60E, 0xC69C, 0x495F, [0x87, 0xF6, 0x84, 0xD2, 0x8E, 0xE1, 0x6F, 0xFB]),
    Guid::new(0x42350846, 0xAAED, 0x47F7, [0xB1, 0x28, 0xFD, 0x0C, 0x98, 0x88, 0x1C, 0xDE]),
];

/// Vtable slots (IUnknown's three included).
mod slot {
    pub const QUERY_INTERFACE: usize = 0;
    pub const ADD_REF: usize = 1;
    pub const RELEASE: usize = 2;
    pub const INITIALIZE: usize = 3;
    pub const SHUTDOWN: usize = 4;
    pub const ASSEMBLY_LOAD_FINISHED: usize = 10;
    pub const MODULE_LOAD_FINISHED: usize = 14;
    pub const CLASS_LOAD_FINISHED: usize = 19;
    pub const JIT_COMPILATION_FINISHED: usize = 24;
    pub const JIT_CACHED_FUNCTION_SEARCH_FINISHED: usize = 26;
    pub const OBJECT_ALLOCATED: usize = 50;
    pub const OBJECT_REFERENCES: usize = 52;
    pub const ROOT_REFERENCES2: usize = 77;
    pub const EXCEPTION_THROWN: usize = 54;
    pub const EXCEPTION_SEARCH_FUNCTION_ENTER: usize = 55;
    pub const EXCEPTION_SEARCH_FUNCTION_LEAVE: usize = 56;
    pub const EXCEPTION_SEARCH_CATCHER_FOUND: usize = 59;
    pub const EXCEPTION_UNWIND_FUNCTION_ENTER: usize = 62;
    pub const EXCEPTION_UNWIND_FUNCTION_LEAVE: usize = 63;
    pub const GARBAGE_COLLECTION_STARTED: usize = 73;
    pub const GARBAGE_COLLECTION_FINISHED: usize = 75;
    pub const FINALIZEABLE_OBJECT_QUEUED: usize = 76;
    pub const HANDLE_CREATED: usize = 78;
    pub const HANDLE_DESTROYED: usize = 79;
    pub const INITIALIZE_FOR_ATTACH: usize = 80;
    pub const MOVED_REFERENCES2: usize = 87;
    pub const SURVIVING_REFERENCES2: usize = 88;
    pub const LOAD_AS_NOTIFICATION_ONLY: usize = 97;
    pub const COUNT: usize = 98;
}

#[repr(C)]
struct Vtbl([*const c_void; slot::COUNT]);

// Safety: the table is immutable function pointers.
unsafe impl Sync for Vtbl {}

#[repr(C)]
struct Profiler {
    vtbl: &'static Vtbl,
}

static VTBL: Vtbl = Vtbl(build_vtable());
static PROFILER: Profiler = Profiler { vtbl: &VTBL };

const fn build_vtable() -> [*const c_void; slot::COUNT] {
    let mut v = [ignored as *const c_void; slot::COUNT];
    v[slot::QUERY_INTERFACE] = query_interface as *const c_void;
    v[slot::ADD_REF] = com::static_add_ref as *const c_void;
    v[slot::RELEASE] = com::static_release as *const c_void;
    v[slot::INITIALIZE] = initialize as *const c_void;
    v[slot::SHUTDOWN] = shutdown as *const c_void;
    v[slot::ASSEMBLY_LOAD_FINISHED] = assembly_load_finished as *const c_void;
    v[slot::MODULE_LOAD_FINISHED] = module_load_finished as *const c_void;
    v[slot::CLASS_LOAD_FINISHED] = class_load_finished as *const c_void;
    v[slot::JIT_COMPILATION_FINISHED] = jit_compilation_finished as *const c_void;
    v[slot::JIT_CACHED_FUNCTION_SEARCH_FINISHED] = jit_cached_function_search_finished as *const c_void;
    v[slot::OBJECT_ALLOCATED] = object_allocated as *const c_void;
    v[slot::OBJECT_REFERENCES] = object_references as *const c_void;
    v[slot::EXCEPTION_THROWN] = exception_thrown as *const c_void;
    v[slot::EXCEPTION_SEARCH_FUNCTION_ENTER] = exception_search_function_enter as *const c_void;
    v[slot::EXCEPTION_SEARCH_FUNCTION_LEAVE] = exception_search_function_leave as *const c_void;
    v[slot::EXCEPTION_SEARCH_CATCHER_FOUND] = exception_search_catcher_found as *const c_void;
    v[slot::EXCEPTION_UNWIND_FUNCTION_ENTER] = exception_unwind_function_enter as *const c_void;
    v[slot::EXCEPTION_UNWIND_FUNCTION_LEAVE] = exception_unwind_function_leave as *const c_void;
    v[slot::GARBAGE_COLLECTION_STARTED] = garbage_collection_started as *const c_void;
    v[slot::GARBAGE_COLLECTION_FINISHED] = garbage_collection_finished as *const c_void;
    v[slot::FINALIZEABLE_OBJECT_QUEUED] = finalizeable_object_queued as *const c_void;
    v[slot::HANDLE_CREATED] = handle_created as *const c_void;
    v[slot::HANDLE_DESTROYED] = handle_destroyed as *const c_void;
    v[slot::INITIALIZE_FOR_ATTACH] = initialize_for_attach as *const c_void;
    v[slot::ROOT_REFERENCES2] = root_references2 as *const c_void;
    v[slot::MOVED_REFERENCES2] = moved_references2 as *const c_void;
    v[slot::SURVIVING_REFERENCES2] = surviving_references2 as *const c_void;
    v[slot::LOAD_AS_NOTIFICATION_ONLY] = load_as_notification_only as *const c_void;
    v
}

/// Answers `QueryInterface` for the profiler object.
///
/// # Safety
/// `out` must be writable.
pub unsafe fn query_interface_static(iid: &Guid, out: *mut *mut c_void) -> HRESULT {
    // Safety: forwarded from the caller.
    unsafe {
        if *iid == com::IID_IUNKNOWN || CALLBACK_IIDS.contains(iid) {
            *out = &PROFILER as *const Profiler as *mut c_void;
            S_OK
        } else {
            *out = std::ptr::null_mut();
            E_NOINTERFACE
        }
    }
}

extern "system" fn query_interface(_this: *mut c_void, riid: *const Guid, out: *mut *mut c_void) -> HRESULT {
    crate::guard(E_FAIL, || {
        if riid.is_null() || out.is_null() {
            return com::E_POINTER;
        }
        // Safety: checked non-null; the runtime passes valid pointers.
        unsafe { query_interface_static(&*riid, out) }
    })
}

extern "system" fn ignored(_this: *mut c_void) -> HRESULT {
    S_OK
}

extern "system" fn initialize(_this: *mut c_void, unknown: *mut c_void) -> HRESULT {
    crate::guard(E_FAIL, || {
        if unknown.is_null() {
            return E_FAIL;
        }
        // Safety: the runtime passes its info object.
        let Some(info) = (unsafe { Info::from_unknown(unknown) }) else {
            eprintln!("clrprof agent: the runtime offers no ICorProfilerInfo3; not profiling");
            crate::status::report("error the runtime offers no ICorProfilerInfo3 (it is older than .NET Core 3.0)");
            return E_FAIL;
        };
        let mut config = Config::from_env();
        if config.stacks == StackMode::Shadow && crate::hooks::hook_addresses(false).is_none() {
            config.stacks = StackMode::Snapshot;
        }
        let mut low = mask::OBJECT_ALLOCATED
            | mask::ENABLE_OBJECT_ALLOCATED
            | mask::GC
            | mask::MODULE_LOADS
            | mask::ASSEMBLY_LOADS
            | mask::CLASS_LOADS
            | mask::EXCEPTIONS;
        if config.hooks() {
            low |= mask::ENTERLEAVE;
        }
        if config.stacks == StackMode::Snapshot {
            low |= mask::ENABLE_STACK_SNAPSHOT;
        }
        if config.calls {
            // The enter hook cannot name functions (the runtime refuses most
            // calls there): name them when they are compiled or found
            // precompiled, as CLRProfiler does.
            low |= mask::JIT_COMPILATION | mask::CACHE_SEARCHES;
        }
        if config.no_inlining {
            low |= mask::DISABLE_INLINING;
        }
        let hooks = config.hooks();
        let agent = match crate::agent::Agent::install(info, config) {
            Ok(a) => a,
            Err(e) => {
                eprintln!("clrprof agent: {e}; not profiling");
                crate::status::report(&format!("error {e}"));
                return E_FAIL;
            }
        };
        // The destination after install: a default name may have had to
        // take a suffix.
        let started = format!(
            "ok stacks={} calls={} {}",
            agent.config.stack_name(),
            u8::from(agent.config.calls),
            agent.config.destination()
        );
        // Enter/leave hooks make the runtime pass over precompiled
        // (ReadyToRun) code, so the whole framework runs as tier-0 JIT code,
        // which does not expand some intrinsics: on .NET 8
        // `RuntimeHelpers.CreateSpan` (number formatting's lookup tables)
        // becomes a call allocating a `RuntimeFieldInfoStub` each time. With
        // tiering off every method is compiled once, optimized, and allocates
        // what the precompiled code would (agent/tests/fidelity.rs).
        let high = if hooks { mask::HIGH_DISABLE_TIERED_COMPILATION } else { 0 };
        let hr = agent.info.set_event_mask(low, high);
        agent.event_mask.store(low, std::sync::atomic::Ordering::Release);
        if !com::succeeded(hr) {
            eprintln!("clrprof agent: SetEventMask failed (0x{:08x}); not profiling", hr as u32);
            crate::status::report(&format!("error SetEventMask failed (0x{:08x})", hr as u32));
            return hr;
        }
        if hooks {
            if let Some((enter, leave, tail)) = crate::hooks::hook_addresses(agent.config.calls) {
                let hr = agent.info.set_enter_leave_hooks3(enter, leave, tail);
                if !com::succeeded(hr) {
                    eprintln!("clrprof agent: SetEnterLeaveFunctionHooks3 failed (0x{:08x})", hr as u32);
                }
            }
        }
        crate::status::report(&started);
        S_OK
    })
}

/// Loaded into a running process (the diagnostics IPC's AttachProfiler).
/// Settings come as `KEY=VALUE` lines in the client data. Only what the
/// runtime allows after start-up is enabled: GC events (moves,
/// survivals, finalization, handles, heap walks) and module loads; never
/// allocations or enter/leave hooks. Without `CLRPROF_OUTPUT` the agent
/// keeps no log (it writes dumps into files of their own). GC events can
/// only be switched on here (the runtime then turns concurrent GC off),
/// so they stay on for as long as the process runs.
extern "system" fn initialize_for_attach(_this: *mut c_void, unknown: *mut c_void, data: *const u8, len: u32) -> HRESULT {
    crate::guard(E_FAIL, || {
        if unknown.is_null() {
            return E_FAIL;
        }
        if crate::agent::get().is_some() {
            return E_FAIL;
        }
        // Safety: the runtime passes its info object.
        let Some(info) = (unsafe { Info::from_unknown(unknown) }) else {
            eprintln!("clrprof agent: the runtime offers no ICorProfilerInfo3; not attaching");
            return E_FAIL;
        };
        let data: &[u8] = if data.is_null() || len == 0 {
            &[]
        } else {
            // Safety: the runtime passes `len` bytes of client data.
            unsafe { std::slice::from_raw_parts(data, len as usize) }
        };
        let config = Config::from_client_data(data, std::process::id());
        let recording = config.output.is_some();
        let agent = match crate::agent::Agent::install(info, config) {
            Ok(a) => a,
            Err(e) => {
                eprintln!("clrprof agent: {e}; not attaching");
                return E_FAIL;
            }
        };
        let mask = if recording { mask::GC | mask::MODULE_LOADS | mask::ASSEMBLY_LOADS } else { mask::GC };
        agent.event_mask.store(mask, std::sync::atomic::Ordering::Release);
        let hr = agent.info.set_event_mask(mask, 0);
        if !com::succeeded(hr) {
            eprintln!("clrprof agent: SetEventMask after attach failed (0x{:08x})", hr as u32);
            return hr;
        }
        S_OK
    })
}

extern "system" fn load_as_notification_only(_this: *mut c_void, only: *mut i32) -> HRESULT {
    if !only.is_null() {
        // Safety: checked non-null.
        unsafe { *only = 0 };
    }
    S_OK
}

extern "system" fn shutdown(_this: *mut c_void) -> HRESULT {
    crate::guard(S_OK, || {
        if let Some(a) = crate::agent::get() {
            a.shutdown();
        }
        S_OK
    })
}

extern "system" fn assembly_load_finished(_this: *mut c_void, assembly: usize, _hr: HRESULT) -> HRESULT {
    crate::guard(S_OK, || {
        if let Some(a) = crate::agent::get() {
            a.assembly_loaded(assembly);
        }
        S_OK
    })
}

extern "system" fn module_load_finished(_this: *mut c_void, module: usize, _hr: HRESULT) -> HRESULT {
    crate::guard(S_OK, || {
        if let Some(a) = crate::agent::get() {
            a.module_loaded(module);
        }
        S_OK
    })
}

extern "system" fn class_load_finished(_this: *mut c_void, class: usize, hr: HRESULT) -> HRESULT {
    crate::guard(S_OK, || {
        if let Some(a) = crate::agent::get() {
            if com::succeeded(hr) {
                a.statics.class_loaded(class);
            }
        }
        S_OK
    })
}

extern "system" fn jit_compilation_finished(_this: *mut c_void, func: usize, hr: HRESULT) -> HRESULT {
    crate::guard(S_OK, || {
        if let Some(a) = crate::agent::get() {
            if com::succeeded(hr) {
                a.function_seen(func);
            }
        }
        S_OK
    })
}

extern "system" fn jit_cached_function_search_finished(_this: *mut c_void, func: usize, result: u32) -> HRESULT {
    crate::guard(S_OK, || {
        if let Some(a) = crate::agent::get() {
            // COR_PRF_CACHED_FUNCTION_FOUND is 0.
            if result == 0 {
                a.function_seen(func);
            }
        }
        S_OK
    })
}

extern "system" fn object_allocated(_this: *mut c_void, object: usize, class: usize) -> HRESULT {
    crate::guard(S_OK, || {
        if let Some(a) = crate::agent::get() {
            a.allocated(object, class);
        }
        S_OK
    })
}

extern "system" fn object_references(_this: *mut c_void, object: usize, class: usize, count: u32, refs: *const usize) -> HRESULT {
    // Failing stops the runtime's per-object reports for this GC: outside
    // a heap dump the walk costs nothing more.
    crate::guard(E_FAIL, || {
        let Some(a) = crate::agent::get() else { return E_FAIL };
        // Safety: the runtime passes `count` object ids.
        if a.object_references(object, class, unsafe { slice(refs, count) }) {
            S_OK
        } else {
            E_FAIL
        }
    })
}

extern "system" fn root_references2(
    _this: *mut c_void,
    count: u32,
    refs: *const usize,
    kinds: *const u32,
    flags: *const u32,
    ids: *const usize,
) -> HRESULT {
    crate::guard(S_OK, || {
        if let Some(a) = crate::agent::get() {
            // Safety: parallel arrays of `count` entries.
            unsafe { a.root_references(slice(refs, count), slice(kinds, count), slice(flags, count), slice(ids, count)) };
        }
        S_OK
    })
}

extern "system" fn exception_thrown(_this: *mut c_void, _object: usize) -> HRESULT {
    crate::guard(S_OK, || {
        // An unhandled exception ends the process without Shutdown: write
        // what is buffered now (the search below may find it unhandled).
        crate::hooks::search_start();
        if let Some(a) = crate::agent::get() {
            a.flush();
        }
        S_OK
    })
}

extern "system" fn exception_search_function_enter(_this: *mut c_void, func: usize) -> HRESULT {
    crate::guard(S_OK, || {
        crate::hooks::search_enter(func);
        S_OK
    })
}

extern "system" fn exception_search_catcher_found(_this: *mut c_void, _func: usize) -> HRESULT {
    crate::guard(S_OK, || {
        crate::hooks::search_caught();
        S_OK
    })
}

extern "system" fn exception_search_function_leave(_this: *mut c_void) -> HRESULT {
    crate::guard(S_OK, || {
        // The search left the thread's outermost managed frame without a
        // catcher: the runtime reports the exception unhandled and aborts,
        // without `Shutdown` (and .NET 8 puts SIGABRT's default action
        // back first, so the agent's handler does not run): end the log
        // now (shadow stacks only: the other modes keep no stack).
        if crate::hooks::search_leave() {
            if let Some(a) = crate::agent::get() {
                a.end("an unhandled exception");
            }
        }
        S_OK
    })
}

extern "system" fn exception_unwind_function_enter(_this: *mut c_void, func: usize) -> HRESULT {
    crate::guard(S_OK, || {
        crate::hooks::unwind_enter(func);
        S_OK
    })
}

extern "system" fn exception_unwind_function_leave(_this: *mut c_void) -> HRESULT {
    crate::guard(S_OK, || {
        crate::hooks::unwind_leave();
        S_OK
    })
}

extern "system" fn garbage_collection_started(_this: *mut c_void, count: i32, collected: *const i32, reason: i32) -> HRESULT {
    crate::guard(S_OK, || {
        let Some(a) = crate::agent::get() else { return S_OK };
        let gens: Vec<bool> = if collected.is_null() || count <= 0 {
            Vec::new()
        } else {
            // Safety: the runtime passes `count` BOOLs.
            unsafe { std::slice::from_raw_parts(collected, count as usize) }.iter().map(|&b| b != 0).collect()
        };
        a.gc_started(&gens, reason == 1);
        S_OK
    })
}

extern "system" fn garbage_collection_finished(_this: *mut c_void) -> HRESULT {
    crate::guard(S_OK, || {
        if let Some(a) = crate::agent::get() {
            a.gc_finished();
        }
        S_OK
    })
}

extern "system" fn finalizeable_object_queued(_this: *mut c_void, flags: u32, object: usize) -> HRESULT {
    crate::guard(S_OK, || {
        if let Some(a) = crate::agent::get() {
            a.finalizer_queued(flags, object);
        }
        S_OK
    })
}

extern "system" fn handle_created(_this: *mut c_void, handle: usize, object: usize) -> HRESULT {
    crate::guard(S_OK, || {
        if let Some(a) = crate::agent::get() {
            a.handle_created(handle, object);
        }
        S_OK
    })
}

extern "system" fn handle_destroyed(_this: *mut c_void, handle: usize) -> HRESULT {
    crate::guard(S_OK, || {
        if let Some(a) = crate::agent::get() {
            a.handle_destroyed(handle);
        }
        S_OK
    })
}

/// # Safety
/// The runtime passes `count` entries in each array.
unsafe fn slice<'a, T>(p: *const T, count: u32) -> &'a [T] {
    if p.is_null() || count == 0 {
        &[]
    } else {
        // Safety: forwarded from the caller.
        unsafe { std::slice::from_raw_parts(p, count as usize) }
    }
}

extern "system" fn moved_references2(
    _this: *mut c_void,
    count: u32,
    old: *const usize,
    new: *const usize,
    len: *const usize,
) -> HRESULT {
    crate::guard(S_OK, || {
        if let Some(a) = crate::agent::get() {
            // Safety: parallel arrays of `count` entries.
            unsafe { a.moved(slice(old, count), slice(new, count), slice(len, count)) };
        }
        S_OK
    })
}

extern "system" fn surviving_references2(_this: *mut c_void, count: u32, start: *const usize, len: *const usize) -> HRESULT {
    crate::guard(S_OK, || {
        if let Some(a) = crate::agent::get() {
            // Safety: parallel arrays of `count` entries.
            unsafe { a.survived(slice(start, count), slice(len, count)) };
        }
        S_OK
    })
}
