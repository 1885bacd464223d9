//! CANN's profiling numbers, with CANN's values: the `ACL_PROF_*` data-type bits, the
//! `aclprofSetConfig` types and the enums of `acl/acl_prof.h`. The one definition the
//! library and the C header (cbindgen reads this file, build.rs) both use.
#![allow(non_camel_case_types)]

/// Collect the host-side AscendCL API calls.
pub const ACL_PROF_ACL_API: u64 = 0x0001u64;
/// Collect task timing (task-time level 1).
pub const ACL_PROF_TASK_TIME: u64 = 0x0002u64;
/// Collect AI Core metrics (see `aclprofAicoreMetrics`).
pub const ACL_PROF_AICORE_METRICS: u64 = 0x0004u64;
/// Collect AI CPU data.
pub const ACL_PROF_AICPU: u64 = 0x0008u64;
/// Collect L2 cache data.
pub const ACL_PROF_L2CACHE: u64 = 0x0010u64;
/// Collect HCCL communication traces.
pub const ACL_PROF_HCCL_TRACE: u64 = 0x0020u64;
/// Collect step (iteration) traces.
pub const ACL_PROF_TRAINING_TRACE: u64 = 0x0040u64;
/// Enable the msproftx API (stamps, marks, ranges); allows a config without devices.
pub const ACL_PROF_MSPROFTX: u64 = 0x0080u64;
/// Collect runtime API calls.
pub const ACL_PROF_RUNTIME_API: u64 = 0x0100u64;
/// Collect graph-engine API calls, level 0.
pub const ACL_PROF_GE_API_L0: u64 = 0x0200u64;
/// Collect task timing, level 0.
pub const ACL_PROF_TASK_TIME_L0: u64 = 0x0800u64;
/// Collect task memory.
pub const ACL_PROF_TASK_MEMORY: u64 = 0x1000u64;
/// Collect graph-engine API calls, level 1.
pub const ACL_PROF_GE_API_L1: u64 = 0x0100_0000u64;
/// Collect task timing, level 2.
pub const ACL_PROF_TASK_TIME_L2: u64 = 0x2000u64;
/// Collect op attributes.
pub const ACL_PROF_OP_ATTR: u64 = 0x4000u64;
/// Collect task timing, level 3.
pub const ACL_PROF_TASK_TIME_L3: u64 = 0x8000u64;
/// Collect API statistics.
pub const ACL_PROF_API_STATS: u64 = 0x4_0000_0000u64;
/// Deprecated: use aclprofGetOpNameLen. The longest name stored inline in a record, with NUL.
pub const ACL_PROF_MAX_OP_NAME_LEN: u32 = 257;
/// Deprecated: use aclprofGetOpTypeLen. The longest type stored inline in a record, with NUL.
pub const ACL_PROF_MAX_OP_TYPE_LEN: u32 = 65;

/// AI Core metric groups.
#[repr(C)]
pub enum aclprofAicoreMetricsValues {
    ACL_AICORE_ARITHMETIC_UTILIZATION = 0,
    ACL_AICORE_PIPE_UTILIZATION = 1,
    ACL_AICORE_MEMORY_BANDWIDTH = 2,
    ACL_AICORE_L0B_AND_WIDTH = 3,
    ACL_AICORE_RESOURCE_CONFLICT_RATIO = 4,
    ACL_AICORE_MEMORY_UB = 5,
    ACL_AICORE_L2_CACHE = 6,
    ACL_AICORE_PIPE_EXECUTE_UTILIZATION = 7,
    ACL_AICORE_MEMORY_ACCESS = 8,
    ACL_AICORE_NONE = 0xFF,
}

/// Which end of a step `aclprofGetStepTimestamp` records.
#[repr(C)]
pub enum aclprofStepTagValues {
    ACL_STEP_START = 0,
    ACL_STEP_END = 1,
}

/// What an op record describes (`aclprofGetOpFlag`).
#[repr(C)]
pub enum aclprofSubscribeOpFlagValues {
    ACL_SUBSCRIBE_OP = 0,
    ACL_SUBSCRIBE_SUBGRAPH = 1,
    ACL_SUBSCRIBE_OP_THREAD = 2,
    ACL_SUBSCRIBE_NONE = 0xFF,
}

/// Attributes readable with `aclprofGetOpAttriValue`.
#[repr(C)]
pub enum aclprofSubscribeOpAttriValues {
    ACL_SUBSCRIBE_ATTRI_THREADID = 0,
    ACL_SUBSCRIBE_ATTRI_NONE = 1,
}

/// `aclprofSetConfig` keys.
#[repr(C)]
pub enum aclprofConfigTypeValues {
    ACL_PROF_ARGS_MIN = 0,
    ACL_PROF_STORAGE_LIMIT = 1,
    ACL_PROF_SYS_HARDWARE_MEM_FREQ = 3,
    ACL_PROF_LLC_MODE = 4,
    ACL_PROF_SYS_IO_FREQ = 5,
    ACL_PROF_SYS_INTERCONNECTION_FREQ = 6,
    ACL_PROF_DVPP_FREQ = 7,
    ACL_PROF_HOST_SYS = 8,
    ACL_PROF_HOST_SYS_USAGE = 9,
    ACL_PROF_HOST_SYS_USAGE_FREQ = 10,
    ACL_PROF_LOW_POWER_FREQ = 11,
    ACL_PROF_SYS_MEM_SERVICEFLOW = 12,
    ACL_PROF_SYS_CPU_FREQ = 13,
    ACL_PROF_OPTYPE = 14,
    ACL_PROF_NTS_METRICS = 15,
    ACL_PROF_PATH = 16,
    ACL_PROF_ARGS_MAX = 17,
}
