//! COM basics: GUIDs, HRESULTs, calling a method through a vtable, and the
//! class factory the runtime asks for through `DllGetClassObject`.

use std::ffi::c_void;

/// A COM HRESULT.
pub type HRESULT = i32;
/// Success.
pub const S_OK: HRESULT = 0;
/// Success, "false" answer.
pub const S_FALSE: HRESULT = 1;
/// No such interface.
pub const E_NOINTERFACE: HRESULT = 0x8000_4002_u32 as i32;
/// Generic failure.
pub const E_FAIL: HRESULT = 0x8000_4005_u32 as i32;
/// Invalid pointer.
pub const E_POINTER: HRESULT = 0x8000_4003_u32 as i32;
/// Aggregation is not supported.
pub const CLASS_E_NOAGGREGATION: HRESULT = 0x8004_0110_u32 as i32;
/// The class is not available from this library.
pub const CLASS_E_CLASSNOTAVAILABLE: HRESULT = 0x8004_0111_u32 as i32;

/// True for a success code.
#[inline]
pub fn succeeded(hr: HRESULT) -> bool {
    hr >= 0
}

/// A COM GUID, laid out as Windows lays it out.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Guid {
    /// First 32 bits.
    pub data1: u32,
    /// Next 16 bits.
    pub data2: u16,
    /// Next 16 bits.
    pub data3: u16,
    /// Last 64 bits, as bytes.
    pub data4: [u8; 8],
}

impl Guid {
    /// Builds a GUID from its usual textual parts.
    pub const fn new(d1: u32, d2: u16, d3: u16, d4: [u8; 8]) -> Guid {
        Guid { data1: d1, data2: d2, data3: d3, data4: d4 }
    }
}

impl std::fmt::Display for Guid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let d = &self.data4;
        write!(
            f,
            "{{{:08X}-{:04X}-{:04X}-{:02X}{:02X}-{:02X}{:02X}{:02X}{:02X}{:02X}{:02X}}}",
            self.data1, self.data2, self.data3, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]
        )
    }
}

/// The agent's class id: what `CORECLR_PROFILER` must name (with braces).
pub const CLSID_CLRPROF_AGENT: Guid =
    Guid::new(0xbc620a3a, 0xb286, 0x4c9c, [0x81, 0x38, 0x25, 0x6e, 0xe4, 0x4f, 0x80, 0x2d]);

/// `IUnknown`.
pub const IID_IUNKNOWN: Guid = Guid::new(0, 0, 0, [0xC0, 0, 0, 0, 0, 0, 0, 0x46]);
/// `IClassFactory`.
pub const IID_ICLASSFACTORY: Guid = Guid::new(1, 0, 0, [0xC0, 0, 0, 0, 0, 0, 0, 0x46]);

/// Reads entry `index` of the vtable of the COM object `this` as a function
/// pointer of type `F`.
///
/// # Safety
/// `this` must be a live COM object whose vtable has at least `index + 1`
/// entries, and `F` must be the exact `extern "system"` type of that entry.
#[inline]
pub unsafe fn method<F: Copy>(this: *mut c_void, index: usize) -> F {
    debug_assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<usize>());
    // Safety: the caller guarantees `this` is a COM object (its first word
    // is a pointer to its vtable) with enough entries.
    unsafe {
        let vtbl = *(this as *const *const usize);
        let entry = vtbl.add(index);
        std::mem::transmute_copy::<usize, F>(&*entry)
    }
}

/// Calls `IUnknown::Release` on a COM object.
///
/// # Safety
/// `this` must be a live COM object the caller owns one reference to.
pub unsafe fn release(this: *mut c_void) {
    if this.is_null() {
        return;
    }
    // Safety: slot 2 of every COM vtable is Release.
    unsafe {
        let f: extern "system" fn(*mut c_void) -> u32 = method(this, 2);
        f(this);
    }
}

/// Calls `IUnknown::QueryInterface`, returning the interface or null.
///
/// # Safety
/// `this` must be a live COM object.
pub unsafe fn query_interface(this: *mut c_void, iid: &Guid) -> *mut c_void {
    let mut out: *mut c_void = std::ptr::null_mut();
    // Safety: slot 0 of every COM vtable is QueryInterface.
    let hr = unsafe {
        let f: extern "system" fn(*mut c_void, *const Guid, *mut *mut c_void) -> HRESULT = method(this, 0);
        f(this, iid, &mut out)
    };
    if succeeded(hr) {
        out
    } else {
        std::ptr::null_mut()
    }
}

/// The class factory: one static object, never freed.
#[repr(C)]
pub struct ClassFactory {
    vtbl: *const ClassFactoryVtbl,
}

// Safety: the factory is immutable and its methods are thread-safe.
unsafe impl Sync for ClassFactory {}

#[repr(C)]
struct ClassFactoryVtbl {
    query_interface: extern "system" fn(*mut c_void, *const Guid, *mut *mut c_void) -> HRESULT,
    add_ref: extern "system" fn(*mut c_void) -> u32,
    release: extern "system" fn(*mut c_void) -> u32,
    create_instance: extern "system" fn(*mut c_void, *mut c_void, *const Guid, *mut *mut c_void) -> HRESULT,
    lock_server: extern "system" fn(*mut c_void, i32) -> HRESULT,
}

static FACTORY_VTBL: ClassFactoryVtbl = ClassFactoryVtbl {
    query_interface: factory_query_interface,
    add_ref: static_add_ref,
    release: static_release,
    create_instance: factory_create_instance,
    lock_server: factory_lock_server,
};

/// The one class factory.
pub static FACTORY: ClassFactory = ClassFactory { vtbl: &FACTORY_VTBL };

/// `AddRef` of a static object.
pub extern "system" fn static_add_ref(_this: *mut c_void) -> u32 {
    2
}

/// `Release` of a static object.
pub extern "system" fn static_release(_this: *mut c_void) -> u32 {
    1
}

extern "system" fn factory_query_interface(this: *mut c_void, riid: *const Guid, out: *mut *mut c_void) -> HRESULT {
    crate::guard(E_FAIL, || {
        if out.is_null() || riid.is_null() {
            return E_POINTER;
        }
        // Safety: checked non-null; the runtime passes valid pointers.
        unsafe {
            let iid = *riid;
            if iid == IID_IUNKNOWN || iid == IID_ICLASSFACTORY {
                *out = this;
                S_OK
            } else {
                *out = std::ptr::null_mut();
                E_NOINTERFACE
            }
        }
    })
}

extern "system" fn factory_create_instance(
    _this: *mut c_void,
    outer: *mut c_void,
    riid: *const Guid,
    out: *mut *mut c_void,
) -> HRESULT {
    crate::guard(E_FAIL, || {
        if out.is_null() || riid.is_null() {
            return E_POINTER;
        }
        if !outer.is_null() {
            return CLASS_E_NOAGGREGATION;
        }
        // Safety: checked non-null; the runtime passes valid pointers.
        unsafe { crate::callback::query_interface_static(&*riid, out) }
    })
}

extern "system" fn factory_lock_server(_this: *mut c_void, _lock: i32) -> HRESULT {
    S_OK
}

/// The exported entry point the runtime calls to get the class factory.
///
/// # Safety
/// Called by the runtime with valid pointers.
#[no_mangle]
pub unsafe extern "system" fn DllGetClassObject(
    rclsid: *const Guid,
    riid: *const Guid,
    ppv: *mut *mut c_void,
) -> HRESULT {
    crate::guard(E_FAIL, || {
        if rclsid.is_null() || riid.is_null() || ppv.is_null() {
            return E_POINTER;
        }
        // Safety: checked non-null; the runtime passes valid pointers.
        unsafe {
            *ppv = std::ptr::null_mut();
            if *rclsid != CLSID_CLRPROF_AGENT {
                return CLASS_E_CLASSNOTAVAILABLE;
            }
            let iid = *riid;
            if iid == IID_ICLASSFACTORY || iid == IID_IUNKNOWN {
                *ppv = &FACTORY as *const ClassFactory as *mut c_void;
                S_OK
            } else {
                E_NOINTERFACE
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guid_text() {
        assert_eq!(CLSID_CLRPROF_AGENT.to_string(), "{BC620A3A-B286-4C9C-8138-256EE44F802D}");
        assert_eq!(IID_ICLASSFACTORY.to_string(), "{00000001-0000-0000-C000-000000000046}");
    }
}
