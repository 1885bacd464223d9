//! aclError values (pinned to CANN's numbers) and the "explain every failure" channel.
//!
//! Every failing call goes through [`fail`]: it stores a one-line explanation in a
//! thread-local slot (read back by `aclGetRecentErrMsg`) and logs the same line through `log`
//! at `warn` level. Nothing is printed unless the application asked for logging
//! (`ACLPROF_LOG`, see [`crate::settings`]).

use std::cell::RefCell;
use std::ffi::CString;
use std::fmt;

/// CANN's `aclError`: a C `int`.
pub type Code = i32;

pub const ACL_SUCCESS: Code = 0;
pub const ACL_ERROR_INVALID_PARAM: Code = 100000;
pub const ACL_ERROR_UNINITIALIZE: Code = 100001;
pub const ACL_ERROR_REPEAT_INITIALIZE: Code = 100002;
pub const ACL_ERROR_INVALID_FILE: Code = 100003;
pub const ACL_ERROR_INVALID_PROFILING_CONFIG: Code = 100010;
pub const ACL_ERROR_INVALID_MODEL_ID: Code = 100011;
pub const ACL_ERROR_REPEAT_FINALIZE: Code = 100037;
pub const ACL_ERROR_PROF_ALREADY_RUN: Code = 100042;
pub const ACL_ERROR_PROF_NOT_RUN: Code = 100043;
pub const ACL_ERROR_PROF_REPEAT_SUBSCRIBE: Code = 148046;
pub const ACL_ERROR_PROF_API_CONFLICT: Code = 148047;
pub const ACL_ERROR_INVALID_DEVICE: Code = 200002;
pub const ACL_ERROR_INVALID_RESOURCE_HANDLE: Code = 200005;
pub const ACL_ERROR_FEATURE_UNSUPPORTED: Code = 200006;
pub const ACL_ERROR_PROF_MODULES_UNSUPPORTED: Code = 200007;
pub const ACL_ERROR_INTERNAL_ERROR: Code = 500000;
pub const ACL_ERROR_GE_FAILURE: Code = 500002;
pub const ACL_ERROR_RT_PARAM_INVALID: Code = 107000;
pub const ACL_ERROR_RT_INVALID_DEVICEID: Code = 107001;
pub const ACL_ERROR_RT_CONTEXT_NULL: Code = 107002;
pub const ACL_ERROR_RT_MEMORY_ALLOCATION: Code = 207001;
pub const ACL_ERROR_GE_PARAM_INVALID: Code = 145000;
pub const ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID: Code = 145002;
pub const ACL_ERROR_GE_EXEC_MODEL_ID_INVALID: Code = 145003;
pub const ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID: Code = 145006;
pub const ACL_ERROR_PROFILING_FAILURE: Code = 500005;
/// What the msproftx functions return on any failure (CANN's internal `PROFILING_FAILED`).
pub const MSPROFTX_FAILED: Code = -1;

/// A failure: CANN's code plus the explanation given to the user.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    pub code: Code,
    pub msg: String,
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.msg, self.code)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(code: Code, msg: impl Into<String>) -> Self {
        Error {
            code,
            msg: msg.into(),
        }
    }
}

/// Shorthand for `Err(Error::new(code, msg))`.
pub fn err<T>(code: Code, msg: impl Into<String>) -> Result<T> {
    Err(Error::new(code, msg))
}

thread_local! {
    static LAST: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `e` as this thread's most recent error, logs it, and returns its code.
/// `func` is the C entry point that failed; it prefixes the message.
pub fn fail(func: &str, e: &Error) -> Code {
    let line = format!("{func}: {} (error {})", e.msg, e.code);
    log::warn!("{line}");
    set_last(line);
    e.code
}

/// Replaces this thread's recent-error message.
pub fn set_last(line: String) {
    let c = CString::new(line.replace('\0', " ")).unwrap_or_default();
    LAST.with(|l| *l.borrow_mut() = c);
}

/// Pointer to this thread's most recent error message; valid until the next failing call on
/// this thread. Never NULL: an empty string when nothing failed yet.
pub fn last_ptr() -> *const std::os::raw::c_char {
    LAST.with(|l| l.borrow().as_ptr())
}

/// The most recent error message of this thread, as a Rust string (for tests and Python).
pub fn last_message() -> String {
    LAST.with(|l| l.borrow().to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_sets_the_thread_local_message() {
        let code = fail(
            "aclprofX",
            &Error::new(ACL_ERROR_INVALID_PARAM, "bad thing"),
        );
        assert_eq!(code, 100000);
        assert_eq!(last_message(), "aclprofX: bad thing (error 100000)");
        std::thread::spawn(|| assert_eq!(last_message(), ""))
            .join()
            .unwrap();
    }
}
