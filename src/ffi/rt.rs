//! `acl/acl_rt.h`: the emulated AscendCL runtime (devices, contexts, streams, memory).
//! The logic is in crate::runtime; every handle is checked against the live ones first, so
//! a wrong or destroyed handle is ACL_ERROR_INVALID_PARAM, never a crash.

use super::base::{aclError, aclrtStream};
use super::{fill, invalid, runtime_call};
use std::ffi::c_void;

/// A context: a device bound to the threads that make it current.
pub type aclrtContext = *mut c_void;

/// Where the program runs (`aclrtGetRunMode`).
#[repr(C)]
pub enum aclrtRunModeValues {
    ACL_DEVICE = 0,
    ACL_HOST = 1,
}

/// The direction of an `aclrtMemcpy` (all are plain host copies here).
#[repr(C)]
pub enum aclrtMemcpyKindValues {
    ACL_MEMCPY_HOST_TO_HOST = 0,
    ACL_MEMCPY_HOST_TO_DEVICE = 1,
    ACL_MEMCPY_DEVICE_TO_HOST = 2,
    ACL_MEMCPY_DEVICE_TO_DEVICE = 3,
    ACL_MEMCPY_DEFAULT = 4,
    ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE = 5,
    ACL_MEMCPY_INNER_DEVICE_TO_DEVICE = 6,
    ACL_MEMCPY_INTER_DEVICE_TO_DEVICE = 7,
}

/// How `aclrtMalloc` should allocate (accepted; all memory is host memory here).
#[repr(C)]
pub enum aclrtMemMallocPolicyValues {
    ACL_MEM_MALLOC_HUGE_FIRST = 0,
    ACL_MEM_MALLOC_HUGE_ONLY = 1,
    ACL_MEM_MALLOC_NORMAL_ONLY = 2,
    ACL_MEM_MALLOC_HUGE_FIRST_P2P = 3,
    ACL_MEM_MALLOC_HUGE_ONLY_P2P = 4,
    ACL_MEM_MALLOC_NORMAL_ONLY_P2P = 5,
}

// As in acl_prof.h: the enum types cross the ABI as plain integers, so an out-of-range value
// from C is data we check, never undefined behaviour.
#[repr(transparent)]
pub struct aclrtRunMode(pub u32);
#[repr(transparent)]
pub struct aclrtMemcpyKind(pub u32);
#[repr(transparent)]
pub struct aclrtMemMallocPolicy(pub u32);

/// Makes `deviceId` the calling thread's device. No such device ->
/// ACL_ERROR_RT_INVALID_DEVICEID.
#[no_mangle]
pub extern "C" fn aclrtSetDevice(deviceId: i32) -> aclError {
    runtime_call("aclrtSetDevice", || crate::runtime::set_device(deviceId))
}

/// Releases the device for the calling thread. No such device ->
/// ACL_ERROR_RT_INVALID_DEVICEID.
#[no_mangle]
pub extern "C" fn aclrtResetDevice(deviceId: i32) -> aclError {
    runtime_call("aclrtResetDevice", || {
        crate::runtime::reset_device(deviceId)
    })
}

/// The calling thread's device. None set -> ACL_ERROR_RT_CONTEXT_NULL.
#[no_mangle]
pub unsafe extern "C" fn aclrtGetDevice(deviceId: *mut i32) -> aclError {
    runtime_call("aclrtGetDevice", || {
        // SAFETY: `deviceId` is NULL or valid for writes (the C contract).
        unsafe { fill(deviceId, "deviceId", crate::runtime::current_device) }
    })
}

/// The number of emulated devices (ACLPROF_DEVICE_COUNT).
#[no_mangle]
pub unsafe extern "C" fn aclrtGetDeviceCount(count: *mut u32) -> aclError {
    runtime_call("aclrtGetDeviceCount", || {
        // SAFETY: `count` is NULL or valid for writes (the C contract).
        unsafe { fill(count, "count", || Ok(crate::runtime::device_count())) }
    })
}

/// ACL_HOST: the program runs on the host, device memory is separate.
#[no_mangle]
pub unsafe extern "C" fn aclrtGetRunMode(runMode: *mut aclrtRunMode) -> aclError {
    runtime_call("aclrtGetRunMode", || {
        // SAFETY: `runMode` is NULL or valid for writes (the C contract).
        unsafe {
            fill(runMode, "runMode", || {
                Ok(aclrtRunMode(crate::runtime::ACL_HOST))
            })
        }
    })
}

/// Creates a context on `deviceId` and makes it the calling thread's current context.
#[no_mangle]
pub unsafe extern "C" fn aclrtCreateContext(context: *mut aclrtContext, deviceId: i32) -> aclError {
    runtime_call("aclrtCreateContext", || {
        // SAFETY: `context` is NULL or valid for writes (the C contract).
        unsafe {
            fill(context, "context", || {
                crate::runtime::create_context(deviceId).map(|c| c as aclrtContext)
            })
        }
    })
}

#[no_mangle]
pub extern "C" fn aclrtDestroyContext(context: aclrtContext) -> aclError {
    runtime_call("aclrtDestroyContext", || {
        crate::runtime::destroy_context(context as usize)
    })
}

/// Binds `context` (and its device) to the calling thread; the last call wins.
#[no_mangle]
pub extern "C" fn aclrtSetCurrentContext(context: aclrtContext) -> aclError {
    runtime_call("aclrtSetCurrentContext", || {
        crate::runtime::set_current_context(context as usize)
    })
}

/// The calling thread's context. None -> ACL_ERROR_RT_CONTEXT_NULL.
#[no_mangle]
pub unsafe extern "C" fn aclrtGetCurrentContext(context: *mut aclrtContext) -> aclError {
    runtime_call("aclrtGetCurrentContext", || {
        // SAFETY: `context` is NULL or valid for writes (the C contract).
        unsafe {
            fill(context, "context", || {
                crate::runtime::current_context().map(|c| c as aclrtContext)
            })
        }
    })
}

/// Creates a stream on the calling thread's device. No device set ->
/// ACL_ERROR_RT_CONTEXT_NULL.
#[no_mangle]
pub unsafe extern "C" fn aclrtCreateStream(stream: *mut aclrtStream) -> aclError {
    runtime_call("aclrtCreateStream", || {
        // SAFETY: `stream` is NULL or valid for writes (the C contract).
        unsafe {
            fill(stream, "stream", || {
                crate::runtime::create_stream().map(|s| s as aclrtStream)
            })
        }
    })
}

#[no_mangle]
pub extern "C" fn aclrtDestroyStream(stream: aclrtStream) -> aclError {
    runtime_call("aclrtDestroyStream", || {
        crate::runtime::destroy_stream(stream as usize)
    })
}

/// Returns at once: execution is synchronous. NULL is the default stream.
#[no_mangle]
pub extern "C" fn aclrtSynchronizeStream(stream: aclrtStream) -> aclError {
    runtime_call("aclrtSynchronizeStream", || {
        crate::runtime::synchronize_stream(stream as usize)
    })
}

/// Returns at once: execution is synchronous.
#[no_mangle]
pub extern "C" fn aclrtSynchronizeDevice() -> aclError {
    runtime_call("aclrtSynchronizeDevice", || Ok(()))
}

/// Zeroed memory of `size` bytes (> 0), 64-byte aligned, standing in for device memory.
/// Free with aclrtFree.
#[no_mangle]
pub unsafe extern "C" fn aclrtMalloc(
    devPtr: *mut *mut c_void,
    size: usize,
    policy: aclrtMemMallocPolicy,
) -> aclError {
    let _ = policy.0; // every policy gets host memory
    runtime_call("aclrtMalloc", || {
        // SAFETY: `devPtr` is NULL or valid for writes (the C contract).
        unsafe {
            fill(devPtr, "devPtr", || {
                crate::runtime::malloc(size, true).map(|p| p as *mut c_void)
            })
        }
    })
}

/// Frees memory from aclrtMalloc. NULL, or memory not from aclrtMalloc ->
/// ACL_ERROR_INVALID_PARAM.
#[no_mangle]
pub extern "C" fn aclrtFree(devPtr: *mut c_void) -> aclError {
    runtime_call("aclrtFree", || crate::runtime::free(devPtr as usize))
}

/// As aclrtMalloc.
#[no_mangle]
pub unsafe extern "C" fn aclrtMallocHost(hostPtr: *mut *mut c_void, size: usize) -> aclError {
    runtime_call("aclrtMallocHost", || {
        // SAFETY: `hostPtr` is NULL or valid for writes (the C contract).
        unsafe {
            fill(hostPtr, "hostPtr", || {
                crate::runtime::malloc(size, false).map(|p| p as *mut c_void)
            })
        }
    })
}

/// As aclrtFree.
#[no_mangle]
pub extern "C" fn aclrtFreeHost(hostPtr: *mut c_void) -> aclError {
    runtime_call("aclrtFreeHost", || crate::runtime::free(hostPtr as usize))
}

/// Copies `count` bytes (at most `destMax`) from `src` to `dst`; every kind is a host copy.
#[no_mangle]
pub unsafe extern "C" fn aclrtMemcpy(
    dst: *mut c_void,
    destMax: usize,
    src: *const c_void,
    count: usize,
    kind: aclrtMemcpyKind,
) -> aclError {
    runtime_call("aclrtMemcpy", || {
        crate::runtime::check_memcpy(dst as usize, destMax, src as usize, count, kind.0)?;
        // SAFETY: `dst` and `src` are not NULL, so they hold `count` <= `destMax` bytes (the C contract).
        unsafe { std::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), count) };
        Ok(())
    })
}

/// Sets `count` bytes (at most `maxCount`) at `devPtr` to `value`.
#[no_mangle]
pub unsafe extern "C" fn aclrtMemset(
    devPtr: *mut c_void,
    maxCount: usize,
    value: i32,
    count: usize,
) -> aclError {
    runtime_call("aclrtMemset", || {
        if devPtr.is_null() {
            return Err(invalid("devPtr is NULL"));
        }
        if count > maxCount {
            return Err(invalid(format!(
                "count {count} is more than maxCount {maxCount}"
            )));
        }
        // SAFETY: `devPtr` is not NULL, so it holds `count` <= `maxCount` writable bytes (the C contract).
        unsafe { std::ptr::write_bytes(devPtr.cast::<u8>(), value as u8, count) };
        Ok(())
    })
}
