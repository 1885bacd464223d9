//! `acl/acl_base.h`: the few AscendCL base types the profiling headers need, with CANN's
//! values. A real CANN `acl_base.h` defines the same names; use one or the other.

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
/// Internal profiling failure (including an unusable result directory).
pub const ACL_ERROR_PROFILING_FAILURE: aclError = 500005;

/// The explanation of the most recent failing AscendCL profiling call on this thread.
///
/// Never NULL; an empty string if nothing has failed yet. The string stays valid until the
/// next failing call on the same thread. Do not free it.
#[no_mangle]
pub extern "C" fn aclGetRecentErrMsg() -> *const c_char {
    super::guard("aclGetRecentErrMsg", c"".as_ptr(), crate::error::last_ptr)
}
