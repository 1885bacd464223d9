//! `acl/acl_prof.h`'s msproftx functions (stamps, marks, ranges), generated into the
//! header after `prof.rs`'s (build.rs).

use super::base::{aclError, aclrtStream};
use super::prof::{aclprofEventAttributes, handle};
use super::{code, failed, guard};
use crate::error::{Error, MSPROFTX_FAILED};
use std::ffi::{c_char, c_int, c_void};

/// An msproftx entry point: -1 on any failure, including a panic.
fn tx(func: &str, f: impl FnOnce() -> crate::error::Result<()>) -> aclError {
    guard(func, MSPROFTX_FAILED, || code(func, f()))
}

/// Creates an msproftx stamp (at most 100 alive). NULL unless msproftx is on.
#[no_mangle]
pub extern "C" fn aclprofCreateStamp() -> *mut c_void {
    guard(
        "aclprofCreateStamp",
        std::ptr::null_mut(),
        || match crate::tx::create_stamp() {
            Ok(h) => h as *mut c_void,
            Err(e) => failed("aclprofCreateStamp", e, std::ptr::null_mut()),
        },
    )
}

/// Destroys a stamp. NULL is ignored; an unknown or destroyed stamp is ignored and logged.
#[no_mangle]
pub extern "C" fn aclprofDestroyStamp(stamp: *mut c_void) {
    guard("aclprofDestroyStamp", (), || {
        if !stamp.is_null() {
            if let Err(e) = crate::tx::destroy_stamp(handle(stamp)) {
                failed("aclprofDestroyStamp", e, ());
            }
        }
    })
}

/// Opens a nested range on this thread with the stamp's message. -1 on failure.
#[no_mangle]
pub extern "C" fn aclprofPush(stamp: *mut c_void) -> aclError {
    tx("aclprofPush", || crate::tx::push(handle(stamp)))
}

/// Closes this thread's innermost aclprofPush range. -1 on failure.
#[no_mangle]
pub extern "C" fn aclprofPop() -> aclError {
    tx("aclprofPop", crate::tx::pop)
}

/// Starts a range with the stamp's message; `*rangeId` gets its unique id. -1 on failure.
#[no_mangle]
pub unsafe extern "C" fn aclprofRangeStart(stamp: *mut c_void, rangeId: *mut u32) -> aclError {
    guard("aclprofRangeStart", MSPROFTX_FAILED, || {
        // SAFETY: `rangeId` is NULL or valid for writes (the C contract).
        let r = unsafe { super::out(rangeId, "rangeId") }
            .map_err(|e| Error::new(MSPROFTX_FAILED, e.msg))
            .and_then(|out| {
                *out = crate::tx::range_start(handle(stamp))?;
                Ok(())
            });
        code("aclprofRangeStart", r)
    })
}

/// Ends a range started by aclprofRangeStart. -1 for an id not started or already stopped.
#[no_mangle]
pub extern "C" fn aclprofRangeStop(rangeId: u32) -> aclError {
    tx("aclprofRangeStop", || crate::tx::range_stop(rangeId))
}

/// Sets a stamp's message (`msgLen` bytes, at most 127, no NUL inside). -1 on failure.
#[no_mangle]
pub unsafe extern "C" fn aclprofSetStampTraceMessage(
    stamp: *mut c_void,
    msg: *const c_char,
    msgLen: u32,
) -> aclError {
    tx("aclprofSetStampTraceMessage", || {
        if msg.is_null() {
            return Err(Error::new(MSPROFTX_FAILED, "msg is NULL"));
        }
        if msgLen as usize > crate::tx::MAX_MESSAGE {
            return Err(Error::new(
                MSPROFTX_FAILED,
                format!("msgLen {msgLen} is more than {}", crate::tx::MAX_MESSAGE),
            ));
        }
        crate::tx::set_message(
            handle(stamp),
            // SAFETY: `msg` holds `msgLen` bytes (the C contract).
            unsafe { std::slice::from_raw_parts(msg.cast::<u8>(), msgLen as usize) },
        )
    })
}

/// Records an instant event with the stamp's message. -1 on failure.
#[no_mangle]
pub extern "C" fn aclprofMark(stamp: *mut c_void) -> aclError {
    tx("aclprofMark", || crate::tx::mark(handle(stamp)))
}

/// Records an instant event with `msg` (`msgLen` = strlen, 1..=127) on `stream` (non-NULL).
/// -1 on failure.
#[no_mangle]
pub unsafe extern "C" fn aclprofMarkEx(
    msg: *const c_char,
    msgLen: usize,
    stream: aclrtStream,
) -> aclError {
    tx("aclprofMarkEx", || {
        if stream.is_null() {
            return Err(Error::new(MSPROFTX_FAILED, "stream is NULL"));
        }
        if msg.is_null() || msgLen == 0 || msgLen > crate::tx::MAX_MESSAGE {
            return Err(Error::new(
                MSPROFTX_FAILED,
                format!(
                    "msg must be non-NULL with msgLen 1..={}",
                    crate::tx::MAX_MESSAGE
                ),
            ));
        }
        // SAFETY: `msg` holds `msgLen` bytes (the C contract).
        crate::tx::mark_ex(unsafe { std::slice::from_raw_parts(msg.cast::<u8>(), msgLen) })
    })
}

/// A stable 64-bit id for a string (FNV-1a); 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn aclprofStr2Id(message: *const c_char) -> u64 {
    guard("aclprofStr2Id", 0, || {
        // SAFETY: `message` is NULL or a C string (the C contract).
        match unsafe { super::cstr(message, "message") } {
            Ok(s) => crate::tx::str_to_id(s),
            Err(e) => failed("aclprofStr2Id", e, 0),
        }
    })
}

/// Opens a nested range on this thread (the attributes' layout is not public, so the range
/// carries no message). -1 on failure.
#[no_mangle]
pub extern "C" fn aclprofRangePushEx(attr: *mut aclprofEventAttributes) -> aclError {
    tx("aclprofRangePushEx", || {
        if attr.is_null() {
            return Err(Error::new(MSPROFTX_FAILED, "attr is NULL"));
        }
        crate::tx::push_message(String::new())
    })
}

/// Closes this thread's innermost aclprofRangePushEx range. -1 on failure.
#[no_mangle]
pub extern "C" fn aclprofRangePop() -> aclError {
    tx("aclprofRangePop", crate::tx::pop)
}

/// Sets a stamp's category. -1 on failure.
#[no_mangle]
pub extern "C" fn aclprofSetStampCategory(stamp: *mut c_void, category: u32) -> c_int {
    tx("aclprofSetStampCategory", || {
        crate::tx::set_category(handle(stamp), category)
    })
}

/// Sets a stamp's payload type (the value is not recorded, as in CANN). -1 on failure.
#[no_mangle]
pub extern "C" fn aclprofSetStampPayload(
    stamp: *mut c_void,
    payloadType: i32,
    value: *mut c_void,
) -> c_int {
    tx("aclprofSetStampPayload", || {
        if value.is_null() {
            return Err(Error::new(MSPROFTX_FAILED, "value is NULL"));
        }
        crate::tx::set_payload(handle(stamp), payloadType)
    })
}
