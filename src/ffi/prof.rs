//! `acl/acl_prof.h`: every function, macro and enum of CANN's newest public header, with
//! CANN's prototypes, plus the exported extras `aclprofGetGraphId` and `aclprofWarmup`.

use super::base::{aclError, aclrtStream};
use super::{
    cached_record, code, counted_str, entry, failed, guard, invalid, op_buffer, op_record,
};
use crate::accessor::{self, Field};
use crate::error::ACL_ERROR_INVALID_PARAM;
use crate::formats::record::{FLAG_NONE, FLAG_OP_THREAD, RECORD_SIZE};
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CString};

pub use crate::formats::acl_prof::*;

// The enum types as they cross the ABI: plain integers, so an out-of-range value from C is
// data we check, never undefined behaviour. The header shows the enum types above.
#[repr(transparent)]
pub struct aclprofAicoreMetrics(pub u32);
#[repr(transparent)]
pub struct aclprofStepTag(pub u32);
#[repr(transparent)]
pub struct aclprofSubscribeOpFlag(pub u32);
#[repr(transparent)]
pub struct aclprofSubscribeOpAttri(pub u32);
#[repr(transparent)]
pub struct aclprofConfigType(pub c_int);

/// A file-mode profiling config (`aclprofCreateConfig`).
pub struct aclprofConfig {
    _opaque: [u8; 0],
}
/// Declared by CANN for stop configs; not used by any function.
pub struct aclprofStopConfig {
    _opaque: [u8; 0],
}
/// AI Core events; must be NULL.
pub struct aclprofAicoreEvents {
    _opaque: [u8; 0],
}
/// A subscription config (`aclprofCreateSubscribeConfig`).
pub struct aclprofSubscribeConfig {
    _opaque: [u8; 0],
}
/// A training/inference step (`aclprofCreateStepInfo`).
pub struct aclprofStepInfo {
    _opaque: [u8; 0],
}
/// msproftx event attributes (`aclprofRangePushEx`); its layout is not public.
pub struct aclprofEventAttributes {
    _opaque: [u8; 0],
}

pub(super) fn handle<T>(p: *const T) -> usize {
    p as usize
}

/// Starts file-mode profiling: results go under `profilerResultPath` (created with mode
/// 0750 if missing). `length` is the path's strlen (no NUL inside the first `length` bytes).
///
/// Errors: NULL, bad length, or longer than 4096 bytes -> ACL_ERROR_INVALID_PARAM; already
/// initialised -> ACL_ERROR_REPEAT_INITIALIZE; models subscribed -> ACL_ERROR_PROF_API_CONFLICT;
/// directory not creatable or writable -> ACL_ERROR_PROFILING_FAILURE.
#[no_mangle]
pub unsafe extern "C" fn aclprofInit(profilerResultPath: *const c_char, length: usize) -> aclError {
    entry(
        "aclprofInit",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            crate::init::ensure();
            // SAFETY: `profilerResultPath` is NULL or holds the bytes its length says (the C contract).
            let p = unsafe { counted_str(profilerResultPath, length, "profilerResultPath") }?;
            if p.is_empty() || p.len() > crate::state::MAX_PATH {
                return Err(invalid(format!(
                    "the path length must be 1..=4096, not {length}"
                )));
            }
            use std::os::unix::ffi::OsStrExt;
            crate::profiler::init(std::path::Path::new(std::ffi::OsStr::from_bytes(p)))
        },
    )
}

/// Ends file-mode profiling (stopping a running session first).
/// Errors: not initialised -> ACL_ERROR_PROF_NOT_RUN.
#[no_mangle]
pub extern "C" fn aclprofFinalize() -> aclError {
    entry(
        "aclprofFinalize",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            crate::init::ensure();
            crate::profiler::finalize()
        },
    )
}

/// Starts collecting with `profilerConfig`. Starting again with the same config returns 0;
/// with a different config while running, ACL_ERROR_PROF_ALREADY_RUN.
#[no_mangle]
pub extern "C" fn aclprofStart(profilerConfig: *const aclprofConfig) -> aclError {
    entry(
        "aclprofStart",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            crate::init::ensure();
            crate::profiler::start(handle(profilerConfig))
        },
    )
}

/// Same as aclprofStart (CANN's two-phase start; the emulated device needs no warmup).
#[no_mangle]
pub extern "C" fn aclprofWarmup(profilerConfig: *const aclprofConfig) -> aclError {
    entry(
        "aclprofWarmup",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            crate::init::ensure();
            crate::profiler::start(handle(profilerConfig))
        },
    )
}

/// Creates a file-mode config for `deviceNums` devices listed in `deviceIdList` (ids below
/// the emulated device count, no duplicates, at most 64). `aicoreEvents` must be NULL. A
/// config without devices is allowed only with ACL_PROF_MSPROFTX.
///
/// Returns NULL on failure (see aclGetRecentErrMsg). Free with aclprofDestroyConfig.
#[no_mangle]
pub unsafe extern "C" fn aclprofCreateConfig(
    deviceIdList: *mut u32,
    deviceNums: u32,
    aicoreMetrics: aclprofAicoreMetrics,
    aicoreEvents: *const aclprofAicoreEvents,
    dataTypeConfig: u64,
) -> *mut aclprofConfig {
    guard("aclprofCreateConfig", std::ptr::null_mut(), || {
        crate::init::ensure();
        let devices: &[u32] = if deviceNums == 0 {
            &[]
        } else if deviceIdList.is_null() {
            return failed(
                "aclprofCreateConfig",
                invalid("deviceIdList is NULL but deviceNums is not 0"),
                std::ptr::null_mut(),
            );
        } else if deviceNums > 64 {
            return failed(
                "aclprofCreateConfig",
                invalid(format!("deviceNums {deviceNums} is more than 64")),
                std::ptr::null_mut(),
            );
        } else {
            // SAFETY: `deviceIdList` holds `deviceNums` ids (the C contract).
            match unsafe { super::array(deviceIdList, deviceNums as usize, "deviceIdList") } {
                Ok(ids) => ids,
                Err(e) => return failed("aclprofCreateConfig", e, std::ptr::null_mut()),
            }
        };
        match crate::profiler::create_config(
            devices,
            aicoreMetrics.0,
            !aicoreEvents.is_null(),
            dataTypeConfig,
        ) {
            Ok(h) => h as *mut aclprofConfig,
            Err(e) => failed("aclprofCreateConfig", e, std::ptr::null_mut()),
        }
    })
}

/// Destroys a config. NULL, or a config already destroyed -> ACL_ERROR_INVALID_PARAM.
#[no_mangle]
pub extern "C" fn aclprofDestroyConfig(profilerConfig: *const aclprofConfig) -> aclError {
    entry(
        "aclprofDestroyConfig",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || crate::profiler::destroy_config(handle(profilerConfig)),
    )
}

/// Stops collecting. `profilerConfig` must be the config object given to aclprofStart
/// (another object -> ACL_ERROR_INVALID_PROFILING_CONFIG; not running -> ACL_ERROR_PROF_NOT_RUN).
#[no_mangle]
pub extern "C" fn aclprofStop(profilerConfig: *const aclprofConfig) -> aclError {
    entry(
        "aclprofStop",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            crate::init::ensure();
            crate::profiler::stop(handle(profilerConfig))
        },
    )
}

/// Stores a config value, used (and validated) at the next aclprofStart. `configLength` is
/// the value's strlen, at most 256; 0 clears the value. Allowed in any state.
#[no_mangle]
pub unsafe extern "C" fn aclprofSetConfig(
    configType: aclprofConfigType,
    config: *const c_char,
    configLength: usize,
) -> aclError {
    entry(
        "aclprofSetConfig",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            crate::init::ensure();
            let ty = configType.0;
            if ty <= 0 || ty >= crate::formats::prof_values::config_type::ARGS_MAX {
                return Err(invalid(format!(
                    "configType {ty} is not an aclprofConfigType"
                )));
            }
            if configLength > crate::state::MAX_CONFIG_VALUE {
                return Err(invalid(format!(
                    "configLength {configLength} is more than 256"
                )));
            }
            // SAFETY: `config` is NULL or holds the bytes its length says (the C contract).
            let v = unsafe { counted_str(config, configLength, "config") }?;
            crate::profiler::set_config(ty, String::from_utf8_lossy(v).into_owned())
        },
    )
}

/// Subscribes to the ops of a loaded model: from now on its records are written to the
/// pipe of the subscribe config. Errors: model not loaded -> ACL_ERROR_INVALID_MODEL_ID;
/// already subscribed -> ACL_ERROR_PROF_REPEAT_SUBSCRIBE; between aclprofInit and
/// aclprofFinalize -> ACL_ERROR_PROF_API_CONFLICT; fd not open for writing ->
/// ACL_ERROR_INVALID_PARAM. Pipes and sockets are switched to non-blocking mode.
#[no_mangle]
pub extern "C" fn aclprofModelSubscribe(
    modelId: u32,
    profSubscribeConfig: *const aclprofSubscribeConfig,
) -> aclError {
    entry(
        "aclprofModelSubscribe",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || crate::profiler::subscribe(modelId, handle(profSubscribeConfig)),
    )
}

/// Ends a subscription. When it returns, every record reported for the model before the
/// call has been written, the fd has been closed (unless another subscription uses it) and
/// the config's `*fd` is -1, so the reader sees end of file. A reader that does not drain is
/// waited for at most ACLPROF_UNSUBSCRIBE_TIMEOUT_MS; the rest is counted as dropped.
#[no_mangle]
pub extern "C" fn aclprofModelUnSubscribe(modelId: u32) -> aclError {
    entry(
        "aclprofModelUnSubscribe",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || crate::profiler::unsubscribe(modelId),
    )
}

/// Creates a subscription config. `timeInfoSwitch` is 0 or 1; `fd` points to an `int`
/// holding the write end of a pipe (or a FIFO, socket or file), which must stay valid until
/// the subscription ends. Returns NULL on failure. Free with aclprofDestroySubscribeConfig.
#[no_mangle]
pub unsafe extern "C" fn aclprofCreateSubscribeConfig(
    timeInfoSwitch: i8,
    aicoreMetrics: aclprofAicoreMetrics,
    fd: *mut c_void,
) -> *mut aclprofSubscribeConfig {
    guard("aclprofCreateSubscribeConfig", std::ptr::null_mut(), || {
        crate::init::ensure();
        if fd.is_null() {
            return failed(
                "aclprofCreateSubscribeConfig",
                invalid("fd is NULL; pass &pipefd[1]"),
                std::ptr::null_mut(),
            );
        }
        // SAFETY: CANN's contract: fd points to an int that outlives the subscription.
        let user_fd = unsafe { crate::transport::UserFd::new(fd.cast()) };
        match crate::profiler::create_sub_config(timeInfoSwitch, aicoreMetrics.0, user_fd) {
            Ok(h) => h as *mut aclprofSubscribeConfig,
            Err(e) => failed("aclprofCreateSubscribeConfig", e, std::ptr::null_mut()),
        }
    })
}

/// Destroys a subscription config (subscriptions made with it go on).
#[no_mangle]
pub extern "C" fn aclprofDestroySubscribeConfig(
    profSubscribeConfig: *const aclprofSubscribeConfig,
) -> aclError {
    entry(
        "aclprofDestroySubscribeConfig",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || crate::profiler::destroy_sub_config(handle(profSubscribeConfig)),
    )
}

/// The size of one op record: 512 bytes. Read pipes in whole multiples of it.
#[no_mangle]
pub unsafe extern "C" fn aclprofGetOpDescSize(opDescSize: *mut usize) -> aclError {
    guard(
        "aclprofGetOpDescSize",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            // SAFETY: `opDescSize` is NULL or valid for writes (the C contract).
            let r = unsafe { super::fill(opDescSize, "opDescSize", || Ok(RECORD_SIZE)) };
            code("aclprofGetOpDescSize", r)
        },
    )
}

/// The number of records in `opInfo`, after checking every record's signature.
#[no_mangle]
pub unsafe extern "C" fn aclprofGetOpNum(
    opInfo: *const c_void,
    opInfoLen: usize,
    opNumber: *mut u32,
) -> aclError {
    entry(
        "aclprofGetOpNum",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            // SAFETY: `opNumber` is NULL or valid for writes, `opInfo` NULL or holding the
            // bytes its length says (the C contract).
            let (out, buf) = unsafe {
                (
                    super::out(opNumber, "opNumber")?,
                    op_buffer(opInfo, opInfoLen)?,
                )
            };
            *out = accessor::op_num(buf)?;
            Ok(())
        },
    )
}

/// `aclprofGetOp{Name,Type}Len`: the common case (the record this thread verified last,
/// its string whole and inline) without a frame; anything else checked in full.
#[inline(always)]
unsafe fn string_len(
    func: &str,
    opInfo: *const c_void,
    len: usize,
    index: u32,
    out: *mut usize,
    field: Field,
) -> aclError {
    if !out.is_null() && out.is_aligned() {
        // SAFETY: `opInfo` is NULL or holds `len` bytes (the C contract).
        let cached = unsafe { cached_record(opInfo, len, index) };
        if let Some(s) = cached.and_then(|c| accessor::cached_string(c, field)) {
            // SAFETY: `out` is aligned and not NULL, so valid for writes (the C contract).
            unsafe { *out = s.len() + 1 };
            return 0;
        }
    }
    // SAFETY: the caller's pointers, passed on.
    unsafe { string_len_checked(func, opInfo, len, index, out, field) }
}

#[inline(never)]
unsafe fn string_len_checked(
    func: &str,
    opInfo: *const c_void,
    len: usize,
    index: u32,
    out: *mut usize,
    field: Field,
) -> aclError {
    entry(func, crate::error::ACL_ERROR_PROFILING_FAILURE, || {
        // SAFETY: `out` is NULL or valid for writes, `opInfo` NULL or holding `len` bytes
        // (the C contract).
        let (out, rec) = unsafe {
            (
                super::out(out, "the length out-pointer")?,
                op_record(opInfo, len, index)?,
            )
        };
        *out = accessor::string_len(rec, field)?;
        Ok(())
    })
}

/// `aclprofGetOp{Name,Type}`: the common case as [`string_len`], then in full.
#[inline(always)]
unsafe fn copy_string(
    func: &str,
    opInfo: *const c_void,
    len: usize,
    index: u32,
    dst: *mut c_char,
    dst_len: usize,
    field: Field,
) -> aclError {
    if !dst.is_null() {
        // SAFETY: `opInfo` is NULL or holds `len` bytes (the C contract).
        let cached = unsafe { cached_record(opInfo, len, index) };
        if let Some(s) = cached.and_then(|c| accessor::cached_string(c, field)) {
            if dst_len > s.len() {
                // SAFETY: `dst` is not NULL, so it holds `dst_len` > `s.len()` writable bytes
                // (the C contract), which a record's string cannot overlap.
                unsafe {
                    std::ptr::copy_nonoverlapping(s.as_ptr(), dst.cast::<u8>(), s.len());
                    *dst.add(s.len()) = 0;
                }
                return 0;
            }
        }
    }
    // SAFETY: the caller's pointers, passed on.
    unsafe { copy_string_checked(func, opInfo, len, index, dst, dst_len, field) }
}

#[inline(never)]
unsafe fn copy_string_checked(
    func: &str,
    opInfo: *const c_void,
    len: usize,
    index: u32,
    dst: *mut c_char,
    dst_len: usize,
    field: Field,
) -> aclError {
    entry(func, crate::error::ACL_ERROR_PROFILING_FAILURE, || {
        if dst.is_null() || dst_len == 0 {
            return Err(invalid("the destination buffer is NULL or empty"));
        }
        if dst_len > isize::MAX as usize {
            return Err(invalid(format!(
                "destination length {dst_len} is impossible"
            )));
        }
        // SAFETY: `opInfo` is NULL or holds `len` bytes; `dst` is not NULL, so it holds
        // `dst_len` writable bytes (the C contract), and `dst_len` fits an isize.
        let (v, out) = unsafe {
            (
                op_record(opInfo, len, index)?,
                std::slice::from_raw_parts_mut(dst.cast::<u8>(), dst_len),
            )
        };
        accessor::copy_string(v, field, out)
    })
}

/// The length of record `index`'s op type, including the NUL.
#[no_mangle]
pub unsafe extern "C" fn aclprofGetOpTypeLen(
    opInfo: *const c_void,
    opInfoLen: usize,
    index: u32,
    opTypeLen: *mut usize,
) -> aclError {
    // SAFETY: the caller's pointers, passed on.
    unsafe {
        string_len(
            "aclprofGetOpTypeLen",
            opInfo,
            opInfoLen,
            index,
            opTypeLen,
            Field::Type,
        )
    }
}

/// Copies record `index`'s op type and its NUL into `opType` (`opTypeLen` bytes). Too short
/// -> ACL_ERROR_INVALID_PARAM, nothing written. Can be read any number of times.
#[no_mangle]
pub unsafe extern "C" fn aclprofGetOpType(
    opInfo: *const c_void,
    opInfoLen: usize,
    index: u32,
    opType: *mut c_char,
    opTypeLen: usize,
) -> aclError {
    // SAFETY: the caller's pointers, passed on.
    unsafe {
        copy_string(
            "aclprofGetOpType",
            opInfo,
            opInfoLen,
            index,
            opType,
            opTypeLen,
            Field::Type,
        )
    }
}

/// The length of record `index`'s op name, including the NUL.
#[no_mangle]
pub unsafe extern "C" fn aclprofGetOpNameLen(
    opInfo: *const c_void,
    opInfoLen: usize,
    index: u32,
    opNameLen: *mut usize,
) -> aclError {
    // SAFETY: the caller's pointers, passed on.
    unsafe {
        string_len(
            "aclprofGetOpNameLen",
            opInfo,
            opInfoLen,
            index,
            opNameLen,
            Field::Name,
        )
    }
}

/// Copies record `index`'s op name and its NUL into `opName` (`opNameLen` bytes). Too short
/// -> ACL_ERROR_INVALID_PARAM, nothing written. Can be read any number of times.
#[no_mangle]
pub unsafe extern "C" fn aclprofGetOpName(
    opInfo: *const c_void,
    opInfoLen: usize,
    index: u32,
    opName: *mut c_char,
    opNameLen: usize,
) -> aclError {
    // SAFETY: the caller's pointers, passed on.
    unsafe {
        copy_string(
            "aclprofGetOpName",
            opInfo,
            opInfoLen,
            index,
            opName,
            opNameLen,
            Field::Name,
        )
    }
}

/// A numeric accessor: the common case (the record this thread verified last) without a
/// frame; anything else checked in full.
#[inline(always)]
unsafe fn field<T: Copy>(
    func: &str,
    opInfo: *const c_void,
    len: usize,
    index: u32,
    on_error: T,
    get: impl FnOnce(crate::formats::record::View<'_>) -> T,
) -> T {
    // SAFETY: `opInfo` is NULL or holds `len` bytes (the C contract), passed on.
    unsafe {
        match cached_record(opInfo, len, index) {
            Some(c) => get(c.view),
            None => field_checked(func, opInfo, len, index, on_error, get),
        }
    }
}

#[inline(never)]
unsafe fn field_checked<T: Copy>(
    func: &str,
    opInfo: *const c_void,
    len: usize,
    index: u32,
    on_error: T,
    get: impl FnOnce(crate::formats::record::View<'_>) -> T,
) -> T {
    guard(func, on_error, || {
        // SAFETY: `opInfo` is NULL or holds `len` bytes (the C contract).
        match unsafe { op_record(opInfo, len, index) } {
            Ok(c) => get(c.view),
            Err(e) => failed(func, e, on_error),
        }
    })
}

/// Start time of record `index`, in ns (CLOCK_MONOTONIC_RAW); 0 on error.
#[no_mangle]
pub unsafe extern "C" fn aclprofGetOpStart(
    opInfo: *const c_void,
    opInfoLen: usize,
    index: u32,
) -> u64 {
    // SAFETY: the caller's pointers, passed on.
    unsafe {
        field("aclprofGetOpStart", opInfo, opInfoLen, index, 0, |v| {
            v.start()
        })
    }
}

/// End time of record `index`, in ns; 0 on error.
#[no_mangle]
pub unsafe extern "C" fn aclprofGetOpEnd(
    opInfo: *const c_void,
    opInfoLen: usize,
    index: u32,
) -> u64 {
    // SAFETY: the caller's pointers, passed on.
    unsafe { field("aclprofGetOpEnd", opInfo, opInfoLen, index, 0, |v| v.end()) }
}

/// Duration (end - start) of record `index`, in ns; 0 on error.
#[no_mangle]
pub unsafe extern "C" fn aclprofGetOpDuration(
    opInfo: *const c_void,
    opInfoLen: usize,
    index: u32,
) -> u64 {
    // SAFETY: the caller's pointers, passed on.
    unsafe {
        field("aclprofGetOpDuration", opInfo, opInfoLen, index, 0, |v| {
            v.duration()
        })
    }
}

/// Model id of record `index`; ACL_ERROR_INVALID_PARAM (100000) on error.
#[no_mangle]
pub unsafe extern "C" fn aclprofGetModelId(
    opInfo: *const c_void,
    opInfoLen: usize,
    index: u32,
) -> usize {
    // SAFETY: the caller's pointers, passed on.
    unsafe {
        field(
            "aclprofGetModelId",
            opInfo,
            opInfoLen,
            index,
            ACL_ERROR_INVALID_PARAM as usize,
            |v| v.model_id() as usize,
        )
    }
}

/// Graph id of record `index` (the model id field); ACL_ERROR_INVALID_PARAM on error.
#[no_mangle]
pub unsafe extern "C" fn aclprofGetGraphId(
    opInfo: *const c_void,
    opInfoLen: usize,
    index: u32,
) -> usize {
    // SAFETY: the caller's pointers, passed on.
    unsafe {
        field(
            "aclprofGetGraphId",
            opInfo,
            opInfoLen,
            index,
            ACL_ERROR_INVALID_PARAM as usize,
            |v| v.model_id() as usize,
        )
    }
}

/// Flag of record `index`; ACL_SUBSCRIBE_NONE on error.
#[no_mangle]
pub unsafe extern "C" fn aclprofGetOpFlag(
    opInfo: *const c_void,
    opInfoLen: usize,
    index: u32,
) -> aclprofSubscribeOpFlag {
    // SAFETY: the caller's pointers, passed on.
    aclprofSubscribeOpFlag(unsafe {
        field(
            "aclprofGetOpFlag",
            opInfo,
            opInfoLen,
            index,
            FLAG_NONE,
            |v| v.flag(),
        )
    })
}

thread_local! {
    static ATTRI: RefCell<CString> = RefCell::new(CString::default());
}

/// An attribute of record `index` as a string, or NULL. ACL_SUBSCRIBE_ATTRI_THREADID gives
/// the thread id of ACL_SUBSCRIBE_OP_THREAD records. The string lives in a per-thread buffer,
/// valid until this thread's next call.
#[no_mangle]
pub unsafe extern "C" fn aclprofGetOpAttriValue(
    opInfo: *const c_void,
    opInfoLen: usize,
    index: u32,
    attri: aclprofSubscribeOpAttri,
) -> *const c_char {
    guard("aclprofGetOpAttriValue", std::ptr::null(), || {
        // SAFETY: `opInfo` is NULL or holds `opInfoLen` bytes (the C contract).
        let v = match unsafe { op_record(opInfo, opInfoLen, index) } {
            Ok(c) => c.view,
            Err(e) => return failed("aclprofGetOpAttriValue", e, std::ptr::null()),
        };
        if attri.0 != 0 {
            return failed(
                "aclprofGetOpAttriValue",
                invalid(format!("attri {} is not readable", attri.0)),
                std::ptr::null(),
            );
        }
        if v.flag() != FLAG_OP_THREAD {
            return failed(
                "aclprofGetOpAttriValue",
                invalid("the thread id is recorded only for ACL_SUBSCRIBE_OP_THREAD records"),
                std::ptr::null(),
            );
        }
        let s = CString::new(v.thread_id().to_string()).unwrap_or_default();
        ATTRI.with(|a| {
            *a.borrow_mut() = s;
            a.borrow().as_ptr()
        })
    })
}

/// Records the start (ACL_STEP_START) or end (any other tag) of a step. Each end can be
/// recorded once per step info. `stream` is not used by the emulated device.
#[no_mangle]
pub extern "C" fn aclprofGetStepTimestamp(
    stepInfo: *mut aclprofStepInfo,
    tag: aclprofStepTag,
    stream: aclrtStream,
) -> aclError {
    let _ = stream;
    entry(
        "aclprofGetStepTimestamp",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || crate::tx::step_timestamp(handle(stepInfo), tag.0).map(|_| ()),
    )
}

/// Creates a step info with the next process-wide step index (from 1).
#[no_mangle]
pub extern "C" fn aclprofCreateStepInfo() -> *mut aclprofStepInfo {
    guard("aclprofCreateStepInfo", std::ptr::null_mut(), || {
        crate::tx::create_step() as *mut aclprofStepInfo
    })
}

/// Destroys a step info. NULL or an unknown pointer is ignored (and logged).
#[no_mangle]
pub extern "C" fn aclprofDestroyStepInfo(stepinfo: *mut aclprofStepInfo) {
    guard("aclprofDestroyStepInfo", (), || {
        if !stepinfo.is_null() && !crate::tx::STEPS.remove(handle(stepinfo)) {
            failed(
                "aclprofDestroyStepInfo",
                invalid("not a live aclprofStepInfo (already destroyed?)"),
                (),
            );
        }
    })
}

pub use super::prof_tx::*;
