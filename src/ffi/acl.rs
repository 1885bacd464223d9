//! `acl/acl.h`: AscendCL's umbrella header as CANN programs include it: `aclInit` and
//! `aclFinalize`, and through its includes the emulated runtime (`acl_rt.h`) and model
//! calls (`acl_mdl.h`). See crate::runtime.

use super::base::aclError;
use super::{opt_path_arg, runtime_call};
use std::ffi::c_char;

/// Initialises AscendCL. `configPath` may be NULL or empty; otherwise the file must exist
/// (its contents are not used). Errors: a second call before aclFinalize ->
/// ACL_ERROR_REPEAT_INITIALIZE (callers may ignore it); a missing config file ->
/// ACL_ERROR_INVALID_FILE.
#[no_mangle]
pub unsafe extern "C" fn aclInit(configPath: *const c_char) -> aclError {
    runtime_call("aclInit", || {
        // SAFETY: `configPath` is NULL or a C string (the C contract).
        crate::runtime::init(unsafe { opt_path_arg(configPath, "configPath") }?)
    })
}

/// Ends AscendCL. Without a matching aclInit -> ACL_ERROR_REPEAT_FINALIZE.
#[no_mangle]
pub extern "C" fn aclFinalize() -> aclError {
    runtime_call("aclFinalize", crate::runtime::finalize)
}
