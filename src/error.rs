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
pub type Code = crate::formats::acl_base::aclError;

// CANN's codes, defined once beside the header's other formats.
pub use crate::formats::acl_base::*;
/// What the msproftx functions return on any failure (CANN's internal `PROFILING_FAILED`).
pub const MSPROFTX_FAILED: Code = -1;

/// A failure about file `p`, as every file error reads: `{what} {p}: {e}` (`{p}: {e}`
/// when `what` is empty), `ACL_ERROR_INVALID_FILE`.
pub fn file_error(what: &str, p: &std::path::Path, e: impl fmt::Display) -> Error {
    let msg = if what.is_empty() {
        format!("{}: {e}", p.display())
    } else {
        format!("{what} {}: {e}", p.display())
    };
    Error::new(ACL_ERROR_INVALID_FILE, msg)
}

/// An I/O result about file `p`, its error as [`file_error`] words it.
pub fn io<T>(what: &str, p: &std::path::Path, r: std::io::Result<T>) -> Result<T> {
    r.map_err(|e| file_error(what, p, &e).caused_by(e))
}

/// A failure: CANN's code plus the explanation given to the user, and the error that caused
/// it when there was one (an I/O or SQLite error): [`std::error::Error::source`] gives it to
/// callers that walk the chain. Two errors are equal when their code and words are.
#[derive(Clone)]
pub struct Error {
    pub code: Code,
    pub msg: String,
    pub source: Option<std::sync::Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

impl PartialEq for Error {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code && self.msg == other.msg
    }
}

impl Eq for Error {}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
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
            source: None,
        }
    }

    /// The same failure, caused by `e` (kept as its [`std::error::Error::source`]).
    pub fn caused_by(mut self, e: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(std::sync::Arc::new(e));
        self
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

    #[test]
    fn a_file_error_keeps_its_cause() {
        use std::error::Error as _;
        let p = std::path::Path::new("/nonexistent/aclprof");
        let e = io("cannot read", p, std::fs::read(p)).unwrap_err();
        assert_eq!(e.code, ACL_ERROR_INVALID_FILE);
        assert!(
            e.msg.starts_with("cannot read /nonexistent/aclprof: "),
            "{}",
            e.msg
        );
        let cause = e.source().expect("the I/O error is kept");
        let io = cause.downcast_ref::<std::io::Error>().unwrap();
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
        assert_eq!(
            e,
            Error::new(e.code, e.msg.clone()),
            "equal by code and words"
        );
    }
}
