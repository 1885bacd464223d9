//! CANN's `aclError` codes, with CANN's values: the one definition the library's errors
//! (`error.rs`) and the C header `acl/acl_base.h` (cbindgen reads this file, build.rs)
//! both use.
#![allow(non_camel_case_types)]

use std::ffi::c_int;

/// AscendCL's error code: 0 is success, anything else an `ACL_ERROR_*` value.
pub type aclError = c_int;

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
/// aclFinalize without aclInit.
pub const ACL_ERROR_REPEAT_FINALIZE: aclError = 100037;
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
/// Internal failure of the emulated runtime.
pub const ACL_ERROR_INTERNAL_ERROR: aclError = 500000;
/// Internal profiling failure (including an unusable result directory).
pub const ACL_ERROR_PROFILING_FAILURE: aclError = 500005;

// The runtime's and the model loader's codes (CANN declares them in
// acl/error_codes/rt_error_codes.h and ge_error_codes.h, which its acl_base.h includes).
/// The runtime rejected a parameter.
pub const ACL_ERROR_RT_PARAM_INVALID: aclError = 107000;
/// The device id does not exist.
pub const ACL_ERROR_RT_INVALID_DEVICEID: aclError = 107001;
/// The calling thread has no current device or context.
pub const ACL_ERROR_RT_CONTEXT_NULL: aclError = 107002;
/// Out of memory.
pub const ACL_ERROR_RT_MEMORY_ALLOCATION: aclError = 207001;
/// The model loader or executor rejected a parameter (e.g. a dataset too small).
pub const ACL_ERROR_GE_PARAM_INVALID: aclError = 145000;
/// The model file does not exist.
pub const ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID: aclError = 145002;
/// The model id is not loaded.
pub const ACL_ERROR_GE_EXEC_MODEL_ID_INVALID: aclError = 145003;
/// The model file is not a model the loader can read.
pub const ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID: aclError = 145006;

// The rest of CANN's acl_base.h codes, with its names and values. This library never
// returns them; they are here so that a CANN program that names them compiles.
/// A file could not be written.
pub const ACL_ERROR_WRITE_FILE: aclError = 100004;
/// A file has the wrong size.
pub const ACL_ERROR_INVALID_FILE_SIZE: aclError = 100005;
/// A file could not be parsed.
pub const ACL_ERROR_PARSE_FILE: aclError = 100006;
/// A file lacks an attribute.
pub const ACL_ERROR_FILE_MISSING_ATTR: aclError = 100007;
/// A file attribute is not valid.
pub const ACL_ERROR_FILE_ATTR_INVALID: aclError = 100008;
/// The dump config is not valid.
pub const ACL_ERROR_INVALID_DUMP_CONFIG: aclError = 100009;
/// A model could not be deserialized.
pub const ACL_ERROR_DESERIALIZE_MODEL: aclError = 100012;
/// A model could not be parsed.
pub const ACL_ERROR_PARSE_MODEL: aclError = 100013;
/// A model file could not be read.
pub const ACL_ERROR_READ_MODEL_FAILURE: aclError = 100014;
/// A model has the wrong size.
pub const ACL_ERROR_MODEL_SIZE_INVALID: aclError = 100015;
/// A model lacks an attribute.
pub const ACL_ERROR_MODEL_MISSING_ATTR: aclError = 100016;
/// The inputs do not match the model's.
pub const ACL_ERROR_MODEL_INPUT_NOT_MATCH: aclError = 100017;
/// The outputs do not match the model's.
pub const ACL_ERROR_MODEL_OUTPUT_NOT_MATCH: aclError = 100018;
/// The model has no dynamic shapes.
pub const ACL_ERROR_MODEL_NOT_DYNAMIC: aclError = 100019;
/// The op type does not match.
pub const ACL_ERROR_OP_TYPE_NOT_MATCH: aclError = 100020;
/// The op's inputs do not match.
pub const ACL_ERROR_OP_INPUT_NOT_MATCH: aclError = 100021;
/// The op's outputs do not match.
pub const ACL_ERROR_OP_OUTPUT_NOT_MATCH: aclError = 100022;
/// The op's attributes do not match.
pub const ACL_ERROR_OP_ATTR_NOT_MATCH: aclError = 100023;
/// No such op.
pub const ACL_ERROR_OP_NOT_FOUND: aclError = 100024;
/// An op could not be loaded.
pub const ACL_ERROR_OP_LOAD_FAILED: aclError = 100025;
/// The data type is not supported.
pub const ACL_ERROR_UNSUPPORTED_DATA_TYPE: aclError = 100026;
/// The format does not match.
pub const ACL_ERROR_FORMAT_NOT_MATCH: aclError = 100027;
/// No kernel selector is registered.
pub const ACL_ERROR_BIN_SELECTOR_NOT_REGISTERED: aclError = 100028;
/// No such kernel.
pub const ACL_ERROR_KERNEL_NOT_FOUND: aclError = 100029;
/// A kernel selector is already registered.
pub const ACL_ERROR_BIN_SELECTOR_ALREADY_REGISTERED: aclError = 100030;
/// The kernel is already registered.
pub const ACL_ERROR_KERNEL_ALREADY_REGISTERED: aclError = 100031;
/// The queue id is not valid.
pub const ACL_ERROR_INVALID_QUEUE_ID: aclError = 100032;
/// The stream or thread is already subscribed.
pub const ACL_ERROR_REPEAT_SUBSCRIBE: aclError = 100033;
/// The stream is not subscribed.
pub const ACL_ERROR_STREAM_NOT_SUBSCRIBE: aclError = 100034;
/// The thread is not subscribed.
pub const ACL_ERROR_THREAD_NOT_SUBSCRIBE: aclError = 100035;
/// Waiting for a callback timed out.
pub const ACL_ERROR_WAIT_CALLBACK_TIMEOUT: aclError = 100036;
/// The model has no static AIPP.
pub const ACL_ERROR_NOT_STATIC_AIPP: aclError = 100038;
/// Linked against CANN's compile-only stub.
pub const ACL_ERROR_COMPILING_STUB_MODE: aclError = 100039;
/// No group is set.
pub const ACL_ERROR_GROUP_NOT_SET: aclError = 100040;
/// The group was not created.
pub const ACL_ERROR_GROUP_NOT_CREATE: aclError = 100041;
/// Dumping is already running.
pub const ACL_ERROR_DUMP_ALREADY_RUN: aclError = 100044;
/// Dumping is not running.
pub const ACL_ERROR_DUMP_NOT_RUN: aclError = 100045;
/// The op queue size config is not valid.
pub const ACL_ERROR_INVALID_MAX_OPQUEUE_NUM_CONFIG: aclError = 148048;
/// The op package path is not valid.
pub const ACL_ERROR_INVALID_OPP_PATH: aclError = 148049;
/// The op does not support dynamic shapes.
pub const ACL_ERROR_OP_UNSUPPORTED_DYNAMIC: aclError = 148050;
/// A related resource was not released first.
pub const ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED: aclError = 148051;
/// The JPEG image is not supported.
pub const ACL_ERROR_UNSUPPORTED_JPEG: aclError = 148052;
/// The bundle model id is not valid.
pub const ACL_ERROR_INVALID_BUNDLE_MODEL_ID: aclError = 148053;
/// Out of memory.
pub const ACL_ERROR_BAD_ALLOC: aclError = 200000;
/// The API is not supported.
pub const ACL_ERROR_API_NOT_SUPPORT: aclError = 200001;
/// A memory address is not aligned.
pub const ACL_ERROR_MEMORY_ADDRESS_UNALIGNED: aclError = 200003;
/// A resource does not match.
pub const ACL_ERROR_RESOURCE_NOT_MATCH: aclError = 200004;
/// A storage limit was exceeded.
pub const ACL_ERROR_STORAGE_OVER_LIMIT: aclError = 300000;
/// An unknown internal failure.
pub const ACL_ERROR_FAILURE: aclError = 500001;
/// The runtime failed.
pub const ACL_ERROR_RT_FAILURE: aclError = 500003;
/// The driver failed.
pub const ACL_ERROR_DRV_FAILURE: aclError = 500004;

// The rest of the runtime's codes (CANN's rt_error_codes.h).
/// Runtime: success.
pub const ACL_RT_SUCCESS: aclError = 0;
/// Runtime: stream not in the current context.
pub const ACL_ERROR_RT_STREAM_CONTEXT: aclError = 107003;
/// Runtime: model not in the current context.
pub const ACL_ERROR_RT_MODEL_CONTEXT: aclError = 107004;
/// Runtime: stream not in the model.
pub const ACL_ERROR_RT_STREAM_MODEL: aclError = 107005;
/// Runtime: event timestamp not valid.
pub const ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID: aclError = 107006;
/// Runtime: event timestamps reversed.
pub const ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL: aclError = 107007;
/// Runtime: memory address not aligned.
pub const ACL_ERROR_RT_ADDR_UNALIGNED: aclError = 107008;
/// Runtime: a file could not be opened.
pub const ACL_ERROR_RT_FILE_OPEN: aclError = 107009;
/// Runtime: a file could not be written.
pub const ACL_ERROR_RT_FILE_WRITE: aclError = 107010;
/// Runtime: stream subscription failed.
pub const ACL_ERROR_RT_STREAM_SUBSCRIBE: aclError = 107011;
/// Runtime: thread subscription failed.
pub const ACL_ERROR_RT_THREAD_SUBSCRIBE: aclError = 107012;
/// Runtime: no group set.
pub const ACL_ERROR_RT_GROUP_NOT_SET: aclError = 107013;
/// Runtime: group not created.
pub const ACL_ERROR_RT_GROUP_NOT_CREATE: aclError = 107014;
/// Runtime: no callback registered on the stream.
pub const ACL_ERROR_RT_STREAM_NO_CB_REG: aclError = 107015;
/// Runtime: memory type not valid.
pub const ACL_ERROR_RT_INVALID_MEMORY_TYPE: aclError = 107016;
/// Runtime: handle not valid.
pub const ACL_ERROR_RT_INVALID_HANDLE: aclError = 107017;
/// Runtime: allocation type not valid.
pub const ACL_ERROR_RT_INVALID_MALLOC_TYPE: aclError = 107018;
/// Runtime: wait timed out.
pub const ACL_ERROR_RT_WAIT_TIMEOUT: aclError = 107019;
/// Runtime: task timed out.
pub const ACL_ERROR_RT_TASK_TIMEOUT: aclError = 107020;
/// Runtime: feature not supported.
pub const ACL_ERROR_RT_FEATURE_NOT_SUPPORT: aclError = 207000;
/// Runtime: memory could not be freed.
pub const ACL_ERROR_RT_MEMORY_FREE: aclError = 207002;
/// Runtime: AI Core overflow.
pub const ACL_ERROR_RT_AICORE_OVER_FLOW: aclError = 207003;
/// Runtime: no device.
pub const ACL_ERROR_RT_NO_DEVICE: aclError = 207004;
/// Runtime: resource allocation failed.
pub const ACL_ERROR_RT_RESOURCE_ALLOC_FAIL: aclError = 207005;
/// Runtime: no permission.
pub const ACL_ERROR_RT_NO_PERMISSION: aclError = 207006;
/// Runtime: no event left.
pub const ACL_ERROR_RT_NO_EVENT_RESOURCE: aclError = 207007;
/// Runtime: no stream left.
pub const ACL_ERROR_RT_NO_STREAM_RESOURCE: aclError = 207008;
/// Runtime: no notify left.
pub const ACL_ERROR_RT_NO_NOTIFY_RESOURCE: aclError = 207009;
/// Runtime: no model left.
pub const ACL_ERROR_RT_NO_MODEL_RESOURCE: aclError = 207010;
/// Runtime: no CDQ left.
pub const ACL_ERROR_RT_NO_CDQ_RESOURCE: aclError = 207011;
/// Runtime: over a limit.
pub const ACL_ERROR_RT_OVER_LIMIT: aclError = 207012;
/// Runtime: queue empty.
pub const ACL_ERROR_RT_QUEUE_EMPTY: aclError = 207013;
/// Runtime: queue full.
pub const ACL_ERROR_RT_QUEUE_FULL: aclError = 207014;
/// Runtime: initialised twice.
pub const ACL_ERROR_RT_REPEATED_INIT: aclError = 207015;
/// Runtime: AI Vector overflow.
pub const ACL_ERROR_RT_AIVEC_OVER_FLOW: aclError = 207016;
/// Runtime: runtime internal error.
pub const ACL_ERROR_RT_INTERNAL_ERROR: aclError = 507000;
/// Runtime: task scheduler internal error.
pub const ACL_ERROR_RT_TS_ERROR: aclError = 507001;
/// Runtime: stream's task queue full.
pub const ACL_ERROR_RT_STREAM_TASK_FULL: aclError = 507002;
/// Runtime: stream's task queue empty.
pub const ACL_ERROR_RT_STREAM_TASK_EMPTY: aclError = 507003;
/// Runtime: stream not complete.
pub const ACL_ERROR_RT_STREAM_NOT_COMPLETE: aclError = 507004;
/// Runtime: end of sequence.
pub const ACL_ERROR_RT_END_OF_SEQUENCE: aclError = 507005;
/// Runtime: event not complete.
pub const ACL_ERROR_RT_EVENT_NOT_COMPLETE: aclError = 507006;
/// Runtime: context release failed.
pub const ACL_ERROR_RT_CONTEXT_RELEASE_ERROR: aclError = 507007;
/// Runtime: SoC version error.
pub const ACL_ERROR_RT_SOC_VERSION: aclError = 507008;
/// Runtime: task type not supported.
pub const ACL_ERROR_RT_TASK_TYPE_NOT_SUPPORT: aclError = 507009;
/// Runtime: task scheduler heartbeat lost.
pub const ACL_ERROR_RT_LOST_HEARTBEAT: aclError = 507010;
/// Runtime: model execution failed.
pub const ACL_ERROR_RT_MODEL_EXECUTE: aclError = 507011;
/// Runtime: report timed out.
pub const ACL_ERROR_RT_REPORT_TIMEOUT: aclError = 507012;
/// Runtime: DMA error.
pub const ACL_ERROR_RT_SYS_DMA: aclError = 507013;
/// Runtime: AI Core timeout.
pub const ACL_ERROR_RT_AICORE_TIMEOUT: aclError = 507014;
/// Runtime: AI Core exception.
pub const ACL_ERROR_RT_AICORE_EXCEPTION: aclError = 507015;
/// Runtime: AI Core trap exception.
pub const ACL_ERROR_RT_AICORE_TRAP_EXCEPTION: aclError = 507016;
/// Runtime: AI CPU timeout.
pub const ACL_ERROR_RT_AICPU_TIMEOUT: aclError = 507017;
/// Runtime: AI CPU exception.
pub const ACL_ERROR_RT_AICPU_EXCEPTION: aclError = 507018;
/// Runtime: AI CPU data-dump response error.
pub const ACL_ERROR_RT_AICPU_DATADUMP_RSP_ERR: aclError = 507019;
/// Runtime: AI CPU model response error.
pub const ACL_ERROR_RT_AICPU_MODEL_RSP_ERR: aclError = 507020;
/// Runtime: profiling error.
pub const ACL_ERROR_RT_PROFILING_ERROR: aclError = 507021;
/// Runtime: IPC error.
pub const ACL_ERROR_RT_IPC_ERROR: aclError = 507022;
/// Runtime: model aborted normally.
pub const ACL_ERROR_RT_MODEL_ABORT_NORMAL: aclError = 507023;
/// Runtime: kernel being unregistered.
pub const ACL_ERROR_RT_KERNEL_UNREGISTERING: aclError = 507024;
/// Runtime: ring buffer not initialised.
pub const ACL_ERROR_RT_RINGBUFFER_NOT_INIT: aclError = 507025;
/// Runtime: ring buffer has no data.
pub const ACL_ERROR_RT_RINGBUFFER_NO_DATA: aclError = 507026;
/// Runtime: kernel lookup failed.
pub const ACL_ERROR_RT_KERNEL_LOOKUP: aclError = 507027;
/// Runtime: kernel registered twice.
pub const ACL_ERROR_RT_KERNEL_DUPLICATE: aclError = 507028;
/// Runtime: debug registration failed.
pub const ACL_ERROR_RT_DEBUG_REGISTER_FAIL: aclError = 507029;
/// Runtime: debug unregistration failed.
pub const ACL_ERROR_RT_DEBUG_UNREGISTER_FAIL: aclError = 507030;
/// Runtime: label not in the current context.
pub const ACL_ERROR_RT_LABEL_CONTEXT: aclError = 507031;
/// Runtime: no program registrations left.
pub const ACL_ERROR_RT_PROGRAM_USE_OUT: aclError = 507032;
/// Runtime: device setup failed.
pub const ACL_ERROR_RT_DEV_SETUP_ERROR: aclError = 507033;
/// Runtime: vector core timeout.
pub const ACL_ERROR_RT_VECTOR_CORE_TIMEOUT: aclError = 507034;
/// Runtime: vector core exception.
pub const ACL_ERROR_RT_VECTOR_CORE_EXCEPTION: aclError = 507035;
/// Runtime: vector core trap exception.
pub const ACL_ERROR_RT_VECTOR_CORE_TRAP_EXCEPTION: aclError = 507036;
/// Runtime: CDQ batch allocation abnormal.
pub const ACL_ERROR_RT_CDQ_BATCH_ABNORMAL: aclError = 507037;
/// Runtime: die mode cannot change.
pub const ACL_ERROR_RT_DIE_MODE_CHANGE_ERROR: aclError = 507038;
/// Runtime: single-die mode cannot set a die.
pub const ACL_ERROR_RT_DIE_SET_ERROR: aclError = 507039;
/// Runtime: die id not valid.
pub const ACL_ERROR_RT_INVALID_DIEID: aclError = 507040;
/// Runtime: die mode not set.
pub const ACL_ERROR_RT_DIE_MODE_NOT_SET: aclError = 507041;
/// Runtime: driver internal error.
pub const ACL_ERROR_RT_DRV_INTERNAL_ERROR: aclError = 507899;
/// Runtime: AI CPU internal error.
pub const ACL_ERROR_RT_AICPU_INTERNAL_ERROR: aclError = 507900;
/// Runtime: HDC disconnected.
pub const ACL_ERROR_RT_SOCKET_CLOSE: aclError = 507901;

// The rest of the graph engine's codes (CANN's ge_error_codes.h).
/// Graph engine: the executor is not initialised.
pub const ACL_ERROR_GE_EXEC_NOT_INIT: aclError = 145001;
/// Graph engine: model address not valid.
pub const ACL_ERROR_GE_EXEC_MODEL_ADDR_INVALID: aclError = 145007;
/// Graph engine: model queue id not valid.
pub const ACL_ERROR_GE_EXEC_MODEL_QUEUE_ID_INVALID: aclError = 145008;
/// Graph engine: model loaded twice.
pub const ACL_ERROR_GE_EXEC_LOAD_MODEL_REPEATED: aclError = 145009;
/// Graph engine: dynamic input address not valid.
pub const ACL_ERROR_GE_DYNAMIC_INPUT_ADDR_INVALID: aclError = 145011;
/// Graph engine: dynamic input length not valid.
pub const ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID: aclError = 145012;
/// Graph engine: dynamic batch size not valid.
pub const ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID: aclError = 145013;
/// Graph engine: AIPP batch empty.
pub const ACL_ERROR_GE_AIPP_BATCH_EMPTY: aclError = 145014;
/// Graph engine: no AIPP config.
pub const ACL_ERROR_GE_AIPP_NOT_EXIST: aclError = 145015;
/// Graph engine: AIPP mode not valid.
pub const ACL_ERROR_GE_AIPP_MODE_INVALID: aclError = 145016;
/// Graph engine: op task type not valid.
pub const ACL_ERROR_GE_OP_TASK_TYPE_INVALID: aclError = 145017;
/// Graph engine: op kernel type not valid.
pub const ACL_ERROR_GE_OP_KERNEL_TYPE_INVALID: aclError = 145018;
/// Graph engine: plugin path not valid.
pub const ACL_ERROR_GE_PLGMGR_PATH_INVALID: aclError = 145019;
/// Graph engine: format not valid.
pub const ACL_ERROR_GE_FORMAT_INVALID: aclError = 145020;
/// Graph engine: shape not valid.
pub const ACL_ERROR_GE_SHAPE_INVALID: aclError = 145021;
/// Graph engine: data type not valid.
pub const ACL_ERROR_GE_DATATYPE_INVALID: aclError = 145022;
/// Graph engine: out of memory.
pub const ACL_ERROR_GE_MEMORY_ALLOCATION: aclError = 245000;
/// Graph engine: memory operation failed.
pub const ACL_ERROR_GE_MEMORY_OPERATE_FAILED: aclError = 245001;
/// Graph engine: graph engine internal error.
pub const ACL_ERROR_GE_INTERNAL_ERROR: aclError = 545000;
/// Graph engine: model load failed.
pub const ACL_ERROR_GE_LOAD_MODEL: aclError = 545001;
/// Graph engine: model partition load failed.
pub const ACL_ERROR_GE_EXEC_LOAD_MODEL_PARTITION_FAILED: aclError = 545002;
/// Graph engine: weight partition load failed.
pub const ACL_ERROR_GE_EXEC_LOAD_WEIGHT_PARTITION_FAILED: aclError = 545003;
/// Graph engine: task partition load failed.
pub const ACL_ERROR_GE_EXEC_LOAD_TASK_PARTITION_FAILED: aclError = 545004;
/// Graph engine: kernel partition load failed.
pub const ACL_ERROR_GE_EXEC_LOAD_KERNEL_PARTITION_FAILED: aclError = 545005;
/// Graph engine: model data release failed.
pub const ACL_ERROR_GE_EXEC_RELEASE_MODEL_DATA: aclError = 545006;
/// Graph engine: command handling failed.
pub const ACL_ERROR_GE_COMMAND_HANDLE: aclError = 545007;
/// Graph engine: tensor info unavailable.
pub const ACL_ERROR_GE_GET_TENSOR_INFO: aclError = 545008;
/// Graph engine: model unload failed.
pub const ACL_ERROR_GE_UNLOAD_MODEL: aclError = 545009;
