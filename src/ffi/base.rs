//! `acl/acl_base.h`: AscendCL's base types, error codes (with CANN's values) and data
//! buffers. A real CANN `acl_base.h` defines the same names; use one or the other.

use std::ffi::{c_char, c_void};

/// An AscendCL stream handle. The emulated device has no streams of its own: the
/// profiling API accepts any non-NULL value where CANN requires a stream.
pub type aclrtStream = *mut c_void;

pub use crate::formats::acl_base::*;

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
