//! `acl/acl_base.h`: AscendCL's base types, error codes (with CANN's values) and data
//! buffers. A real CANN `acl_base.h` defines the same names; use one or the other.

use std::ffi::{c_char, c_int, c_void};

/// AscendCL's error code: 0 is success, anything else an `ACL_ERROR_*` value.
pub type aclError = c_int;

/// An AscendCL stream handle. The emulated device has no streams of its own: the
/// profiling API accepts any non-NULL value where CANN requires a stream.
pub type aclrtStream = *mut c_void;

/// Success.
pub const ACL_SUCCESS: aclError = 0;
/// Success (older name).
pub const ACL_ERROR_NONE: aclError = 0;
/// An argument is NULL, out of range, or malformed.
pub const ACL_ERROR_INVALID_PARAM: aclError = 100000;
/// A feature table could not be initialised.
pub const ACL_ERROR_UNINITIALIZE: aclError = 100001;
/// `aclprofInit` was called twice without `aclprofFinalize`.
pub const ACL_ERROR_REPEAT_INITIALIZE: aclError = 100002;
/// A file or directory could not be read, created or written.
pub const ACL_ERROR_INVALID_FILE: aclError = 100003;
/// The config does not match the one in use (stop with another config, or another
/// subscribe config on the same device).
pub const ACL_ERROR_INVALID_PROFILING_CONFIG: aclError = 100010;
/// The model is not loaded, or not subscribed.
pub const ACL_ERROR_INVALID_MODEL_ID: aclError = 100011;
/// Profiling is already running.
pub const ACL_ERROR_PROF_ALREADY_RUN: aclError = 100042;
/// Profiling is not initialised or not running.
pub const ACL_ERROR_PROF_NOT_RUN: aclError = 100043;
/// The model is already subscribed.
pub const ACL_ERROR_PROF_REPEAT_SUBSCRIBE: aclError = 148046;
/// File-mode and subscription calls were mixed.
pub const ACL_ERROR_PROF_API_CONFLICT: aclError = 148047;
/// aclFinalize without aclInit.
pub const ACL_ERROR_REPEAT_FINALIZE: aclError = 100037;
/// The device does not exist.
pub const ACL_ERROR_INVALID_DEVICE: aclError = 200002;
/// A handle is not valid.
pub const ACL_ERROR_INVALID_RESOURCE_HANDLE: aclError = 200005;
/// The feature is not supported in this mode.
pub const ACL_ERROR_FEATURE_UNSUPPORTED: aclError = 200006;
/// `dataTypeConfig` has bits no `ACL_PROF_*` macro defines.
pub const ACL_ERROR_PROF_MODULES_UNSUPPORTED: aclError = 200007;
/// The graph engine failed (step timestamps).
pub const ACL_ERROR_GE_FAILURE: aclError = 500002;
/// Internal failure of the emulated runtime.
pub const ACL_ERROR_INTERNAL_ERROR: aclError = 500000;
/// Internal profiling failure (including an unusable result directory).
pub const ACL_ERROR_PROFILING_FAILURE: aclError = 500005;

// The runtime's and the model loader's codes (CANN declares them in
// acl/error_codes/rt_error_codes.h and ge_error_codes.h, which its acl_base.h includes).
/// The runtime rejected a parameter.
pub const ACL_ERROR_RT_PARAM_INVALID: aclError = 107000;
/// The device id does not exist.
pub const ACL_ERROR_RT_INVALID_DEVICEID: aclError = 107001;
/// The calling thread has no current device or context.
pub const ACL_ERROR_RT_CONTEXT_NULL: aclError = 107002;
/// Out of memory.
pub const ACL_ERROR_RT_MEMORY_ALLOCATION: aclError = 207001;
/// The model loader or executor rejected a parameter (e.g. a dataset too small).
pub const ACL_ERROR_GE_PARAM_INVALID: aclError = 145000;
/// The model file does not exist.
pub const ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID: aclError = 145002;
/// The model id is not loaded.
pub const ACL_ERROR_GE_EXEC_MODEL_ID_INVALID: aclError = 145003;
/// The model file is not a model the loader can read.
pub const ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID: aclError = 145006;

/// A buffer of data (address and size) given to a model as an input or output.
pub struct aclDataBuffer {
    _opaque: [u8; 0],
}

/// A data buffer over `size` bytes at `data` (the memory is not copied, nor freed with the
/// buffer). NULL only if out of memory.
#[no_mangle]
pub extern "C" fn aclCreateDataBuffer(data: *mut c_void, size: usize) -> *mut aclDataBuffer {
    super::guard("aclCreateDataBuffer", std::ptr::null_mut(), || {
        crate::runtime::create_data_buffer(data as usize, size) as *mut aclDataBuffer
    })
}

/// Frees a data buffer (not its memory). NULL or not a live buffer -> ACL_ERROR_INVALID_PARAM.
#[no_mangle]
pub extern "C" fn aclDestroyDataBuffer(dataBuffer: *const aclDataBuffer) -> aclError {
    super::runtime_call("aclDestroyDataBuffer", || {
        crate::runtime::destroy_data_buffer(dataBuffer as usize)
    })
}

/// Points a data buffer at other memory.
#[no_mangle]
pub extern "C" fn aclUpdateDataBuffer(
    dataBuffer: *mut aclDataBuffer,
    data: *mut c_void,
    size: usize,
) -> aclError {
    super::runtime_call("aclUpdateDataBuffer", || {
        crate::runtime::update_data_buffer(dataBuffer as usize, data as usize, size)
    })
}

fn buffer(func: &str, b: *const aclDataBuffer) -> (usize, usize) {
    super::guard(func, (0, 0), || {
        crate::runtime::data_buffer(b as usize).unwrap_or_else(|| {
            super::failed(func, super::invalid("not a live data buffer"), (0, 0))
        })
    })
}

/// The buffer's address (NULL for a bad handle).
#[no_mangle]
pub extern "C" fn aclGetDataBufferAddr(dataBuffer: *const aclDataBuffer) -> *mut c_void {
    buffer("aclGetDataBufferAddr", dataBuffer).0 as *mut c_void
}

/// The buffer's size in bytes (0 for a bad handle).
#[no_mangle]
pub extern "C" fn aclGetDataBufferSizeV2(dataBuffer: *const aclDataBuffer) -> usize {
    buffer("aclGetDataBufferSizeV2", dataBuffer).1
}

/// The buffer's size, truncated to 32 bits (CANN deprecates it for aclGetDataBufferSizeV2).
#[no_mangle]
pub extern "C" fn aclGetDataBufferSize(dataBuffer: *const aclDataBuffer) -> u32 {
    buffer("aclGetDataBufferSize", dataBuffer).1 as u32
}

/// The explanation of the most recent failing AscendCL profiling call on this thread.
///
/// Never NULL; an empty string if nothing has failed yet. The string stays valid until the
/// next failing call on the same thread. Do not free it.
#[no_mangle]
pub extern "C" fn aclGetRecentErrMsg() -> *const c_char {
    super::guard("aclGetRecentErrMsg", c"".as_ptr(), crate::error::last_ptr)
}
