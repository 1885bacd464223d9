//! `acl/acl_prof_ext.h`'s shared-memory rings, the batch decoder and `PROFILING_OPTIONS`
//! checks, generated into the header after `ext.rs`'s (build.rs).

use super::base::aclError;
use super::{cstr, entry, invalid, opt_path_arg};
use std::ffi::{c_char, c_void};

/// A reader's handle on a shared-memory ring (aclprofExtRingAttach).
pub struct aclprofExtRing {
    _opaque: [u8; 0],
}

crate::fork::global! {
    /// Ring readers by handle; a forked child keeps them.
    static RINGS: crate::handles::Table<std::sync::Arc<crate::transport::ring::Reader>> =
        crate::handles::Table::new(crate::fork::Rank::RingReaders);
}

/// Subscribes a loaded model to a new shared-memory ring of `capacityRecords` 512-byte
/// records (8 .. 4194304): in a memfd when `path` is NULL, else in a new file at `path`
/// (e.g. under /dev/shm; the caller removes it). `*ringFd` gets the ring's fd, for a reader
/// in this process or one it passes the fd to; it stays open until the model is
/// unsubscribed. End the subscription with aclprofModelUnSubscribe: everything reported
/// before is in the ring, then readers see the end of the stream. Same rules as
/// aclprofModelSubscribe (not loaded -> ACL_ERROR_INVALID_MODEL_ID, repeated ->
/// ACL_ERROR_PROF_REPEAT_SUBSCRIBE, in file mode -> ACL_ERROR_PROF_API_CONFLICT).
#[no_mangle]
pub unsafe extern "C" fn aclprofExtRingSubscribe(
    modelId: u32,
    path: *const c_char,
    capacityRecords: u32,
    ringFd: *mut i32,
) -> aclError {
    entry(
        "aclprofExtRingSubscribe",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            crate::init::ensure();
            // SAFETY: `ringFd` is NULL or valid for writes (the C contract).
            let ringFd = unsafe { super::out(ringFd, "ringFd") }?;
            // SAFETY: `path` is NULL or a C string (the C contract).
            let p = unsafe { opt_path_arg(path, "path") }?;
            let fd = crate::profiler::ring_subscribe(modelId, p, capacityRecords as u64)?;
            *ringFd = fd;
            Ok(())
        },
    )
}

/// Attaches a reader to a ring, by `fd` (>= 0; duplicated, so the caller may close its own)
/// or else by `path`. `*ring` gets the handle; free it with aclprofExtRingDetach.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtRingAttach(
    path: *const c_char,
    fd: i32,
    ring: *mut *mut aclprofExtRing,
) -> aclError {
    entry(
        "aclprofExtRingAttach",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            // SAFETY: `ring` is NULL or valid for writes (the C contract).
            let ring = unsafe { super::out(ring, "ring") }?;
            // SAFETY: `path` is NULL or a C string (the C contract).
            let p = unsafe { opt_path_arg(path, "path") }?;
            let rg = crate::transport::ring::Ring::open(p, (fd >= 0).then_some(fd))?;
            let rg = crate::transport::ring::Reader::attach(rg)?;
            *ring = RINGS.insert(std::sync::Arc::new(rg)) as *mut aclprofExtRing;
            Ok(())
        },
    )
}

type ReaderRef = std::sync::Arc<crate::transport::ring::Reader>;

thread_local! {
    /// The handle this thread used last and a weak reference to its reader: a read loop
    /// acquires and releases on one handle. Detaching drops the reader, so the weak
    /// reference stops upgrading and the table is asked again.
    static LAST_RING: std::cell::RefCell<(usize, std::sync::Weak<crate::transport::ring::Reader>)> =
        const { std::cell::RefCell::new((0, std::sync::Weak::new())) };
}

fn ring_of(ring: *mut aclprofExtRing) -> crate::error::Result<ReaderRef> {
    let h = ring as usize;
    let cached = LAST_RING.with(|l| {
        let l = l.borrow();
        if l.0 == h {
            l.1.upgrade().filter(|r| !r.is_detached())
        } else {
            None
        }
    });
    if let Some(r) = cached {
        return Ok(r);
    }
    let r = RINGS
        .with(h, |r| r.clone())
        .ok_or_else(|| invalid("not an attached ring (NULL, detached, or never attached)"))?;
    LAST_RING.with(|l| *l.borrow_mut() = (h, std::sync::Arc::downgrade(&r)));
    Ok(r)
}

/// Waits up to `timeoutMs` for records and gives the reader a contiguous batch of at most
/// `maxRecords` records: `*records` points into the ring (decode it in place with the
/// aclprofGetOp* accessors, `*length` bytes) until aclprofExtRingRelease. No records within
/// the timeout: ACL_SUCCESS with `*length` 0. The subscription ended (or its process died)
/// and everything was read: ACL_ERROR_PROF_NOT_RUN. A negative `timeoutMs`, NULL or
/// misaligned `records` or `length`: ACL_ERROR_INVALID_PARAM. On any error `*records` is
/// NULL and `*length` 0.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtRingAcquire(
    ring: *mut aclprofExtRing,
    maxRecords: u32,
    timeoutMs: i32,
    records: *mut *const c_void,
    length: *mut usize,
) -> aclError {
    entry(
        "aclprofExtRingAcquire",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            // SAFETY: `records` is NULL or valid for writes (the C contract).
            let records = unsafe { super::out(records, "records") }?;
            // SAFETY: `length` is NULL or valid for writes (the C contract).
            let length = unsafe { super::out(length, "length") }?;
            // Nothing stale is left there if the call fails.
            *records = std::ptr::null();
            *length = 0;
            let rg = ring_of(ring)?;
            if timeoutMs < 0 {
                return Err(invalid(format!(
                    "timeoutMs {timeoutMs} is negative (0: do not wait)"
                )));
            }
            let wait = std::time::Duration::from_millis(timeoutMs as u64);
            match rg.acquire(maxRecords as u64, wait)? {
                Some((p, n)) => {
                    *records = p.cast();
                    *length = n;
                }
                None => {
                    *records = std::ptr::null();
                    *length = 0;
                }
            }
            Ok(())
        },
    )
}

/// Gives `length` bytes (whole records of the last acquired batch) back to the producer.
#[no_mangle]
pub extern "C" fn aclprofExtRingRelease(ring: *mut aclprofExtRing, length: usize) -> aclError {
    entry(
        "aclprofExtRingRelease",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || ring_of(ring).and_then(|r| r.release(length)),
    )
}

/// Detaches a reader: the producer no longer waits for it (its records are then dropped
/// and counted). Frees the handle.
#[no_mangle]
pub extern "C" fn aclprofExtRingDetach(ring: *mut aclprofExtRing) -> aclError {
    entry(
        "aclprofExtRingDetach",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            ring_of(ring)?.detach();
            RINGS.remove(ring as usize);
            Ok(())
        },
    )
}

/// One op record unpacked by aclprofExtDecodeOps. The strings point into the buffer that
/// was decoded (NUL-terminated, inline, so they live as long as that buffer) and may be
/// truncated (see `truncated`); aclprofGetOpName returns the whole name in the process that
/// reported the op.
#[repr(C)]
pub struct aclprofExtOp {
    pub start: u64,
    pub end: u64,
    pub duration: u64,
    pub opIndex: u64,
    pub modelId: u32,
    pub threadId: u32,
    pub deviceId: u32,
    pub streamId: u32,
    pub flag: u32,
    pub pid: u32,
    /// The op name stored in the record (NUL-terminated).
    pub name: *const c_char,
    /// The op type stored in the record (NUL-terminated).
    pub opType: *const c_char,
    /// Bytes of `name` and `opType` without the NUL.
    pub nameLen: u32,
    pub typeLen: u32,
    /// Bit 0: the name was truncated; bit 1: the type was.
    pub truncated: u32,
    pub reserved: u32,
}

/// Verifies and unpacks the records of `opInfo` (`opInfoLen` bytes, a whole number of
/// records) into `ops`, at most `capacity` of them, in one call: the batch form of the
/// aclprofGetOp* accessors. `*count` gets how many were unpacked. `ops` may be NULL with
/// `capacity` 0 to check signatures only, as aclprofGetOpNum does: then `*count` is the
/// number of records. A record that fails its check (its signature, or when unpacking, a
/// string field without its NUL) stops the call with ACL_ERROR_INVALID_PARAM, and `*count` is the index
/// of that record (the records before it are unpacked). Bad length or NULL arguments ->
/// ACL_ERROR_INVALID_PARAM.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtDecodeOps(
    opInfo: *const c_void,
    opInfoLen: usize,
    ops: *mut aclprofExtOp,
    capacity: u32,
    count: *mut u32,
) -> aclError {
    entry(
        "aclprofExtDecodeOps",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            // SAFETY: `count` is NULL or valid for writes (the C contract).
            let count = unsafe { super::out(count, "count") }?;
            if (ops.is_null() && capacity != 0) || !ops.is_aligned() {
                return Err(invalid("ops is NULL with a capacity, or misaligned"));
            }
            *count = 0;
            // SAFETY: `opInfo` is NULL or holds the bytes its length says (the C contract).
            let buf = unsafe { super::op_buffer(opInfo, opInfoLen) }?;
            let (max, out) = if ops.is_null() {
                (usize::MAX, &mut [][..])
            } else {
                // SAFETY: `ops` is aligned and not NULL, so it holds `capacity` writable
                // records (the C contract).
                let ops = unsafe { std::slice::from_raw_parts_mut(ops, capacity as usize) };
                (capacity as usize, ops)
            };
            let r = crate::accessor::each_verified(buf, max, !ops.is_null(), |i, v| {
                if let Some(o) = out.get_mut(i) {
                    *o = unpack(v);
                }
            });
            match r {
                Ok(n) => {
                    *count = n as u32;
                    Ok(())
                }
                Err((n, e)) => {
                    *count = n as u32;
                    Err(e)
                }
            }
        },
    )
}

fn unpack(v: crate::formats::record::View<'_>) -> aclprofExtOp {
    use crate::formats::record::{get_u16, OFF_NAME, OFF_NAME_LEN, OFF_TYPE, OFF_TYPE_LEN};
    aclprofExtOp {
        start: v.start(),
        end: v.end(),
        duration: v.duration(),
        opIndex: v.op_index(),
        modelId: v.model_id(),
        threadId: v.thread_id(),
        deviceId: v.dev_id(),
        streamId: v.stream_id(),
        flag: v.flag(),
        pid: v.pid(),
        name: v.0[OFF_NAME..].as_ptr().cast(),
        opType: v.0[OFF_TYPE..].as_ptr().cast(),
        nameLen: get_u16(v.0, OFF_NAME_LEN) as u32,
        typeLen: get_u16(v.0, OFF_TYPE_LEN) as u32,
        truncated: v.marks() as u32 & 3,
        reserved: 0,
    }
}

/// The JSON text of a `PROFILING_OPTIONS`-style argument.
///
/// # Safety
/// As [`cstr`].
unsafe fn options_arg<'a>(options: *const c_char) -> crate::error::Result<&'a str> {
    // SAFETY: `options` is NULL or a C string (the C contract).
    std::str::from_utf8(unsafe { cstr(options, "profilingOptions") }?)
        .map_err(|_| invalid("profilingOptions is not UTF-8"))
}

/// Checks `profilingOptions`, a `PROFILING_OPTIONS` JSON object (as TensorFlow's npu_bridge
/// writes it: "output", "task_trace", "training_trace", "aic_metrics", "fp_point", ...),
/// without starting anything. Bad JSON, an unknown key, a switch that is not "on" or "off",
/// an unknown metric, a `host_sys`, `host_sys_usage` or frequency value aclprofSetConfig
/// would refuse, or no "output" -> ACL_ERROR_INVALID_PARAM, the reason (naming the key)
/// from aclGetRecentErrMsg.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtOptionsCheck(profilingOptions: *const c_char) -> aclError {
    entry(
        "aclprofExtOptionsCheck",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            let count = crate::init::ensure().device_count;
            // SAFETY: `profilingOptions` is NULL or a C string (the C contract).
            let text = unsafe { options_arg(profilingOptions) }?;
            crate::init::env_mode_config(text, count, crate::init::Unknown::Refuse)?;
            crate::init::env_mode_settings(text, crate::init::Unknown::Refuse).map(|_| ())
        },
    )
}

/// Starts profiling every model on every device into a result directory under "output", as
/// `PROFILING_MODE=true` with these `PROFILING_OPTIONS` would: what framework adapters call
/// when their profiling switch is on. Exported by aclprofExtOptionsStop, or at process exit.
/// Errors: as aclprofExtOptionsCheck; profiling already running in the process (aclprofInit,
/// a subscription, PROFILING_MODE or an earlier start) -> ACL_ERROR_PROF_ALREADY_RUN; an
/// output directory that cannot be created -> ACL_ERROR_INVALID_FILE.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtOptionsStart(profilingOptions: *const c_char) -> aclError {
    entry(
        "aclprofExtOptionsStart",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            crate::init::ensure();
            // SAFETY: `profilingOptions` is NULL or a C string (the C contract).
            crate::init::options_start(unsafe { options_arg(profilingOptions) }?)
        },
    )
}

/// Stops what aclprofExtOptionsStart (or PROFILING_MODE) started and exports its result
/// directory. Nothing running -> ACL_ERROR_PROF_NOT_RUN.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtOptionsStop() -> aclError {
    entry(
        "aclprofExtOptionsStop",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        crate::init::options_stop,
    )
}
