//! `acl/acl_prof_ext.h`: aclprof's extension API for runtimes and simulators that are not
//! CANN (docs/design.md, "The emulated device"): load models, report executed ops, read delivery statistics, and
//! run the model simulator.

use super::base::aclError;
use super::{bytes_arg, cstr, entry, guard, invalid, path_arg};
use crate::formats::record::until_nul;
use std::ffi::{c_char, c_void, CStr};

/// Delivery statistics since the process started (all subscriptions together).
/// When nothing is in flight (after aclprofExtFlush, or once every model is unsubscribed),
/// recordsReported == recordsDelivered + recordsDropped.
#[repr(C)]
pub struct aclprofExtStats {
    /// Records produced for a subscriber (one per op reported for a subscribed model).
    pub recordsReported: u64,
    /// Records written to the subscriber's fd.
    pub recordsDelivered: u64,
    /// Records lost: full buffer under ACLPROF_ON_FULL=drop, a closed reader, or a reader
    /// that did not drain before the unsubscribe timeout.
    pub recordsDropped: u64,
    /// Bytes written to subscribers' fds.
    pub bytesWritten: u64,
}

/// How often, and for how long, threads of this process waited for a subscriber's reader
/// to make room, since the process started (all subscriptions together). A report call
/// waits only when its buffer is full under ACLPROF_ON_FULL=block (a pipe holds its size in
/// records first); an unsubscribe, aclprofStop or aclprofExtFlush waits only for what does
/// not fit into the pipe.
#[repr(C)]
pub struct aclprofExtWaits {
    /// Times a report call waited for a reader.
    pub reportWaits: u64,
    /// Nanoseconds report calls spent waiting, in all.
    pub reportWaitNs: u64,
    /// Times an unsubscribe, stop or flush waited for a reader.
    pub flushWaits: u64,
    /// Nanoseconds they spent waiting, in all.
    pub flushWaitNs: u64,
}

/// Registers a model with the emulated runtime on device `deviceId` (below
/// ACLPROF_DEVICE_COUNT) and returns its id in `*modelId`. Ids count up from 1 and are not
/// reused. Errors: NULL arguments -> ACL_ERROR_INVALID_PARAM; no such device ->
/// ACL_ERROR_INVALID_DEVICE.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtModelLoad(
    modelName: *const c_char,
    deviceId: u32,
    modelId: *mut u32,
) -> aclError {
    entry(
        "aclprofExtModelLoad",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            crate::init::ensure();
            // SAFETY: `modelName` is NULL or a C string (the C contract).
            let name = unsafe { cstr(modelName, "modelName") }?;
            // SAFETY: `modelId` is NULL or valid for writes (the C contract).
            let modelId = unsafe { super::out(modelId, "modelId") }?;
            let name = String::from_utf8_lossy(name);
            let id = crate::profiler::model_load(&name, deviceId, None)?;
            *modelId = id;
            Ok(())
        },
    )
}

/// Unregisters a model (simulated or not). A subscription to it stays until unsubscribed.
/// Not loaded -> ACL_ERROR_INVALID_MODEL_ID.
#[no_mangle]
pub extern "C" fn aclprofExtModelUnload(modelId: u32) -> aclError {
    entry(
        "aclprofExtModelUnload",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || crate::profiler::model_unload(modelId),
    )
}

/// Reports one op that ran on the device of model `modelId` from `startNs` to `endNs`
/// (aclprofExtNowNs's clock). Call it from the thread that ran the op: each thread is one
/// stream. Never makes a system call; with nobody subscribed it costs about one atomic load
/// (and checks only its arguments). Names longer than 256 bytes and types longer than 64 are
/// stored truncated in records; the whole strings stay readable in this process.
///
/// Errors: NULL strings or endNs < startNs -> ACL_ERROR_INVALID_PARAM; model not loaded
/// (checked while someone subscribes) -> ACL_ERROR_INVALID_MODEL_ID.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtReportOp(
    modelId: u32,
    opName: *const c_char,
    opType: *const c_char,
    startNs: u64,
    endNs: u64,
) -> aclError {
    // The idle path: argument checks and one atomic load, no strlen. Nothing here can
    // panic, so it runs before the panic guard, and everything else is in another
    // function so that this one needs no stack frame.
    if !opName.is_null() && !opType.is_null() && startNs <= endNs && !crate::hotpath::active() {
        return 0;
    }
    // SAFETY: the caller's pointers, passed on.
    unsafe { report_listening(modelId, opName, opType, startNs, endNs) }
}

/// The reporting path's common case ([`crate::hotpath::report_repeated`]) for the entry
/// point `func` (whose [`crate::hotpath::Site`] is `SITE`), under the panic guard: true if
/// the op was reported, false if the whole path must take it.
#[inline(always)]
fn try_repeated<'a, const SITE: u8>(
    func: &str,
    model: u32,
    op: impl crate::formats::record::OpStrings<'a>,
    start: u64,
    end: u64,
    replay: crate::hotpath::Replay,
) -> bool {
    crate::hotpath::activity() == crate::hotpath::Activity::Listening
        && guard(func, false, || {
            crate::hotpath::report_repeated::<SITE>(model, op, start, end, replay)
        })
}

/// A report that someone may listen for: its common case ([`crate::hotpath::report_repeated`])
/// in a small frame, else the whole path with its errors.
#[inline(never)]
unsafe fn report_listening(
    model: u32,
    name: *const c_char,
    op_type: *const c_char,
    start: u64,
    end: u64,
) -> aclError {
    if !name.is_null() && !op_type.is_null() {
        // SAFETY: `name` and `op_type` are not NULL, so C strings (the C contract).
        let (n, t) = unsafe {
            (
                CStr::from_ptr(name).to_bytes(),
                CStr::from_ptr(op_type).to_bytes(),
            )
        };
        let op = crate::formats::record::Names(n, t);
        const C: u8 = crate::hotpath::Site::C as u8;
        if try_repeated::<C>(
            "aclprofExtReportOp",
            model,
            op,
            start,
            end,
            Default::default(),
        ) {
            return 0;
        }
    }
    // SAFETY: the caller's pointers, passed on.
    unsafe { report_op_checked(model, name, op_type, start, end) }
}

#[inline(never)]
unsafe fn report_op_checked(
    model: u32,
    name: *const c_char,
    op_type: *const c_char,
    start: u64,
    end: u64,
) -> aclError {
    entry(
        "aclprofExtReportOp",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            // SAFETY: `name` is NULL or a C string (the C contract).
            let name = unsafe { cstr(name, "opName") }?;
            // SAFETY: `op_type` is NULL or a C string (the C contract).
            let ty = unsafe { cstr(op_type, "opType") }?;
            crate::hotpath::report_whole(model, name, ty, start, end, Default::default())
        },
    )
}

/// What an op's tensors and cost were, for aclprofExtOpMetaCreate. Strings are CANN's text
/// as op_summary writes it: tensors separated by `;`, dimensions by `,` ("1,3,224,224;64,3,7,7"),
/// data types ("FLOAT16;FLOAT16") and formats ("NCHW;NC1HWC0"). NULL or "" is unknown, as is
/// 0 for `flops` (floating-point operations of one execution) and `bytes` (bytes read and
/// written by one execution).
#[repr(C)]
pub struct aclprofExtOpMeta {
    pub inputShapes: *const c_char,
    pub inputTypes: *const c_char,
    pub inputFormats: *const c_char,
    pub outputShapes: *const c_char,
    pub outputTypes: *const c_char,
    pub outputFormats: *const c_char,
    pub flops: u64,
    pub bytes: u64,
}

/// Registers what an op's tensors and cost were and stores its id in `*metaId`, for
/// aclprofExtReportOpMeta. Equal descriptions get the same id, so a runtime can call this
/// for every op or once per distinct shape. Call it outside the op's timed span: it takes a
/// lock and hashes the strings. Everything unknown -> `*metaId` = 0 (no metadata). The
/// process keeps at most 2^20 descriptions (64 MiB); past that `*metaId` is 0, the op is
/// recorded without them, and one warning is logged.
///
/// Errors: NULL `meta` or `metaId` -> ACL_ERROR_INVALID_PARAM.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtOpMetaCreate(
    meta: *const aclprofExtOpMeta,
    metaId: *mut u32,
) -> aclError {
    entry(
        "aclprofExtOpMetaCreate",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            // SAFETY: `metaId` is NULL or valid for writes (the C contract).
            let out = unsafe { super::out(metaId, "metaId") }?;
            // SAFETY: `meta` is NULL or valid for reads (the C contract).
            let m = unsafe { super::input(meta, "meta") }?;
            let text = |p: *const c_char| -> String {
                if p.is_null() {
                    String::new()
                } else {
                    // SAFETY: `p` is not NULL, so a C string (the C contract).
                    let bytes = unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes();
                    String::from_utf8_lossy(bytes).into_owned()
                }
            };
            let d = crate::opmeta::OpMeta {
                input_shapes: crate::opmeta::cann_shapes(&text(m.inputShapes)).into_owned(),
                input_types: text(m.inputTypes),
                input_formats: text(m.inputFormats),
                output_shapes: crate::opmeta::cann_shapes(&text(m.outputShapes)).into_owned(),
                output_types: text(m.outputTypes),
                output_formats: text(m.outputFormats),
                flops: (m.flops != 0).then_some(m.flops),
                bytes: (m.bytes != 0).then_some(m.bytes),
                ..Default::default()
            };
            *out = d.known().and_then(crate::opmeta::intern).unwrap_or(0);
            Ok(())
        },
    )
}

/// aclprofExtReportOp with the op's metadata: `metaId` from aclprofExtOpMetaCreate, or 0 for
/// none. Costs what aclprofExtReportOp costs, plus one atomic load to check the id.
///
/// Errors: those of aclprofExtReportOp; an id aclprofExtOpMetaCreate did not return ->
/// ACL_ERROR_INVALID_PARAM.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtReportOpMeta(
    modelId: u32,
    opName: *const c_char,
    opType: *const c_char,
    startNs: u64,
    endNs: u64,
    metaId: u32,
) -> aclError {
    let id_ok = metaId == 0 || crate::opmeta::valid(metaId);
    if id_ok
        && !opName.is_null()
        && !opType.is_null()
        && startNs <= endNs
        && !crate::hotpath::active()
    {
        return 0;
    }
    // SAFETY: the caller's pointers, passed on.
    unsafe { report_op_meta_checked(modelId, opName, opType, startNs, endNs, metaId, id_ok) }
}

#[inline(never)]
unsafe fn report_op_meta_checked(
    model: u32,
    name: *const c_char,
    op_type: *const c_char,
    start: u64,
    end: u64,
    meta: u32,
    id_ok: bool,
) -> aclError {
    entry(
        "aclprofExtReportOpMeta",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            if !id_ok {
                meta_id(meta)?;
            }
            // SAFETY: `name` is NULL or a C string (the C contract).
            let name = unsafe { cstr(name, "opName") }?;
            // SAFETY: `op_type` is NULL or a C string (the C contract).
            let ty = unsafe { cstr(op_type, "opType") }?;
            let replay = crate::hotpath::Replay {
                meta,
                ..Default::default()
            };
            crate::hotpath::report_op(model, name, ty, start, end, replay)
        },
    )
}

/// `id` as a metadata id argument: 0 (none) or one aclprofExtOpMetaCreate returned.
fn meta_id(id: u32) -> crate::error::Result<()> {
    if id != 0 && !crate::opmeta::valid(id) {
        return Err(invalid(format!(
            "metaId {id} was not returned by aclprofExtOpMetaCreate"
        )));
    }
    Ok(())
}

/// Registers an op once, as CANN's runtime prepares a node's record at model load, and
/// stores its id in `*opId`, for aclprofExtReportRegisteredOp. `opName` and `opType` are
/// `opNameLen` and `opTypeLen` bytes long (read to a NUL among them, if any); `metaId` is
/// an id from aclprofExtOpMetaCreate, or 0 for none. The same three get the same id, so a
/// runtime can register a model's ops each time it loads it. Ids are valid in this process
/// (and a child it forks) until it exits, and are never reused; 0 is never an id. Call it
/// outside the op's timed span: it takes a lock. Names longer than 256 bytes and types
/// longer than 64 are truncated in records as aclprofExtReportOp truncates them. The process
/// keeps at most 2^20 registered ops (128 MiB); past that, one warning is logged and the
/// call fails: report those ops by name.
///
/// Errors: NULL arguments, a `metaId` aclprofExtOpMetaCreate did not return, or a full table
/// -> ACL_ERROR_INVALID_PARAM.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtOpRegister(
    opName: *const c_char,
    opNameLen: usize,
    opType: *const c_char,
    opTypeLen: usize,
    metaId: u32,
    opId: *mut u32,
) -> aclError {
    entry(
        "aclprofExtOpRegister",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            // SAFETY: `opName` is NULL or valid for `opNameLen` bytes (the C contract).
            let name = unsafe { bytes_arg(opName, opNameLen, "opName") }?;
            // SAFETY: `opType` is NULL or valid for `opTypeLen` bytes (the C contract).
            let ty = unsafe { bytes_arg(opType, opTypeLen, "opType") }?;
            // SAFETY: `opId` is NULL or valid for writes (the C contract).
            let out = unsafe { super::out(opId, "opId") }?;
            meta_id(metaId)?;
            *out = crate::opreg::register(name, ty, metaId)?;
            Ok(())
        },
    )
}

/// Reports one execution, from `startNs` to `endNs`, of the op registered as `opId`, on the
/// device of model `modelId`: what aclprofExtReportOp does, without reading any string (the
/// record's strings were prepared at registration). Subscribers decode the same records.
///
/// Errors: an `opId` aclprofExtOpRegister did not return or endNs < startNs ->
/// ACL_ERROR_INVALID_PARAM; model not loaded (checked while someone subscribes) ->
/// ACL_ERROR_INVALID_MODEL_ID.
#[no_mangle]
pub extern "C" fn aclprofExtReportRegisteredOp(
    modelId: u32,
    opId: u32,
    startNs: u64,
    endNs: u64,
) -> aclError {
    // The idle path: one atomic load and the id's check.
    if startNs <= endNs && !crate::hotpath::active() && crate::opreg::valid(opId) {
        return 0;
    }
    report_registered(modelId, opId, startNs, endNs)
}

/// aclprofExtReportRegisteredOp once someone may listen: the common case
/// ([`crate::hotpath::report_repeated`]) first, else the whole path with its errors.
#[inline(never)]
fn report_registered(model: u32, id: u32, start: u64, end: u64) -> aclError {
    const F: &str = "aclprofExtReportRegisteredOp";
    let Some(op) = crate::opreg::get(id) else {
        let e = invalid(format!(
            "opId {id:#x} was not returned by aclprofExtOpRegister"
        ));
        return super::code(F, Err(e));
    };
    let replay = crate::hotpath::Replay::of(op);
    const R: u8 = crate::hotpath::Site::Registered as u8;
    if try_repeated::<R>(F, model, &op.image, start, end, replay) {
        return 0;
    }
    entry(F, crate::error::ACL_ERROR_PROFILING_FAILURE, || {
        crate::hotpath::report_with(model, &op.image, start, end, replay)
    })
}

/// aclprofExtReportOp with the strings' lengths, for names that change per call: `opName`
/// and `opType` are `opNameLen` and `opTypeLen` bytes long (read to a NUL among them, if
/// any), so nothing measures them.
///
/// Errors: those of aclprofExtReportOp.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtReportOpLen(
    modelId: u32,
    opName: *const c_char,
    opNameLen: usize,
    opType: *const c_char,
    opTypeLen: usize,
    startNs: u64,
    endNs: u64,
) -> aclError {
    if !opName.is_null() && !opType.is_null() && startNs <= endNs && !crate::hotpath::active() {
        return 0;
    }
    // SAFETY: the caller's pointers and lengths, passed on.
    unsafe {
        report_len(
            modelId, opName, opNameLen, opType, opTypeLen, startNs, endNs,
        )
    }
}

/// aclprofExtReportOpLen once someone may listen: the common case
/// ([`crate::hotpath::report_repeated`]) first, else the whole path with its errors.
#[inline(never)]
unsafe fn report_len(
    model: u32,
    name: *const c_char,
    name_len: usize,
    op_type: *const c_char,
    type_len: usize,
    start: u64,
    end: u64,
) -> aclError {
    const F: &str = "aclprofExtReportOpLen";
    if name.is_null() || op_type.is_null() {
        let what = if name.is_null() { "opName" } else { "opType" };
        return super::code(F, Err(invalid(format!("{what} is NULL"))));
    }
    // SAFETY: not NULL, so valid for `name_len` and `type_len` bytes (the C contract).
    let (n, t) = unsafe {
        (
            std::slice::from_raw_parts(name.cast::<u8>(), name_len),
            std::slice::from_raw_parts(op_type.cast::<u8>(), type_len),
        )
    };
    const L: u8 = crate::hotpath::Site::Lengths as u8;
    let op = crate::formats::record::Given(n, t);
    if try_repeated::<L>(F, model, op, start, end, Default::default()) {
        return 0;
    }
    entry(F, crate::error::ACL_ERROR_PROFILING_FAILURE, || {
        let (n, t) = (until_nul(n), until_nul(t));
        crate::hotpath::report_whole(model, n, t, start, end, Default::default())
    })
}

/// The library's version, "MAJOR.MINOR.PATCH" (ACLPROF_VERSION of the headers it was built
/// with): a static string, never NULL.
#[no_mangle]
pub extern "C" fn aclprofExtVersion() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The library's clock: nanoseconds on CLOCK_MONOTONIC_RAW.
#[no_mangle]
pub extern "C" fn aclprofExtNowNs() -> u64 {
    guard("aclprofExtNowNs", 0, crate::clock::now_ns)
}

/// Returns when every record reported so far has been written to its subscriber (or
/// counted as dropped). Records dropped because ACLPROF_ON_FULL=drop was chosen are not a
/// failure: they are counted in aclprofExtGetStats and logged. Errors: a reader that does
/// not drain within ACLPROF_UNSUBSCRIBE_TIMEOUT_MS, or records lost since the last flush
/// (a write error, a reader that closed its end, host events not written) ->
/// ACL_ERROR_PROFILING_FAILURE (nothing is dropped by the flush itself).
#[no_mangle]
pub extern "C" fn aclprofExtFlush() -> aclError {
    entry(
        "aclprofExtFlush",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        crate::profiler::flush,
    )
}

/// Told whether anyone listens for reported ops: see aclprofExtListen.
pub type aclprofExtListenCallback =
    Option<unsafe extern "C" fn(listening: std::ffi::c_int, user: *mut c_void)>;

/// Calls `callback(listening, user)` at once, with 1 if anyone listens for reported ops (a
/// subscription, a file-mode session, a watcher) and 0 if not, and again each time that
/// changes, from the thread that changed it. For a runtime that reports through hooks of its
/// own: it installs them only while someone listens, so that profiling nobody reads costs
/// nothing. `callback` runs under a lock that keeps the calls in order: it must return
/// soon and must not call aclprof functions. At most 16 callbacks.
///
/// Errors: NULL `callback`, the pair already listening, or 16 listening ->
/// ACL_ERROR_INVALID_PARAM.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtListen(
    callback: aclprofExtListenCallback,
    user: *mut c_void,
) -> aclError {
    entry(
        "aclprofExtListen",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || crate::hotpath::listen(non_null_callback(callback)?, user),
    )
}

/// Stops the calls aclprofExtListen started for this `callback` and `user`; none runs
/// after this returns. Not listening -> ACL_ERROR_INVALID_PARAM.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtUnlisten(
    callback: aclprofExtListenCallback,
    user: *mut c_void,
) -> aclError {
    entry(
        "aclprofExtUnlisten",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || crate::hotpath::unlisten(non_null_callback(callback)?, user),
    )
}

fn non_null_callback(
    f: aclprofExtListenCallback,
) -> crate::error::Result<crate::hotpath::ListenFn> {
    f.ok_or_else(|| invalid("callback is NULL"))
}

/// Fills `*stats` with the delivery statistics. NULL -> ACL_ERROR_INVALID_PARAM.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtGetStats(stats: *mut aclprofExtStats) -> aclError {
    entry(
        "aclprofExtGetStats",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            // SAFETY: `stats` is NULL or valid for writes (the C contract).
            let stats = unsafe { super::out(stats, "stats") }?;
            let c = crate::profiler::stats();
            *stats = aclprofExtStats {
                recordsReported: c.reported,
                recordsDelivered: c.delivered,
                recordsDropped: c.dropped,
                bytesWritten: c.bytes,
            };
            Ok(())
        },
    )
}

/// Fills `*waits` with how threads waited for readers. NULL -> ACL_ERROR_INVALID_PARAM.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtGetWaits(waits: *mut aclprofExtWaits) -> aclError {
    entry(
        "aclprofExtGetWaits",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            // SAFETY: `waits` is NULL or valid for writes (the C contract).
            let waits = unsafe { super::out(waits, "waits") }?;
            let w = crate::profiler::waits();
            *waits = aclprofExtWaits {
                reportWaits: w.report_waits,
                reportWaitNs: w.report_wait_ns,
                flushWaits: w.flush_waits,
                flushWaitNs: w.flush_wait_ns,
            };
            Ok(())
        },
    )
}

/// Loads a model description for the simulator: a JSON file
/// `{"name", "device", "wait_us"?, "ops": [{"name", "type", "duration_us", "wait_us"?}]}`,
/// or what a real run wrote: msprof's op_summary_*.csv, torch_npu's kernel_details.csv or
/// trace_view.json (replayed with its start times, streams and task types). The format is
/// told from the content. Returns the new model id in `*modelId`.
/// Errors: unreadable, malformed or unsupported file -> ACL_ERROR_INVALID_FILE.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtSimModelLoad(
    path: *const c_char,
    modelId: *mut u32,
) -> aclError {
    entry(
        "aclprofExtSimModelLoad",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            crate::init::ensure();
            // SAFETY: `path` is NULL or a C string (the C contract).
            let p = unsafe { path_arg(path, "path") }?;
            // SAFETY: `modelId` is NULL or valid for writes (the C contract).
            let modelId = unsafe { super::out(modelId, "modelId") }?;
            let id = crate::sim::load(p)?;
            *modelId = id;
            Ok(())
        },
    )
}

/// Executes a simulated model once on the calling thread: every op is reported in order,
/// each starting its wait time (default 1 us) after the previous one ended. Returns when the
/// simulated execution has finished, like aclmdlExecute.
#[no_mangle]
pub extern "C" fn aclprofExtSimModelExecute(modelId: u32) -> aclError {
    entry(
        "aclprofExtSimModelExecute",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || crate::sim::execute(modelId),
    )
}

/// Reports that `worker` of data-pipeline stage `stage` (read, decode, transform, batch,
/// transfer, ...; "wait" is the training thread waiting for its next batch) worked from
/// `startNs` to `endNs` (aclprofExtNowNs's clock). Recorded while a file-mode session runs
/// (beside the host's other events; no system call), otherwise ignored after the argument
/// checks. Errors: NULL, empty, longer than 127 bytes or non-UTF-8 `stage`, or endNs <
/// startNs -> ACL_ERROR_INVALID_PARAM.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtPipelineSpan(
    stage: *const c_char,
    worker: u32,
    startNs: u64,
    endNs: u64,
) -> aclError {
    entry(
        "aclprofExtPipelineSpan",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            // SAFETY: `stage` is NULL or a C string (the C contract).
            let ev =
                crate::pipeline::span(unsafe { cstr(stage, "stage") }?, worker, startNs, endNs)?;
            crate::filemode::host_event(u64::MAX, ev);
            Ok(())
        },
    )
}

/// Reports a sample of the queue data-pipeline stage `stage` writes its output to: `depth`
/// of `capacity` items (0: capacity unknown) at `timeNs`. Recorded as
/// aclprofExtPipelineSpan's spans are. Errors: a bad `stage` as there, or depth above a
/// known capacity -> ACL_ERROR_INVALID_PARAM.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtPipelineQueue(
    stage: *const c_char,
    depth: u32,
    capacity: u32,
    timeNs: u64,
) -> aclError {
    entry(
        "aclprofExtPipelineQueue",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            // SAFETY: `stage` is NULL or a C string (the C contract).
            let ev =
                crate::pipeline::queue(unsafe { cstr(stage, "stage") }?, depth, capacity, timeNs)?;
            crate::filemode::host_event(u64::MAX, ev);
            Ok(())
        },
    )
}

/// Exports a file-mode result directory (`PROF_…`) again from its raw data: what
/// aclprofStop does, for a directory left behind by a process that died before stopping.
/// Rewrites its `mindstudio_profiler_output/`. Not a result directory ->
/// ACL_ERROR_INVALID_FILE; the directory this process is recording into now ->
/// ACL_ERROR_PROF_ALREADY_RUN.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtExport(profDir: *const c_char) -> aclError {
    entry(
        "aclprofExtExport",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            crate::init::ensure();
            // SAFETY: `profDir` is NULL or a C string (the C contract).
            crate::profiler::export_again(unsafe { path_arg(profDir, "profDir") }?)
        },
    )
}

/// Analyzes what aclprof recorded, as `aclprof analyze` does: `path` is a result directory
/// (`PROF_…`), a folder of them or a file of records. `queryJson` (NULL: the defaults) is a
/// JSON object with the command's options as keys: "top" (rows, 0 = all; default 10),
/// "aggregate_by" ("type", "name", "device", "stream", "model", "rank"), "aggregate" ("sum",
/// "mean", "max", "min", "count"), "order_by" ("+column": ascending), "min_time" and
/// "max_time" (µs), "type" (a string or a list), "name" (a regular expression), "device",
/// "rank", "step", "format" ("json" (default), "table", "csv", "markdown"), "pipeline"
/// (true: the data-pipeline analysis of `aclprof analyze --pipeline`, as JSON, instead) and
/// "memory" (true: `aclprof analyze --memory`, in "format", instead).
/// On success `*result` is the report, NUL-terminated, which the caller frees with
/// aclprofExtFreeResult. Errors (`*result` NULL; the reason from
/// aclGetRecentErrMsg): NULL path or result, the path "-", a bad query ->
/// ACL_ERROR_INVALID_PARAM; a path
/// that cannot be read -> ACL_ERROR_INVALID_FILE.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtAnalyze(
    path: *const c_char,
    queryJson: *const c_char,
    result: *mut *mut c_char,
) -> aclError {
    entry(
        "aclprofExtAnalyze",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            // SAFETY: `result` is NULL or valid for writes (the C contract).
            let out = unsafe { super::out(result, "result") }?;
            *out = std::ptr::null_mut();
            // SAFETY: `path` is NULL or a C string (the C contract).
            let path = unsafe { input_arg(path, "path") }?;
            // SAFETY: `queryJson` is NULL or a C string (the C contract).
            let mut query = unsafe { json_arg(queryJson, "queryJson") }?;
            // "pipeline": true is `--pipeline`: the data-pipeline analysis, as JSON;
            // "memory": true is `--memory`.
            let mut view = |key: &str| -> crate::error::Result<bool> {
                match query.as_object_mut().and_then(|o| o.remove(key)) {
                    None | Some(serde_json::Value::Null) => Ok(false),
                    Some(serde_json::Value::Bool(b)) => Ok(b),
                    Some(_) => Err(invalid(format!(
                        "queryJson: \"{key}\" must be true or false"
                    ))),
                }
            };
            if view("pipeline")? {
                let a = crate::pipeline::analysis::analyze(&crate::pipeline::analysis::events_of(
                    path,
                )?);
                return give_text(out, crate::pipeline::analysis::render(&a, true));
            }
            if view("memory")? {
                use crate::analyze::memory;
                let format = match query.get("format").and_then(|f| f.as_str()) {
                    None => crate::analyze::Format::Json,
                    Some(f) => crate::analyze::Format::parse(f).ok_or_else(|| {
                        invalid(format!(
                            "queryJson: format: expected {}",
                            crate::analyze::Format::CHOICES.one_of()
                        ))
                    })?,
                };
                let (events, steps) = memory::events_of(path)?;
                return give_text(
                    out,
                    memory::render(&memory::analyze(&events, &steps), format),
                );
            }
            let (q, format) = crate::analyze::Query::from_json(&query).map_err(invalid)?;
            let report = crate::analyze::analyze(path, &q)?;
            give_text(out, crate::analyze::render(&report, format))
        },
    )
}

/// A run to read (aclprofExtAnalyze, aclprofExtDiff): "-" is refused, since the command
/// line reads standard input for it and the host's is not ours.
///
/// # Safety
/// As [`cstr`].
unsafe fn input_arg<'a>(p: *const c_char, what: &str) -> crate::error::Result<&'a std::path::Path> {
    // SAFETY: `p` is NULL or a C string (the C contract).
    let path = unsafe { path_arg(p, what) }?;
    if path == std::path::Path::new("-") {
        return Err(invalid(format!(
            "{what} \"-\" (standard input) is for the aclprof command; give ./- for a file named -"
        )));
    }
    Ok(path)
}

/// A JSON argument; NULL is JSON's null (the defaults).
///
/// # Safety
/// As [`cstr`].
unsafe fn json_arg(p: *const c_char, what: &str) -> crate::error::Result<serde_json::Value> {
    if p.is_null() {
        return Ok(serde_json::Value::Null);
    }
    // SAFETY: `p` is NULL or a C string (the C contract).
    serde_json::from_slice(unsafe { cstr(p, what) }?).map_err(|e| invalid(format!("{what}: {e}")))
}

/// Hands `text` to the caller, who frees it with aclprofExtFreeResult.
fn give_text(out: &mut *mut c_char, text: String) -> crate::error::Result<()> {
    // Rendered text has no NUL: names are cut at their first NUL in records.
    let c = std::ffi::CString::new(text).map_err(|_| invalid("the result holds a NUL byte"))?;
    *out = c.into_raw();
    Ok(())
}

/// Writes a result directory (`PROF_…`, exported) in torch_npu's layout, the one
/// PyTorch-on-Ascend users open with msprof-analyze (compare, advisor, cluster) and
/// MindStudio Insight: a folder `{host}_{pid}_{time}_ascend_pt` under `outDir` (made if
/// missing) holding `ASCEND_PROFILER_OUTPUT/` and `profiler_info_{rank}.json`, as
/// `aclprof export --format torch_npu` writes it. On success `*result` is the folder's path,
/// NUL-terminated, freed with aclprofExtFreeResult. Errors (`*result` NULL): NULL arguments or
/// a run without ops -> ACL_ERROR_INVALID_PARAM; not a result directory, or a folder that
/// cannot be written -> ACL_ERROR_INVALID_FILE.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtExportTorchNpu(
    profDir: *const c_char,
    outDir: *const c_char,
    result: *mut *mut c_char,
) -> aclError {
    entry(
        "aclprofExtExportTorchNpu",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            // SAFETY: `result` is NULL or valid for writes (the C contract).
            let out = unsafe { super::out(result, "result") }?;
            *out = std::ptr::null_mut();
            // SAFETY: `profDir` and `outDir` are NULL or C strings (the C contract).
            let (prof, dir) =
                unsafe { (path_arg(profDir, "profDir")?, path_arg(outDir, "outDir")?) };
            let pt = crate::torch_npu::export_into(prof, dir)?;
            give_text(out, pt.display().to_string())
        },
    )
}

/// Compares two runs, as `aclprof diff BASE NEW` does: `base` and `newRun` are what
/// aclprofExtAnalyze takes. `optionsJson` (NULL: the defaults) is a JSON object: "top" (rows
/// per section but the overall one, 0 = all; default 0), "format" ("json" (default),
/// "table", "csv", "markdown") and "fail_above" (a percentage: the JSON then lists in
/// "regressions" the end-to-end time or op types slower by more than that). On success
/// `*result` is the comparison, NUL-terminated, freed with aclprofExtFreeResult. Errors as
/// aclprofExtAnalyze's; a run that holds no ops -> ACL_ERROR_INVALID_PARAM.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtDiff(
    base: *const c_char,
    newRun: *const c_char,
    optionsJson: *const c_char,
    result: *mut *mut c_char,
) -> aclError {
    entry(
        "aclprofExtDiff",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            // SAFETY: `result` is NULL or valid for writes (the C contract).
            let out = unsafe { super::out(result, "result") }?;
            *out = std::ptr::null_mut();
            // SAFETY: `base` is NULL or a C string (the C contract).
            let base = unsafe { input_arg(base, "base") }?;
            // SAFETY: `newRun` is NULL or a C string (the C contract).
            let new = unsafe { input_arg(newRun, "newRun") }?;
            // SAFETY: `optionsJson` is NULL or a C string (the C contract).
            let options = unsafe { json_arg(optionsJson, "optionsJson") }?;
            give_text(out, crate::diff::run_json(base, new, &options)?)
        },
    )
}

/// Which rank of a cluster stands out, by the rule `aclprof report`'s cluster view and
/// Python's `aclprof.cluster` use: `ranks`, `computingNs` and `waitingNs` hold `n` ranks'
/// ids, time computing, and time in communication not overlapped with computing (ns).
/// `*rank` gets the slow rank and `*why` 1 (it computes longest, over 1.2× the median
/// rank's: the others wait for it) or 2 (no rank computes that long, but it waits in
/// communication over 1.2× the median rank's); `*why` and `*rank` are 0 when none stands out
/// (always with fewer than two ranks). Ties go to the lowest rank. Errors: an array NULL
/// with `n` > 0, or an output NULL or misaligned -> ACL_ERROR_INVALID_PARAM.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtSlowRank(
    ranks: *const u32,
    computingNs: *const u64,
    waitingNs: *const u64,
    n: usize,
    rank: *mut u32,
    why: *mut u32,
) -> aclError {
    use crate::analyze::verdict::{slow_rank, RankTime};
    entry(
        "aclprofExtSlowRank",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            // SAFETY: `rank` is NULL or valid for writes; `why` is NULL or valid for writes (the C contract).
            let (rank, why) = (unsafe { super::out(rank, "rank") }?, unsafe {
                super::out(why, "why")
            }?);
            // SAFETY: `ranks` is NULL or holds the elements its count says (the C contract).
            let ids = unsafe { super::array(ranks, n, "ranks") }?;
            // SAFETY: `computingNs` is NULL or holds the elements its count says (the C contract).
            let computing = unsafe { super::array(computingNs, n, "computingNs") }?;
            // SAFETY: `waitingNs` is NULL or holds the elements its count says (the C contract).
            let waiting = unsafe { super::array(waitingNs, n, "waitingNs") }?;
            let times: Vec<RankTime> = (0..n)
                .map(|i| RankTime {
                    rank: ids[i],
                    computing_ns: computing[i],
                    waiting_ns: waiting[i],
                })
                .collect();
            (*rank, *why) = slow_rank(&times).map_or((0, 0), |s| (s.rank, s.why as u32));
            Ok(())
        },
    )
}

/// Which link of a cluster is slowest, by the rule `aclprof analyze --communication` and
/// Python's `aclprof.cluster` use: `bytes` and `ns` hold `n` links' bytes moved and transfer
/// time. `*index` gets the slowest of the links that moved bytes (the lowest bandwidth; ties:
/// the first) and `*ofMedian` its bandwidth against the median such link's; `*index` is `n`
/// and `*ofMedian` 0 when fewer than two links moved bytes. Errors as aclprofExtSlowRank's.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtSlowestLink(
    bytes: *const u64,
    ns: *const u64,
    n: usize,
    index: *mut usize,
    ofMedian: *mut f64,
) -> aclError {
    entry(
        "aclprofExtSlowestLink",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            let (index, of) = (
                // SAFETY: `index` is NULL or valid for writes (the C contract).
                unsafe { super::out(index, "index") }?,
                // SAFETY: `ofMedian` is NULL or valid for writes (the C contract).
                unsafe { super::out(ofMedian, "ofMedian") }?,
            );
            // SAFETY: `bytes` is NULL or holds the elements its count says (the C contract).
            let bytes = unsafe { super::array(bytes, n, "bytes") }?;
            // SAFETY: `ns` is NULL or holds the elements its count says (the C contract).
            let ns = unsafe { super::array(ns, n, "ns") }?;
            let links: Vec<(u64, u64)> = bytes.iter().copied().zip(ns.iter().copied()).collect();
            (*index, *of) = crate::analyze::verdict::slowest_link(&links).unwrap_or((n, 0.0));
            Ok(())
        },
    )
}

/// Frees what aclprofExtAnalyze, aclprofExtDiff or aclprofExtExportTorchNpu returned. NULL does
/// nothing.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtFreeResult(result: *mut c_char) {
    guard("aclprofExtFreeResult", (), || {
        if !result.is_null() {
            // SAFETY: `result` came from aclprofExtAnalyze or aclprofExtDiff, which made it
            // with `CString::into_raw`, and is freed once (the C contract).
            drop(unsafe { std::ffi::CString::from_raw(result) });
        }
    })
}

pub use super::ext_ring::*;

/// Answers a viewer's request to watch this process (`aclprof top`, `aclprof capture`) now.
/// The library asks to be told of a request with SIGURG, and answers at the next call into
/// it; a program that handles SIGURG itself (or idles for long in its own event loop) calls
/// this when the signal comes. Not from inside a signal handler: it may start a thread.
/// ACL_SUCCESS also when no viewer asked.
#[no_mangle]
pub extern "C" fn aclprofExtWatchAnswer() -> aclError {
    entry(
        "aclprofExtWatchAnswer",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            crate::init::ensure();
            crate::watch::answer_now();
            Ok(())
        },
    )
}
