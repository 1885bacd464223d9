//! The C boundary. Every exported function is written out literally (so cbindgen sees it)
//! and does only this: run its body under [`guard`] (no panic crosses into C), check and
//! convert the C arguments, call the safe implementation in [`crate::profiler`] and friends, and
//! turn a `Result` into CANN's return value with [`code`] (which also logs the failure and
//! stores it for `aclGetRecentErrMsg`). [`entry`] is that whole frame for the functions that
//! return an aclError.
//!
//! One file per generated header: `base.rs` -> `acl/acl_base.h`, `prof.rs` ->
//! `acl/acl_prof.h`, `ext.rs` -> `acl/acl_prof_ext.h`, and for the emulated runtime
//! `acl.rs` -> `acl/acl.h`, `rt.rs` -> `acl/acl_rt.h`, `mdl.rs` -> `acl/acl_mdl.h` (see
//! build.rs).

#![allow(non_camel_case_types, non_snake_case, clippy::missing_safety_doc)]

pub mod acl;
pub mod base;
pub mod ext;
pub mod ext_mem;
pub mod ext_ring;
pub mod mdl;
pub mod prof;
pub mod prof_tx;
pub mod rt;

use crate::error::{self, Error, Result};
use std::ffi::{c_char, c_void};

pub(crate) use crate::panic::guard;

/// `Ok` -> 0; `Err` -> its code, logged and stored as this thread's recent error.
#[inline]
pub(crate) fn code(func: &str, r: Result<()>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => error::fail(func, &e),
    }
}

/// The body of an entry point that returns an aclError: runs `body` under [`guard`] (a
/// panic returns `fallback`) and turns its result into the code with [`code`].
#[inline(always)]
pub(crate) fn entry(func: &str, fallback: i32, body: impl FnOnce() -> Result<()>) -> i32 {
    guard(func, fallback, || code(func, body()))
}

/// [`entry`] for the emulated runtime's calls: initialise on first use, then `body`.
#[inline]
pub(crate) fn runtime_call(func: &str, body: impl FnOnce() -> Result<()>) -> i32 {
    entry(func, error::ACL_ERROR_INTERNAL_ERROR, || {
        crate::init::ensure();
        crate::profiler::runtime_api(func, body)
    })
}

/// An output pointer argument, or an error naming it if it is NULL or misaligned for a `T`.
///
/// # Safety
/// `p` is NULL, misaligned, or valid for writes of a `T`.
pub(crate) unsafe fn out<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T> {
    if !p.is_aligned() {
        return Err(invalid(format!(
            "{what} is misaligned (needs {}-byte alignment)",
            std::mem::align_of::<T>()
        )));
    }
    // SAFETY: aligned here, and NULL or valid for writes (the caller's promise).
    unsafe { p.as_mut() }.ok_or_else(|| invalid(format!("{what} is NULL")))
}

/// An input pointer argument (a struct the caller fills in), or an error naming it if it is
/// NULL or misaligned for a `T`: the same checks as [`out`].
///
/// # Safety
/// `p` is NULL, misaligned, or valid for reads of a `T`.
pub(crate) unsafe fn input<'a, T>(p: *const T, what: &str) -> Result<&'a T> {
    if !p.is_aligned() {
        return Err(invalid(format!(
            "{what} is misaligned (needs {}-byte alignment)",
            std::mem::align_of::<T>()
        )));
    }
    // SAFETY: aligned here, and NULL or valid for reads (the caller's promise).
    unsafe { p.as_ref() }.ok_or_else(|| invalid(format!("{what} is NULL")))
}

/// Checks the out-pointer `p`, then stores what `make` returns there (so nothing is made
/// for a NULL out-pointer).
///
/// # Safety
/// As [`out`].
pub(crate) unsafe fn fill<T>(
    p: *mut T,
    what: &str,
    make: impl FnOnce() -> Result<T>,
) -> Result<()> {
    // SAFETY: the caller's promise, as `out` needs it.
    let o = unsafe { out(p, what) }?;
    *o = make()?;
    Ok(())
}

/// Logs and stores `e`, returning `value` (for functions that report errors as NULL/0).
pub(crate) fn failed<T>(func: &str, e: Error, value: T) -> T {
    error::fail(func, &e);
    value
}

pub(crate) fn invalid(msg: impl Into<String>) -> Error {
    Error::new(error::ACL_ERROR_INVALID_PARAM, msg)
}

/// The bytes of a C string, or an error naming the NULL argument.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string.
pub(crate) unsafe fn cstr<'a>(p: *const c_char, what: &str) -> Result<&'a [u8]> {
    if p.is_null() {
        return Err(invalid(format!("{what} is NULL")));
    }
    // SAFETY: not NULL, so a NUL-terminated string (the caller's promise).
    Ok(unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes())
}

/// A string given by pointer and length, read as C would read it: to its first NUL, if one
/// is among the `len` bytes. An error naming the argument if it is NULL.
///
/// # Safety
/// `p` is NULL or valid for reads of `len` bytes.
pub(crate) unsafe fn bytes_arg<'a>(p: *const c_char, len: usize, what: &str) -> Result<&'a [u8]> {
    if p.is_null() {
        return Err(invalid(format!("{what} is NULL")));
    }
    // SAFETY: not NULL, so valid for reads of `len` bytes (the caller's promise).
    let b = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) };
    Ok(crate::formats::record::until_nul(b))
}

/// A C string argument as a path.
///
/// # Safety
/// As [`cstr`].
pub(crate) unsafe fn path_arg<'a>(p: *const c_char, what: &str) -> Result<&'a std::path::Path> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: the caller's promise, as `cstr` needs it.
    let bytes = unsafe { cstr(p, what) }?;
    Ok(std::path::Path::new(std::ffi::OsStr::from_bytes(bytes)))
}

/// An optional path argument: NULL is `None`.
///
/// # Safety
/// As [`cstr`].
pub(crate) unsafe fn opt_path_arg<'a>(
    p: *const c_char,
    what: &str,
) -> Result<Option<&'a std::path::Path>> {
    if p.is_null() {
        Ok(None)
    } else {
        // SAFETY: the caller's promise, as `path_arg` needs it.
        unsafe { path_arg(p, what) }.map(Some)
    }
}

/// `len` bytes at `p` that must contain no NUL (CANN's `strnlen(p, len) == len` rule).
///
/// # Safety
/// `p` is NULL or points to at least `len` readable bytes.
pub(crate) unsafe fn counted_str<'a>(p: *const c_char, len: usize, what: &str) -> Result<&'a [u8]> {
    if p.is_null() {
        return Err(invalid(format!("{what} is NULL")));
    }
    if len > isize::MAX as usize {
        return Err(invalid(format!("{what} length {len} is impossible")));
    }
    // SAFETY: not NULL, so `len` readable bytes (the caller's promise); `len` fits an isize.
    let s = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) };
    if s.contains(&0) {
        return Err(invalid(format!(
            "{what} has a NUL inside its first {len} bytes: the length must be strlen, without the NUL"
        )));
    }
    Ok(s)
}

/// An array argument of `n` elements: NULL only when `n` is 0.
///
/// # Safety
/// `p` is NULL, misaligned, or points to `n` readable `T`s.
pub(crate) unsafe fn array<'a, T>(p: *const T, n: usize, what: &str) -> Result<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(invalid(format!("{what} is NULL")));
    }
    if !p.is_aligned() {
        return Err(invalid(format!("{what} is misaligned")));
    }
    if n.checked_mul(std::mem::size_of::<T>())
        .is_none_or(|b| b > isize::MAX as usize)
    {
        return Err(invalid(format!("{what}: {n} elements is impossible")));
    }
    // SAFETY: not NULL and aligned, so `n` readable `T`s (the caller's promise), and their
    // size fits an isize.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Converts a C buffer argument of an accessor.
///
/// # Safety
/// `p` is NULL or points to at least `len` readable bytes.
pub(crate) unsafe fn op_buffer<'a>(p: *const c_void, len: usize) -> Result<&'a [u8]> {
    if p.is_null() {
        return Err(invalid("opInfo is NULL"));
    }
    if len > isize::MAX as usize {
        return Err(invalid(format!("opInfoLen {len} is impossible")));
    }
    // SAFETY: not NULL, so `len` readable bytes (the caller's promise); `len` fits an isize.
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
}

/// Checks and locates record `index` of the buffer; only that record is ever touched.
///
/// # Safety
/// As [`op_buffer`].
pub(crate) unsafe fn op_record<'a>(
    p: *const c_void,
    len: usize,
    index: u32,
) -> Result<crate::accessor::Checked<'a>> {
    use crate::formats::record::RECORD_SIZE;
    // The common case in straight-line code; the error (which needs the same tests again
    // to say which one failed) is built out of line.
    if p.is_null() || len % RECORD_SIZE != 0 || index as usize >= len / RECORD_SIZE {
        return Err(op_record_error(p, len, index));
    }
    // SAFETY: record `index` lies inside the `len` readable bytes (checked above), and a
    // `Record` is bytes, aligned to 1.
    let rec = unsafe {
        &*p.cast::<u8>()
            .add(index as usize * RECORD_SIZE)
            .cast::<crate::formats::record::Record>()
    };
    crate::accessor::verified(rec, index)
}

/// [`crate::accessor::cached`] over a C buffer argument: `None` for anything but the
/// common case, which [`op_record`] then checks in full.
///
/// # Safety
/// As [`op_buffer`].
#[inline(always)]
pub(crate) unsafe fn cached_record<'a>(
    p: *const c_void,
    len: usize,
    index: u32,
) -> Option<crate::accessor::Checked<'a>> {
    if p.is_null() || len > isize::MAX as usize {
        return None;
    }
    // SAFETY: not NULL, so `len` readable bytes (the caller's promise); `len` fits an isize.
    let bytes = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) };
    crate::accessor::cached(bytes, index)
}

#[cold]
#[inline(never)]
fn op_record_error(p: *const c_void, len: usize, index: u32) -> crate::error::Error {
    if p.is_null() {
        return invalid("opInfo is NULL");
    }
    match crate::accessor::locate(len, index) {
        Err(e) => e,
        Ok(_) => invalid("the record is outside the buffer"),
    }
}
